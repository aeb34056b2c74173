"""Submitted packages on disk: what makes a file an acceptable wheel, and the name it is kept under.

Why in the storage layer: the API receives a package (``PUT /v1/submissions/{id}/package``) and
the engine runs it, and both must agree on exactly what was accepted. A package is a wheel (a zip
with one top-level ``.dist-info``) declaring exactly one entry point in group ``medbench.official``,
at most ``MAX_PACKAGE_BYTES``, whose sha256 is the one submitted. It is kept as
``<data>/packages/<sha256>/<name>-<version>-<tags>.whl`` (``DataDir.package_path``): the file name
is rebuilt from the wheel's own metadata, since pip reads the tags from it.
"""

from __future__ import annotations

import configparser
import hashlib
import re
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


def _dist_info(wheel: zipfile.ZipFile, label: str) -> str:
    found = sorted({n.split("/", 1)[0] for n in wheel.namelist() if n.split("/", 1)[0].endswith(".dist-info")})
    if len(found) != 1:
        raise PackageFailed(f"{label}: not a wheel (it has {len(found)} .dist-info folders, not one)")
    return found[0]


def wheel_filename(path: Path) -> str:
    """The wheel's canonical file name, from its ``.dist-info`` folder and its ``WHEEL`` tags."""
    with zipfile.ZipFile(path) as wheel:
        info = _dist_info(wheel, path.name)
        meta = wheel.read(f"{info}/WHEEL").decode("utf-8", "replace") if f"{info}/WHEEL" in wheel.namelist() else ""
    tags = [line.split(":", 1)[1].strip() for line in meta.splitlines() if line.lower().startswith("tag:")]
    if not tags or not all(re.fullmatch(r"[\w.]+-[\w.]+-[\w.]+", t) for t in tags):
        raise PackageFailed(f"{path.name}: not a wheel (its WHEEL file names no valid tag)")
    parts = [t.split("-") for t in tags]
    joined = "-".join(".".join(sorted({p[i] for p in parts})) for i in range(3))
    return f"{info.removesuffix('.dist-info')}-{joined}.whl"


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
        try:
            parser.read_string(wheel.read(names[0]).decode("utf-8"))
        except (configparser.Error, UnicodeDecodeError) as exc:
            raise PackageFailed(f"{path.name}: entry_points.txt cannot be read ({type(exc).__name__})") from None
    found = list(parser[GROUP]) if parser.has_section(GROUP) else []
    if len(found) != 1:
        raise PackageFailed(f"{path.name}: declares {len(found)} entry points in group {GROUP!r}, not exactly one")
    return sha
