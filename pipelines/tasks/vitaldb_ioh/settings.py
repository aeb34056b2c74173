"""The ``[ioh]`` table of a vitaldb-ioh task version: cohort, grid, windows, label and split.

Its file name is shared on purpose: every plug-in package names its parts alike
(docs/adding-a-task.md, "The pieces"), so one reads the next.
"""

from __future__ import annotations

from typing import Literal

from medbench.specs import SpecBase


class IohReporting(SpecBase):
    """``[ioh.reporting]``: the clinical report of every result (TRIPOD+AI). Part of the spec hash:
    these are published metrics, so changing them makes new run ids.

    ``thresholds``: probability thresholds of the operating points and the net benefit;
    ``alarm_rates``: fractions of windows that alarm, for operating points that do not depend on
    calibration; ``age_bands``: lower edges of the age subgroups in years (``[18, 40, 65]`` ->
    18-39, 40-64, 65+); ``calibration_bins``: quantile bins of the calibration curve.
    """

    thresholds: tuple[float, ...] = ()
    alarm_rates: tuple[float, ...] = ()
    age_bands: tuple[int, ...] = ()
    calibration_bins: int = 10


class IohSettings(SpecBase):
    track: str
    min_age: int
    ane_type: str
    exclude_opname_containing: str
    bin_seconds: int
    valid_min: float
    valid_max: float
    stride_seconds: int
    input_seconds: int
    horizon_seconds: int
    min_valid_input_bins: int
    min_valid_horizon_bins: int
    threshold: float
    event_bins: int
    in_progress_bins: int
    split_salt: str
    test_below: int
    validation_below: int
    # Which seed a fitted model (scikit-learn) uses: "task" (the task's bootstrap seed, as the
    # results before this key were fitted) or "model" (the model spec's own ``seed`` when it sets
    # one, else the task's). It changes fitted scores, so it is a spec key (new run ids).
    fit_seed: Literal["task", "model"] = "task"
    # The model every result of this task is compared with (paired AUROC difference, computed at
    # publish time into ``baseline_comparisons``); "" for none. It names no task in engine or api.
    baseline_model: str = ""
    reporting: IohReporting = IohReporting()

    @property
    def input_bins(self) -> int:
        return self.input_seconds // self.bin_seconds

    @property
    def horizon_bins(self) -> int:
        return self.horizon_seconds // self.bin_seconds
