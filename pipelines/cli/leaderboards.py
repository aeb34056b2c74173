"""Plain-text leaderboards straight from the published DuckDB file (what `medbench demo` prints)."""

from __future__ import annotations

from warehouse.layout import DataDir
from warehouse.read import open_current


def render_leaderboards(data: DataDir) -> str:
    snap = open_current(data)
    try:
        rows = snap.con.execute(
            """SELECT task, model_slug, metric_name, metric_value, ci_low, ci_high, n, parse_rate, run_id, demo
               FROM results WHERE superseded_by IS NULL
               ORDER BY task, metric_value DESC, eval_date, run_id"""
        ).fetchall()
    finally:
        snap.close()
    out, current = [], None
    for task, model, metric, value, lo, hi, n, parse_rate, run, demo in rows:
        if task != current:
            current = task
            out.append(f"\n{task}{' (DEMO DATA)' if demo else ''}")
            out.append(f"  {'model':32} {metric:>8} {'95% CI':>17} {'n':>7} {'parsed':>7}  run_id")
        parsed = f"{parse_rate:.3f}" if parse_rate is not None else "-"
        out.append(f"  {model:32} {value:8.4f} [{lo:.4f}, {hi:.4f}] {n:7d} {parsed:>7}  {run}")
    return "\n".join(out).lstrip("\n")
