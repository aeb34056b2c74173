"""Typed asset metadata: the UI plots floats and ints, opens paths, and keeps each key's type.

Why a helper: metadata handed to Dagster as bare strings ("n/a" under a float key, a CI as text,
``str(path)``) cannot be plotted or compared across materializations. ``typed`` picks the
``MetadataValue`` for each Python value and drops ``None`` (a key is absent, never a fake value).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import dagster as dg


def value(v: Any) -> dg.MetadataValue | None:
    if v is None or isinstance(v, dg.MetadataValue):
        return v
    if isinstance(v, bool):
        return dg.MetadataValue.bool(v)
    if isinstance(v, int):
        return dg.MetadataValue.int(v)
    if isinstance(v, float):
        return dg.MetadataValue.float(v) if math.isfinite(v) else None
    if isinstance(v, Path):
        return dg.MetadataValue.path(str(v))
    if isinstance(v, (dict, list, tuple)):
        return dg.MetadataValue.json(v)
    return dg.MetadataValue.text(str(v))


def typed(meta: dict[str, Any]) -> dict[str, dg.MetadataValue]:
    """``meta`` with every value typed; keys whose value is None (or not finite) are left out."""
    return {k: tv for k, v in meta.items() if (tv := value(v)) is not None}
