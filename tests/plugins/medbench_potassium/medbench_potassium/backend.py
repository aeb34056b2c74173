"""The ``forecast`` backend: forecasting rules for a series' next value, fitted on train.

Settings: ``method`` "last" (the last value), "mean" (the mean of the last ``window`` values) or
"damped" (the last value pulled towards the patient's own mean by a factor fitted on the train
split by least squares). It answers the regression family's ``Forecast`` problem
(``family.Forecast.solve`` asks ``forecaster``).
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

import msgspec
import numpy as np

from pipelines.core.canonical import SpecStruct
from pipelines.core.protocols import Backend
from pipelines.core.specs import ModelSpec


class ForecastSettings(SpecStruct):
    method: Literal["last", "mean", "damped"]
    window: int = 3


class Forecaster:
    """Fitted on (history [n, k] with NaN padding on the left, next value [n]); predicts the next value."""

    def __init__(self, settings: ForecastSettings):
        self.settings = settings
        self.factor = 0.0

    @staticmethod
    def _last(x: np.ndarray) -> np.ndarray:
        return x[:, -1]

    def _mean(self, x: np.ndarray, window: int) -> np.ndarray:
        return np.nanmean(x[:, -window:], axis=1)

    def fit(self, x: np.ndarray, y: np.ndarray) -> None:
        if self.settings.method == "damped":
            last, centre = self._last(x), np.nanmean(x, axis=1)
            d = last - centre
            self.factor = float(np.clip((d @ (y - centre)) / max(float(d @ d), 1e-12), 0.0, 1.0))

    def predict(self, x: np.ndarray) -> np.ndarray:
        if self.settings.method == "last":
            return self._last(x)
        if self.settings.method == "mean":
            return self._mean(x, self.settings.window)
        centre = np.nanmean(x, axis=1)
        return centre + self.factor * (self._last(x) - centre)

    def describe(self) -> dict[str, Any]:
        return {"method": self.settings.method, "factor": round(self.factor, 6)}


class ForecastBackend(Backend):
    name: ClassVar[str] = "forecast"
    settings_type: ClassVar[Any] = ForecastSettings

    def published(self, settings: Any, *, keep_defaults: bool = True) -> dict[str, Any]:
        out = msgspec.to_builtins(settings)
        return out if keep_defaults else {k: v for k, v in out.items() if not (k == "window" and v == 3)}

    def forecaster(self, model: ModelSpec) -> Forecaster:
        return Forecaster(model.settings)
