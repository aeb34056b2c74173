"""The vitaldb-ioh baselines: rules on hand-made windows, trained models on demo windows."""

from __future__ import annotations

import msgspec
import numpy as np
import pytest

from pipelines.backends.window_scorers import (
    FeatureSpec,
    LinearExtrapolation,
    NegLastMap,
    last_valid,
    make_window_scorer,
    window_features,
)
from support.plugins import specs as load_specs
from medbench.stats.auroc import auroc
from pipelines.tasks.vitaldb_ioh.instances import read_windows
from support.ioh_data import demo_windows

SPECS = load_specs()
S = SPECS.task("vitaldb-ioh@0").ioh
NAN = np.nan


def windows(*rows: list[float]) -> np.ndarray:
    width = max(len(r) for r in rows)
    return np.array([[NAN] * (width - len(r)) + list(r) for r in rows], dtype=np.float32)


# --------------------------------------------------------------------------- rules


def test_neg_last_map_uses_the_last_valid_bin():
    x = windows([80, 70, 60], [90, 75, NAN], [NAN, 66, NAN, NAN])
    np.testing.assert_array_equal(NegLastMap().score(x), [-60.0, -75.0, -66.0])
    assert NegLastMap().score(x).dtype == np.float64


def test_a_window_without_valid_bins_is_an_error_not_nan():
    with pytest.raises(ValueError, match="no valid bin"):
        NegLastMap().score(windows([NAN, NAN]))


def test_linear_extrapolation_on_a_line():
    # MAP falling 1 mmHg per 2-s bin; bin centres are at -2k+1 s before T; value at T is 0.5 below the last
    n = 150
    last = 70.0
    x = (last + np.arange(n)[::-1]).astype(np.float32)[None, :]
    rule = LinearExtrapolation(fit_seconds=60, ahead_seconds=60, bin_seconds=2)
    # slope -0.5 mmHg/s; last bin centre at T - 1 s: value at T + 60 is last - 0.5 * 61
    assert rule.score(x)[0] == pytest.approx(-(last - 0.5 * 61), abs=1e-4)
    flat = LinearExtrapolation(fit_seconds=60, ahead_seconds=300, bin_seconds=2)
    assert flat.score(np.full((1, n), 80.0, np.float32))[0] == pytest.approx(-80.0)


def test_linear_extrapolation_ignores_missing_bins_and_falls_back_to_the_last_value():
    n = 150
    x = (70.0 + np.arange(n)[::-1]).astype(np.float32)
    with_gaps = x.copy()
    with_gaps[-20:-2:3] = NAN
    rule = LinearExtrapolation(fit_seconds=60, ahead_seconds=60, bin_seconds=2)
    assert rule.score(with_gaps[None, :])[0] == pytest.approx(rule.score(x[None, :])[0], abs=1e-3)
    sparse = np.full(n, NAN, np.float32)
    sparse[:100] = 90.0
    sparse[-1] = 72.0  # one valid bin in the fitted stretch: flat at it
    assert rule.score(sparse[None, :])[0] == pytest.approx(-72.0)
    none_recent = np.full(n, NAN, np.float32)
    none_recent[:120] = 85.0  # no valid bin in the last 60 s: flat at the last valid value
    assert rule.score(none_recent[None, :])[0] == pytest.approx(-85.0)


def test_features_are_finite_and_nan_safe():
    rng = np.random.default_rng(0)
    x = rng.normal(75, 8, (50, 150)).astype(np.float32)
    x[rng.random(x.shape) < 0.2] = NAN
    x[3, -40:] = NAN  # the recent stretches are empty for this window
    spec = FeatureSpec()
    f = window_features(x, spec)
    assert f.shape == (50, len(spec.names())) and np.isfinite(f).all()
    assert f[3, spec.names().index("mean_last_30s")] == last_valid(x)[3]
    below = spec.names().index("fraction_below_65")
    valid = ~np.isnan(x[0])
    assert f[0, below] == pytest.approx((x[0][valid] < 65).mean())


