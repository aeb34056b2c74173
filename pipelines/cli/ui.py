"""``medbench ui [--host H] [--port P]``: the Dagster UI on this data directory, stopped cleanly.

Why a command and not ``dagster dev``: ``dagster dev`` (1.13) prints a SupersessionWarning pointing
to ``dg dev`` (not installed here), warns that the checkout's ``dagster.yaml`` in the current
folder is ignored (the instance is ``$DAGSTER_HOME``, not the checkout), and, started in the
background by a shell, ignores SIGINT together with its children (a non-interactive shell starts
background jobs with SIGINT ignored, and they inherit it). This command runs what ``dagster dev``
runs, ``dagster-webserver`` and ``dagster-daemon``, directly, on the instance ``medbench
materialize`` records in (``DAGSTER_HOME``, default ``<data dir>/dagster``, seeded with the
checkout's dagster.yaml), in one process group of their own. On SIGTERM or SIGINT (Ctrl-C) it
sends SIGTERM to that group, waits until every process in it is gone (KILL after a bound) and
exits 0; if either child exits on its own it stops the other and exits 1.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

STOP_TIMEOUT_S = 20


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("ui", help="the Dagster UI (webserver and daemon) on this data directory",
                       description="Run dagster-webserver and dagster-daemon on the data directory's Dagster "
                       "instance (DAGSTER_HOME, default <MEDBENCH_DATA>/dagster); Ctrl-C or SIGTERM stops both.")
    p.add_argument("--host", default="127.0.0.1", help="interface to listen on (default: 127.0.0.1)")
    p.add_argument("--port", type=int, default=3000, help="port of the UI (default: 3000)")
    p.set_defaults(func=run)


def _executable(name: str) -> str:
    """``name`` next to this Python (the venv's), else on PATH; one line naming the fix if neither."""
    beside = Path(sys.executable).parent / name
    found = str(beside) if beside.exists() else shutil.which(name)
    if not found:
        raise SystemExit(f"medbench ui: {name} not found next to {sys.executable} or on PATH: "
                         "install the project (./scripts/setup) in this environment")
    return found


def run(args: argparse.Namespace) -> int:
    from pipelines.cli.process_group import stop_group
    from pipelines.dagster.orchestrate import REPO_ROOT, prepare_dagster_home
    from medbench.layout import DATA_ENV, DataDir

    data = DataDir()
    home = prepare_dagster_home(data)
    env = {**os.environ, "DAGSTER_HOME": str(home), DATA_ENV: str(data.root)}
    workspace = str(REPO_ROOT / "workspace.yaml")
    stop = []

    def request_stop(signum, _frame) -> None:
        stop.append(signum)

    # Installed before the children start: a signal handled here is reset to its default in a child
    # at exec, whereas one this process inherited as ignored (a shell's background job) would stay
    # ignored in the children too.
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, request_stop)
    webserver = subprocess.Popen([_executable("dagster-webserver"), "-w", workspace, "-h", args.host,
                                  "-p", str(args.port)], cwd=REPO_ROOT, env=env, process_group=0,
                                 stdin=subprocess.DEVNULL)
    children = {"dagster-webserver": webserver}
    try:
        children["dagster-daemon"] = subprocess.Popen([_executable("dagster-daemon"), "run", "-w", workspace],
                                                      cwd=REPO_ROOT, env=env, process_group=webserver.pid,
                                                      stdin=subprocess.DEVNULL)
        host = "127.0.0.1" if args.host in ("0.0.0.0", "::") else args.host
        print(f"Dagster UI: http://{host}:{args.port}  (instance {home}, data {data.root}); "
              "Ctrl-C stops it", flush=True)
        while not stop and all(p.poll() is None for p in children.values()):
            time.sleep(0.2)
    finally:
        stop_group(webserver, STOP_TIMEOUT_S, [p for p in children.values() if p is not webserver])
    if stop:
        print(f"medbench ui: stopped ({signal.Signals(stop[0]).name})", file=sys.stderr, flush=True)
        return 0
    exited = next(f"{name} exited with {p.returncode}" for name, p in children.items() if p.returncode is not None)
    print(f"medbench ui: {exited} (its output is above); the other was stopped", file=sys.stderr, flush=True)
    return 1
