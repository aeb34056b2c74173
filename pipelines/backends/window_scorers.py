"""The window scorers of the ``rule`` and ``sklearn`` backends: two rules and two trained
scikit-learn models on window features, for any family that asks a ``FitAndScore``.

A window is a row of evenly spaced readings (``step_seconds`` apart, the family's grid; vitaldb-ioh's
MAP every 2 s). Every model is shown against the last reading alone (``neg_last_map``): for
vitaldb-ioh the published forward-analysis AUROC of MAP alone is about 0.93, so a trained model
that does not clearly beat it adds nothing. All scorers share one tiny interface (fit on train
with validation for tuning, then score windows); rules ignore ``fit``. Inputs are float32
[n, input_bins] with NaN for missing bins; a family keeps only windows with mostly valid bins, so
each has a last valid value and scores are never NaN (a window with no valid bin at all is an
error, not a silent NaN). Why in the backends: what a model is (its rule, its estimator, its
features) is its spec's ``[settings]``; the family supplies only the windows and their step.
"""

from __future__ import annotations

import contextlib
import itertools
from dataclasses import dataclass, field
from typing import Any, ClassVar

import msgspec
import numpy as np

from pipelines.backends.settings import (
    HistGradientBoostingSettings,
    LinearExtrapolationRule,
    LogisticRegressionSettings,
    NegLastMapRule,
    SklearnSettings,
    settings_for,
)
from medbench.protocols import WindowScorer
from medbench.stats.auroc import auroc

_PARALLEL_MIN_ROWS = 200_000
DEFAULT_BIN_SECONDS = 2  # vitaldb-ioh@0's grid; pass the family's step to use its value


# --------------------------------------------------------------------------- shared window arithmetic


