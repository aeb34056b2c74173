"""deploy/dagster.yaml for real: PostgreSQL storage, the queued run coordinator with pools, and
`dagster-daemon`, with `medbench materialize --demo` against them. Everything evaluates as with the
embedded default instance, the run history is in Postgres, and the published warehouse holds the same
results (run ids and metric values) as an embedded-default materialization of the same demo."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest

from support.commands import run_medbench
from support.paths import REPO
from support.processes import stop_group

pytestmark = pytest.mark.slow
DAEMON = Path(sys.executable).with_name("dagster-daemon")


def deploy_home(path: Path, pg, extra: str = "") -> tuple[Path, dict]:
    """A DAGSTER_HOME holding deploy/dagster.yaml as is, and the environment it reads."""
    path.mkdir(parents=True, exist_ok=True)
    (path / "dagster.yaml").write_text((REPO / "deploy" / "dagster.yaml").read_text() + extra)
    return path, {**pg.env(), "DAGSTER_HOME": str(path)}


def results(data: Path) -> list[tuple]:
    with duckdb.connect(str(data / "medbench.duckdb"), read_only=True) as con:
        return con.execute("SELECT r.run_id, m.name, m.value, m.ci_low, m.ci_high FROM results r "
                           "JOIN metrics m USING (run_id) ORDER BY r.run_id, m.name").fetchall()


def outcomes(stdout: str) -> dict[str, tuple[str, str]]:
    """partition -> (status, run_id) from the report table `medbench materialize` prints."""
    rows = {}
    for line in stdout.splitlines():
        parts = line.split()
        if len(parts) >= 3 and "|" in parts[0] and parts[1] in {"ran", "reused", "skipped", "failed"}:
            rows[parts[0]] = (parts[1], parts[2])
    return rows


def test_demo_on_postgres_with_daemon_matches_embedded_default(postgres, tmp_path, demo_data):
    pg = postgres.create_db("medbench_deploy")
    home, env = deploy_home(tmp_path / "dagster-home", pg)
    full_env = {**os.environ, **env, "PYTHONUNBUFFERED": "1"}
    daemon_log = open(tmp_path / "daemon.log", "w")
    daemon = subprocess.Popen([str(DAEMON), "run", "-w", "workspace.yaml"], cwd=REPO, env=full_env,
                              stdout=daemon_log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        _wait_for_daemon_heartbeats(pg, daemon, tmp_path / "daemon.log")
        data = tmp_path / "data"
        proc = run_medbench("materialize", "--demo", data=data, env=env, timeout=900)
        assert daemon.poll() is None, "dagster-daemon exited during the run"
    finally:
        stop_group(daemon)
        daemon_log.close()
    print(proc.stdout[-3000:])

    # The deploy config was used as is (not replaced by the checkout's embedded one).
    assert (home / "dagster.yaml").read_text().startswith((REPO / "deploy" / "dagster.yaml").read_text())
    assert not (data / "dagster" / "dagster.yaml").exists()

    # Every evaluation ran, was reused or skipped exactly as with the embedded default instance.
    embedded = run_medbench("materialize", "--demo", data=demo_data, timeout=900)  # reuses: all done
    mine, theirs = outcomes(proc.stdout), outcomes(embedded.stdout)
    assert mine, f"no report rows in the output:\n{proc.stdout[-4000:]}\n{proc.stderr[-3000:]}"
    assert set(mine) == set(theirs), (proc.stdout[-4000:], embedded.stdout[-4000:])
    for key, (status, run_id) in mine.items():
        assert run_id == theirs[key][1], key
        assert status == ("skipped" if theirs[key][0] == "skipped" else "ran"), (key, status)
    assert any(s == "ran" for s, _ in mine.values())

    # The run history is in Postgres: one successful run per input, evaluation and publish.
    runs = pg.query("SELECT run_id, status FROM runs")
    ran = sum(1 for s, _ in mine.values() if s == "ran")
    assert len(runs) >= ran + 2, runs
    assert {status for _, status in runs} == {"SUCCESS"}, runs
    events = pg.query("SELECT count(*) FROM event_logs WHERE dagster_event_type = 'ASSET_MATERIALIZATION'")
    assert events[0][0] >= 2 * ran
    # The CLI's runs carry their pool tag (the limits of deploy/dagster.yaml applied to them).
    pools = {v for (v,) in pg.query("SELECT value FROM run_tags WHERE key = 'medbench/pool'")}
    assert pools and pools <= {"gpu", "api", "cpu"}, pools
    # The daemon ran against the same Postgres instance (its heartbeats are there).
    assert pg.query("SELECT count(*) FROM daemon_heartbeats")[0][0] >= 1

    # The same warehouse as the embedded default: same run ids, same metric values and intervals.
    assert results(data) == results(demo_data)
    assert len({r[0] for r in results(data)}) == ran


def _wait_for_daemon_heartbeats(pg, daemon: subprocess.Popen, log: Path, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if daemon.poll() is not None:
            pytest.fail(f"dagster-daemon exited {daemon.returncode}:\n{log.read_text()[-4000:]}", pytrace=False)
        try:
            if pg.query("SELECT count(*) FROM daemon_heartbeats")[0][0] >= 1:
                return
        except Exception:  # tables not created yet
            pass
        time.sleep(1)
    pytest.fail(f"dagster-daemon wrote no heartbeat in {timeout}s:\n{log.read_text()[-4000:]}", pytrace=False)
