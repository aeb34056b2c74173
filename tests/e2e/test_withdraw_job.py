"""The ``withdraw_result`` Dagster job refuses what ``medbench withdraw`` refuses, with the same line.

The job with config (run_id, reason) is the UI's way to withdraw; an unknown run id fails the run
with the one-line reason and records nothing (the success path is the command's, tests/e2e/test_withdraw.py,
through the same ``pipelines.engine.withdraw``).
"""

import dagster as dg

from pipelines.dagster.resources import MedbenchResource
from pipelines.dagster.withdraw_job import withdraw_result_job
from medbench.layout import DataDir


def test_an_unknown_run_id_fails_the_job_and_records_nothing(tmp_path):
    data = DataDir(tmp_path / "data")
    data.claim("demo")
    with dg.instance_for_test() as instance:
        result = withdraw_result_job.execute_in_process(
            run_config={"ops": {"withdraw_op": {"config": {"run_id": "0123456789ab", "reason": "test"}}}},
            resources={"medbench": MedbenchResource(data_dir=str(data.root))}, instance=instance,
            raise_on_error=False)
    assert not result.success
    (failure,) = [e for e in result.all_events if e.is_step_failure]
    assert "no result 0123456789ab" in failure.step_failure_data.error.message
    assert not data.withdrawal_log.exists()
