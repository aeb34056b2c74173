"""Writing files and switching pointers so that a reader sees the old state or the whole new one.

Every step of medbench hands work to the next through files (snapshots, instances, checkpoints,
result.json, published DuckDB versions, the ``CURRENT`` pointers), and a process may be killed at
any moment. One rule keeps that safe: write beside the destination under a temporary name (same
folder, so the rename never crosses a file system), fsync, then ``os.replace`` it into place, which
is atomic on POSIX. A reader (or a resumed run) therefore never finds a half-written file under a
final name. This module is the only place that spells the rule out; everything else calls it.
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


class NotRegularFile(OSError):
    """A name that should hold a file holds a FIFO, a device or a socket (``str`` says which)."""


def file_kind(mode: int) -> str:
    """``"a FIFO"``, ``"a device"``, ... for a ``st_mode`` that is not a regular file's."""
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def open_regular(path: Path | str, flags: int = os.O_RDONLY, mode: int = 0o644) -> int:
    """A descriptor of ``path`` opened with ``flags`` (read-only by default), which must be a regular
    file (symlinks followed).

    Opened with ``O_NONBLOCK`` and checked with ``fstat`` before anything reads it: ``open`` of a FIFO
    waits for a writer, and reading a device never ends, so a FIFO planted as ``warehouse/CURRENT``
    hung every route of the server and the next ``medbench materialize`` (docs/operations.md). A
    directory raises ``IsADirectoryError`` (as ``open`` does), anything else ``NotRegularFile`` (a
    write-only open of a FIFO without a reader fails at once with ENXIO instead of waiting).
    """
    fd = os.open(path, flags | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY, mode)
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, "is a directory", str(path))
        if not stat.S_ISREG(mode):
            raise NotRegularFile(errno.EINVAL, f"is {file_kind(mode)}, not a regular file", str(path))
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_regular(path: Path | str, limit: int | None = None) -> bytes:
    """The bytes of the regular file ``path`` (at most ``limit`` of them); see :func:`open_regular`."""
    with os.fdopen(open_regular(path), "rb") as fh:
        return fh.read() if limit is None else fh.read(limit)


def temp_name(path: Path, suffix: str = ".tmp") -> Path:
    """A hidden name beside ``path``, unique per process and thread (concurrent writers never collide)."""
    return path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}{suffix}")


def _fsync(path: Path) -> None:
    with open(path, "rb") as fh:
        os.fsync(fh.fileno())


@contextmanager
def atomic_path(path: Path | str, suffix: str = ".tmp", mode: int | None = None) -> Iterator[Path]:
    """Yield a temporary path beside ``path`` for any writer (pyarrow, polars, DuckDB, a stream);
    on a clean exit it is fsynced and renamed onto ``path``; on an exception it is removed.

    ``mode`` sets the file's permission bits whatever the umask: the published warehouse is read by
    a server that may run as another user, so the publisher writes it world-readable (0644)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = temp_name(path, suffix)
    tmp.unlink(missing_ok=True)
    try:
        yield tmp
        if mode is not None:
            os.chmod(tmp, mode)
        _fsync(tmp)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def atomic_write_bytes(path: Path | str, payload: bytes, mode: int | None = None) -> None:
    """Replace ``path``'s content with ``payload`` in one step."""
    with atomic_path(Path(path), mode=mode) as tmp:
        tmp.write_bytes(payload)


def atomic_write_text(path: Path | str, text: str, mode: int | None = None) -> None:
    atomic_write_bytes(path, text.encode("utf-8"), mode=mode)


PUBLIC_FILE = 0o644  # what a server running as another user must be able to read


def switch_pointer(pointer: Path | str, name: str, mode: int = PUBLIC_FILE) -> None:
    """Point a text pointer file (e.g. ``CURRENT``) at ``name``: readers see the old name or the new one."""
    atomic_write_text(pointer, name + "\n", mode=mode)


def switch_symlink(link: Path | str, target: Path | str) -> None:
    """Make ``link`` a symlink to ``target`` (stored relative to the link's folder) in one step."""
    link = Path(link)
    tmp = temp_name(link, ".link")
    tmp.unlink(missing_ok=True)
    os.symlink(os.path.relpath(Path(target), link.parent), tmp)
    os.replace(tmp, link)


@contextmanager
def atomic_directory(final: Path | str, marker: str | None = None) -> Iterator[Path]:
    """Yield an empty temporary folder beside ``final``; on a clean exit rename it to ``final``.

    A folder cannot replace a non-empty folder atomically, so content-addressed folders (same name,
    same content) are the intended use: when another writer got there first (``final`` exists, and
    holds ``marker`` when one is named), ours is discarded. On an exception the temporary folder is
    removed and ``final`` is left as it was.
    """
    final = Path(final)
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = temp_name(final)
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        yield tmp
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    try:
        os.replace(tmp, final)
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)
        if not (final / marker if marker else final).exists():
            raise
