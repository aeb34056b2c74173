"""Shared fixtures: isolated data directories and Dagster homes, and a demo warehouse built once
per test session through the real `medbench materialize --demo` path."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def run_medbench(*args: str, data: Path, timeout: int = 600, check: bool = True,
                 env: dict | None = None) -> subprocess.CompletedProcess:
    full_env = {**os.environ, "MEDBENCH_DATA": str(data), "DAGSTER_HOME": str(data / "dagster"),
                "PYTHONUNBUFFERED": "1", **(env or {})}
    proc = subprocess.run([sys.executable, "-m", "pipelines.cli.main", *args], cwd=REPO, env=full_env,
                          capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(f"medbench {' '.join(args)} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
    return proc


@pytest.fixture(scope="session")
def demo_data(tmp_path_factory) -> Path:
    """A data directory with the demo materialised once (shared, treat as read-only)."""
    data = tmp_path_factory.mktemp("demo-data")
    run_medbench("materialize", "--demo", data=data)
    return data
