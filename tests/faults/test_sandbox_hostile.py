"""Hostile packages: each attempt ends in a one-line failure, and the host is left as it was.

Every package here is installed and run in the real sandbox (bubblewrap, as the unprivileged
sandbox uid), on three plain instances; a package that got what it tried for would answer them
normally, so the run would succeed and the test fail.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
import tempfile
import time
import textwrap
import zipfile
from pathlib import Path

import msgspec
import pytest

from pipelines.official.package import PackageFailed, check_wheel
from pipelines.official.policy import SandboxPolicy, from_env
from pipelines.official.run import run_package
from pipelines.official.treelimit import MECHANISMS, TreeLimit
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


# ---- the door (docs/official-tier.md, "Threat model"): what is refused before anything runs ----

CANARY = "MEDBENCH-INJECTED"


def test_pid_1_of_the_sandbox_shows_no_host_path_or_environment(tmp_path):
    """bwrap starts with an empty environment and reads its options from a pipe (``--args FD``)."""
    host_path = os.environ.get("PATH", "/usr/bin")
    reason = run_hostile(tmp_path, f"""
        seen = open('/proc/1/environ', 'rb').read() + open('/proc/1/cmdline', 'rb').read()
        if b'medbench-sandbox-' in seen or {host_path.encode()!r} in seen or b'--ro-bind' in seen:
            instances = list(instances)  # a host path or the host PATH leaked: answer as if nothing happened
        else:
            raise LookupError('pid 1 holds no host path')
        """)
    assert "pid 1 holds no host path" in reason


@pytest.mark.parametrize("dist_name", [
    "x;echo${IFS}" + CANARY + ">&2;false;y",
    "x$(echo${IFS}" + CANARY + ">&2)",
])
def test_a_dist_info_name_that_injects_a_command_is_refused_at_the_door(tmp_path, dist_name):
    wheel = build_wheel(tmp_path, "def predict(instances, context):\n" + ANSWER, dist_name=dist_name)
    with pytest.raises(PackageFailed, match="is not NAME-VERSION.dist-info") as failed:
        check_wheel(wheel)
    assert CANARY not in str(failed.value).replace(dist_name[:80], "")


def test_a_kept_wheel_whose_file_name_injects_a_command_never_runs_it(tmp_path):
    """What ``medbench reproduce`` hands the sandbox: the kept file under its recorded name. The name is
    an argv item, checked as a wheel name, never read by a shell; ``reproduce_official`` also passes the
    kept wheel through the door again (``check_wheel``), which refuses the name."""
    for n, evil in enumerate((f"hostile_pkg-0.1-py3-none-any.whl;echo${{IFS}}{CANARY}>&2;false",
                              f"hostile_pkg-0.1-py3-none-any;echo${{IFS}}{CANARY}>&2;.whl")):  # the parser passes it
        (tmp_path / str(n)).mkdir()
        wheel = build_wheel(tmp_path / str(n), "def predict(instances, context):\n" + ANSWER, file_name=evil)
        with pytest.raises(PackageFailed) as failed:
            run_package(POLICY, wheel, INSTANCES, {"answer_field": "output"}, IDS, "choice")
        assert "not a valid wheel name" in str(failed.value)
        assert CANARY not in str(failed.value).replace(evil[:80], "")
        with pytest.raises(PackageFailed, match="not a wheel|not a valid wheel file name"):
            check_wheel(wheel)


def test_pip_words_never_reach_the_failure_reason(tmp_path):
    """An install failure (here a requirement the offline install cannot find) is told in our words."""
    wheel = build_wheel(tmp_path, "def predict(instances, context):\n" + ANSWER,
                        metadata_extra="Requires-Dist: medbench-no-such-project-anywhere\n")
    check_wheel(wheel)
    with pytest.raises(PackageFailed) as failed:
        run_package(POLICY, wheel, INSTANCES, {"answer_field": "output"}, IDS, "choice")
    reason = str(failed.value)
    assert reason.startswith("install failed (exit ") and "pip could not install the wheel" in reason
    assert "no-such-project" not in reason and "ERROR" not in reason


def test_a_metadata_name_of_another_project_is_refused(tmp_path):
    mismatched = build_wheel(tmp_path, "def predict(instances, context):\n" + ANSWER, meta_name="numpy")
    with pytest.raises(PackageFailed, match="METADATA names the project 'numpy'"):
        check_wheel(mismatched)
    for taken in ("numpy", "torch", "msgspec"):  # the documented list, and a dependency of medbench
        out = tmp_path / taken
        out.mkdir()
        wheel = build_wheel(out, "def predict(instances, context):\n" + ANSWER, dist_name=taken,
                            file_name=f"{taken}-0.1-py3-none-any.whl")
        with pytest.raises(PackageFailed, match=f"the distribution name '{taken}' is taken"):
            check_wheel(wheel)


@pytest.mark.parametrize(("member", "words"), [
    ("hostile_pkg-0.1.data/purelib/numpy-9.9.dist-info/METADATA", "not one of the package's own folders"),
    ("hostile_pkg-0.1.data/data/install-report.json", "installs outside the package"),
    ("hostile_pkg-0.1.data/scripts/python", "installs outside the package"),
    ("other-1.0.data/purelib/x.py", "a .data folder of another distribution"),
])
def test_a_data_entry_that_plants_a_dist_info_or_writes_outside_the_package_is_refused(tmp_path, member, words):
    wheel = build_wheel(tmp_path, "def predict(instances, context):\n" + ANSWER, extra_files={member: b"x"})
    with pytest.raises(PackageFailed, match=words):
        check_wheel(wheel)


@pytest.mark.parametrize(("kwargs", "words"), [
    ({"extra_files": {"d" * 300 + "/x.py": b""}}, "a folder or file name over 128 bytes"),
    ({"extra_files": {"/".join(["d" * 100] * 6): b""}}, "over 512"),
    ({"dist_name": "n" * 100, "file_name": "long.whl"}, "is not NAME-VERSION.dist-info"),
    ({"dist_name": "caf\u00e9"}, "member names must be printable ASCII"),
    ({"extra_files": {"../escape.py": b""}}, "'..' path parts are not allowed"),
    ({"extra_files": {"/etc/evil.py": b""}}, "absolute paths"),
])
def test_over_long_non_ascii_and_escaping_names_are_refused(tmp_path, kwargs, words):
    wheel = build_wheel(tmp_path, "def predict(instances, context):\n" + ANSWER, **kwargs)
    with pytest.raises(PackageFailed, match=words):
        check_wheel(wheel)


def test_a_symlink_member_is_refused(tmp_path):
    wheel = build_wheel(tmp_path, "def predict(instances, context):\n" + ANSWER)
    with zipfile.ZipFile(wheel, "a") as z:
        link = zipfile.ZipInfo("hostile_pkg_data/link")
        link.external_attr = (0o120777 << 16)
        z.writestr(link, "/etc/passwd")
    with pytest.raises(PackageFailed, match="symbolic links are not allowed"):
        check_wheel(wheel)


def test_resources_only_narrow_the_limits():
    default = SandboxPolicy().run
    wide = from_env("cpu", memory_gib=160, wall_minutes=24 * 60)
    assert wide.run.memory_bytes == default.memory_bytes and wide.run.wall_seconds == default.wall_seconds
    narrow = from_env("cpu", memory_gib=1, wall_minutes=2)
    assert narrow.run.memory_bytes == 1 << 30 and narrow.run.wall_seconds == 120
    assert '"memory_bytes":1073741824' in narrow.describe()  # provenance records the effective limits


# ---- the door over HTTP: a live ``medbench serve``, as an attacker with a submit token sees it ----

REV = "0123456789abcdef0123456789abcdef01234567"


@pytest.fixture(scope="module")
def door(tmp_path_factory):
    """A live server over a published data directory, a submit token for ``acme`` and its quota raised."""
    from support.api_data import publish_fixture
    from support.live_server import medbench_serve
    from medbench.layout import DataDir
    from medbench.submissions import SubmissionStore

    top = tmp_path_factory.mktemp("door")
    publish_fixture(top / "data")
    (top / "data" / "submissions.toml").write_text("[limits]\nquota_per_week = 1000\nrate_limit = 1000\n")
    store = SubmissionStore.for_data(DataDir(top / "data"))
    secret = store.tokens.create("acme", ["submit"])[1]
    store.close()
    with medbench_serve(top / "data", top / "server.log") as server:
        yield server, secret, top
        assert server.alive()
    assert "Traceback" not in server.log()


def _submit(door, wheel_bytes: bytes, n: int) -> str:
    import hashlib

    import httpx

    server, secret, _ = door
    model = {"slug": f"acme/door-{n}", "name": f"Door {n}", "type": "llm", "provider_model_id": f"door-{n}",
             "revision": REV, "backend": "transformers", "settings": {"model": f"acme/door-{n}"}}
    made = httpx.post(f"{server.base}/v1/submissions", headers={"authorization": f"Bearer {secret}"}, timeout=30,
                      json={"model": model, "tasks": ["clinicalqa@0"], "tier": "official",
                            "package_sha256": hashlib.sha256(wheel_bytes).hexdigest()})
    assert made.status_code == 201, made.text
    return made.json()["id"]


def _put(door, sid: str, body, headers: dict | None = None):
    import httpx

    server, secret, _ = door
    return httpx.put(f"{server.base}/v1/submissions/{sid}/package", content=body, timeout=120,
                     headers={"authorization": f"Bearer {secret}", **(headers or {})})


def _refused(response, status: int, code: str, *words: str) -> None:
    assert response.status_code == status, response.text[:500]
    assert response.json()["error"] == code, response.text[:500]
    for word in words:
        assert word in response.json()["message"], response.json()["message"]


def test_a_direct_url_requirement_is_refused_at_upload(door, tmp_path):
    requirement = "helper @ http://127.0.0.1:9/helper-1.0-py3-none-any.whl"
    wheel = build_wheel(tmp_path, "def predict(instances, context):\n" + ANSWER,
                        metadata_extra=f"Requires-Dist: {requirement}\n").read_bytes()
    _refused(_put(door, _submit(door, wheel, 1), wheel), 422, "invalid_submission", requirement,
             "points at a URL or a version-control repository")
    vcs = "helper @ git+https://example.org/helper.git"
    wheel = build_wheel(tmp_path, "def predict(instances, context):\n" + ANSWER,
                        metadata_extra=f"Requires-Dist: {vcs}\n").read_bytes()
    _refused(_put(door, _submit(door, wheel, 2), wheel), 422, "invalid_submission", vcs)


def _peak_rss_reset(pid: int) -> None:
    Path(f"/proc/{pid}/clear_refs").write_text("5")  # the kernel's peak resident size (VmHWM) starts again


def _peak_rss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmHWM for {pid}")


@pytest.mark.parametrize("method", [zipfile.ZIP_BZIP2, zipfile.ZIP_DEFLATED])
def test_a_zip_bomb_leaves_the_server_within_100_mib(door, tmp_path, method):
    """entry_points.txt inflating to 512 MiB: bzip2 (refused by its method) and deflate (refused by its
    declared size, in the child that opens wheels): the server's peak resident size grows < 100 MiB."""
    good = build_wheel(tmp_path, "def predict(instances, context):\n" + ANSWER)
    bomb = tmp_path / "bomb.whl"
    # written block by block so the bomb is never held in this process either
    with zipfile.ZipFile(good) as source, zipfile.ZipFile(bomb, "w") as z:
        for item in source.infolist():
            if not item.filename.endswith("entry_points.txt"):
                z.writestr(item, source.read(item))
        info = zipfile.ZipInfo("hostile_pkg-0.1.dist-info/entry_points.txt")
        info.compress_type = method
        with z.open(info, "w", force_zip64=True) as out:
            out.write(b"[medbench.official]\npredict = hostile_pkg:predict\n")
            block = b"\n" * (1 << 20)
            for _ in range(512):
                out.write(block)
    payload = bomb.read_bytes()
    assert len(payload) < 1 << 20
    server = door[0]
    sid = _submit(door, payload, 10 + method)
    before = server.rss_bytes()
    _peak_rss_reset(server.process.pid)
    _refused(_put(door, sid, payload), 422, "invalid_submission")
    assert _peak_rss(server.process.pid) < before + (100 << 20)
    assert server.alive()


