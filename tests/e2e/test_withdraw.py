"""`medbench withdraw` end to end on the demo: withdrawn in the open, published, never recomputed.

The withdrawn result keeps its folder and is served marked withdrawn; it leaves the current
leaderboard; the release before still has it. Withdrawing it again, or an unknown id, is one line and
exit 1. `medbench materialize` then lists it as withdrawn with its reason and goes on (rule one).
"""

import pytest

from support.commands import run_medbench
from medbench.layout import DataDir
from warehouse.read import open_current
from warehouse.releases import read_releases

pytestmark = pytest.mark.slow


def _board(data: DataDir, task: str) -> list[str]:
    snap = open_current(data)
    try:
        return [r for (r,) in snap.con.execute(
            "SELECT run_id FROM results WHERE task = ? AND status = 'current' ORDER BY run_id", [task]).fetchall()]
    finally:
        snap.close()


def test_withdraw_publishes_and_materialize_leaves_it_alone(tmp_path):
    root = tmp_path / "data"
    run_medbench("materialize", "--demo", "--task", "clinicalqa@0", data=root)
    data = DataDir(root)
    before = read_releases(data)
    (run_id, *_) = _board(data, "clinicalqa@0")
    proc = run_medbench("withdraw", run_id, "--reason", "answer key leaked into the prompt", data=root)
    assert f"release {read_releases(data)[-1].id} attests the withdrawal of {run_id}" in proc.stdout
    assert len(read_releases(data)) == len(before) + 1
    assert run_id not in _board(data, "clinicalqa@0") and data.result_path(run_id).exists()
    manifest = {r["run_id"]: r for r in read_releases(data)[-1].manifest["results"]}
    assert manifest[run_id]["status"] == "withdrawn"
    assert manifest[run_id]["withdrawn"]["reason"] == "answer key leaked into the prompt"
    assert {r["run_id"]: r["status"] for r in before[-1].manifest["results"]}[run_id] == "current"

    again = run_medbench("withdraw", run_id, "--reason", "twice", data=root, check=False)
    assert again.returncode == 1 and again.stderr.count("\n") == 1 and "already withdrawn" in again.stderr
    unknown = run_medbench("withdraw", "0123456789ab", "--reason", "x", data=root, check=False)
    assert unknown.returncode == 1 and "no result 0123456789ab" in unknown.stderr
    assert str(root) in unknown.stderr and "MEDBENCH_DATA=DIR" in unknown.stderr  # where it looked (issue #40)
    for refused in (again, unknown):  # nothing about the key before a refusal (issue #40)
        assert "signing with" not in refused.stdout + refused.stderr, refused.stdout

    proc = run_medbench("materialize", "--demo", "--task", "clinicalqa@0", "--force", data=root)
    line = next(ln for ln in proc.stdout.splitlines() if run_id in ln and " withdrawn " in ln)
    assert "answer key leaked into the prompt" in line
    assert run_id not in _board(data, "clinicalqa@0")
