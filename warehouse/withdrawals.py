"""Withdrawn results: recorded in the open, never deleted.

A maintainer withdraws a result with ``medbench withdraw RUN_ID --reason TEXT``. The result keeps its
folder (``result.json``, predictions), its page and its JSON; it leaves current leaderboards and
lookups, is shown as withdrawn with its reason and date, and stays in the releases published before.
The withdrawal is a line appended to ``<data>/releases/withdrawals.jsonl`` (``DataDir.withdrawal_log``),
beside the release log and outside every warehouse version, so it survives pruning and is never
rewritten. A withdrawn run id is never recomputed under the same id (rule one): the materializer
lists it with its reason and goes on.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Mapping

import msgspec

from medbench.files import open_regular, read_regular
from medbench.layout import RUN_ID_RE, DataDir, where


class Withdrawal(msgspec.Struct, frozen=True, kw_only=True):
    run_id: str
    reason: str
    date: dt.date
    at: str  # ISO 8601 time of the withdrawal, UTC

    def public(self) -> dict[str, str]:
        """What a Result shows: ``{reason, date}``."""
        return {"reason": self.reason, "date": self.date.isoformat()}


class WithdrawalError(ValueError):
    """A withdrawal that cannot be made (unknown id, already withdrawn, no reason): one line for users."""


def withdrawals(data: DataDir) -> dict[str, Withdrawal]:
    """run_id -> its withdrawal (the first, should the log hold two: a second is refused when asked)."""
    found: dict[str, Withdrawal] = {}
    try:
        lines = read_regular(data.withdrawal_log).splitlines(keepends=True)
    except FileNotFoundError:
        return found
    for line in lines:
        try:
            w = msgspec.json.decode(line, type=Withdrawal)
        except msgspec.DecodeError:
            continue  # a torn last line of a killed write
        found.setdefault(w.run_id, w)
    return found


def withdraw(data: DataDir, run_id: str, reason: str, now: dt.datetime | None = None) -> Withdrawal:
    """Record that ``run_id`` is withdrawn for ``reason``; the caller then publishes.

    Raises ``WithdrawalError`` for a malformed or unknown run id, an empty reason, or a result that is
    already withdrawn (with the date and reason it was)."""
    reason = " ".join(reason.split())
    if not RUN_ID_RE.match(run_id):
        raise WithdrawalError(f"{run_id!r} is not a run id (12 lowercase hex digits)")
    if not data.result_path(run_id).exists():
        raise WithdrawalError(f"no result {run_id} {where(data.root)}; `medbench sql 'SELECT run_id, task, "
                              "model_slug FROM results'` lists the run ids")
    if not reason:
        raise WithdrawalError("--reason must say why the result is withdrawn")
    previous = withdrawals(data).get(run_id)
    if previous is not None:
        raise WithdrawalError(f"result {run_id} was already withdrawn on {previous.date}: {previous.reason}")
    now = now or dt.datetime.now(dt.timezone.utc)
    record = Withdrawal(run_id=run_id, reason=reason, date=now.date(), at=now.isoformat())
    path = data.withdrawal_log
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = open_regular(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    try:
        os.write(fd, msgspec.json.encode(record) + b"\n")
        os.fsync(fd)
    finally:
        os.close(fd)
    return record


def public_map(found: Mapping[str, Withdrawal]) -> dict[str, dict[str, str]]:
    return {run_id: w.public() for run_id, w in found.items()}


__all__ = ["Withdrawal", "WithdrawalError", "public_map", "withdraw", "withdrawals"]
