"""The leaderboard as CSV (``/tasks/<slug>/leaderboard.csv``): the rows of ``/v1/leaderboard``, for a spreadsheet.

People who want a leaderboard in a spreadsheet should not have to page through JSON, so the task
page links this file. Its rows are exactly the JSON rows (``api.answers.board``, the same ranks and
rank intervals, the same ``model_type``, ``tier`` and ``metric`` filters), every row and not only the
first ``MAX_ROWS`` the page shows, with nested fields flattened (``model_slug``, ``metric_value``...). Names come from the data, and a spreadsheet runs a
cell starting with ``=``, ``+``, ``-`` or ``@`` as a formula, so such text cells get a leading ``'``
(OWASP's "CSV injection" advice); numbers are written as numbers.
"""

from __future__ import annotations

import csv
import io
import re
from typing import Any

from api import render, schemas
from api.answers import board
from api.tables import Tables, TaskEntry

CSV = "text/csv; charset=utf-8"
COLUMNS = (
    "rank", "rank_low", "rank_high", "tied_with_leader", "model_slug", "model_name", "model_type", "tier",
    "metric_name", "metric_value", "metric_ci_low", "metric_ci_high", "n", "parse_rate", "cost_usd",
    "contamination", "eval_date", "run_id", "url",
)
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def safe_cell(value: Any) -> str | int | float:
    """A CSV cell: text that a spreadsheet would run as a formula gets a leading quote; None is empty."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return value
    text = str(value)
    return "'" + text if text.startswith(_FORMULA_START) else text


def _cells(row: schemas.Row) -> list[Any]:
    m = row.metric
    return [row.rank, row.rank_low, row.rank_high, row.tied_with_leader, row.model.slug, row.model.name,
            row.model.type, row.tier, m.name, m.value, m.ci_low, m.ci_high, row.n, row.parse_rate, row.cost_usd,
            row.contamination, row.eval_date.isoformat(), row.run_id, row.url]


def leaderboard_csv(tables: Tables, task: TaskEntry, model_type: str | None, base: str,
                    metric: str | None = None, tier: str | None = None) -> bytes:
    """Every row of ``task``'s board as ``/v1/leaderboard`` assembles it (``api.answers.board``): of
    ``model_type`` if given, ranked by ``metric`` (default the primary), ``tier``'s rows only if given."""
    name, kept = board(tables, task, model_type, metric, tier)
    out = io.StringIO()
    writer = csv.writer(out)  # RFC 4180: comma, double quotes where needed, CRLF
    writer.writerow(COLUMNS)
    for rank, p, entry in kept:
        writer.writerow([safe_cell(v) for v in _cells(render.row(p, base, rank, entry, name))])
    return out.getvalue().encode("utf-8")


def filename(task: TaskEntry, model_type: str | None) -> str:
    """``medbench-clinicalqa-0-leaderboard.csv`` (``-llm`` before ``.csv`` when filtered), safe in a header."""
    kind = f"-{model_type}" if model_type else ""
    return re.sub(r"[^A-Za-z0-9._-]", "-", f"medbench-{task.slug}-{task.version}-leaderboard{kind}.csv")
