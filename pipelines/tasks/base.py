"""What a task family builds on: the ``TaskFamily`` protocol and the plain results it returns (the
core's, ``medbench.protocols`` and ``medbench.outcomes``), plus the checks families share.

Adding a task family is one folder under ``pipelines/tasks/`` (or a module of a separately
installed distribution) with a class that subclasses ``TaskFamily``, one entry point in the group
``medbench.families`` (``pyproject.toml``), and its spec files. It declares what it asks a model
(``problem``: a ``TextChoice`` or a ``FitAndScore``), and the engine's solvers run it on any
backend of that shape.

Its file name is shared on purpose: every plug-in package names its parts alike
(docs/adding-a-task.md, "The pieces"), so one reads the next.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from medbench.outcomes import CheckOutcome, Instances, Log, Predicted, ReplayScore, ScoreSummary
from medbench.protocols import FitAndScore, Kind, KindName, TaskFamily, TextChoice

__all__ = ["CheckOutcome", "FitAndScore", "Instances", "Kind", "KindName", "Log", "Predicted", "ReplayScore", "ScoreSummary",
           "TaskFamily", "TextChoice", "predicted_once", "scores_finite"]


def predicted_once(predictions: pa.Table, expected: set[str]) -> CheckOutcome:
    """Every expected instance predicted exactly once, and nothing else."""
    ids = predictions.column("instance_id").to_pylist()
    once = len(ids) == len(set(ids)) and set(ids) == expected
    return CheckOutcome("every_instance_predicted_once", once,
                        metadata={"predicted": len(ids), "distinct": len(set(ids)), "expected": len(expected)})


def scores_finite(predictions: pa.Table) -> CheckOutcome:
    """Every score is a finite number (score kinds)."""
    return CheckOutcome("scores_finite", bool(np.isfinite(predictions.column("score").to_numpy()).all()))