def test_factory_reads_every_medbench_spec():
    for slug in [
        "medbench/neg-last-map",
        "medbench/linear-extrapolation",
        "medbench/logreg-window",
        "medbench/hgb-window",
    ]:
        spec = SPECS.models[slug]
        assert "vitaldb-ioh@0" in spec.tasks
        scorer = make_window_scorer(spec.settings, S.bin_seconds)
        assert scorer.describe()
    with pytest.raises(ValueError):
        make_window_scorer({"rule": "nope"})


# --------------------------------------------------------------------------- trained on demo windows


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    path = demo_windows(tmp_path_factory.mktemp("baselines"))
    return {name: read_windows(path, name) for name in ("train", "validation", "test")}


def _fit_score(settings, demo, seed: int) -> tuple[np.ndarray, object]:
    (tr, xtr), (va, xva), (_, xte) = demo["train"], demo["validation"], demo["test"]
    scorer = make_window_scorer(settings, S.bin_seconds)
    scorer.fit(xtr, tr["label"].to_numpy(), xva, va["label"].to_numpy(), seed=seed)
    return scorer.score(xte), scorer


def test_map_alone_is_well_above_chance_on_the_demo(demo):
    meta, x = demo["test"]
    y = meta["label"].to_numpy()
    assert 0 < y.sum() < len(y)
    assert auroc(NegLastMap().score(x), y) > 0.75
    rule = make_window_scorer(SPECS.models["medbench/linear-extrapolation"].settings, S.bin_seconds)
    assert auroc(rule.score(x), y) > 0.75


@pytest.mark.parametrize("slug", ["medbench/logreg-window", "medbench/hgb-window"])
def test_trained_models_score_every_test_window(demo, slug):
    settings = SPECS.models[slug].settings
    scores, scorer = _fit_score(settings, demo, seed=7)
    meta, _ = demo["test"]
    assert scores.shape == (meta.height,) and np.isfinite(scores).all()
    assert auroc(scores, meta["label"].to_numpy()) > 0.75
    chosen = scorer.describe()["chosen"]
    grid = {k: v for k, v in msgspec.structs.asdict(settings).items()
            if isinstance(v, tuple) and k not in ("below", "recent_seconds")}
    assert grid and all(chosen[k] in v for k, v in grid.items())


def test_trained_models_are_deterministic_with_the_seed(demo):
    settings = {"estimator": "hist_gradient_boosting", "learning_rate": 0.1, "max_leaf_nodes": 15, "max_iter": 60}
    a, _ = _fit_score(settings, demo, seed=3)
    b, _ = _fit_score(settings, demo, seed=3)
    np.testing.assert_array_equal(a, b)
    lr = {"estimator": "logistic_regression", "C": [0.1, 1.0]}
    c, _ = _fit_score(lr, demo, seed=3)
    d, _ = _fit_score(lr, demo, seed=3)
    np.testing.assert_array_equal(c, d)


def test_validation_with_one_class_keeps_the_first_candidate(demo):
    (tr, xtr), (va, xva) = demo["train"], demo["validation"]
    scorer = make_window_scorer({"estimator": "logistic_regression", "C": [0.5, 2.0]}, S.bin_seconds)
    negatives = va["label"].to_numpy() == 0
    scorer.fit(xtr, tr["label"].to_numpy(), xva[negatives], np.zeros(int(negatives.sum())), seed=1)
    assert scorer.describe()["chosen"]["C"] == 0.5


def test_features_in_blocks_equal_features_at_once(monkeypatch):
    import pipelines.backends.window_scorers as baselines

    rng = np.random.default_rng(2)
    x = rng.normal(75, 8, (103, 150)).astype(np.float32)
    x[rng.random(x.shape) < 0.1] = NAN
    whole = window_features(x)
    monkeypatch.setattr(baselines, "_FEATURE_BLOCK_ROWS", 10)
    np.testing.assert_array_equal(window_features(x), whole)
