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
  hand edit, may have left behind;
- a materialization that publishes nothing (every result reused, and the version readers would
  serve ``holds`` every finished one) still calls ``repair_current``: a pointer naming a missing or
  damaged version, or holding garbage, is pointed at that version without building a new one (a
  repair is not a release), so a server on its fallback switches back at its next pointer check.

Published files are made world-readable (0644, the ``warehouse/`` folder 0755) whatever the
publisher's umask, so that a server running as another user can read them.
"""

from __future__ import annotations

import logging
import os
import stat
import time
from collections.abc import Iterable
from pathlib import Path

import duckdb
import msgspec

from medbench.files import PUBLIC_FILE, switch_pointer, switch_symlink
from medbench.layout import DataDir
from warehouse.read import published_records
from medbench.records import ResultRecord, decode_record
from medbench.tempfiles import publish_lock
from warehouse.versions import (POINTER_MISSING, Damaged, PointerError, check, choose, kept_versions, pointer_state,
                                probe, read_pointer, stamped_sound)

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


def repair(data: DataDir, version: str) -> list[str]:
    """After an unchanged publish: make the pointer name ``version`` and the link point at its file
    where they do not (one warning each); a pointer already right is only made readable. Returns
    one line per repair, for the CLI to print."""
    lines = []
    pointer, cause = pointer_state(data)
    if pointer != version:
        problem = pointer_problem(data) or (f"it named {pointer}" if pointer else _past(cause or POINTER_MISSING))
        _set_aside_pointer(data)
        switch_pointer(data.pointer, version)
        was = f"it named {pointer}, which cannot be read" if pointer is not None else cause
        log.warning("repaired the warehouse pointer (%s): it now names %s", was, version)
        lines.append(f"repaired warehouse/CURRENT: {problem}; now {version}")
    else:
        _make_readable(data.pointer)
    _make_readable(data.version_file(version))
    link = data.duckdb_link
    if _linked(link) != os.path.realpath(data.version_file(version)):
        was = _linked(link) or ("missing" if not (link.exists() or link.is_symlink()) else "not a link")
        if _switch_link(data, version):
            log.warning("repaired %s: it was %s; it now points at version %s", link.name, was, version)
            lines.append(f"repaired {link.name}: it was {was}; now it points at version {version}")
    return lines


def pointer_problem(data: DataDir) -> str | None:
    """Why ``CURRENT`` cannot be used as it is, worded for a repair line ("it named a missing
    version (...)"); None when it names a sound version, or when nothing was ever published."""
    pointer, cause = pointer_state(data)
    if pointer is not None:
        problem = check(data, pointer)
        if problem is None:
            return None
        if problem == "its file is missing":
            return f"it named a missing version ({pointer})"
        return f"it named version {pointer}, which cannot be read: {problem}"
    if cause == POINTER_MISSING and not kept_versions(data):
        return None
    return _past(cause or POINTER_MISSING)


def _past(cause: str) -> str:
    """``warehouse/CURRENT is empty`` -> ``it was empty`` (``warehouse.versions`` causes)."""
    text = cause.replace("warehouse/CURRENT ", "it ", 1)
    for now, then in ((" is ", " was "), (" does not ", " did not "), (" cannot ", " could not ")):
        if text.startswith("it" + now):
            return "it" + then + text[len("it" + now):]
    return text


def holds(data: DataDir, version: str, results: Iterable[ResultRecord]) -> bool:
    """``version`` holds every one of ``results``, each as its result.json says now (not an older
    record under the same run id: a ``--force`` rerun whose publish failed rewrote the file)."""
    try:
        published = published_records(data, version)
    except (duckdb.Error, OSError):
        return False  # pruned or damaged since it was chosen: a publish decides afresh
    for record in results:
        text = published.get(record.run_id)
        try:
            # the published record leaves out what is never published (``warehouse.signing.NOT_PUBLISHED``)
            if text is None or decode_record(text) != msgspec.structs.replace(record, generation_key=None):
                return False
        except msgspec.DecodeError:  # a published record this medbench cannot read: republish
            return False
    return True


def repair_current(data: DataDir) -> list[str]:
    """Without publishing: make ``CURRENT`` (and the analysts' link) name the version readers would
    serve, the pointer's when sound, else the newest sound kept one (``warehouse.versions.choose``).
    For a materialization that publishes nothing: its caller checked that version ``holds`` every
    finished result. Under ``publish_lock``, so it never races a publish. Returns the repair lines."""
    if not data.warehouse.is_dir():
        return []
    with publish_lock(data):
        chosen = choose(data)
        return repair(data, chosen.version) if chosen.version is not None else []


def servable_current(data: DataDir) -> tuple[str | None, str | None]:
    """(the version ``CURRENT`` names, None) when its file exists and opens, else (None, why not;
    None when nothing was ever published): what may be reported as published."""
    try:
        version = read_pointer(data)
    except PointerError as exc:
        return None, exc.cause
    if version is None:
        return None, (POINTER_MISSING if kept_versions(data) else None)
    problem = check(data, version)
    return (version, None) if problem is None else (None, f"warehouse version {version} cannot be read: {problem}")


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
        if version != current and not stamped_sound(data, version):
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


__all__ = ["current_for_publish", "holds", "install", "make_public_dir", "pointer_problem", "prune", "repair",
           "repair_current", "servable_current"]
