"""Run a submitted package's code under bubblewrap, as an unprivileged uid, within limits.

Why each layer:
- ``setpriv`` drops to the policy's dedicated uid *before* ``bwrap``: the kernel ignores
  ``RLIMIT_NPROC`` for root (and ``bwrap --uid`` only renames root inside a user namespace), so a
  fork bomb is stopped only when the real uid is unprivileged.
- ``bwrap`` gives a new root holding only a read-only system (``/usr`` and friends, a few files of
  ``/etc``), an empty read-only home, a scratch tmpfs of bounded size, and the paths a step names;
  new pid, ipc, uts, cgroup and network namespaces (the network is kept only for an install step
  that names an index proxy); a cleared environment; ``--die-with-parent``.
- No shell anywhere: every command is an argv list, and bwrap itself is started with an empty
  environment and reads its arguments from a pipe (``--args FD``), so the sandbox's pid 1 shows
  neither the host's ``PATH`` nor a host path in its ``/proc/1/environ`` or ``/proc/1/cmdline``
  (docs/official-tier.md, "Threat model").
- One limit for the whole process tree (``treelimit.py``: a cgroup v2, else v1, else a watchdog over
  ``/proc``) caps memory, processes and CPU time; ``setrlimit`` in the child still caps each
  process's CPU time, address space, processes, open files and file size; the parent caps wall time
  and output size, and kills the whole process group past any of them. Every tmpfs the step can
  write (scratch, ``/dev/shm``) has a ``--size``.
- Nested namespaces are denied (``--disable-userns``) and a seccomp filter (``seccomp.py``) answers
  EPERM to ``ptrace``, ``keyctl``, ``bpf``, ``mount`` and their kin.

The GPU pool binds ``/dev/nvidia*`` into the sandbox. UNTESTED: no GPU was available where this
was written; the CPU pool is what the tests exercise.
"""

from __future__ import annotations

import os
import resource
import selectors
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from pipelines.official.policy import Limits, SandboxPolicy
from pipelines.official.seccomp import SeccompUnavailable, bpf_program
from pipelines.official.treelimit import TreeLimit

SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
ETC_FILES = ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/alternatives", "/etc/localtime",
             "/etc/ssl", "/etc/ca-certificates", "/etc/pki", "/etc/mime.types")
NETWORK_ETC = ("/etc/resolv.conf", "/etc/hosts", "/etc/nsswitch.conf", "/etc/gai.conf")
HOME = "/home/sandbox"
SCRATCH = "/scratch"
STDERR_KEPT = 4000  # the tail of stderr kept for the failure reason


class SandboxUnavailable(RuntimeError):
    """bubblewrap or setpriv is missing; says what to install."""


@dataclass(frozen=True)
class Mount:
    """A host path bound into the sandbox (read-only unless ``writable``)."""

    source: Path
    target: str
    writable: bool = False


@dataclass
class Outcome:
    """How one sandboxed step ended: its exit status, its answers channel and why it was stopped."""

    returncode: int
    stdout: bytes
    stderr_tail: str
    stopped: str | None = None  # "wall time", "output size", a tree limit: the parent killed it
    wall_seconds: float = 0.0
    limit: str = ""  # the mechanism that held the whole tree: cgroup2, cgroup1 or watchdog
    lines: list[str] = field(default_factory=list)


def check_available() -> None:
    for tool, package in (("bwrap", "bubblewrap"), ("setpriv", "util-linux")):
        if shutil.which(tool) is None:
            raise SandboxUnavailable(f"{tool} is not installed: install Debian's {package} (apt-get install {package})")


def _system_args(python: str) -> list[str]:
    args: list[str] = []
    for d in SYSTEM_DIRS:
        if os.path.islink(d):
            args += ["--symlink", os.readlink(d), d]
        elif os.path.isdir(d):
            args += ["--ro-bind", d, d]
    prefix = str(Path(os.path.realpath(python)).parents[1])
    if not any(prefix == d or prefix.startswith(d + "/") for d in SYSTEM_DIRS):
        args += ["--ro-bind", prefix, prefix]  # a Python installed outside /usr (read-only too)
    for f in ETC_FILES:
        args += ["--ro-bind-try", f, f]
    return args


