"""Install a package and run it on public instances, each step in the sandbox; validate its answers.

Two sandboxed steps share one work directory, made fresh per run and owned by the sandbox uid
(so no run sees another's files; it is deleted afterwards). The dependencies were resolved and
downloaded beforehand, outside the sandbox, as wheels only, and hashed there
(``pipelines/official/wheels.py``); the install step creates a virtual environment at ``/venv`` and
installs the wheel from those files alone (``pip install --no-index --find-links /wheels``), with no
network: no step of the author's package ever shares one with the host. What was installed is what
medbench hashed, never a report the package could write. Every command is an argv list: no shell
ever reads a name that came from the wheel. What pip prints never reaches a public field: an install
failure is told in medbench's words (docs/official-tier.md, "Threat model"). The run step mounts that
environment read-only, with no network, and runs ``runner.py`` on the instances file.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from medbench.kinds import kind as kind_of
from pipelines.official.package import PackageFailed, sha256_of, wheel_name_problem
from pipelines.official.policy import SandboxPolicy
from pipelines.official.sandbox import Mount, Outcome, run_sandboxed
from pipelines.official.wheels import Dependencies, describe_wheel, download

RUNNER = Path(__file__).with_name("runner.py")
# What a package yields per instance, and how one answer is checked, belong to the task's kind
# (``Kind.answer_field``, ``Kind.check_answer``): a plug-in kind brings its own.
WEIGHTS = "/weights"  # where the read-only weight cache appears in the run step


@dataclass(frozen=True)
class Answers:
    """A package's validated answers, by instance id, and what its install kept."""

    values: dict[str, Any]
    answers_jsonl: bytes  # the answers exactly as yielded, in instance order (what reproduce compares)
    installed: list[dict[str, Any]]  # name, version, sha256 of each wheel installed (hashed by medbench)
    wall_seconds: float
    limit: str = ""  # which mechanism held the run's whole process tree (sandbox.TREE_LIMITS)


def _reason(step: str, outcome: Outcome, limits) -> str:
    if outcome.stopped:
        return f"{step} stopped: {outcome.stopped}"
    signal_number = -outcome.returncode if outcome.returncode < 0 else outcome.returncode - 128
    if signal_number > 0:  # killed by a signal (bwrap reports its child's as 128 + the signal)
        hint = {9: f"killed (CPU time over {limits.cpu_seconds} s or memory over {limits.memory_bytes} bytes)",
                24: f"CPU time over {limits.cpu_seconds} s", 25: f"a file over {limits.file_bytes} bytes"}
        return f"{step} {hint.get(signal_number, f'killed by signal {signal_number}')}"
    if step == "install":  # pip's words (URLs, paths, index answers) are never published
        return (f"install failed (exit {outcome.returncode}): pip could not install the wheel offline from "
                "itself and its dependency wheels (resolved from the index beforehand); install it in a clean virtual environment with pip install "
                "--only-binary=:all: to see why")
    last = [line for line in outcome.stderr_tail.splitlines() if line.strip()]
    return f"{step} failed (exit {outcome.returncode}): {last[-1][:300] if last else 'no message'}"


def _own(path: Path, policy: SandboxPolicy) -> None:
    if os.geteuid() == 0:
        os.chown(path, policy.uid, policy.gid)


def run_package(policy: SandboxPolicy, wheel: Path, instances: list[dict[str, Any]], context: dict[str, Any],
                expected_ids: list[str], kind: str, work_base: Path | None = None,
                weights: Path | None = None, dependencies: Dependencies | None = None) -> Answers:
    """Install ``wheel`` and run it on ``instances``; raises PackageFailed with a one-line reason.

    ``dependencies``: the wheels resolved beforehand (``wheels.download``, or a kept set being
    reproduced); None resolves them here, from the policy's index, outside the sandbox.

    ``weights``: a folder medbench filled beforehand from the model's pinned revision, mounted
    read-only at ``/weights`` for the run step (``context["weights"]`` says where, or None)."""
    context = {**context, "weights": WEIGHTS if weights is not None else None}
    work = Path(tempfile.mkdtemp(prefix="medbench-sandbox-", dir=work_base))
    try:
        os.chmod(work, 0o755)
        venv = work / "venv"
        venv.mkdir()
        _own(venv, policy)
        shutil.copy(wheel, work / wheel.name)
        (work / "instances.jsonl").write_text("".join(json.dumps(i, ensure_ascii=False) + "\n" for i in instances))
        (work / "context.json").write_text(json.dumps(context))
        for f in work.iterdir():
            if f.is_file():
                os.chmod(f, 0o644)
        if dependencies is None:
            fetched = work / "fetch"
            fetched.mkdir()
            dependencies = download(policy, wheel, fetched)
        _install(policy, work, wheel.name, dependencies)
        installed = [{k: w[k] for k in ("name", "version", "sha256")}
                     for w in (describe_wheel(work / wheel.name), *dependencies.wheels)]
        mounts = [Mount(venv, "/venv"), Mount(RUNNER, "/medbench/runner.py"),
                  Mount(work / "instances.jsonl", "/input/instances.jsonl"),
                  Mount(work / "context.json", "/input/context.json")]
        if weights is not None:
            mounts.append(Mount(weights, WEIGHTS))
        run = run_sandboxed(policy, policy.run, mounts, ["/venv/bin/python", "-I", "/medbench/runner.py", "/input/instances.jsonl", "/input/context.json"])
        strategy = kind_of(kind)
        values, ordered = validate_answers(run, policy, expected_ids, strategy.answer_field, strategy.check_answer)
        return Answers(values=values, answers_jsonl=ordered, installed=installed, wall_seconds=run.wall_seconds,
                       limit=run.limit)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def install_commands(policy: SandboxPolicy, wheel_name: str) -> list[list[str]]:
    """The install step's commands, argv lists run one after the other (never through a shell):
    offline, from the wheel and the dependency wheels downloaded beforehand (``/wheels``)."""
    return [[policy.python, "-I", "-m", "venv", "/venv"],
            ["/venv/bin/python", "-I", "-m", "pip", "install", "--disable-pip-version-check", "--no-cache-dir",
             "--only-binary=:all:", "--no-compile", "--no-index", "--find-links", "/wheels", "--",
             f"/wheel/{wheel_name}"]]


