"""``withdraw_result``: ``medbench withdraw`` as a Dagster job, with the run id and reason as config.

A maintainer in the UI withdraws a result from the Launchpad; the run records the withdrawal
(nothing deleted) and publishes, as the command does (``pipelines.engine.withdraw``). An unknown
run id or a second withdrawal fails the run with the same one-line message.
"""

import dagster as dg
from pydantic import Field

from pipelines.dagster.resources import MedbenchResource


class WithdrawConfig(dg.Config):
    run_id: str = Field(description="the run id of the published result to withdraw (12 hex digits)")
    reason: str = Field(description="why it is withdrawn: shown with the result for ever")


@dg.op(description="Record the withdrawal of one result in the data directory, then publish.")
def withdraw_op(context: dg.OpExecutionContext, config: WithdrawConfig, medbench: MedbenchResource):
    from pipelines.dagster.engine_calls import withdraw_and_publish
    from warehouse.keys import SigningKeyError
    from warehouse.tlog.audit import LogIntegrityError
    from warehouse.withdrawals import WithdrawalError

    try:
        withdrawal, version = withdraw_and_publish(medbench.specs(), medbench.data(), config.run_id, config.reason,
                                                   context.log.info)
    except (WithdrawalError, SigningKeyError, LogIntegrityError) as exc:
        raise dg.Failure(description=str(exc)) from None
    return dg.Output(None, metadata={"run_id": withdrawal.run_id, "reason": withdrawal.reason,
                                     "date": withdrawal.date.isoformat(), "release": version})


@dg.job(name="withdraw_result", executor_def=dg.in_process_executor,
        description="Withdraw one published result (kept, marked withdrawn, off current leaderboards) and publish. "
                    "Config: run_id, reason.")
def withdraw_result_job():
    withdraw_op()