def _gpu_args() -> list[str]:
    """The NVIDIA device nodes (UNTESTED without a GPU: see the module docstring)."""
    return [a for dev in sorted(Path("/dev").glob("nvidia*")) for a in ("--dev-bind", str(dev), str(dev))]


def launcher(policy: SandboxPolicy, args_fd: int, command: list[str]) -> list[str]:
    """setpriv (drop to the sandbox uid) -> bwrap, whose options come from ``args_fd``, then
    ``command`` (bwrap takes the command itself from its command line: sandbox paths only).

    Run by root, medbench drops to the policy's uid; run by an unprivileged user (who cannot
    switch uid), the package runs as that user, whose processes ``RLIMIT_NPROC`` then counts.
    Absolute paths, found here, because both start with an empty environment (no ``PATH``)."""
    setpriv, bwrap = shutil.which("setpriv"), shutil.which("bwrap")
    assert setpriv and bwrap, "check_available() first"
    drop = ([f"--reuid={policy.uid}", f"--regid={policy.gid}", "--clear-groups", "--inh-caps=-all"]
            if os.geteuid() == 0 else [])
    return [setpriv, *drop, "--no-new-privs", bwrap, "--args", str(args_fd), "--", *command]


def bwrap_argv(policy: SandboxPolicy, limits: Limits, mounts: list[Mount], *,
               network: bool, env: dict[str, str], seccomp_fd: int | None = None) -> list[str]:
    """bwrap's options (they travel through ``--args FD``, never on a command line): the
    namespaces, the filesystem, the environment, the seccomp filter. The one place that says what
    the sandbox holds."""
    argv = ["--unshare-user", "--disable-userns", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
            "--unshare-cgroup-try", "--die-with-parent", "--new-session", "--clearenv",
            "--hostname", "sandbox", "--proc", "/proc", "--dev", "/dev",
            "--size", str(limits.shm_bytes), "--tmpfs", "/dev/shm"]
    if seccomp_fd is not None:
        argv += ["--seccomp", str(seccomp_fd)]
    argv += ["--share-net"] if network else ["--unshare-net"]
    argv += _system_args(policy.python)
    if network:
        for f in NETWORK_ETC:
            argv += ["--ro-bind-try", f, f]
    if policy.pool == "gpu":
        argv += _gpu_args()
    argv += ["--tmpfs", HOME, "--remount-ro", HOME]
    argv += ["--size", str(limits.scratch_bytes), "--tmpfs", SCRATCH]
    for m in mounts:
        argv += ["--bind" if m.writable else "--ro-bind", str(m.source), m.target]
    argv += ["--remount-ro", "/", "--chdir", SCRATCH]
    base_env = {"HOME": HOME, "TMPDIR": SCRATCH, "PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8",
                "PYTHONDONTWRITEBYTECODE": "1", "PYTHONNOUSERSITE": "1"}
    for key, value in {**base_env, **env}.items():
        argv += ["--setenv", key, value]
    return argv


def _args_pipe(args: list[str]) -> int:
    """A pipe holding bwrap's arguments, NUL-terminated, its write end closed; the read end."""
    return _pipe_of(b"".join(os.fsencode(a) + b"\0" for a in args))


def _pipe_of(data: bytes) -> int:
    """A pipe holding ``data``, its write end closed; the read end."""
    read, write = os.pipe()
    try:
        if len(data) > 60_000:  # a pipe buffers 64 KiB: more would block this writer
            raise ValueError(f"bwrap's arguments take {len(data)} bytes; a pipe holds 64 KiB")
        os.write(write, data)
    except BaseException:
        os.close(read)
        raise
    finally:
        os.close(write)
    return read


