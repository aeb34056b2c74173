"""What a dataset module builds on: the ``Dataset`` protocol and ``Materialized`` (the core's,
``medbench.protocols`` and ``medbench.outcomes``), plus ``is_demo``.

A dataset module reads its real source (the upstream service, or a local mirror in the same
format) or, in a demo data directory, a generated stand-in in exactly that format, and writes a
content-addressed snapshot (a file or a folder named by its content hash) under
``<data>/snapshots/<slug>/``. The engine (``pipelines.engine.inputs.materialize_snapshot``) then
moves the dataset's ``CURRENT`` pointer to it, so task instances and run ids agree on one snapshot.
A dataset is registered in the entry-point group ``medbench.datasets`` (``pyproject.toml``).

Its file name is shared on purpose: every plug-in package names its parts alike
(docs/adding-a-task.md, "The pieces"), so one reads the next.
"""

from __future__ import annotations

from typing import Any

from medbench.outcomes import Log, Materialized
from medbench.protocols import Dataset
from medbench.layout import DataDir
from medbench.old_spellings import renamed

__all__ = ["Dataset", "Log", "Materialized", "is_demo"]


def __getattr__(name: str) -> Any:
    """An old spelling of a name here, for plug-ins that import it: ``medbench.old_spellings``."""
    return renamed(__name__, name, "medbench.outcomes")


def is_demo(data: DataDir) -> bool:
    return data.demo_or_real() == "demo"
