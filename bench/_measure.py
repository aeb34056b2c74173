"""Measuring a piece of work in a child process, so that its peak memory is its own.

Peak memory is the child's ``resource.getrusage(RUSAGE_SELF).ru_maxrss`` (the kernel's high-water
mark of resident memory, interpreter and imports included). tracemalloc would miss most of it:
numpy, Arrow and polars allocate outside Python's allocator.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
GIB = 1024**3


def peak_rss_bytes() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux reports KiB


def child_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """This process's environment, the repository first on ``PYTHONPATH``, then ``extra`` (for every child)."""
    path = os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))
    return {**os.environ, "PYTHONPATH": path, **(extra or {})}


def run_child(module: str, payload: dict) -> dict:
    """Run ``python -m module --child '<json>'`` and return the JSON object it prints last."""
    done = subprocess.run(
        [sys.executable, "-m", module, "--child", json.dumps(payload)],
        cwd=REPO_ROOT,
        env=child_env(),
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise RuntimeError(f"{module} child failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def report_child(result: dict) -> None:
    """The child's last line: its result plus its own peak RSS."""
    result["peak_rss_bytes"] = peak_rss_bytes()
    print(json.dumps(result), flush=True)