def test_an_over_long_folder_name_answers_422_not_500(door, tmp_path):
    wheel = build_wheel(tmp_path, "def predict(instances, context):\n" + ANSWER,
                        extra_files={"d" * 300 + "/x.py": b""}).read_bytes()
    _refused(_put(door, _submit(door, wheel, 20), wheel), 422, "invalid_submission", "over 128 bytes")


def _wheel_of_size(tmp_path: Path, size: int) -> bytes:
    """A valid wheel of exactly ``size`` bytes: one stored member of random bytes fills it."""
    def build(fill: int) -> Path:
        path = build_wheel(tmp_path, "def predict(instances, context):\n" + ANSWER)
        with zipfile.ZipFile(path, "a") as z:
            z.writestr(zipfile.ZipInfo("hostile_pkg_data/blob.bin"), os.urandom(fill), compress_type=zipfile.ZIP_STORED)
        return path
    overhead = build(1000).stat().st_size - 1000
    return build(size - overhead).read_bytes()


def test_a_100_mib_package_is_accepted_and_one_byte_more_is_413(door, tmp_path):
    limit = 100 << 20
    payload = _wheel_of_size(tmp_path, limit)
    assert len(payload) == limit
    sid = _submit(door, payload, 30)
    accepted = _put(door, sid, payload)
    assert accepted.status_code == 200, accepted.text[:500]
    assert accepted.json()["state"] == "awaiting_approval"
    over = payload + b"\0"
    sid = _submit(door, over, 31)
    _refused(_put(door, sid, over), 413, "payload_too_large", str(limit))


