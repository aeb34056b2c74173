"""The official tier's pure parts: run identity, the package checks, the answers' validation, the policy."""

import hashlib
import json
import os
import zipfile

import pytest

from pipelines.engine.identity import run_id
from pipelines.official.package import PackageFailed, check_wheel
from pipelines.official.policy import SandboxPolicy
from pipelines.official.run import validate_answers
from pipelines.official.sandbox import Outcome, bwrap_argv, launcher
from support.plugins import specs as load_specs
from support.wheels import build_wheel

SHA = "ab" * 32


def test_a_package_changes_the_run_id_and_no_package_keeps_it():
    specs = load_specs()
    task, model = specs.task("clinicalqa@0"), specs.model("medbench/random")
    baseline = run_id(model, task, "snap")
    assert run_id(model, task, "snap", None) == baseline
    assert run_id(model, task, "snap", SHA) != baseline
    assert run_id(model, task, "snap", SHA) != run_id(model, task, "snap", "cd" * 32)


def test_a_package_that_scores_validation_windows_has_its_own_run_id():
    """IOH packages also score the validation windows (issue 41): their run ids differ from a test-only
    run of the same package, while families whose packages score test instances only keep theirs."""
    specs = load_specs()
    task, model = specs.task("vitaldb-ioh@0"), specs.model("medbench/neg-last-map")
    test_only = run_id(model, task, "snap", SHA, "d")
    assert run_id(model, task, "snap", SHA, "d", official_splits=("test", "validation")) != test_only
    assert run_id(model, task, "snap", official_splits=("test", "validation")) == run_id(model, task, "snap")
    from pipelines.tasks.clinicalqa.family import ClinicalQA
    from pipelines.tasks.vitaldb_ioh.family import VitalDbIoh
    assert ClinicalQA.official_splits == ("test",) and VitalDbIoh.official_splits == ("test", "validation")


def test_check_wheel_names_what_is_wrong(tmp_path):
    good = build_wheel(tmp_path, "def predict(instances, context):\n    return []\n")
    assert check_wheel(good) == hashlib.sha256(good.read_bytes()).hexdigest()
    with pytest.raises(PackageFailed, match="differs from the submitted package_sha256"):
        check_wheel(good, SHA)
    (tmp_path / "x.tar.gz").write_bytes(b"x")
    with pytest.raises(PackageFailed, match="not a wheel"):
        check_wheel(tmp_path / "x.tar.gz")
    (tmp_path / "bad.whl").write_bytes(b"not a zip")
    with pytest.raises(PackageFailed, match="not a zip"):
        check_wheel(tmp_path / "bad.whl")
    with zipfile.ZipFile(tmp_path / "none.whl", "w") as z:
        z.writestr("m.py", "")
    with pytest.raises(PackageFailed, match="it has 0 .dist-info folders"):
        check_wheel(tmp_path / "none.whl")
    with zipfile.ZipFile(good) as source, zipfile.ZipFile(tmp_path / "hostile_pkg-0.1-py2-none-any.whl", "w") as z:
        for item in source.infolist():
            if not item.filename.endswith("entry_points.txt"):
                z.writestr(item, source.read(item))
    with pytest.raises(PackageFailed, match="no entry_points.txt"):
        check_wheel(tmp_path / "hostile_pkg-0.1-py2-none-any.whl")


def _outcome(lines, returncode=0):
    body = "".join(json.dumps(line) + "\n" for line in lines)
    return Outcome(returncode=returncode, stdout=body.encode(), stderr_tail="")


def test_valid_answers_come_back_in_instance_order_and_canonical_bytes():
    policy = SandboxPolicy()
    values, ordered = validate_answers(_outcome([{"instance_id": "b", "score": 0.25}, {"instance_id": "a", "score": 1},
                                                 {"medbench_done": 2}]), policy, ["a", "b"], "score")
    assert values == {"a": 1.0, "b": 0.25}
    assert ordered == b'{"instance_id": "a", "score": 1.0}\n{"instance_id": "b", "score": 0.25}\n'


@pytest.mark.parametrize(("lines", "reason"), [
    ([{"instance_id": "a", "score": 1.5}, {"medbench_done": 1}], "score must be a finite number in"),
    ([{"instance_id": "a", "score": True}, {"medbench_done": 1}], "score must be a finite number in"),
    ([{"instance_id": "a", "score": 0.1, "label": 1}, {"medbench_done": 1}], "malformed"),
    ([{"instance_id": "a", "score": 0.1}], "ended before the runner finished"),
    ([{"medbench_error": "ValueError: boom"}], "the package raised ValueError: boom"),
])
def test_broken_answers_fail_with_one_line(lines, reason):
    with pytest.raises(PackageFailed, match=reason):
        validate_answers(_outcome(lines), SandboxPolicy(), ["a"], "score")


def test_the_policy_is_recorded_and_read_back():
    policy = SandboxPolicy(pool="gpu").with_run_limits(memory_bytes=1 << 30, wall_seconds=60)
    text = policy.describe()
    assert text.startswith("medbench-sandbox/2 ") and '"run_network":"none"' in text and '"install_network":"none"' in text
    assert SandboxPolicy().recorded(text) == policy
    with pytest.raises(ValueError, match="sandbox policy"):
        SandboxPolicy().recorded("medbench-sandbox/0 {}")


def test_the_run_step_has_no_network_and_drops_to_the_sandbox_uid():
    policy = SandboxPolicy()
    argv = bwrap_argv(policy, policy.run, [], network=False, env={})
    start = launcher(policy, 7, ["true"])
    dropped = [f"--reuid={policy.uid}"] if os.geteuid() == 0 else ["--no-new-privs"]
    assert start[0].endswith("/setpriv") and start[1:2] == dropped
    assert start[-5:] == [start[-5], "--args", "7", "--", "true"] and start[-5].endswith("/bwrap")
    assert "--unshare-net" in argv and "--share-net" not in argv and "--clearenv" in argv
    assert "--disable-userns" in argv and argv.index("--disable-userns") > argv.index("--unshare-user")
    shm = argv.index("/dev/shm")
    assert argv[shm - 3:shm] == ["--size", str(policy.run.shm_bytes), "--tmpfs"] and shm > argv.index("--dev")
    assert "--seccomp" not in argv and "--seccomp" in bwrap_argv(policy, policy.run, [], network=False, env={},
                                                                  seccomp_fd=9)
    assert argv[argv.index("--remount-ro") + 1] == "/home/sandbox"
