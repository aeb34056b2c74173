"""The sandbox policy: what a submitted package may use, as one versioned, recorded value.

Why a value: the result of an official run records exactly the policy it ran under
(``provenance.sandbox``), and ``medbench reproduce`` reruns it under the same one; a change of any
limit is a new policy string, so two results never silently disagree on what their code was allowed.
Configuration comes from the environment (``from_env``), so production can name its package-index
proxy, its sandbox user and its limits without a code change.
"""

from __future__ import annotations

import os

import msgspec

POLICY_VERSION = "medbench-sandbox/2"  # 2: offline install from hashed wheels, one limit per process tree
NOBODY = 65534  # Debian's ``nobody``/``nogroup``: owns no file medbench needs


class PolicyChanged(ValueError):
    """A result made under another sandbox policy version: rerunning it here is no reproduction."""


class Limits(msgspec.Struct, frozen=True, kw_only=True):
    """Per-step limits (setrlimit, plus wall time and output size enforced by the parent)."""

    cpu_seconds: int = 600       # the whole process tree's CPU time (and RLIMIT_CPU per process)
    memory_bytes: int = 4 << 30  # the whole tree's memory (and RLIMIT_AS per process)
    processes: int = 64          # the whole tree's processes (and RLIMIT_NPROC of the sandbox uid)
    open_files: int = 256        # RLIMIT_NOFILE
    file_bytes: int = 1 << 30    # RLIMIT_FSIZE: the largest file it may write (scratch only)
    wall_seconds: int = 900      # the whole process group is killed past it
    output_bytes: int = 64 << 20  # stdout + stderr together; past it the run is killed
    scratch_bytes: int = 1 << 30  # the size of the scratch tmpfs
    shm_bytes: int = 64 << 20     # the size of /dev/shm (a tmpfs of its own)


class SandboxPolicy(msgspec.Struct, frozen=True, kw_only=True):
    """Everything that decides what a package may do; ``describe`` is what provenance records."""

    version: str = POLICY_VERSION
    uid: int = NOBODY
    gid: int = NOBODY
    python: str = "/usr/bin/python3"
    index_url: str | None = None  # the package-index proxy; None: install offline from the wheel alone
    pool: str = "cpu"              # "gpu" passes the NVIDIA devices through (untested without a GPU)
    tree_limit: str = "auto"       # treelimit.MECHANISMS: the best available, or one named (tests)
    install: Limits = Limits(cpu_seconds=300, memory_bytes=2 << 30, wall_seconds=600, output_bytes=8 << 20)
    run: Limits = Limits()

    def describe(self) -> str:
        """The policy as one canonical string (``provenance.sandbox``): version, pool, network, limits."""
        body = {"pool": self.pool, "dependencies": "index, wheels only, downloaded outside" if self.index_url else "none",
                "install_network": "none", "run_network": "none", "install": msgspec.to_builtins(self.install),
                "run": msgspec.to_builtins(self.run)}
        return f"{self.version} " + msgspec.json.encode(body, order="sorted").decode()

    def recorded(self, description: str) -> "SandboxPolicy":
        """This machine's policy (uid, python, index) with the version, pool and limits a result
        recorded (``describe``), so a reproduction runs under the limits the result ran under."""
        version, _, body = description.partition(" ")
        if version != self.version:
            raise PolicyChanged(f"the result ran under sandbox policy {version}, this checkout runs {self.version}: "
                                "it cannot be reproduced under another policy (check out a commit of its policy)")
        fields = msgspec.json.decode(body)
        return msgspec.structs.replace(self, pool=fields["pool"], install=msgspec.convert(fields["install"], Limits),
                                       run=msgspec.convert(fields["run"], Limits))

    def effective_limits(self) -> str:
        """The run limits in one line, as ``submissions approve`` prints them."""
        run = self.run
        return (f"pool {self.pool}; run: memory {run.memory_bytes / (1 << 30):g} GiB, wall {run.wall_seconds} s, "
                f"CPU {run.cpu_seconds} s, {run.processes} processes, output {run.output_bytes >> 20} MiB; "
                f"install: memory {self.install.memory_bytes / (1 << 30):g} GiB, wall {self.install.wall_seconds} s")

    def with_run_limits(self, **changes: int) -> "SandboxPolicy":
        return msgspec.structs.replace(self, run=msgspec.structs.replace(self.run, **changes))


def _int_env(name: str, default: int) -> int:
    raw = os.environ.get(name, "").strip()
    return int(raw) if raw else default


def narrowed(limits: Limits, memory_gib: float | None = None, wall_minutes: float | None = None) -> Limits:
    """The limits a request leaves: each the smaller of the policy's and the request's, never more."""
    if memory_gib is not None:
        limits = msgspec.structs.replace(limits, memory_bytes=max(1, min(limits.memory_bytes,
                                                                         int(memory_gib * (1 << 30)))))
    if wall_minutes is not None:
        limits = msgspec.structs.replace(limits, wall_seconds=max(1, min(limits.wall_seconds, int(wall_minutes * 60))))
    return limits


def from_env(pool: str = "cpu", memory_gib: float | None = None, wall_minutes: float | None = None) -> SandboxPolicy:
    """The policy configured for this machine: ``MEDBENCH_SANDBOX_UID``/``_GID`` (the dedicated
    unprivileged user), ``MEDBENCH_SANDBOX_PYTHON``, ``MEDBENCH_SANDBOX_INDEX_URL`` (the index
    proxy), ``MEDBENCH_SANDBOX_TREE_LIMIT`` (``auto`` or one of ``treelimit.MECHANISMS``); a submission's ``resources`` (memory, wall time) narrow the run limits (``narrowed``):
    asking for more than the policy gives the policy's limit."""
    base = SandboxPolicy()
    run = narrowed(base.run, memory_gib, wall_minutes)
    return SandboxPolicy(uid=_int_env("MEDBENCH_SANDBOX_UID", NOBODY), gid=_int_env("MEDBENCH_SANDBOX_GID", NOBODY),
                         python=os.environ.get("MEDBENCH_SANDBOX_PYTHON", base.python),
                         index_url=os.environ.get("MEDBENCH_SANDBOX_INDEX_URL") or None, pool=pool, run=run,
                         tree_limit=os.environ.get("MEDBENCH_SANDBOX_TREE_LIMIT") or base.tree_limit)