def _checked(inputs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    x = np.asarray(inputs, dtype=np.float32)
    if x.ndim != 2:
        raise ValueError(f"inputs must be [n, bins], got shape {x.shape}")
    valid = ~np.isnan(x)
    empty = ~valid.any(axis=1)
    if empty.any():
        raise ValueError(f"{int(empty.sum())} window(s) have no valid bin (first at row {int(np.argmax(empty))})")
    return x, valid


def last_valid(inputs: np.ndarray) -> np.ndarray:
    """The last non-missing value of each window, float64."""
    x, valid = _checked(inputs)
    idx = x.shape[1] - 1 - np.argmax(valid[:, ::-1], axis=1)
    return x[np.arange(len(x)), idx].astype(np.float64)


def _masked_line(
    x: np.ndarray, valid: np.ndarray, times: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Least-squares line through the valid points: (mean time, mean value, slope, valid count).

    Where fewer than two points are valid the slope is 0 and the mean value is NaN when none is.
    """
    w = valid.astype(np.float64)
    n = w.sum(axis=1)
    values = np.where(valid, x, 0.0).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        t_mean = (w * times).sum(axis=1) / n
        v_mean = values.sum(axis=1) / n
        dt = (times[None, :] - t_mean[:, None]) * w
        sxx = (dt * dt).sum(axis=1)
        sxy = (dt * (values - v_mean[:, None] * w)).sum(axis=1)
        slope = np.where((n >= 2) & (sxx > 0), sxy / sxx, 0.0)
    return t_mean, v_mean, slope, n


def _bin_times(n_bins: int, bin_seconds: int) -> np.ndarray:
    """Centre of each input bin in seconds relative to the prediction time T (all negative)."""
    return (np.arange(n_bins) - n_bins + 0.5) * bin_seconds


# --------------------------------------------------------------------------- rules


@dataclass
class NegLastMap(WindowScorer):
    """Score = minus the last valid MAP of the input."""

    probabilistic: ClassVar[bool] = False

    def fit(self, train_inputs, train_labels, val_inputs, val_labels, seed: int) -> None:
        return None

    def score(self, inputs: np.ndarray) -> np.ndarray:
        return -last_valid(inputs)

    def describe(self) -> dict[str, Any]:
        return {"rule": "neg_last_map"}


@dataclass
class LinearExtrapolation(WindowScorer):
    """Fit a line to the valid bins of the last ``fit_seconds``; score = minus its value at T + ``ahead_seconds``.

    With fewer than two valid bins in that stretch the line is flat at the last valid value.
    """

    probabilistic: ClassVar[bool] = False

    fit_seconds: int
    ahead_seconds: int
    bin_seconds: int = DEFAULT_BIN_SECONDS

    def fit(self, train_inputs, train_labels, val_inputs, val_labels, seed: int) -> None:
        return None

    def score(self, inputs: np.ndarray) -> np.ndarray:
        x, valid = _checked(inputs)
        n_fit = max(1, min(x.shape[1], self.fit_seconds // self.bin_seconds))
        times = _bin_times(x.shape[1], self.bin_seconds)[-n_fit:]
        t_mean, v_mean, slope, n = _masked_line(x[:, -n_fit:], valid[:, -n_fit:], times)
        predicted = np.where(n >= 1, v_mean + slope * (self.ahead_seconds - t_mean), last_valid(x))
        return -predicted

    def describe(self) -> dict[str, Any]:
        return {"rule": "linear_extrapolation", "fit_seconds": self.fit_seconds, "ahead_seconds": self.ahead_seconds}


# --------------------------------------------------------------------------- features


@dataclass(frozen=True)
class FeatureSpec:
    """What the trained models see of a window. Seconds and mmHg, converted to bins with bin_seconds."""

    below: tuple[float, ...] = (65.0, 70.0, 75.0)
    recent_seconds: tuple[int, ...] = (30, 60)
    slope_seconds: int = 60
    first_seconds: int = 60
    bin_seconds: int = DEFAULT_BIN_SECONDS

    def names(self) -> list[str]:
        names = ["last", "mean", "min", "max", "std", "slope", "valid_fraction", "last_minus_mean"]
        names += [f"slope_last_{self.slope_seconds}s", f"mean_first_{self.first_seconds}s"]
        names += [f"fraction_below_{v:g}" for v in self.below]
        for sec in self.recent_seconds:
            names += [f"mean_last_{sec}s", f"min_last_{sec}s", f"max_last_{sec}s"]
        return names

    def bins(self, seconds: int, n_bins: int, least: int = 1) -> int:
        return max(least, min(n_bins, seconds // self.bin_seconds))


_FEATURE_BLOCK_ROWS = 65_536  # bounds the float64 temporaries (~80 MB each) at full scale


def window_features(inputs: np.ndarray, spec: FeatureSpec = FeatureSpec()) -> np.ndarray:
    """Features per window, float64 [n, len(spec.names())]; NaN-safe (missing bins are skipped).

    A statistic over a stretch with no valid bin falls back to the window's last valid value.
    Computed in row blocks so that 1.9 million windows need no more memory than 65,536 do.
    """
    x = np.asarray(inputs, dtype=np.float32)
    out = np.empty((len(x), len(spec.names())), dtype=np.float64)
    for r0 in range(0, len(x), _FEATURE_BLOCK_ROWS):
        out[r0 : r0 + _FEATURE_BLOCK_ROWS] = _features_block(x[r0 : r0 + _FEATURE_BLOCK_ROWS], spec)
    return out


def _features_block(inputs: np.ndarray, spec: FeatureSpec) -> np.ndarray:
    x, valid = _checked(inputs)
    n_bins = x.shape[1]
    xv = x.astype(np.float64)
    last = last_valid(x)
    w = valid.astype(np.float64)
    count = w.sum(axis=1)
    filled = np.where(valid, xv, 0.0)
    mean = filled.sum(axis=1) / count
    lo = np.where(valid, xv, np.inf).min(axis=1)
    hi = np.where(valid, xv, -np.inf).max(axis=1)
    var = (np.where(valid, xv - mean[:, None], 0.0) ** 2).sum(axis=1) / count
    times = _bin_times(n_bins, spec.bin_seconds)
    _, _, slope, _ = _masked_line(x, valid, times)
    k = spec.bins(spec.slope_seconds, n_bins, least=2)
    _, _, recent_slope, _ = _masked_line(x[:, -k:], valid[:, -k:], times[-k:])
    k = spec.bins(spec.first_seconds, n_bins)
    first_mean = _stretch_mean(filled[:, :k], w[:, :k], last)
    columns = [last, mean, lo, hi, np.sqrt(var), slope, count / n_bins, last - mean, recent_slope, first_mean]
    for threshold in spec.below:
        columns.append((valid & (x < threshold)).sum(axis=1) / count)
    for sec in spec.recent_seconds:
        k = spec.bins(sec, n_bins)
        m = valid[:, -k:]
        seg = xv[:, -k:]
        any_valid = m.any(axis=1)
        columns.append(_stretch_mean(filled[:, -k:], w[:, -k:], last))
        columns.append(np.where(any_valid, np.where(m, seg, np.inf).min(axis=1), last))
        columns.append(np.where(any_valid, np.where(m, seg, -np.inf).max(axis=1), last))
    return np.column_stack(columns)


def _stretch_mean(filled: np.ndarray, w: np.ndarray, fallback: np.ndarray) -> np.ndarray:
    n = w.sum(axis=1)
    return np.where(n > 0, filled.sum(axis=1) / np.maximum(n, 1), fallback)


# --------------------------------------------------------------------------- trained models


def _grid(settings: SklearnSettings, keys: tuple[str, ...]) -> list[dict[str, Any]]:
    """Hyperparameter candidates: each key holds a value or a tuple of values (the settings' defaults
    fill what the spec leaves out)."""
    values = []
    for key in keys:
        given = getattr(settings, key)
        values.append(list(given) if isinstance(given, tuple) else [given])
    return [dict(zip(keys, combo, strict=True)) for combo in itertools.product(*values)]


@dataclass
class SklearnWindowModel(WindowScorer):
    """A scikit-learn classifier on window features, trained on train and tuned on validation AUROC.

    Each candidate of the hyperparameter grid is trained on the train split; the one with the
    highest validation AUROC is kept (the first candidate when validation has one class only).
    """

    probabilistic: ClassVar[bool] = True  # predict_proba

    estimator: str
    candidates: list[dict[str, Any]]
    features: FeatureSpec = field(default_factory=FeatureSpec)
    chosen: dict[str, Any] = field(default_factory=dict)
    validation_auroc: dict[str, float] = field(default_factory=dict)
    _model: Any = None

    def _make(self, params: dict[str, Any], seed: int):
        from sklearn.ensemble import HistGradientBoostingClassifier
        from sklearn.linear_model import LogisticRegression
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler

        if self.estimator == "logistic_regression":
            return make_pipeline(
                StandardScaler(), LogisticRegression(C=params["C"], max_iter=params["max_iter"], random_state=seed)
            )
        return HistGradientBoostingClassifier(
            learning_rate=params["learning_rate"],
            max_leaf_nodes=params["max_leaf_nodes"],
            max_iter=params["max_iter"],
            l2_regularization=params["l2_regularization"],
            early_stopping=False,
            random_state=seed,
        )

    def fit(self, train_inputs, train_labels, val_inputs, val_labels, seed: int) -> None:
        with _threads_for(len(train_inputs)):
            self._fit(train_inputs, train_labels, val_inputs, val_labels, seed)

    def _fit(self, train_inputs, train_labels, val_inputs, val_labels, seed: int) -> None:
        train_x = window_features(train_inputs, self.features)
        val_x = window_features(val_inputs, self.features) if len(val_inputs) else np.zeros((0, train_x.shape[1]))
        train_y = np.asarray(train_labels).astype(int)
        val_y = np.asarray(val_labels).astype(int)
        if len(np.unique(train_y)) < 2:
            raise ValueError("the train split has one class only: nothing to learn")
        can_tune = len(np.unique(val_y)) == 2
        best, best_auc, best_model = None, -np.inf, None
        for params in self.candidates:
            model = self._make(params, seed).fit(train_x, train_y)
            if not can_tune:
                best, best_model = params, model
                break
            auc = auroc(model.predict_proba(val_x)[:, 1], val_y)
            self.validation_auroc[_key(params)] = auc
            if auc > best_auc:
                best, best_auc, best_model = params, auc, model
        self.chosen = dict(best or {})
        self._model = best_model

    def score(self, inputs: np.ndarray) -> np.ndarray:
        if self._model is None:
            raise RuntimeError("fit the model before scoring")
        with _threads_for(len(inputs)):
            return self._model.predict_proba(window_features(inputs, self.features))[:, 1].astype(np.float64)

    def describe(self) -> dict[str, Any]:
        return {
            "estimator": self.estimator,
            "chosen": self.chosen,
            "validation_auroc": self.validation_auroc,
            "features": self.features.names(),
        }


def _threads_for(n_rows: int):
    """One thread (OpenMP and BLAS) for small data: on a busy 2-core machine, HistGradientBoosting's
    parallel regions on a few thousand rows spin-wait far longer than they compute (50 s, not 1.5 s)."""
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=1) if n_rows < _PARALLEL_MIN_ROWS else contextlib.nullcontext()


def _key(params: dict[str, Any]) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(params.items()))


# --------------------------------------------------------------------------- factory


def make_window_scorer(settings: Any, bin_seconds: int = DEFAULT_BIN_SECONDS) -> WindowScorer:
    """A scorer from a model spec's typed settings (``pipelines.backends.settings``).

    The rules: ``NegLastMapRule``, ``LinearExtrapolationRule`` (``fit_seconds``, ``ahead_seconds``).
    The trained models: ``LogisticRegressionSettings`` (grid over ``C``, ``max_iter``) and
    ``HistGradientBoostingSettings`` (``learning_rate``, ``max_leaf_nodes``, ``max_iter``,
    ``l2_regularization``), both with the feature settings of :class:`FeatureSpec` (``below``
    thresholds in mmHg, ``recent_seconds``, ``slope_seconds``, ``first_seconds``). A mapping (e.g.
    ``{"rule": "neg_last_map"}``) is decoded strictly as rule or sklearn settings. The grid's bin
    length (``bin_seconds``) comes from the family's problem, 2 s when not given.
    """
    if not isinstance(settings, msgspec.Struct):
        backend = "rule" if "rule" in settings else "sklearn"
        settings = settings_for(backend, settings)
    if isinstance(settings, NegLastMapRule):
        return NegLastMap()
    if isinstance(settings, LinearExtrapolationRule):
        return LinearExtrapolation(settings.fit_seconds, settings.ahead_seconds, bin_seconds)
    if not isinstance(settings, (LogisticRegressionSettings, HistGradientBoostingSettings)):
        raise ValueError(
            f"settings {settings!r} do not score windows: need rule neg_last_map|linear_extrapolation "
            "or estimator logistic_regression|hist_gradient_boosting"
        )
    features = FeatureSpec(
        below=settings.below,
        recent_seconds=settings.recent_seconds,
        slope_seconds=settings.slope_seconds,
        first_seconds=settings.first_seconds,
        bin_seconds=bin_seconds,
    )
    if isinstance(settings, LogisticRegressionSettings):
        return SklearnWindowModel("logistic_regression", _grid(settings, ("C", "max_iter")), features)
    grid = _grid(settings, ("learning_rate", "max_leaf_nodes", "max_iter", "l2_regularization"))
    return SklearnWindowModel("hist_gradient_boosting", grid, features)
