"""A package's dependencies: resolved and downloaded outside the sandbox, as wheels only, hashed.

Why outside: the install step inside the sandbox then never needs a network (``--unshare-net``,
``pip install --no-index --find-links``), so no step that runs the author's code shares one with the
host. The download runs as the unprivileged sandbox uid (``setpriv``), with an empty environment,
from the configured index (``MEDBENCH_SANDBOX_INDEX_URL``), wheels only (``--only-binary=:all:``: pip
never builds an sdist, so no dependency's code runs here), under a count cap, a per-file cap, a
total-size cap and a wall-time cap. The sha256 of every wheel is computed here, by medbench, and is
what the signed ``config.official.installed`` lists: never a report the package could write. The
set's hash enters the official run id, and the wheels are kept with the run so ``medbench
reproduce`` installs exactly them (docs/official-tier.md, "Threat model").

Its file name is shared on purpose: the official tier's counterpart of the engine's or CLI's module
of the same name (docs/official-tier.md).
"""

from __future__ import annotations

import hashlib
import os
import re
import resource
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from packaging.utils import InvalidWheelFilename, parse_wheel_filename

from pipelines.official.package import PackageFailed, sha256_of, wheel_name_problem
from pipelines.official.policy import SandboxPolicy

MAX_WHEELS = 200            # dependency wheels in one set
MAX_WHEEL_BYTES = 1 << 30   # one wheel
MAX_TOTAL_BYTES = 4 << 30   # the whole set
DOWNLOAD_SECONDS = 900
NO_WHEEL = re.compile(r"satisfies the requirement ([A-Za-z0-9][A-Za-z0-9._-]{0,99})")


@dataclass(frozen=True)
class Dependencies:
    """The dependency wheels of one package (``folder`` holds exactly them) and their hashes."""

    folder: Path | None
    wheels: tuple[dict[str, str], ...]  # name, version, file, sha256; sorted by file name

    @property
    def set_sha256(self) -> str:
        """The hash of the whole set (empty set included), as the official run id takes it."""
        lines = "".join(f"{w['file']} {w['sha256']}\n" for w in self.wheels)
        return hashlib.sha256(lines.encode()).hexdigest()


NONE = Dependencies(folder=None, wheels=())


def describe_wheel(path: Path) -> dict[str, str]:
    """name, version, file and sha256 of one wheel, from its file name and its bytes (computed here)."""
    name, version, _, _ = parse_wheel_filename(path.name)
    return {"name": str(name), "version": str(version), "file": path.name, "sha256": sha256_of(path)}


def scan(folder: Path, package_file: str | None = None) -> Dependencies:
    """The wheels in ``folder`` (the package itself left out), checked: only wheels with valid
    names, within the caps; anything else fails the run naming it, in medbench's words."""
    wheels = []
    total = 0
    entries = sorted(folder.iterdir(), key=lambda p: p.name)
    if len(entries) > MAX_WHEELS + 1:
        raise PackageFailed(f"the package needs more than {MAX_WHEELS} dependency wheels")
    for entry in entries:
        if entry.name == package_file:
            continue
        if not entry.name.endswith(".whl") or entry.is_symlink() or not entry.is_file():
            shown = entry.name[:80] if entry.name.isascii() and entry.name.isprintable() else "a non-ASCII name"
            raise PackageFailed(f"dependency {shown!r} is not a wheel (sdists are never built: publish a wheel)")
        try:
            if wheel_name_problem(entry.name):
                raise InvalidWheelFilename(entry.name)
            described = describe_wheel(entry)
        except InvalidWheelFilename:
            raise PackageFailed("a dependency wheel's file name breaks the wheel spec") from None
        size = entry.stat().st_size
        total += size
        if size > MAX_WHEEL_BYTES or total > MAX_TOTAL_BYTES:
            raise PackageFailed(f"the dependency wheels exceed {MAX_WHEEL_BYTES >> 20} MiB each or "
                                f"{MAX_TOTAL_BYTES >> 20} MiB together")
        wheels.append(described)
    return Dependencies(folder=folder, wheels=tuple(wheels))


