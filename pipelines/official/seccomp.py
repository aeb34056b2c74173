"""The seccomp filter every sandboxed step runs under: a few system calls answer EPERM.

Why: the namespaces keep a package away from the host's files and network, but a kernel call
the sandbox never needs is attack surface all the same. ``ptrace`` (and ``process_vm_*``) would
let one process of the tree read another's memory, the key-ring calls reach the kernel's keys,
``bpf`` and ``perf_event_open`` load code into or read from the kernel, and ``mount`` and its kin
change what the sandbox sees. Everything else is allowed, and a 32-bit call (another ABI) kills
the process (libseccomp's default for a foreign architecture), so the list cannot be dodged.

The filter is built by Debian's ``python3-seccomp`` (libseccomp's own bindings), which installs into
the system interpreter only: a helper run with ``/usr/bin/python3`` writes the BPF program, which
bwrap loads from a pipe (``--seccomp FD``) just before it runs the step's command
(docs/official-tier.md, "Threat model").
"""

from __future__ import annotations

import subprocess
from functools import lru_cache

SYSTEM_PYTHON = "/usr/bin/python3"
DENIED = ("ptrace", "process_vm_readv", "process_vm_writev", "keyctl", "add_key", "request_key", "bpf",
          "perf_event_open", "mount", "umount2", "pivot_root", "move_mount", "open_tree", "fsopen", "fsmount",
          "fsconfig", "fspick", "setns", "kexec_load", "init_module", "finit_module", "delete_module",
          "swapon", "swapoff", "userfaultfd")
HELPER = """
import errno, sys
import seccomp
rules = seccomp.SyscallFilter(defaction=seccomp.ALLOW)
for name in sys.argv[1:]:
    rules.add_rule(seccomp.ERRNO(errno.EPERM), name)
rules.export_bpf(sys.stdout)
"""


class SeccompUnavailable(RuntimeError):
    """python3-seccomp is missing; says what to install."""


@lru_cache(maxsize=1)
def bpf_program() -> bytes:
    """The compiled filter (a few hundred bytes), built once per process."""
    try:
        done = subprocess.run([SYSTEM_PYTHON, "-I", "-c", HELPER, *DENIED], capture_output=True, env={}, timeout=60,
                              check=False)
    except OSError:
        done = None
    if done is None or done.returncode != 0 or not done.stdout:
        raise SeccompUnavailable("the seccomp filter cannot be built: install Debian's python3-seccomp "
                                 "(apt-get install python3-seccomp)")
    return done.stdout
