"""Which published results are current: the newest not superseded per model and task version (or
per any key), and, for a task graded by a judge model, whose judge counts (docs/api.md, "Rubric tasks").

Why apart from ``api.tables``: the tables, the as-of-release views and the answers that take
``?judge=`` all pick current results the same way.
"""

from __future__ import annotations

from collections.abc import Callable

from warehouse.read import Published
from medbench.records import ResultRecord


def by_judge(p: Published, judge: str | None) -> bool:
    """Whether ``p`` counts where ``judge`` grades (None: a task no judge grades, every result counts)."""
    return judge is None or (p.record.judge is not None and p.record.judge.model == judge)


def current_results(published: list[Published], key_of: Callable[[ResultRecord], tuple] | None = None
                    ) -> dict[tuple, Published]:
    """Per (model, task version), or per ``key_of(record)``: the newest result not superseded (else the
    newest), never a withdrawn one."""
    chosen: dict[tuple, Published] = {}
    for p in published:
        if p.withdrawn:
            continue
        key = key_of(p.record) if key_of is not None else (p.record.model.slug, p.record.task)
        best = chosen.get(key)
        rank = (p.superseded_by is None, p.record.created_at, p.run_id)
        if best is None or rank > (best.superseded_by is None, best.record.created_at, best.run_id):
            chosen[key] = p
    return chosen
