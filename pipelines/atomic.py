"""Writing a file so that readers see either the old content or the whole new one, never a part."""

from __future__ import annotations

import os
from pathlib import Path


def atomic_write_bytes(path: Path, payload: bytes) -> None:
    """Write ``payload`` to a temporary file beside ``path``, fsync it, then rename it into place."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "wb") as fh:
        fh.write(payload)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
