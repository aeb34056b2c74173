"""The ``medbench`` command: the composition root (the only pipelines package that may import ``api``).

The entry point is ``pipelines.cli.main:main``; this package imports nothing at import time, so that
``python -m pipelines.cli.main`` (how tests and ``medbench serve --workers`` start it) runs without
RuntimeWarning about a module already in ``sys.modules``."""
