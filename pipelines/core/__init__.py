"""The core: what the engine, the families, the datasets, the backends and the API share, importing
nothing of the project (stdlib, numpy, pyarrow and msgspec only), so that none of them needs another
to describe what it hands over.

The spec Structs and their canonical hash (``specs``, ``canonical``), the plain results of each step
(``outcomes``, ``evaluation``), the plug-in protocols (``protocols``; the ``Kind`` strategy in
``kind``) and the one generic ``Registry`` with the ``Plugins`` bundle (``registry``). import-linter's
``layers`` contract keeps it at the bottom.
"""
