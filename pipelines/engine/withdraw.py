"""Withdraw a published result and publish: what ``medbench withdraw`` and the ``withdraw_result`` job do.

The withdrawal is recorded first (``warehouse.withdrawals``: appended to the data directory's
withdrawal log, nothing deleted), then the warehouse is published again, so the result leaves the
current leaderboards and lookups at once and the new release's manifest attests the change of status.

Its file name is shared on purpose: the engine's step of that name; the Dagster assets, the official
tier and the CLI have their own module for the same step, each calling this one.
"""

from __future__ import annotations

from collections.abc import Callable

from pipelines.engine.release import publish_results
from pipelines.engine.specs import Specs
from warehouse.keys import signing_key
from medbench.layout import DataDir
from warehouse.tlog import publishing as tlog_publishing
from warehouse.withdrawals import Withdrawal, withdraw

Log = Callable[[str], None]


def withdraw_and_publish(specs: Specs, data: DataDir, run_id: str, reason: str,
                         log: Log) -> tuple[Withdrawal, str]:
    """Record the withdrawal (``WithdrawalError`` for an unknown id, a second withdrawal or no reason), then
    publish; return the withdrawal and the new warehouse version (the release that attests it)."""
    said: list[str] = []  # what the key says is printed only once the withdrawal is recorded
    key = signing_key(data, said.append)  # a missing key is an error before anything is recorded
    tlog_publishing.begin(data, key, log)  # and so is a transparency log (or release log) that does not verify
    withdrawal = withdraw(data, run_id, reason)
    for line in said:
        log(line)
    log(f"withdrew {run_id} on {withdrawal.date}: {withdrawal.reason}")
    version, _, _ = publish_results(specs, data, log, key)
    return withdrawal, version