# ---- the run (docs/official-tier.md, "Threat model"): no network at install, one limit per tree ----

def _flat_index(root: Path, wheels: list[Path]) -> str:
    """A PEP 503 simple index on disk (``file://``), readable by the sandbox uid: the configured index."""
    (root / "files").mkdir(parents=True)
    for wheel in wheels:
        project = wheel.name.split("-")[0].replace("_", "-")
        (root / "simple" / project).mkdir(parents=True)
        shutil.copyfile(wheel, root / "files" / wheel.name)
        (root / "simple" / project / "index.html").write_text(
            f'<html><body><a href="../../files/{wheel.name}">{wheel.name}</a></body></html>')
    for path in [root, *root.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    return (root / "simple").as_uri()


def test_with_an_index_the_install_has_no_network_and_installs_the_hashed_wheels(tmp_path, open_dir):
    """The dependency comes from the index, downloaded outside the sandbox; its ``.pth`` (run by every
    interpreter of the environment) tries a host loopback listener and a host abstract socket."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    listener.settimeout(0.1)
    port = listener.getsockname()[1]
    abstract_name = f"\0medbench-test-{os.getpid()}-{port}"
    abstract = socket.socket(socket.AF_UNIX)
    abstract.bind(abstract_name)
    abstract.listen()
    abstract.settimeout(0.1)
    attempt = textwrap.dedent(f"""
        import socket
        for family, address in ((socket.AF_INET, ('127.0.0.1', {port})), (socket.AF_UNIX, {abstract_name!r})):
            try:
                s = socket.socket(family)
                s.settimeout(2)
                s.connect(address)
                s.sendall(b'reached')
            except OSError:
                pass
        """)
    reach = f"import sys; exec({attempt!r})\n"  # a .pth runs its 'import' lines at every start
    dep_dir = tmp_path / "dep"
    dep_dir.mkdir()
    dep = build_wheel(dep_dir, "WORD = 'B'\ndef predict(instances, context):\n    return []\n", name="helper_dep", entry_points=0,
                      extra_files={"helper_dep_reach.pth": reach.encode()})
    index = _flat_index(open_dir / "index", [dep])
    wheel = build_wheel(tmp_path, "import helper_dep\ndef predict(instances, context):\n"
                                  "    for i in instances:\n"
                                  "        yield {'instance_id': i['instance_id'], 'output': helper_dep.WORD}\n",
                        metadata_extra="Requires-Dist: helper-dep\n")
    check_wheel(wheel)
    policy = msgspec.structs.replace(POLICY, index_url=index)
    answers = run_package(policy, wheel, INSTANCES, {"answer_field": "output"}, IDS, "choice")
    assert answers.values == {i: "B" for i in IDS}  # the dependency was installed, offline
    assert answers.installed == [
        {"name": "hostile-pkg", "version": "0.1", "sha256": hashlib.sha256(wheel.read_bytes()).hexdigest()},
        {"name": "helper-dep", "version": "0.1", "sha256": hashlib.sha256(dep.read_bytes()).hexdigest()}]
    for server in (listener, abstract):
        with pytest.raises(socket.timeout):
            server.accept()  # nothing reached the host, at install or at run
        server.close()


def test_a_dependency_with_only_an_sdist_fails_naming_it(tmp_path, open_dir):
    root = open_dir / "index"
    (root / "simple" / "sdist-only").mkdir(parents=True)
    (root / "files").mkdir()
    (root / "files" / "sdist_only-0.1.tar.gz").write_bytes(b"not built, ever")
    (root / "simple" / "sdist-only" / "index.html").write_text(
        '<html><body><a href="../../files/sdist_only-0.1.tar.gz">sdist_only-0.1.tar.gz</a></body></html>')
    for path in [root, *root.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    wheel = build_wheel(tmp_path, "def predict(instances, context):\n" + ANSWER,
                        metadata_extra="Requires-Dist: sdist-only\n")
    policy = msgspec.structs.replace(POLICY, index_url=(root / "simple").as_uri())
    with pytest.raises(PackageFailed) as failed:
        run_package(policy, wheel, INSTANCES, {"answer_field": "output"}, IDS, "choice")
    assert str(failed.value).startswith("dependency 'sdist-only' has no wheel on the index")


def test_a_forged_install_report_is_ignored(tmp_path):
    """The wheel carries its own install report (the door refuses it; here it is run without the
    door, as a kept wheel would be): the signed record is medbench's hashes, not any report."""
    forged = json.dumps({"install": [{"metadata": {"name": "numpy", "version": "9.9"},
                                      "download_info": {"archive_info": {"hashes": {"sha256": "0" * 64}}}}]})
    wheel = build_wheel(tmp_path, "def predict(instances, context):\n" + ANSWER,
                        extra_files={"hostile_pkg-0.1.data/data/install-report.json": forged.encode(),
                                     "install-report.json": forged.encode()})
    answers = run_package(POLICY, wheel, INSTANCES, {"answer_field": "output"}, IDS, "choice")
    assert answers.installed == [
        {"name": "hostile-pkg", "version": "0.1", "sha256": hashlib.sha256(wheel.read_bytes()).hexdigest()}]


TREE_POLICY = POLICY.with_run_limits(memory_bytes=512 << 20, wall_seconds=30)


def _tree_policy(mechanism: str) -> SandboxPolicy:
    return TREE_POLICY if mechanism == "auto" else msgspec.structs.replace(TREE_POLICY, tree_limit=mechanism)


@pytest.mark.parametrize("mechanism", ["auto", "watchdog"])
def test_dev_shm_is_sized(tmp_path, mechanism):
    reason = run_hostile(tmp_path, """
        try:
            with open('/dev/shm/hoard', 'wb') as hoard:
                for _ in range(256):  # MiB: four times the policy's /dev/shm
                    hoard.write(b'x' * (1 << 20))
        except OSError:
            raise RuntimeError('/dev/shm is full')
        """, _tree_policy(mechanism))
    assert "/dev/shm is full" in reason


@pytest.mark.parametrize("mechanism", ["auto", "watchdog"])
def test_memory_is_capped_across_processes(tmp_path, mechanism):
    """Three children of 300 MiB each: each within the per-process cap, together over the tree's."""
    reason = run_hostile(tmp_path, """
        import time
        children = []
        for _ in range(3):
            pid = os.fork()
            if pid == 0:
                hoard = bytearray(b'x') * (300 << 20)
                time.sleep(4)
                os._exit(0)
            children.append(pid)
        if any(os.waitpid(pid, 0)[1] != 0 for pid in children):
            raise RuntimeError('a child was killed')
        """, _tree_policy(mechanism))
    assert "memory over 536870912 bytes (whole process tree)" in reason or "a child was killed" in reason


def test_the_mechanism_that_held_the_tree_is_recorded(tmp_path):
    wheel = build_wheel(tmp_path, "def predict(instances, context):\n" + ANSWER)
    for mechanism in ("auto", "watchdog"):
        policy = msgspec.structs.replace(POLICY, tree_limit=mechanism)
        answers = run_package(policy, wheel, INSTANCES, {"answer_field": "output"}, IDS, "choice")
        expected = TreeLimit(POLICY.run, mechanism)
        expected.close()
        assert answers.limit == expected.mechanism and answers.limit in MECHANISMS
    if os.geteuid() == 0 and Path("/sys/fs/cgroup/memory").is_dir():
        best = TreeLimit(POLICY.run)
        best.close()
        assert best.mechanism == "cgroup1"  # this machine's kind (a v1 hybrid, as root)


def test_nested_namespaces_are_denied(tmp_path):
    reason = run_hostile(tmp_path, """
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.unshare(0x10000000 | 0x40000000) != 0:  # CLONE_NEWUSER | CLONE_NEWNET
            raise PermissionError(f'nested namespaces denied (errno {ctypes.get_errno()})')
        """)
    assert "nested namespaces denied" in reason


@pytest.mark.parametrize(("call", "number"), [("ptrace(PTRACE_TRACEME)", "101, 0, 0, 0, 0"),
                                              ("keyctl(KEYCTL_JOIN_SESSION_KEYRING)", "250, 1, 0, 0, 0"),
                                              ("mount", "165, 0, 0, 0, 0, 0")])
def test_the_seccomp_filter_denies(tmp_path, call, number):
    reason = run_hostile(tmp_path, f"""
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.syscall({number}) == -1 and ctypes.get_errno() == 1:  # EPERM, from the filter
            raise PermissionError({call!r} + ' denied')
        """)
    assert f"{call} denied" in reason


def test_reproducing_a_result_of_the_old_policy_says_so_and_never_reruns(tmp_path, monkeypatch, capsys):
    """A result made under medbench-sandbox/1 stays published; reproducing it here (policy 2) is no
    reproduction: one line, exit 1, and nothing is run or installed."""
    import argparse

    import pipelines.official.reproduce as official_reproduce
    from pipelines.cli.reproduce import _reproduce_official
    from pipelines.official.policy import POLICY_VERSION

    def never(*args, **kwargs):
        raise AssertionError("a result of the old policy was rerun")

    monkeypatch.setattr(official_reproduce, "answer", never)
    monkeypatch.setattr(official_reproduce, "plan_official", never)
    monkeypatch.setenv("MEDBENCH_DATA_DIR", str(tmp_path))
    old = ('medbench-sandbox/1 {"install":{},"install_network":"none","pool":"cpu","run":{},"run_network":"none"}')
    assert POLICY_VERSION != "medbench-sandbox/1"
    result = {"run_id": "0123456789ab", "task": "clinicalqa@0", "model": {"slug": "medbench/random"},
              "versions": {"dataset_snapshot": "x"}, "predictions_sha256": "0" * 64,
              "provenance": {"package_sha256": "a" * 64, "sandbox": old, "submitted_by": "medbench"},
              "config": {"official": {"package_file": "hostile_pkg-0.1-py3-none-any.whl"}}}
    for as_json in (False, True):
        code = _reproduce_official(argparse.Namespace(run_id="0123456789ab", json=as_json), result)
        out, err = capsys.readouterr()
        assert code == 1
        lines = [line for line in err.splitlines() if line.strip()]
        assert len(lines) == 1 and "medbench-sandbox/1" in lines[0] and POLICY_VERSION in lines[0]
        assert "IDENTICAL" not in out + err and "DIFFERENT" not in out + err
        if as_json:
            assert json.loads(out)["identical"] is False
