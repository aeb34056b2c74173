"""medbench's ground floor: what every other package shares, importing nothing else of the project.

The spec Structs and their canonical hash (``specs``, ``canonical``, ``identity_form``), the plain
results of each step (``outcomes``, ``evaluation``), the plug-in protocols (``protocols``; the
``Kind`` strategy in ``kind``, the built-in kinds in ``kinds``), the one generic ``Registry``
(``registry``), the statistics (``stats``), the published result record (``records``), the
data-directory layout (``layout``), atomic files and their temporaries (``files``, ``tempfiles``),
the wheel rules (``packages``, ``wheel_inspector``) and the submissions store (``submissions``).
import-linter's layers contract keeps it at the bottom: medbench < warehouse < api < pipelines
(docs/concepts.md, "The layers").
"""
