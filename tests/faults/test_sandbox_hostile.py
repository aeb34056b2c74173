"""Hostile packages: each attempt ends in a one-line failure, and the host is left as it was.

Every package here is installed and run in the real sandbox (bubblewrap, as the unprivileged
sandbox uid), on three plain instances; a package that got what it tried for would answer them
normally, so the run would succeed and the test fail.
"""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
import time
import textwrap
from pathlib import Path

import pytest

from pipelines.official.package import PackageFailed, check_wheel
from pipelines.official.policy import SandboxPolicy
from pipelines.official.run import run_package
from support.wheels import build_wheel

pytestmark = pytest.mark.slow

IDS = ["q1", "q2", "q3"]
INSTANCES = [{"instance_id": i, "question": "?", "findings": "", "options": {"A": "a", "B": "b"}} for i in IDS]
POLICY = SandboxPolicy().with_run_limits(wall_seconds=20, processes=24, memory_bytes=1 << 30,
                                         output_bytes=1 << 20)
ANSWER = "    for i in instances:\n        yield {'instance_id': i['instance_id'], 'output': 'A'}\n"


@pytest.fixture
def open_dir():
    """A directory anyone may read and write (so only the sandbox keeps a package out of it)."""
    path = Path(tempfile.mkdtemp(prefix="medbench-test-open-"))
    path.chmod(0o777)
    yield path
    shutil.rmtree(path)


def run_hostile(tmp_path: Path, body: str, policy: SandboxPolicy = POLICY) -> str:
    """Run a package whose ``predict`` does ``body`` then answers; return the failure reason."""
    source = "import os, sys, json, socket\n\ndef predict(instances, context):\n" + textwrap.indent(
        textwrap.dedent(body), "    ") + "\n" + ANSWER
    wheel = build_wheel(tmp_path, source)
    check_wheel(wheel)
    with pytest.raises(PackageFailed) as failed:
        run_package(policy, wheel, INSTANCES, {"answer_field": "output"}, IDS, "choice")
    reason = str(failed.value)
    assert "\n" not in reason and reason
    return reason


def sandbox_processes() -> list[int]:
    """Pids of sandboxed runners still alive once the kernel has torn the sandbox's pid namespace
    down (it does so asynchronously after the namespace's first process dies: polled, bounded)."""
    for _ in range(100):
        pids = []
        for entry in Path("/proc").iterdir():
            try:
                if entry.name.isdigit() and b"/medbench/runner.py" in (entry / "cmdline").read_bytes():
                    pids.append(int(entry.name))
            except OSError:
                continue
        if not pids:
            return []
        time.sleep(0.1)
    return pids


def test_a_well_behaved_package_answers(tmp_path):
    """The control: the same harness with a harmless package succeeds."""
    wheel = build_wheel(tmp_path, "def predict(instances, context):\n" + ANSWER)
    answers = run_package(POLICY, wheel, INSTANCES, {"answer_field": "output"}, IDS, "choice")
    assert answers.values == {i: "A" for i in IDS}


def test_the_weight_cache_is_readable_and_not_writable(open_dir):
    (open_dir / "weights.safetensors").write_text("W")
    (open_dir / "weights.safetensors").chmod(0o644)
    open_dir.chmod(0o755)
    wheel = build_wheel(open_dir, "def predict(instances, context):\n"
                                  "    seen = open(context['weights'] + '/weights.safetensors').read()\n"
                                  "    try:\n        open(context['weights'] + '/x', 'w')\n        seen += '+written'\n"
                                  "    except OSError:\n        pass\n"
                                  "    for i in instances:\n        yield {'instance_id': i['instance_id'], 'output': seen}\n")
    answers = run_package(POLICY, wheel, INSTANCES, {"answer_field": "output"}, IDS, "choice", weights=open_dir)
    assert answers.values == {i: "W" for i in IDS}
    assert not (open_dir / "x").exists()


def test_opening_a_socket_fails(tmp_path):
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    listener.settimeout(0.1)
    port = listener.getsockname()[1]
    reason = run_hostile(tmp_path, f"socket.create_connection(('127.0.0.1', {port}), timeout=5)\n")
    assert "the package raised" in reason and ("ConnectionRefused" in reason or "OSError" in reason)
    with pytest.raises(socket.timeout):
        listener.accept()  # nothing reached the host
    listener.close()


