"""``medbench ui``: the Dagster UI on the data directory's instance, stopped cleanly (issue #23).

``dagster dev`` warned (a SupersessionWarning, "dagster.yaml ... will not be used") and, started in
the background by a shell, ignored SIGTERM and SIGINT together with its children. Here the command
is started as a shell's background job is (its own session, SIGINT ignored as a non-interactive
shell leaves it), waited for until the webserver answers, then signalled: it and every process it
started must be gone when it exits 0."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from support.paths import REPO

from pipelines.cli.process_group import group_members

pytestmark = pytest.mark.slow


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _descendants(pid: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        children.setdefault(int(text[text.rindex(")") + 2:].split()[1]), []).append(int(stat.parent.name))
    out, todo = set(), [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.add(child)
            todo.append(child)
    return out


def _alive(pid: int) -> bool:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return text[text.rindex(")") + 2:].split()[0] != "Z"


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_medbench_ui_serves_the_data_dirs_instance_and_stops_with_every_child(tmp_path, sig):
    data = tmp_path / "data"
    data.mkdir()
    (data / "KIND").write_text("demo\n")
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if k != "DAGSTER_HOME"}
    env.update(MEDBENCH_DATA=str(data), PYTHONUNBUFFERED="1")
    out, err = tmp_path / "stdout", tmp_path / "stderr"
    with open(out, "w") as stdout, open(err, "w") as stderr:
        # As `cmd &` in a non-interactive shell: SIGINT ignored (inherited through exec), its own session.
        proc = subprocess.Popen(["sh", "-c", 'trap "" INT; exec "$0" "$@"', sys.executable, "-m", "pipelines.cli.main",
                                 "ui", "--port", str(port)], cwd=REPO, env=env, stdout=stdout, stderr=stderr,
                                stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 180  # start-up only; nothing here is timed
        while True:
            assert proc.poll() is None, f"medbench ui exited {proc.returncode}:\n{err.read_text()[-3000:]}"
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/server_info", timeout=5):
                    break
            except OSError:
                assert time.monotonic() < deadline, f"no answer on {port}:\n{err.read_text()[-3000:]}"
                time.sleep(0.5)
        started = _descendants(proc.pid)
        names = {Path(f"/proc/{p}/cmdline").read_bytes().replace(b"\0", b" ").decode() for p in started if _alive(p)}
        assert any("dagster-webserver" in n for n in names) and any("dagster-daemon" in n for n in names), names
        assert (data / "dagster" / "dagster.yaml").exists()  # the instance the CLI records in
        proc.send_signal(sig)
        assert proc.wait(timeout=120) == 0, err.read_text()[-3000:]
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert [p for p in started if _alive(p)] == []
    assert group_members(proc.pid) == []
    text = err.read_text() + out.read_text()
    assert "SupersessionWarning" not in text and "will not be used" not in text and "ignored" not in text
    assert f"http://127.0.0.1:{port}" in out.read_text()
