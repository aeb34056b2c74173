"""``dagster-webserver`` and ``dagster-daemon`` on an instance, driven the way the UI drives them.

Why the webserver and not ``dagster job backfill``: that command makes one run per partition
itself, ignoring the assets' backfill policy, while the UI's "Launch backfill" / "Materialize all"
send the ``launchPartitionBackfill`` GraphQL mutation and the daemon plans the runs (one ranged run
per family under the single-run policy). Used by ``bench/ui_backfill.py`` and the slow-lane tests.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Self

from bench._measure import REPO_ROOT
from bench._servers import LOOPBACK, free_port, stop_group

BIN = Path(sys.executable).parent

LAUNCH = """mutation($p: LaunchBackfillParams!) { launchPartitionBackfill(backfillParams: $p) {
  __typename ... on LaunchBackfillSuccess { backfillId } ... on PythonError { message } } }"""
STATUS = """query($id: String!) { partitionBackfillOrError(backfillId: $id) {
  __typename ... on PartitionBackfill { status } ... on PythonError { message } } }"""


class UIError(RuntimeError):
    """A process exited, an answer was an error, or something did not finish in time."""


SYNC = ("import dagster as dg\n"
        "from pipelines.dagster.partitions import sync_evaluation_partitions\n"
        "from medbench.registry import installed_plugins\n"
        "from pipelines.engine.specs import load_specs\n"
        "with dg.DagsterInstance.get() as i: sync_evaluation_partitions(i, load_specs(None, installed_plugins()))")


def sync_partitions(env: dict[str, str]) -> None:
    """The evaluation partitions of the specs, added to the instance (what the sensor does on its
    first tick), so a backfill launched at once sees them all."""
    proc = subprocess.run([sys.executable, "-c", SYNC], cwd=REPO_ROOT, env=env, capture_output=True, text=True,
                          timeout=300, check=False)
    if proc.returncode != 0:
        raise UIError(f"syncing the evaluation partitions failed:\n{proc.stderr[-3000:]}")


class DagsterUI:
    """Both processes on ``env`` (DAGSTER_HOME, MEDBENCH_DATA, ...), logs under ``logs``; a context
    manager that stops them (by process group: the daemon may leave children behind)."""

    def __init__(self, env: dict[str, str], logs: Path):
        self.env, self.logs, self.port = env, logs, free_port()
        self.procs: dict[str, subprocess.Popen] = {}

    def __enter__(self) -> Self:
        self.logs.mkdir(parents=True, exist_ok=True)
        commands = {"daemon": [str(BIN / "dagster-daemon"), "run", "-w", "workspace.yaml"],
                    "webserver": [str(BIN / "dagster-webserver"), "-w", "workspace.yaml", "-h", LOOPBACK,
                                  "-p", str(self.port)]}
        for name, cmd in commands.items():
            with open(self.logs / f"{name}.log", "w") as log:
                self.procs[name] = subprocess.Popen(cmd, cwd=REPO_ROOT, env=self.env, stdout=log,
                                                    stderr=subprocess.STDOUT, start_new_session=True)
        self._wait_ready()
        return self

    def __exit__(self, *exc) -> None:
        for proc in self.procs.values():
            stop_group(proc)

    def log_tail(self, name: str, chars: int = 4000) -> str:
        return (self.logs / f"{name}.log").read_text()[-chars:]

    def alive(self) -> None:
        for name, proc in self.procs.items():
            if proc.poll() is not None:
                raise UIError(f"dagster-{name} exited {proc.returncode}:\n{self.log_tail(name)}")

    def _wait_ready(self, timeout: float = 180) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.alive()
            try:
                with urllib.request.urlopen(f"http://{LOOPBACK}:{self.port}/server_info", timeout=5):
                    return
            except OSError:
                time.sleep(1)
        raise UIError(f"dagster-webserver did not answer in {timeout:.0f} s:\n{self.log_tail('webserver')}")

    def graphql(self, query: str, variables: dict) -> dict:
        body = json.dumps({"query": query, "variables": variables}).encode()
        req = urllib.request.Request(f"http://{LOOPBACK}:{self.port}/graphql", body,
                                     {"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=60) as resp:
            out = json.loads(resp.read())
        if "errors" in out:
            raise UIError(f"GraphQL errors: {out['errors']}")
        return out["data"]

    def launch_backfill(self, assets: list[str], partitions: list[str] | None = None) -> str:
        """An asset backfill of ``assets`` (all partitions, or ``partitions``), as the UI launches it."""
        params: dict = {"assetSelection": [{"path": [a]} for a in assets]}
        params.update({"partitionNames": partitions} if partitions else {"allPartitions": True})
        out = self.graphql(LAUNCH, {"p": params})["launchPartitionBackfill"]
        if out["__typename"] != "LaunchBackfillSuccess":
            raise UIError(f"launchPartitionBackfill: {out}")
        return out["backfillId"]

    def wait_backfill(self, backfill_id: str, timeout: float = 1800) -> str:
        """The backfill's final status (COMPLETED_SUCCESS when every targeted partition materialized)."""
        deadline, status = time.monotonic() + timeout, ""
        while time.monotonic() < deadline:
            self.alive()
            status = self.graphql(STATUS, {"id": backfill_id})["partitionBackfillOrError"].get("status", "")
            if status and status not in ("REQUESTED", "CANCELING"):
                return status
            time.sleep(0.5)
        raise UIError(f"backfill {backfill_id} still {status} after {timeout:.0f} s:\n{self.log_tail('daemon')}")
