"""What the client commands print (issue #40's noise): rank intervals on the leaderboard, no "None"
for tokens a run did not count, and the withdrawn line (``pipelines/cli/client_text.py``)."""

from __future__ import annotations

from pipelines.cli import client_text


def _row(rank: int, low: int, high: int) -> dict:
    return {"rank": rank, "rank_low": low, "rank_high": high, "run_id": f"{rank:012x}", "n": 10, "parse_rate": 1.0,
            "cost_usd": 0.0, "demo": False, "model": {"slug": f"acme/m{rank}", "type": "llm"},
            "metric": {"name": "accuracy", "value": 0.5, "ci_low": 0.4, "ci_high": 0.6}}


def test_the_leaderboard_shows_rank_intervals() -> None:
    text = client_text.leaderboard({"task": "t@0", "metric": "accuracy", "rows": [_row(1, 1, 2), _row(2, 1, 3)]})
    header, _, first, second = text.splitlines()[1:5]
    assert "ranks" in header.split() and "1-2" in first.split() and "1-3" in second.split(), text


def test_uncounted_tokens_are_not_printed_as_none() -> None:
    assert client_text._usage({"prompt_tokens": None, "completion_tokens": None, "wall_seconds": 1.5,
                               "hardware": "cpu"}) == "1.5 s on cpu"
    assert client_text._usage({"prompt_tokens": 10, "completion_tokens": 2, "wall_seconds": 1.5,
                               "hardware": "cpu"}) == "tokens 10 prompt, 2 completion, 1.5 s on cpu"


def test_the_withdrawn_line_has_date_and_reason() -> None:
    line = client_text.withdrawn({"run_id": "0123456789ab", "task": "t@0", "model": {"slug": "acme/m"},
                                  "withdrawn": {"date": "2026-11-01", "reason": "label leak"}})
    assert "0123456789ab was withdrawn on 2026-11-01: label leak" in line


def test_the_materialize_table_keeps_its_columns_aligned(tmp_path) -> None:
    """Issue #40: "withdrawn" (9 letters) pushed its row's run id out of the status column."""
    from pipelines.orchestration.report import Outcome, Report
    from medbench.layout import DataDir

    report = Report(DataDir(tmp_path), [Outcome("clinicalqa@0|a/b", "ran", "0123456789ab"),
                                        Outcome("clinicalqa@0|a/c", "withdrawn", "ba9876543210", "withdrawn on x"),
                                        Outcome("clinicalqa@0|a/d", "interrupted", "")])
    header, *rows = report.render().splitlines()[:4]
    column = header.index("run_id")
    assert rows[0].index("0123456789ab") == column and rows[1].index("ba9876543210") == column, report.render()
