"""vitaldb-ioh@0 (``fit_seed = "model"``) fits its trained baselines with the model spec's own seed.

The shipped scikit-learn estimators on demo-sized data (lbfgs logistic regression; gradient boosting
without early stopping, under 200,000 rows) draw no random numbers, so two seeds give the same
scores: what is checked is that the seed the spec names is the one the estimator is built with,
that it is recorded in the run's config, that a changed seed is a new run id, and that one seed
reproduces identical predictions.
"""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest
from support.ioh_data import demo_windows

from pipelines.engine.evaluate import Evaluation
from pipelines.engine.identity import run_id
from support.plugins import specs as load_specs
from pipelines.backends import window_scorers as baselines
from pipelines.engine.solvers import solve

SPECS = load_specs()
TASK = SPECS.task("vitaldb-ioh@0")
FIT = baselines.SklearnWindowModel.fit
SMALL = {  # one candidate each, few iterations: the fit stays quick
    "medbench/logreg-window": {"C": 1.0, "max_iter": 200},
    "medbench/hgb-window": {"learning_rate": 0.1, "max_leaf_nodes": 15, "max_iter": 15},
}


@pytest.fixture(scope="module")
def windows(tmp_path_factory) -> Path:
    return demo_windows(tmp_path_factory.mktemp("fit-seed"))


def model(slug: str, seed: int):
    spec = SPECS.models[slug]
    return msgspec.structs.replace(spec, settings=msgspec.structs.replace(spec.settings, **SMALL[slug], seed=seed))


def evaluation(spec) -> Evaluation:
    return Evaluation(task=TASK, model=spec, dataset=SPECS.datasets["vitaldb"], snapshot_id="snap",
                      run_id=run_id(spec, TASK, "snap"), family=SPECS.family_of(TASK), backend=SPECS.backend_of(spec))


def fitted(ev: Evaluation, windows: Path, monkeypatch) -> tuple[object, list]:
    """The predictions and, for each fit, (seed passed, random_state of the estimator kept)."""
    seen = []

    def spy(self, *args, seed: int):
        FIT(self, *args, seed=seed)
        estimator = self._model[-1] if hasattr(self._model, "steps") else self._model
        seen.append((seed, estimator.random_state))

    monkeypatch.setattr(baselines.SklearnWindowModel, "fit", spy)
    return solve(ev, windows, data=None, log=lambda _: None), seen


def test_the_task_fits_with_the_model_seed():
    assert TASK.ioh.fit_seed == "model"


@pytest.mark.parametrize("slug", sorted(SMALL))
def test_the_model_spec_seed_reaches_the_estimator(slug: str, windows: Path, monkeypatch) -> None:
    a, b = model(slug, 7), model(slug, 8)
    assert msgspec.structs.replace(a.settings, seed=8) == b.settings  # the specs differ in the seed only
    ev_a, ev_b = evaluation(a), evaluation(b)
    assert ev_a.run_id != ev_b.run_id
    assert TASK.bootstrap.seed not in (7, 8)  # so the task's seed could not pass for the model's
    got_a, seen_a = fitted(ev_a, windows, monkeypatch)
    got_b, seen_b = fitted(ev_b, windows, monkeypatch)
    assert seen_a == [(7, 7)] and seen_b == [(8, 8)]
    assert (got_a.config["fit_seed"], got_a.config["fit_seed_from"]) == (7, "model")
    assert got_b.config["fit_seed"] == 8
    again, _ = fitted(evaluation(model(slug, 7)), windows, monkeypatch)
    assert again.table.equals(got_a.table)  # the same seed: identical predictions
    assert again.config == got_a.config