def _apply_limits(limits: Limits, tree: TreeLimit):
    def preexec() -> None:
        tree.enter()  # before exec: every process the step starts is born inside the tree's limit
        for which, value in ((resource.RLIMIT_AS, limits.memory_bytes), (resource.RLIMIT_NPROC, limits.processes),
                             (resource.RLIMIT_NOFILE, limits.open_files), (resource.RLIMIT_FSIZE, limits.file_bytes),
                             (resource.RLIMIT_CORE, 0)):
            resource.setrlimit(which, (value, value))
        # SIGXCPU at the limit (a nameable death), SIGKILL a second later should it be caught
        resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_seconds, limits.cpu_seconds + 1))
    return preexec


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def run_sandboxed(policy: SandboxPolicy, limits: Limits, mounts: list[Mount], command: list[str], *,
                  network: bool = False, env: dict[str, str] | None = None) -> Outcome:
    """Run ``command`` in the sandbox; stream its output under the cap; kill its group past a limit.

    The sandbox's pid namespace dies with bwrap's child (``--die-with-parent``), so killing the
    process group ends every process the package started, whatever sessions it made."""
    check_available()
    try:
        seccomp_fd = _pipe_of(bpf_program())
    except SeccompUnavailable as missing:
        raise SandboxUnavailable(str(missing)) from None
    try:
        args_fd = _args_pipe(bwrap_argv(policy, limits, mounts, network=network, env=env or {},
                                        seccomp_fd=seccomp_fd))
    except BaseException:
        os.close(seccomp_fd)
        raise
    tree = TreeLimit(limits, policy.tree_limit)
    started = time.monotonic()
    try:
        proc = subprocess.Popen(launcher(policy, args_fd, command), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, env={}, start_new_session=True,
                                preexec_fn=_apply_limits(limits, tree), close_fds=True,
                                pass_fds=(args_fd, seccomp_fd))
    except BaseException:
        tree.close()
        raise
    finally:
        os.close(args_fd)
        os.close(seccomp_fd)
    out, err = bytearray(), bytearray()
    total, stopped = 0, None
    selector = selectors.DefaultSelector()
    selector.register(proc.stdout, selectors.EVENT_READ, out)
    selector.register(proc.stderr, selectors.EVENT_READ, err)
    try:
        while selector.get_map():
            left = limits.wall_seconds - (time.monotonic() - started)
            if left <= 0:
                stopped = f"wall time over {limits.wall_seconds} s"
                break
            stopped = tree.over(proc.pid)
            if stopped:
                break
            for key, _ in selector.select(timeout=min(left, 0.2)):
                chunk = os.read(key.fd, 1 << 16)
                if not chunk:
                    selector.unregister(key.fileobj)
                    continue
                total += len(chunk)
                key.data.extend(chunk)
                if key.data is err and len(err) > STDERR_KEPT:
                    del err[:-STDERR_KEPT]
            if total > limits.output_bytes:
                stopped = f"output over {limits.output_bytes} bytes"
                break
    finally:
        selector.close()
        if stopped is not None:
            _kill_group(proc)
        try:
            proc.wait(timeout=max(1.0, limits.wall_seconds - (time.monotonic() - started)))
        except subprocess.TimeoutExpired:
            stopped = stopped or f"wall time over {limits.wall_seconds} s"
            _kill_group(proc)
            proc.wait()
        _kill_group(proc)  # anything left in the group (bwrap's child takes its pid namespace with it)
        if stopped is None and tree.mechanism != "watchdog":
            stopped = tree.over(proc.pid)  # a memory kill the last poll did not see
        tree.close()
        proc.stdout.close()
        proc.stderr.close()
    return Outcome(returncode=proc.returncode, stdout=bytes(out), stderr_tail=err.decode("utf-8", "replace"),
                   stopped=stopped, wall_seconds=time.monotonic() - started, limit=tree.mechanism)
