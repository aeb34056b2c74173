"""The ``Dataset`` protocol: how one dataset's snapshot is made in a data directory.

A dataset module reads its real source (the upstream service, or a local mirror in the same
format) or, in a demo data directory, a generated stand-in in exactly that format, and writes a
content-addressed snapshot (a file or a folder named by its content hash) under
``<data>/snapshots/<slug>/``. The engine (``pipelines.engine.inputs.materialise_snapshot``) then
moves the dataset's ``CURRENT`` pointer to it, so task instances and run ids agree on one snapshot.

What a snapshot must hold can depend on the tasks that read it (ClinicalQA's row count, VitalDB's
track name): those come as ``options``, gathered from the task families' ``snapshot_options``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Mapping, Protocol

if TYPE_CHECKING:
    from pipelines.engine.specs import DatasetSpec
    from warehouse.layout import DataDir

Log = Callable[[str], None]


@dataclass(frozen=True)
class Materialised:
    """What making a snapshot produced, for asset metadata and logs."""

    snapshot_id: str
    path: Path
    rows: int
    details: dict = field(default_factory=dict)


class Dataset(Protocol):
    """One dataset (``specs/datasets/<slug>.toml``) and how its snapshot is made."""

    slug: ClassVar[str]

    def materialise(self, spec: DatasetSpec, data: DataDir, options: Mapping[str, Any], log: Log) -> Materialised:
        """Write the snapshot into ``data.snapshots(slug)`` (demo data when ``data.kind() == 'demo'``)."""


def is_demo(data: DataDir) -> bool:
    return data.kind() == "demo"
