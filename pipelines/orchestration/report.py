"""What ``medbench materialize`` prints: one line per partition, and one line per failure cause.

Why the cause walk: a failed step's error is Dagster's ``DagsterExecutionStepExecutionError:
Error occurred while executing op "predictions"``, with the real reason (``out2.jsonl line 5: not
valid JSON``) one or two ``cause`` links down its SerializableErrorInfo; the report prints that
root cause, one line, and leaves the full tracebacks to the Dagster UI.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from medbench.layout import DataDir


@dataclass
class Outcome:
    partition: str
    status: str  # ran | reused | skipped | failed | interrupted
    run_id: str = ""
    detail: str = ""


@dataclass
class Report:
    data: DataDir
    outcomes: list[Outcome] = field(default_factory=list)
    version: str = ""
    errors: list[str] = field(default_factory=list)
    interrupted: bool = False

    @property
    def ok(self) -> bool:
        return not self.errors and not self.interrupted and all(
            o.status not in ("failed", "interrupted") for o in self.outcomes)

    def outcome(self, task_ref: str, model_slug: str) -> Outcome | None:
        """The outcome of the (task version, model) partition, or None when the report has none."""
        from pipelines.engine.evaluate import partition_key

        key = partition_key(task_ref, model_slug)
        return next((o for o in self.outcomes if o.partition == key), None)

    def render(self) -> str:
        # columns as wide as their widest value ("withdrawn", "interrupted" are wider than "status")
        wide = max([48, *(len(o.partition) for o in self.outcomes)])
        status = max([8, *(len(o.status) for o in self.outcomes)])
        lines = [f"{'evaluation':{wide}} {'status':{status}} {'run_id':12}  detail"]
        lines += [f"{o.partition:{wide}} {o.status:{status}} {o.run_id:12}  {o.detail}".rstrip() for o in self.outcomes]
        lines += [f"error: {e}" for e in self.errors]
        counts = {}
        for o in self.outcomes:
            counts[o.status] = counts.get(o.status, 0) + 1
        if counts:
            lines.append(", ".join(f"{n} {s}" for s, n in counts.items()))
        if self.version:
            lines.append(f"published warehouse {self.version}: {self.data.duckdb_link}")
        return "\n".join(lines)


def root_cause(error) -> str:
    """``ExcType: message`` of the innermost cause of a SerializableErrorInfo, on one line."""
    seen = 0
    while getattr(error, "cause", None) is not None and seen < 20:
        error, seen = error.cause, seen + 1
    message = (error.message or "").strip()
    line = next((ln.strip() for ln in message.splitlines() if ln.strip()), "") or str(error)
    name = error.cls_name or ""
    return line if not name or name in line.split(":", 1)[0] else f"{name}: {line}"


def failure(result) -> str:
    """The root cause of every failed step of a run result, ``step: cause``, on one line."""
    causes = []
    for event in result.all_events:
        if event.is_step_failure and event.step_failure_data and event.step_failure_data.error:
            cause = f"{event.step_key}: {root_cause(event.step_failure_data.error)}"
            if cause not in causes:
                causes.append(cause)
    return "; ".join(causes) or "run failed (see the Dagster UI for the full log)"
