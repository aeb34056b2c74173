"""A submitted package: a wheel exposing one entry point in group ``medbench.official``.

The contract (docs/official-tier.md): the entry point is a callable ``predict(instances, context)``
that takes an iterable of the task's public instances (dicts; never a label or an answer) and a
context dict (task ref, kind, the answer field, the options), and yields one dict per instance:
``{"instance_id", "output"}`` for choice tasks (raw text, parsed by the task's own parser) or
``{"instance_id", "score"}`` for score tasks (a probability of the event, in [0, 1]).

Checked here, before anything runs: the file is a wheel (a zip with a ``.dist-info``), its sha256
is the one submitted, and it declares exactly one ``medbench.official`` entry point. Installing it
(wheels only, so no build code runs) and running it happen in the sandbox (``run.py``).
"""

from __future__ import annotations

import configparser
import hashlib
import zipfile
from pathlib import Path

GROUP = "medbench.official"
MAX_PACKAGE_BYTES = 100 << 20


class PackageFailed(RuntimeError):
    """The package broke the contract or a sandbox limit; the message is the one-line reason."""


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def check_wheel(path: Path, expected_sha256: str | None = None) -> str:
    """The wheel's sha256, after checking it is a wheel with one ``medbench.official`` entry point."""
    path = Path(path)
    if not path.name.endswith(".whl"):
        raise PackageFailed(f"{path.name}: not a wheel (the file name must end in .whl)")
    if path.stat().st_size > MAX_PACKAGE_BYTES:
        raise PackageFailed(f"{path.name}: {path.stat().st_size} bytes, over the {MAX_PACKAGE_BYTES} byte limit")
    sha = sha256_of(path)
    if expected_sha256 is not None and sha != expected_sha256:
        raise PackageFailed(f"{path.name}: sha256 {sha} differs from the submitted package_sha256 {expected_sha256}")
    if not zipfile.is_zipfile(path):
        raise PackageFailed(f"{path.name}: not a wheel (not a zip archive)")
    with zipfile.ZipFile(path) as wheel:
        names = [n for n in wheel.namelist() if n.count("/") == 1 and n.endswith(".dist-info/entry_points.txt")]
        if not names:
            raise PackageFailed(f"{path.name}: no entry_points.txt; declare one entry point in group {GROUP!r}")
        parser = configparser.ConfigParser(delimiters=("=",), interpolation=None)
        parser.optionxform = str  # entry point names keep their case
        parser.read_string(wheel.read(names[0]).decode("utf-8"))
    found = list(parser[GROUP]) if parser.has_section(GROUP) else []
    if len(found) != 1:
        raise PackageFailed(f"{path.name}: declares {len(found)} entry points in group {GROUP!r}, not exactly one")
    return sha
