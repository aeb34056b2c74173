"""One evaluation at a time per partition: two materializations of one run pay for it once.

The fault: two ``medbench materialize --model medbench/tiny-llama`` started two seconds apart both
generated all 1,045 items (the raw-output file ended with 2,090 lines) and both wrote result.json.
Here two processes run the same partition through the engine at the same moment with a slow
model; the partition lock (``pipelines.engine.locks``) makes the second wait, say for whom, and
reuse: every item is generated once, one result is written.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import msgspec
import pytest
from support.paths import REPO, SUPPORT

pytestmark = pytest.mark.slow

TASK, MODEL = "clinicalqa@0", "medbench/random"


def _fresh_copy(demo_data: Path, tmp_path: Path) -> tuple[Path, str]:
    """The demo data directory without the random model's run and its stored outputs."""
    from pipelines.engine.evaluate import resolve_evaluation
    from support.plugins import specs as load_specs
    from medbench.layout import DataDir

    data = tmp_path / "data"
    shutil.copytree(demo_data, data, symlinks=True, ignore=shutil.ignore_patterns("dagster"))
    dd = DataDir(data)
    ev = resolve_evaluation(load_specs(), dd, TASK, MODEL)
    info = msgspec.json.decode((dd.run_dir(ev.run_id) / "run.json").read_bytes())
    dd.generations(info["generation_key"]).unlink()
    shutil.rmtree(dd.run_dir(ev.run_id))
    return data, info["generation_key"]


def test_two_at_once_generate_once_and_write_one_result(demo_data: Path, tmp_path: Path) -> None:
    data, key = _fresh_copy(demo_data, tmp_path)
    calls = tmp_path / "calls.txt"
    start_at = time.time() + 3.0  # both processes imported and planned by then
    env = {**os.environ, "MEDBENCH_DATA": str(data), "PYTHONPATH": f"{REPO}:{REPO / 'tests'}"}
    command = [sys.executable, str(SUPPORT / "lock_driver.py"), "--data", str(data), "--task", TASK,
               "--model", MODEL, "--calls", str(calls), "--start-at", str(start_at)]
    procs = [subprocess.Popen(command, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True) for _ in range(2)]
    outs = [p.communicate(timeout=300)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], "\n".join(outs)

    from medbench.layout import DataDir

    n = 1045 if "1045" in "".join(outs) else None
    stored = DataDir(data).generations(key).read_text().splitlines()
    handed = calls.read_text().splitlines()
    assert len(stored) == len(set(json.loads(line)["instance_id"] for line in stored))  # no id twice
    assert len(handed) == len(stored), f"items handed to the model: {len(handed)}, stored: {len(stored)}"
    if n is not None:
        assert len(stored) == n
    ends = [json.loads(out.strip().splitlines()[-1]) for out in outs]
    assert ends[0]["run_id"] == ends[1]["run_id"]
    reused = ["reusing the predictions the other evaluation just made" in out for out in outs]
    assert sum(reused) == 1, "\n".join(outs)  # exactly one waited for the other's predictions ...
    waiter, other = outs[reused.index(True)], procs[reused.index(False)]
    assert f"pid {other.pid}" in waiter  # ... and said for whom it waited
    assert ends[0]["created_at"] == ends[1]["created_at"]  # one result.json, written once
    assert sum("reusing its result" in out for out in outs) == 1
