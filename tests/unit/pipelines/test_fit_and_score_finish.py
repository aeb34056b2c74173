"""The fit-and-score solver hands a family's ``finish`` the fitted scorer's validation scores and
its ``probabilistic``, and applies what it returns (why: vitaldb-ioh fits its recalibration of a
rule's score on the validation split there, without the engine naming the task)."""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pyarrow as pa

from pipelines.backends.window_scorers import NegLastMap
from medbench.protocols import FitAndScore
from medbench.specs import BootstrapSpec
from pipelines.engine.solvers import solve_fit_and_score
from pipelines.tasks.vitaldb_ioh.family import probabilities
from pipelines.tasks.vitaldb_ioh.reporting import probabilities_of


def _ev() -> SimpleNamespace:
    backend = SimpleNamespace(window_scorer=lambda model, step: NegLastMap(), published=lambda s: {})
    return SimpleNamespace(backend=backend, model=SimpleNamespace(backend="rule", settings=None),
                           task=SimpleNamespace(bootstrap=BootstrapSpec(replicates=10, seed=0, unit="subject")), partition_key="t|m")


def test_a_rule_is_recalibrated_on_the_validation_scores_and_the_map_travels_with_the_predictions() -> None:
    rng = np.random.default_rng(0)
    val_y = (np.arange(300) % 3 == 0).astype(np.int8)
    val_x = (80 - 10 * val_y + rng.normal(0, 6, 300)).astype(np.float32)[:, None]
    test_x = np.array([[60.0], [90.0]], dtype=np.float32)
    seen: list = []

    def finish(val_scores, probabilistic, log):
        seen.append((val_scores, probabilistic))
        return probabilities("t|m", val_y)(val_scores, probabilistic, log)

    problem = FitAndScore(train=(val_x, val_y), validation=(val_x, val_y), test=test_x, step_seconds=2,
                          table=lambda s: pa.table({"instance_id": ["a", "b"], "score": s,
                                                    "label": pa.array([1, 0], pa.int8())}),
                          seed=0, finish=finish)
    predicted = solve_fit_and_score(_ev(), problem, log=lambda _: None)
    (val_scores, probabilistic), = seen
    assert probabilistic is False and np.allclose(val_scores, -val_x[:, 0])
    body = json.loads(predicted.table.schema.metadata[b"medbench.probabilities"])
    assert body["probabilistic"] is False and body["recalibration"] is not None
    assert predicted.config["probabilities"]["recalibration"] == body["recalibration"]
    p, _ = probabilities_of(predicted.table)
    assert 0 < p[1] < p[0] < 1  # a lower MAP maps to a higher probability


def test_without_finish_the_table_is_the_familys_own() -> None:
    x = np.array([[70.0], [80.0]], dtype=np.float32)
    problem = FitAndScore(train=(x, np.array([1, 0])), validation=(x, np.array([1, 0])), test=x, step_seconds=2,
                          table=lambda s: pa.table({"score": s}), seed=0)
    predicted = solve_fit_and_score(_ev(), problem, log=lambda _: None)
    assert predicted.table.schema.metadata is None and "probabilities" not in predicted.config