def _unprivileged(policy: SandboxPolicy) -> list[str]:
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        raise PackageFailed("setpriv is not installed: install Debian's util-linux")
    drop = ([f"--reuid={policy.uid}", f"--regid={policy.gid}", "--clear-groups", "--inh-caps=-all"]
            if os.geteuid() == 0 else [])
    return [setpriv, *drop, "--no-new-privs"]


def _limits() -> None:
    resource.setrlimit(resource.RLIMIT_FSIZE, (MAX_WHEEL_BYTES, MAX_WHEEL_BYTES))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _size(folder: Path) -> int:
    total = 0
    for entry in os.scandir(folder):
        try:
            total += entry.stat(follow_symlinks=False).st_size
        except OSError:
            continue
    return total


def download(policy: SandboxPolicy, wheel: Path, base: Path) -> Dependencies:
    """Resolve and download ``wheel``'s dependencies from the policy's index into ``base/deps``
    (``base`` is a fresh folder of the caller's; the download user owns only what it writes); none
    when no index is configured (the wheel alone is installed, offline)."""
    if policy.index_url is None:
        return NONE
    os.chmod(base, 0o755)
    folder, home, own = base / "deps", base / "download-home", base / "package"
    for path in (folder, home, own):
        path.mkdir()
        if os.geteuid() == 0 and path is not own:
            os.chown(path, policy.uid, policy.gid)
    os.chmod(own, 0o755)
    wheel = Path(shutil.copyfile(wheel, own / wheel.name))
    os.chmod(wheel, 0o644)
    command = [*_unprivileged(policy), policy.python, "-I", "-m", "pip", "download", "--disable-pip-version-check",
               "--no-cache-dir", "--no-input", "--only-binary=:all:", "--dest", str(folder), "--index-url",
               policy.index_url, "--", str(wheel)]
    env = {"HOME": str(home), "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}
    proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            env=env, cwd=home, start_new_session=True, preexec_fn=_limits)
    started, stopped = time.monotonic(), None
    err = b""
    try:
        while proc.poll() is None:
            if time.monotonic() - started > DOWNLOAD_SECONDS:
                stopped = f"resolving the dependencies took over {DOWNLOAD_SECONDS} s"
            elif _size(folder) > MAX_TOTAL_BYTES or len(os.listdir(folder)) > MAX_WHEELS + 1:
                stopped = f"the dependency wheels exceed {MAX_WHEELS} files or {MAX_TOTAL_BYTES >> 20} MiB"
            if stopped:
                os.killpg(proc.pid, 9)
                break
            time.sleep(0.2)
        proc.wait()
        err = proc.stderr.read()[-20000:]
    finally:
        proc.stderr.close()
    if stopped:
        raise PackageFailed(stopped)
    if proc.returncode != 0:  # pip's words (URLs, paths, the index's answers) are never published
        missing = NO_WHEEL.findall(err.decode("utf-8", "replace"))
        if missing:
            raise PackageFailed(f"dependency {missing[-1]!r} has no wheel on the index for this interpreter "
                                "(sdists are never built: publish a wheel)")
        raise PackageFailed(f"resolving the dependencies failed (exit {proc.returncode}): pip download "
                            "--only-binary=:all: of the wheel from the index says why")
    return scan(folder, wheel.name)


def keep(deps: Dependencies, kept: Path) -> Dependencies:
    """Copy the set to ``kept`` (the run's own folder in the data directory), checking each hash."""
    if deps.folder is None or not deps.wheels:
        return deps
    if not kept.exists():
        staging = kept.with_name(kept.name + ".partial")
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        for w in deps.wheels:
            shutil.copyfile(deps.folder / w["file"], staging / w["file"])
        os.replace(staging, kept)
    return verify(kept, deps.wheels)


def verify(folder: Path, recorded: tuple[dict[str, str], ...] | list[dict[str, str]]) -> Dependencies:
    """The kept set, each wheel's sha256 checked against the record; PackageFailed on any difference."""
    recorded = tuple(recorded)
    if not recorded:
        return NONE
    found = scan(folder)
    if [(w["file"], w["sha256"]) for w in found.wheels] != [(w["file"], w["sha256"]) for w in recorded]:
        raise PackageFailed(f"the kept dependency wheels in {folder} differ from the recorded set")
    return found
