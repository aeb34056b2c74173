"""medbench-toyhospital: a medbench plug-in distribution (dataset ``toyhospital``, families
``toyhospital-transfusion`` (kind score) and ``toyhospital-anaemia`` (kind choice)).

Why it exists: it is the proof that a family is a plug-in. It is installed like any third-party
package and found through its entry points (``pyproject.toml``); medbench is not edited for it.
Its spec files ship inside the package (``specs_dir()``), to be copied into a specs directory
next to the project's own (model specs list tasks, so they travel together).
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path


def specs_dir() -> Path:
    """The plug-in's spec files (datasets/, tasks/, models/), laid out like medbench's ``specs/``."""
    return Path(str(files(__name__) / "specs"))
