"""Plain-text leaderboards from the published warehouse (what `medbench demo` prints)."""

from __future__ import annotations

from warehouse.layout import DataDir
from warehouse.read import leaderboard_lines


def render_leaderboards(data: DataDir) -> str:
    out, current = [], None
    for line in leaderboard_lines(data):
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
