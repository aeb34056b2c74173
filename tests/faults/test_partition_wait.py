"""A second ``medbench materialize`` of a partition being evaluated waits for it, then reuses it.

The fault (issue #22): the launcher's partition lock never waited. A second materialization of a
partition another process was evaluating failed at once ("being evaluated by another process",
exit 1), where the README promises it waits and then reuses. Here a first run evaluates a model
behind a loopback server that holds its answers until the second run has said it waits; the
second then reports the partition reused, both exit 0, and every item was asked of the model
once. A third run with a short bound (``--lock-wait``) gives up with one line and exit 1.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from support.commands import run_medbench
from support.loopback_chat_server import LoopbackChatServer, Reply
from support.model_specs import specs_with_served
from support.paths import REPO

pytestmark = pytest.mark.slow

PARTITION = "clinicalqa@0|acme/served"
ARGS = ("materialize", "--demo", "--task", "clinicalqa@0", "--model", "acme/served")


class Output:
    """A process's merged output, read in a thread; ``wait_for`` blocks until a line contains a text."""

    def __init__(self, proc: subprocess.Popen):
        self.proc, self.lines, self._changed = proc, [], threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            with self._changed:
                self.lines.append(line)
                self._changed.notify_all()
        with self._changed:
            self.lines.append(None)
            self._changed.notify_all()

    def wait_for(self, text: str, timeout: float = 300) -> str:
        with self._changed:
            found = self._changed.wait_for(
                lambda: None in self.lines or any(text in line for line in self.lines if line), timeout)
            assert found and any(text in line for line in self.lines if line), self.text()
            return next(line for line in self.lines if line and text in line)

    def text(self) -> str:
        return "".join(line for line in self.lines if line)

    def finish(self, timeout: float = 600) -> tuple[int, str]:
        rc = self.proc.wait(timeout)
        with self._changed:
            self._changed.wait_for(lambda: None in self.lines, 30)
        return rc, self.text()


def test_a_second_run_waits_for_the_first_then_reuses_its_result(tmp_path: Path) -> None:
    data = tmp_path / "data"
    answering, first_asked = threading.Event(), threading.Event()

    def script(instance_id: str, attempt: int) -> Reply:
        first_asked.set()
        answering.wait(300)  # held until the second run has said that it waits
        return Reply()

    with LoopbackChatServer(script) as server:
        specs = specs_with_served(tmp_path / "specs", server.base_url)
        env = {"MEDBENCH_SPECS": str(specs)}
        run_medbench("materialize", "--demo", "--task", "clinicalqa@0", "--model", "medbench/random",
                     data=data, env=env)  # inputs and the instance exist: the runs below race only on the partition
        full_env = {**os.environ, "MEDBENCH_DATA": str(data), "DAGSTER_HOME": str(data / "dagster"),
                    "PYTHONUNBUFFERED": "1", **env}

        def start(*extra: str) -> Output:
            return Output(subprocess.Popen([sys.executable, "-m", "pipelines.cli.main", *ARGS, *extra], cwd=REPO,
                                           env=full_env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))

        first = start()
        assert first_asked.wait(300), first.text()  # the first run holds the partition and is generating
        second, impatient = start(), start("--lock-wait", "0.5")
        waiting = second.wait_for("being evaluated by another process")
        assert f"{PARTITION}: being evaluated by another process (host " in waiting
        assert f"pid {first.proc.pid}" in waiting and "waiting up to 600 s" in waiting
        rc, out = impatient.finish()
        assert rc == 1, out
        assert f"{PARTITION} is being evaluated by another process" in out and "still after 0.5 s" in out
        answering.set()
        (rc1, out1), (rc2, out2) = first.finish(), second.finish()

    assert (rc1, rc2) == (0, 0), f"{out1}\n\n{out2}"
    assert any(line.startswith(PARTITION) and " ran " in line for line in out1.splitlines()), out1
    assert any(line.startswith(PARTITION) and " reused " in line for line in out2.splitlines()), out2
    asked = [json.dumps(r.body["messages"]) for r in server.requests]
    assert len(asked) == len(set(asked)) == 1045  # every item asked of the model once
    import dagster as dg

    with dg.DagsterInstance.from_config(str(data / "dagster")) as instance:
        runs = instance.get_runs(filters=dg.RunsFilter(tags={"dagster/partition": PARTITION}))
    assert len(runs) == 1  # one evaluation run: the second process reused it, it did not run it again
