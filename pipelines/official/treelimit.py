"""One limit for a sandboxed step's whole process tree: memory, processes and CPU time together.

Why: ``setrlimit`` counts per process (``RLIMIT_AS``, ``RLIMIT_CPU``) or per uid across every run
(``RLIMIT_NPROC``), so three children of 700 MiB each passed a 1 GiB cap. The best mechanism the
machine offers is used, in this order, and recorded with the result (``config.official.tree_limit``):

1. ``cgroup2``: a cgroup v2 per step (``memory.max``, ``memory.swap.max``, ``pids.max``; CPU from
   ``cpu.stat``);
2. ``cgroup1``: a cgroup per step in each v1 hierarchy (``memory.limit_in_bytes`` and
   ``memsw``, ``pids.max``; CPU from ``cpuacct.usage``);
3. ``watchdog``: the parent sums the tree's resident memory and CPU time from ``/proc`` several
   times a second and counts its processes, and kills the whole tree past a limit.

tmpfs pages are charged to a cgroup's memory; for the watchdog, which sees resident memory only,
every tmpfs the sandbox can write (scratch, ``/dev/shm``) has its own ``--size``, so the whole tree
holds at most the memory limit plus those sizes (docs/official-tier.md, "Threat model"). Creating a
cgroup needs the right to write the hierarchy (root, or a delegated subtree); without it the next
mechanism is used.
"""

from __future__ import annotations

import os
import signal
import time
import uuid
from pathlib import Path

from pipelines.official.policy import Limits

CGROUP_ROOT = Path("/sys/fs/cgroup")
MECHANISMS = ("cgroup2", "cgroup1", "watchdog")
PAGE = os.sysconf("SC_PAGE_SIZE")
TICKS = os.sysconf("SC_CLK_TCK")


def _own_path(controller: str) -> str | None:
    """This process's cgroup path in the hierarchy holding ``controller`` ("" for v2)."""
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if (controller in controllers.split(",")) if controller else controllers == "":
            return path
    return None


def _write(path: Path, value: str) -> None:
    with open(path, "w") as handle:
        handle.write(value)


class TreeLimit:
    """The limit of one step; ``enter`` runs in the child before it execs, ``over`` in the parent."""

    def __init__(self, limits: Limits, wanted: str = "auto"):
        self.limits = limits
        self.dirs: list[Path] = []
        self.mechanism = "watchdog"
        order = MECHANISMS if wanted == "auto" else (wanted,)
        for mechanism in order:
            if mechanism == "watchdog" or getattr(self, f"_make_{mechanism}")():
                self.mechanism = mechanism
                break
        else:
            raise ValueError(f"tree limit {wanted!r} is not available on this machine")

    def _make_cgroup2(self) -> bool:
        own = _own_path("")
        base = CGROUP_ROOT / (own or "/").lstrip("/")
        controllers = (CGROUP_ROOT / "cgroup.controllers")
        if own is None or not controllers.exists() or not {"memory", "pids"} <= set(controllers.read_text().split()):
            return False
        try:
            group = base / f"medbench-{uuid.uuid4().hex[:12]}"
            group.mkdir()
            self.dirs = [group]
            _write(group / "memory.max", str(self.limits.memory_bytes))
            _write(group / "memory.swap.max", "0")
            _write(group / "pids.max", str(self.limits.processes))
            return True
        except OSError:
            self.close()
            return False

    def _make_cgroup1(self) -> bool:
        name = f"medbench-{uuid.uuid4().hex[:12]}"
        try:
            for controller in ("memory", "pids", "cpuacct"):
                own = _own_path(controller)
                if own is None or not (CGROUP_ROOT / controller).is_dir():
                    raise OSError(f"no v1 {controller} hierarchy")
                group = CGROUP_ROOT / controller / own.lstrip("/") / name
                group.mkdir()
                self.dirs.append(group)
            memory, pids, _ = self.dirs
            _write(memory / "memory.limit_in_bytes", str(self.limits.memory_bytes))
            if (memory / "memory.memsw.limit_in_bytes").exists():  # no swap beyond the limit
                _write(memory / "memory.memsw.limit_in_bytes", str(self.limits.memory_bytes))
            _write(pids / "pids.max", str(self.limits.processes))
            return True
        except OSError:
            self.close()
            return False

    def enter(self) -> None:
        """Move the calling process (the child, before exec) into the step's cgroups."""
        for group in self.dirs:
            _write(group / "cgroup.procs", str(os.getpid()))

    def over(self, root: int) -> str | None:
        """Why the tree must be stopped now (a limit passed), or None."""
        limits = self.limits
        if self.mechanism == "watchdog":
            rss, cpu, count = _tree_usage(root)
            if rss > limits.memory_bytes:
                return f"memory over {limits.memory_bytes} bytes (whole process tree)"
            if count > limits.processes:
                return f"processes over {limits.processes} (whole process tree)"
        else:
            cpu = self._cgroup_cpu()
            if self._oom_killed():
                return f"memory over {limits.memory_bytes} bytes (whole process tree)"
        if cpu > limits.cpu_seconds:
            return f"CPU time over {limits.cpu_seconds} s (whole process tree)"
        return None

    def _cgroup_cpu(self) -> float:
        try:
            if self.mechanism == "cgroup2":
                stat = dict(line.split() for line in (self.dirs[0] / "cpu.stat").read_text().splitlines())
                return int(stat.get("usage_usec", 0)) / 1e6
            return int((self.dirs[2] / "cpuacct.usage").read_text()) / 1e9
        except (OSError, ValueError, IndexError):
            return 0.0

    def _oom_killed(self) -> bool:
        try:
            text = (self.dirs[0] / ("memory.events" if self.mechanism == "cgroup2" else "memory.oom_control")).read_text()
        except OSError:
            return False
        counts = dict(line.split() for line in text.splitlines() if len(line.split()) == 2)
        return int(counts.get("oom_kill", 0)) > 0

    def close(self) -> None:
        """Kill whatever is left in the step's cgroups, then remove them."""
        for group in self.dirs:
            for _ in range(50):
                try:
                    pids = [int(p) for p in (group / "cgroup.procs").read_text().split()]
                except OSError:
                    pids = []
                for pid in pids:
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                try:
                    group.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.05)
        self.dirs = []


def _tree_usage(root: int) -> tuple[int, float, int]:
    """Resident bytes, CPU seconds (children reaped included) and process count of ``root``'s tree."""
    parents: dict[int, int] = {}
    stats: dict[int, list[str]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        pid = int(entry.name)
        parents[pid] = int(fields[1])
        stats[pid] = fields
    tree, frontier = {root}, [root]
    children: dict[int, list[int]] = {}
    for pid, parent in parents.items():
        children.setdefault(parent, []).append(pid)
    while frontier:
        for child in children.get(frontier.pop(), []):
            if child not in tree:
                tree.add(child)
                frontier.append(child)
    rss = cpu = 0
    for pid in tree:
        fields = stats.get(pid)
        if fields is None:
            continue
        cpu += sum(int(fields[i]) for i in (11, 12, 13, 14))  # utime stime cutime cstime
        rss += int(fields[21]) * PAGE
    return rss, cpu / TICKS, len(tree)
