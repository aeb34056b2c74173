"""Pinning a replay model to the content of its outputs file, at spec load time.

Why: a replay model's outputs are its weights. Before this, the generation key and the run id held
the file's *path*, so a file replaced under the same path (right answers -> all "A") reused the
old outputs and republished the old score. The loader now sets the model's effective revision to
``sha256:<hex>`` of the file's bytes, so the content enters the model spec hash, the generation key
and the run id through the fields the run id's formula already has (docs/concepts.md, "Run ids"). A relative ``outputs`` is resolved
against the spec file's folder (never the current directory) and kept, as an absolute path, in the
settings' local field ``resolved``, which is neither hashed nor published.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import msgspec

UNREADABLE = "sha256:unreadable"  # no result can be made from it: reading the file fails at run time


def file_sha256(path: Path) -> str | None:
    """The sha256 of a file's bytes, or None when it cannot be read."""
    digest = hashlib.sha256()
    try:
        with Path(path).open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
    except OSError:
        return None
    return digest.hexdigest()


def resolve_outputs(spec_path: Path, outputs: str) -> Path:
    """``outputs`` as written in the spec at ``spec_path``: ``~`` expanded, relative to the spec's folder."""
    path = Path(outputs).expanduser()
    if not path.is_absolute():
        path = Path(spec_path).resolve().parent / path
    return path


def pin_replay(spec_path: Path, spec, error: type[Exception]):
    """The replay model spec with ``settings.resolved`` and ``revision`` set from its outputs file."""
    settings = spec.settings
    if settings.resolved:
        raise error(f"{spec_path}: unknown key `settings.resolved` (the loader sets it; remove it)")
    path = resolve_outputs(spec_path, settings.outputs)
    sha = file_sha256(path)
    revision = f"sha256:{sha}" if sha else UNREADABLE
    return msgspec.structs.replace(spec, revision=revision,
                                   settings=msgspec.structs.replace(settings, resolved=str(path)))
