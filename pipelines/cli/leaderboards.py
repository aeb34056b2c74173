"""Plain-text leaderboards from the published warehouse (what `medbench demo` prints).

A task graded by a judge model prints its own judge's results only, as ``/v1/leaderboard`` shows
them (``medbench.kinds.board_judge``): a regrade by another judge (``medbench eval --judge``) is
published beside them and reached with ``?judge=``, never a second row of the same model here."""

from __future__ import annotations

import msgspec

from medbench.kinds import board_judge
from medbench.layout import DataDir
from warehouse.read import Catalogue, leaderboard_lines


def board_judges(data: DataDir) -> dict[str, str | None]:
    """task ref -> the judge whose results make its board (None: every result counts)."""
    catalogue = Catalogue.open(data)
    return {t.ref: board_judge(t.kind, msgspec.json.decode(t.spec) if t.spec else {}, catalogue.demo)
            for t in catalogue.tasks}


def render_leaderboards(data: DataDir) -> str:
    judges = board_judges(data)
    out, current = [], None
    for line in leaderboard_lines(data):
        if judges.get(line.task) is not None and line.judge != judges[line.task]:
            continue  # another judge's regrade: off the board, as on /v1/leaderboard
        if line.task != current:
            current = line.task
            out.append(f"\n{line.task}{' (DEMO DATA)' if line.demo else ''}")
            if line.judge is not None:  # a rubric task: who graded, and how often its samples agreed
                out.append(f"  judged by {line.judge}; judge agreement: the share of criteria its samples agree on")
            extra = f" {'judge agr.':>10}" if line.judge is not None else ""
            out.append(f"  {'model':32} {line.metric_name:>8} {'95% CI':>17} {'n':>7} {'parsed':>7}{extra}  run_id")
        parsed = f"{line.parse_rate:.3f}" if line.parse_rate is not None else "-"
        agreement = (f" {line.judge_agreement:10.3f}" if line.judge_agreement is not None else f" {'-':>10}"
                     ) if line.judge is not None else ""
        out.append(f"  {line.model_slug:32} {line.metric_value:8.4f} [{line.ci_low:.4f}, {line.ci_high:.4f}] "
                   f"{line.n:7d} {parsed:>7}{agreement}  {line.run_id}")
    return "\n".join(out).lstrip("\n")
