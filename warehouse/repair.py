"""What the publisher repairs before and after it publishes, each with one warning line naming the cause.

Readers never write (the server may run as another user, and it must stay read-only), so a damaged
warehouse is repaired by the next publish, which owns these files:

- a ``CURRENT`` that is a directory, unreadable, not UTF-8 or not a version name: the publisher
  takes the newest sound kept version as the current one (as readers do, ``warehouse.versions``)
  and rewrites the pointer; a directory in the pointer's place is first moved aside
  (``CURRENT.unusable-<time>``), since a file cannot replace it;
- a current version file that DuckDB refuses (truncated, overwritten): the same fallback, and the
  damaged file is deleted when pruning (it can never be read again; its content is rebuilt from
  the artifacts by this very publish);
- an unchanged publish (same content) still makes the pointer name the current version and the
  analysts' ``medbench.duckdb`` link point at its file, which a kill between the two switches, or a
  hand edit, may have left behind.

Published files are made world-readable (0644, the ``warehouse/`` folder 0755) whatever the
publisher's umask, so that a server running as another user can read them.
"""

from __future__ import annotations

import logging
import os
import stat
import time
from pathlib import Path

from warehouse.files import PUBLIC_FILE, switch_pointer, switch_symlink
from warehouse.layout import DataDir
from warehouse.versions import Damaged, check, kept_versions, pointer_state, probe

log = logging.getLogger(__name__)

PUBLIC_DIR = 0o755


def make_public_dir(folder: Path) -> None:
    """Give ``folder`` (ours) read and search permission for everyone, whatever the umask made it."""
    try:
        st = folder.stat()
        if st.st_uid == os.geteuid() and stat.S_IMODE(st.st_mode) & PUBLIC_DIR != PUBLIC_DIR:
            os.chmod(folder, stat.S_IMODE(st.st_mode) | PUBLIC_DIR)
    except OSError as exc:
        log.warning("could not make %s readable for the server's user: %s", folder, exc)


def current_for_publish(data: DataDir) -> str | None:
    """The version the publish starts from: the pointer's when sound, else the newest sound kept one
    (a warning says why); None when there is none."""
    pointer, cause = pointer_state(data)
    if pointer is not None:
        problem = check(data, pointer)
        if problem is None:
            return pointer
        cause = f"warehouse version {pointer} cannot be read: {problem}"
    for version in kept_versions(data):
        if version != pointer and check(data, version) is None:
            log.warning("%s; publishing from the newest sound kept version %s (the pointer will be repaired)", cause, version)
            return version
    if pointer is not None or data.pointer.exists() or data.pointer.is_symlink():
        log.warning("%s, and no kept version can be read: publishing a new version", cause)
    return None


def _set_aside_pointer(data: DataDir) -> None:
    """Move a directory (or anything else that is not a file) out of the pointer's place."""
    path = data.pointer
    if path.is_symlink() or not path.exists() or path.is_file():
        return
    aside = path.with_name(f"{path.name}.unusable-{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}")
    os.replace(path, aside)
    log.warning("warehouse pointer %s was not a file; moved it to %s", path, aside.name)


def install(data: DataDir, version: str) -> None:
    """Switch the pointer, then the analysts' link, to a newly built ``version``."""
    _set_aside_pointer(data)
    switch_pointer(data.pointer, version)
    _switch_link(data, version)


def repair(data: DataDir, version: str) -> None:
    """After an unchanged publish: make the pointer name ``version`` and the link point at its file
    where they do not (one warning each); a pointer already right is only made readable."""
    pointer, cause = pointer_state(data)
    if pointer != version:
        _set_aside_pointer(data)
        switch_pointer(data.pointer, version)
        was = f"it named {pointer}, which cannot be read" if pointer is not None else cause
        log.warning("repaired the warehouse pointer (%s): it now names %s", was, version)
    else:
        _make_readable(data.pointer)
    _make_readable(data.version_file(version))
    link = data.duckdb_link
    if _linked(link) != os.path.realpath(data.version_file(version)):
        was = _linked(link) or ("missing" if not (link.exists() or link.is_symlink()) else "not a link")
        if _switch_link(data, version):
            log.warning("repaired %s: it was %s; it now points at version %s", link.name, was, version)


def _linked(link: Path) -> str | None:
    return os.path.realpath(link) if link.is_symlink() else None


def _switch_link(data: DataDir, version: str) -> bool:
    link = data.duckdb_link
    if link.is_dir() and not link.is_symlink():
        log.warning("%s is a directory, so it cannot be made a link to version %s; left as it is", link, version)
        return False
    switch_symlink(link, data.version_file(version))
    return True


def _make_readable(path: Path) -> None:
    try:
        st = path.stat()
        if st.st_uid == os.geteuid() and stat.S_IMODE(st.st_mode) & PUBLIC_FILE != PUBLIC_FILE:
            os.chmod(path, stat.S_IMODE(st.st_mode) | PUBLIC_FILE)
    except OSError:
        pass


def prune(data: DataDir, keep: int, current: str) -> None:
    """Keep the ``keep`` newest versions (``current`` always), delete older ones and damaged ones."""
    kept = 0
    for version in kept_versions(data):
        path = data.version_file(version)
        if version != current:
            try:
                probe(data, version)
            except Damaged as exc:
                log.warning("deleting damaged warehouse version %s: %s", version, exc)
                _delete_version(path)
                continue
        kept += 1
        if kept > keep and version != current:
            _delete_version(path)


def _delete_version(path: Path) -> None:
    path.unlink(missing_ok=True)
    Path(str(path) + ".wal").unlink(missing_ok=True)


__all__ = ["current_for_publish", "install", "make_public_dir", "prune", "repair"]