def _install(policy: SandboxPolicy, work: Path, wheel_name: str, dependencies: Dependencies) -> None:
    if wheel_name_problem(wheel_name):
        raise PackageFailed(f"the package file name {wheel_name[:80]!r} is not a valid wheel name")
    wheels = work / "wheels"  # a copy the sandbox uid can read, wherever the set was kept
    wheels.mkdir(mode=0o755)
    for w in dependencies.wheels:
        assert dependencies.folder is not None
        shutil.copyfile(dependencies.folder / w["file"], wheels / w["file"])
        os.chmod(wheels / w["file"], 0o644)
        if sha256_of(wheels / w["file"]) != w["sha256"]:  # what is installed is what was recorded
            raise PackageFailed(f"dependency wheel {w['file']!r} changed after it was hashed")
    mounts = [Mount(work / "venv", "/venv", writable=True), Mount(work / wheel_name, f"/wheel/{wheel_name}"),
              Mount(wheels, "/wheels")]
    for command in install_commands(policy, wheel_name):
        outcome = run_sandboxed(policy, policy.install, mounts, command, network=False)
        if outcome.stopped or outcome.returncode != 0:
            raise PackageFailed(_reason("install", outcome, policy.install))


def validate_answers(outcome: Outcome, policy: SandboxPolicy, expected_ids: list[str],
                     field: str, check: Callable[[Any], Any] | None = None) -> tuple[dict[str, Any], bytes]:
    """The answers by instance id, or PackageFailed naming the first broken rule."""
    if outcome.stopped or outcome.returncode < 0 or outcome.returncode > 128:
        raise PackageFailed(_reason("run", outcome, policy.run))
    values: dict[str, Any] = {}
    expected = set(expected_ids)
    done = None
    for number, line in enumerate(outcome.stdout.decode("utf-8", "replace").splitlines(), 1):
        try:
            answer = json.loads(line)
        except ValueError:
            raise PackageFailed(f"answer {number} is not JSON") from None
        if isinstance(answer, dict) and "medbench_error" in answer:
            raise PackageFailed(f"the package raised {str(answer['medbench_error'])[:300]}")
        if isinstance(answer, dict) and set(answer) == {"medbench_done"}:
            done = answer["medbench_done"]
            break
        values[_instance_id(answer, number, field, expected, values)] = _value(answer, number, field, check)
    if outcome.returncode != 0:
        raise PackageFailed(_reason("run", outcome, policy.run))
    if done is None:
        raise PackageFailed("the package's answers ended before the runner finished")
    missing = expected - set(values)
    if missing:
        raise PackageFailed(f"no answer for {len(missing)} of {len(expected)} instances (e.g. {sorted(missing)[0]!r})")
    ordered = "".join(json.dumps({"instance_id": i, field: values[i]}, ensure_ascii=False, sort_keys=True) + "\n"
                      for i in expected_ids)
    return values, ordered.encode("utf-8")


def _instance_id(answer: Any, number: int, field: str, expected: set[str], seen: dict[str, Any]) -> str:
    if not isinstance(answer, dict) or set(answer) != {"instance_id", field}:
        keys = sorted(answer) if isinstance(answer, dict) else type(answer).__name__
        raise PackageFailed(f"answer {number} is malformed: expected keys instance_id and {field}, got {keys}")
    iid = answer["instance_id"]
    if not isinstance(iid, str) or iid not in expected:
        raise PackageFailed(f"answer {number} names an unknown instance_id {str(iid)[:60]!r}")
    if iid in seen:
        raise PackageFailed(f"answer {number} repeats instance_id {iid!r}")
    return iid


def _value(answer: dict[str, Any], number: int, field: str, check: Callable[[Any], Any] | None = None) -> Any:
    value = answer[field]
    if check is not None:  # the kind's own check (``Kind.check_answer``): a ValueError says what is wrong
        try:
            return check(value)
        except ValueError as exc:
            raise PackageFailed(f"answer {number}: {exc}") from None
    if field == "output":
        if not isinstance(value, str):
            raise PackageFailed(f"answer {number}: output must be a string, got {type(value).__name__}")
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or not 0 <= value <= 1:
        raise PackageFailed(f"answer {number}: score must be a finite number in [0, 1], got {str(value)[:40]}")
    return float(value)
