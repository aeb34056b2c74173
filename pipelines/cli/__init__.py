"""The ``medbench`` command: the composition root (the only pipelines package that may import ``api``)."""

from pipelines.cli.main import main

__all__ = ["main"]
