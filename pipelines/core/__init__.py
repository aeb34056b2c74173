"""The core: what every layer shares and that imports nothing of the project.

The spec Structs and their canonical hash (``specs``, ``canonical``), the plain results of each step
(``outcomes``, ``evaluation``), the plug-in protocols (``protocols``) and the one generic ``Registry``
with the ``Plugins`` bundle (``registry``). Why its own package: the engine, the families, the
datasets, the backends and the api all depend on these shapes, so they must depend on nothing above
them, or every layer would import every other (import-linter's ``layers`` contract keeps it so).
"""
