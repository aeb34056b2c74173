"""Running the ``medbench`` command as a user would: a subprocess on a given data directory."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from support.paths import REPO


def run_medbench(*args: str, data: Path, timeout: int = 600, check: bool = True,
                 env: dict | None = None) -> subprocess.CompletedProcess:
    full_env = {**os.environ, "MEDBENCH_DATA": str(data), "DAGSTER_HOME": str(data / "dagster"),
                "PYTHONUNBUFFERED": "1", **(env or {})}
    proc = subprocess.run([sys.executable, "-m", "pipelines.cli.main", *args], cwd=REPO, env=full_env,
                          capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(f"medbench {' '.join(args)} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
    return proc
