"""Build small wheels for the official-tier tests: the worked example, and hostile packages.

A hostile package is one module whose ``predict`` is given as source text; the wheel is written
directly (a zip with the dist-info files pip needs), so no build step runs and each test stays fast.

Its file name is shared on purpose: test support named after the production module it stands in for
or builds.
"""

from __future__ import annotations

import base64
import hashlib
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

from support.paths import REPO

EXAMPLE = REPO / "examples" / "official-package"


def build_example_wheel(out: Path) -> Path:
    """The worked example built with pip offline, without build isolation (setuptools is installed)."""
    source = out / "src-copy"
    shutil.copytree(EXAMPLE, source)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "--no-index",
                    "-w", str(out), str(source)], check=True, timeout=300)
    return next(out.glob("*.whl"))


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def build_wheel(out: Path, module_source: str, *, name: str = "hostile_pkg", entry_points: int = 1,
                dist_name: str | None = None, meta_name: str | None = None, metadata_extra: str = "",
                extra_files: dict[str, bytes] | None = None, file_name: str | None = None) -> Path:
    """A wheel of one module ``name`` whose ``predict`` is ``module_source``; ``entry_points`` of them.

    Hostile variations: ``dist_name`` (the ``.dist-info`` folder's name part), ``meta_name``
    (METADATA's ``Name``), ``metadata_extra`` (more METADATA lines, e.g. ``Requires-Dist``),
    ``extra_files`` (more members), ``file_name`` (the wheel's own file name)."""
    dist = f"{dist_name or name}-0.1.dist-info"
    eps = "".join(f"predict{k} = {name}:predict\n" for k in range(entry_points))
    files = {
        f"{name}.py": module_source.encode(),
        **(extra_files or {}),
        f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: {meta_name or dist_name or name}\nVersion: 0.1\n{metadata_extra}".encode(),
        f"{dist}/WHEEL": b"Wheel-Version: 1.0\nGenerator: medbench-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        f"{dist}/entry_points.txt": f"[medbench.official]\n{eps}".encode(),
    }
    record = [_record_line(n, d) for n, d in files.items()] + [f"{dist}/RECORD,,"]
    files[f"{dist}/RECORD"] = ("\n".join(record) + "\n").encode()
    path = out / (file_name or f"{name}-0.1-py3-none-any.whl")
    with zipfile.ZipFile(path, "w") as wheel:
        for n, d in files.items():
            wheel.writestr(n, d)
    return path