def test_reading_the_data_directory_labels_and_another_runs_files_fails(tmp_path, open_dir):
    data = open_dir / "data"
    data.mkdir(mode=0o755)
    (data / "labels.parquet").write_text("THE-ANSWERS")
    other_run = Path(tempfile.mkdtemp(prefix="medbench-sandbox-"))  # where another run's work lies
    other_run.chmod(0o755)
    (other_run / "instances.jsonl").write_text("another run")
    for f in (data / "labels.parquet", other_run / "instances.jsonl"):
        f.chmod(0o644)
    reason = run_hostile(tmp_path, f"""
        for path in ({str(data / 'labels.parquet')!r}, {str(other_run / 'instances.jsonl')!r}):
            try:
                open(path).read()
                break
            except OSError:
                pass
        else:
            raise FileNotFoundError('neither the labels nor another run are visible')
        """)
    assert "neither the labels nor another run are visible" in reason
    shutil.rmtree(other_run)


def test_writing_outside_scratch_fails(tmp_path, open_dir):
    host_file = open_dir / "written-by-package"
    reason = run_hostile(tmp_path, f"""
        for path in ({str(host_file)!r}, '/tmp/x', '/venv/x', '/home/sandbox/x', '/input/x', '/x', '/usr/x'):
            try:
                open(path, 'w').write('x')
                break
            except OSError:
                pass
        else:
            raise PermissionError('every write outside scratch was refused')
        """)
    assert "every write outside scratch was refused" in reason
    assert not host_file.exists()


def test_a_fork_bomb_is_stopped_and_leaves_no_process(tmp_path):
    reason = run_hostile(tmp_path, """
        started = 0
        while True:
            try:
                if os.fork() == 0:
                    import time
                    time.sleep(60)
                    os._exit(0)
                started += 1
            except OSError:
                raise RuntimeError(f'fork refused after {started} processes')
        """)
    assert "fork refused after" in reason
    started = int(reason.split("fork refused after ")[1].split()[0])
    assert started < POLICY.run.processes
    assert sandbox_processes() == []


def test_allocating_past_the_memory_limit_fails(tmp_path):
    reason = run_hostile(tmp_path, "hoard = bytearray(4 << 30)\n")
    assert "MemoryError" in reason or "killed" in reason


def test_looping_forever_is_killed_at_the_wall_limit(tmp_path):
    policy = POLICY.with_run_limits(wall_seconds=3)
    reason = run_hostile(tmp_path, "while True:\n    pass\n", policy)
    assert reason == "run stopped: wall time over 3 s"
    assert sandbox_processes() == []


def test_burning_cpu_past_its_limit_is_killed(tmp_path):
    policy = POLICY.with_run_limits(cpu_seconds=1)
    reason = run_hostile(tmp_path, "while True:\n    pass\n", policy)
    assert "CPU time over 1 s" in reason


def test_printing_ten_gigabytes_is_cut_at_the_output_cap(tmp_path):
    reason = run_hostile(tmp_path, """
        block = 'x' * (1 << 20)
        for _ in range(10 << 10):
            print(block)
        """)
    assert reason == f"run stopped: output over {POLICY.run.output_bytes} bytes"


@pytest.mark.parametrize(("answers", "expected"), [
    ("yield {'id': 'q1', 'output': 'A'}", "answer 1 is malformed"),
    ("yield {'instance_id': 'q1', 'output': 7}", "output must be a string"),
    ("yield {'instance_id': 'nope', 'output': 'A'}", "unknown instance_id 'nope'"),
    ("yield {'instance_id': 'q1', 'output': 'A'}\nyield {'instance_id': 'q1', 'output': 'B'}", "repeats instance_id 'q1'"),
    ("yield {'instance_id': 'q1', 'output': 'A'}", "no answer for 2 of 3 instances"),
])
def test_malformed_or_duplicate_answers_fail(tmp_path, answers, expected):
    wheel = build_wheel(tmp_path, "def predict(instances, context):\n" + textwrap.indent(answers, "    ") + "\n")
    with pytest.raises(PackageFailed, match=expected):
        run_package(POLICY, wheel, INSTANCES, {"answer_field": "output"}, IDS, "choice")


def test_the_environment_holds_no_secret(tmp_path, monkeypatch):
    monkeypatch.setenv("MEDBENCH_FAKE_SECRET", "s3cr3t-value")
    assert os.environ["MEDBENCH_FAKE_SECRET"] == "s3cr3t-value"
    reason = run_hostile(tmp_path, """
        seen = json.dumps(dict(os.environ))
        for pid in os.listdir('/proc'):
            if pid.isdigit():
                try:
                    seen += open(f'/proc/{pid}/environ', 'rb').read().decode('latin-1')
                except OSError:
                    pass
        if 's3cr3t-value' in seen:
            instances = [dict(i, instance_id=i['instance_id']) for i in instances]
        else:
            raise LookupError('no secret is visible')
        """)
    assert "no secret is visible" in reason


def test_a_wheel_with_two_entry_points_is_refused_before_running(tmp_path):
    wheel = build_wheel(tmp_path, "def predict(instances, context):\n" + ANSWER, entry_points=2)
    with pytest.raises(PackageFailed, match="declares 2 entry points"):
        check_wheel(wheel)
