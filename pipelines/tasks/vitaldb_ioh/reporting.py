"""vitaldb-ioh's clinical report (TRIPOD+AI): which probabilities the calibration metrics read, and
the subgroups by sex and age band.

Probabilities: a scorer declares ``probabilistic`` (``medbench.protocols.WindowScorer``). A probabilistic
scorer's scores are taken as they are; any other's are mapped by ``p = sigmoid(a + b * score)``
fitted on the validation split when the model is run (``family.probabilities``). The map travels with
the predictions it applies to, in the Parquet file's key-value metadata under
``medbench.probabilities`` (the file's columns are pinned, and the test windows alone cannot
refit it), and in the result's ``config.probabilities``.

The validation windows the map and the alarm thresholds were fitted on (each window's score, label
and subject) travel the same way, under ``medbench.validation`` (an Arrow IPC stream, base64), so
that scoring can refit both in every bootstrap replicate on resampled validation subjects
(``replicate_fits``; docs/statistics.md, "Fair calibration and thresholds from validation").

Subgroups use the same bootstrap replicates as everything else (the columns of their own subjects
in the replicate counts), all of a subgroup's intervals the same subset of them (those holding both
classes in it), and a subgroup with fewer than ``MIN_SUBJECTS`` subjects says so; below the task's
``[intervals] min_clusters`` it publishes counts only (docs/statistics.md, "Intervals with few subjects").

Its file name is shared on purpose: vitaldb-ioh's clinical report; ``api.reporting`` says in words
how any published number was made.
"""

from __future__ import annotations

import base64
import json

import numpy as np
import pyarrow as pa

from medbench.stats.auroc import auroc, cluster_pair_counts, replicate_aurocs
from medbench.stats.calibration import Recalibration
from medbench.stats.clinical import MetricRow, clinical_report
from medbench.stats.intervals import level, percentile_interval
from medbench.stats.refit import ReplicateFits, refit, validation_counts

PROBABILITIES_KEY = b"medbench.probabilities"
VALIDATION_KEY = b"medbench.validation"
VALIDATION_SCHEMA = pa.schema([("score", pa.float64()), ("label", pa.int8()), ("subjectid", pa.int32())])
MIN_SUBJECTS = 30
RECALIBRATED = "; probabilities by logistic recalibration fitted on the validation split"


def probability_metadata(probabilistic: bool, recalibration: Recalibration | None,
                         validation_recalibration: Recalibration | None = None,
                         alarm_thresholds: dict[float, float] | None = None) -> dict[bytes, bytes]:
    """The metadata; ``validation_recalibration`` (a probabilistic scorer's map of logit p, fitted on
    validation) and ``alarm_thresholds`` ({rate: score threshold} on validation) only when given."""
    body: dict = {"probabilistic": probabilistic,
                  "recalibration": recalibration.as_dict() if recalibration is not None else None}
    if validation_recalibration is not None:
        body["validation_recalibration"] = {**validation_recalibration.as_dict(), "of": "logit(p)"}
    if alarm_thresholds is not None:
        body["alarm_thresholds"] = {f"{r:g}": float(t) for r, t in alarm_thresholds.items()}
    return {PROBABILITIES_KEY: json.dumps(body, sort_keys=True).encode()}


def validation_fits(predictions: pa.Table) -> tuple[np.ndarray | None, dict[float, float] | None]:
    """(the test probabilities after the logistic recalibration fitted on validation, {alarm rate:
    threshold chosen on validation}), each None for predictions made before they were recorded.

    A rule's probabilities already are its validation recalibration; a probabilistic scorer's are
    mapped by sigmoid(a + b logit p) fitted on its validation windows, so both are compared after the
    same recalibration (docs/statistics.md, "Fair calibration")."""
    body = json.loads((predictions.schema.metadata or {}).get(PROBABILITIES_KEY, b"{}"))
    thresholds = body.get("alarm_thresholds")
    fixed = {float(r): float(t) for r, t in thresholds.items()} if thresholds is not None else None
    if body.get("recalibration"):
        return Recalibration.from_dict(body["recalibration"]).apply(predictions.column("score").to_numpy()), fixed
    if body.get("validation_recalibration"):
        return Recalibration.from_dict(body["validation_recalibration"]).apply(_logit(predictions.column("score").to_numpy())), fixed
    return None, fixed


def validation_metadata(scores, labels, subjects) -> dict[bytes, bytes]:
    """The validation windows' scores, labels and subjects as the predictions' metadata (never columns:
    the predictions file's columns are the test windows', pinned)."""
    table = pa.table({"score": np.asarray(scores, dtype=np.float64), "label": np.asarray(labels).astype(np.int8),
                      "subjectid": np.asarray(subjects).astype(np.int32)}, schema=VALIDATION_SCHEMA)
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, VALIDATION_SCHEMA, options=pa.ipc.IpcWriteOptions(compression="zstd")) as writer:
        writer.write_table(table)
    return {VALIDATION_KEY: base64.b64encode(sink.getvalue().to_pybytes())}


def validation_windows(predictions: pa.Table) -> pa.Table | None:
    """The validation windows stored with the predictions, or None (predictions made before they were)."""
    raw = (predictions.schema.metadata or {}).get(VALIDATION_KEY)
    if raw is None:
        return None
    return pa.ipc.open_stream(base64.b64decode(raw)).read_all()


def _logit(scores) -> np.ndarray:
    """logit p as the validation map of a probabilistic scorer reads it (``family.probabilities``)."""
    p = np.clip(np.asarray(scores, dtype=np.float64), 1e-12, 1 - 1e-12)
    return np.log(p / (1 - p))


def replicate_fits(predictions: pa.Table, replicates: int, seed: int) -> ReplicateFits | None:
    """The recalibration map and alarm thresholds refit in each of ``replicates`` replicates on its
    resampled validation subjects (draws ``refit.validation_counts(.., seed)``), for the test windows
    of ``predictions``; None where the predictions carry no validation windows or no validation map."""
    val = validation_windows(predictions)
    body = json.loads((predictions.schema.metadata or {}).get(PROBABILITIES_KEY, b"{}"))
    rule = bool(body.get("recalibration"))
    if val is None or not (rule or body.get("validation_recalibration")):
        return None
    s_val = val.column("score").to_numpy().astype(np.float64)
    s_test = predictions.column("score").to_numpy().astype(np.float64)
    ids, clusters = np.unique(val.column("subjectid").to_numpy(), return_inverse=True)
    rates = [float(r) for r in (body.get("alarm_thresholds") or {})]
    return refit(s_val if rule else _logit(s_val), val.column("label").to_numpy(), s_val, clusters,
                 validation_counts(len(ids), replicates, seed), s_test if rule else _logit(s_test), s_test,
                 alarm_rates=rates, maps_p=rule)


def probabilities_of(predictions: pa.Table) -> tuple[np.ndarray, Recalibration | None]:
    """(probabilities of the test windows, the recalibration applied or None)."""
    scores = predictions.column("score").to_numpy().astype(np.float64)
    raw = (predictions.schema.metadata or {}).get(PROBABILITIES_KEY)
    if raw is None:
        raise ValueError("the predictions do not say whether their scores are probabilities "
                         f"({PROBABILITIES_KEY.decode()} metadata): run the evaluation again to remake them")
    body = json.loads(raw)
    if body.get("recalibration"):
        recal = Recalibration.from_dict(body["recalibration"])
        return recal.apply(scores), recal
    if not body.get("probabilistic"):
        raise ValueError("the predictions' scores are not probabilities and carry no recalibration: "
                         "run the evaluation again")
    if scores.min(initial=0.0) < 0 or scores.max(initial=1.0) > 1:
        raise ValueError("a probabilistic scorer produced scores outside [0, 1]")
    return scores, None


def age_band(age: float, edges) -> str | None:
    """The band of ``age`` among lower edges ``edges`` ("18-39", ..., "65+"), None below the first or unknown."""
    if age is None or not np.isfinite(age):
        return None
    k = int(np.searchsorted(np.asarray(edges), age, side="right")) - 1
    if k < 0:
        return None
    return f"{edges[k]}+" if k == len(edges) - 1 else f"{edges[k]}-{edges[k + 1] - 1}"


def subgroup_rows(p, scores, y, clusters, ids, counts, groups: dict[str, np.ndarray],
                  thresholds=(), expanded: bool = False, min_clusters: int = 0,
                  decision_p=None, refit_fits: ReplicateFits | None = None) -> dict[str, list[dict]]:
    """{field: [{group, n, n_subjects, metrics: [MetricRow], caveat, replicates_kept, withheld_reason}]}
    over each field's non-null groups.

    ``clusters`` index 0..C-1 into ``ids`` (sorted subject ids) and the columns of ``counts``. Every
    interval of a subgroup comes from the same replicates: those in which the subgroup holds both
    classes (``replicates_kept``); ``expanded`` reads them at the expanded level of its own number of
    subjects. A subgroup with fewer than ``min_clusters`` subjects publishes counts only
    (``metrics`` empty, ``withheld_reason`` says why). ``refit_fits``: each replicate's map refit on
    its resampled validation subjects (rows aligned with ``counts``); a subgroup's replicates are then
    those that also have a map, so its intervals still share one subset.
    """
    out: dict[str, list[dict]] = {}
    for name, values in groups.items():
        rows = []
        for group in sorted({v for v in values if v is not None}):
            mine = np.array([v == group for v in values])
            own = np.unique(clusters[mine])
            local = np.searchsorted(own, clusters[mine])
            if len(own) < min_clusters:
                rows.append({"group": str(group), "n": int(mine.sum()), "n_subjects": int(len(own)), "metrics": [],
                             "caveat": None, "replicates_kept": 0,
                             "withheld_reason": f"only {len(own)} subjects, fewer than the {min_clusters} a "
                                                "cluster-bootstrap interval needs to hold its 95%: counts only"})
                continue
            pos = np.bincount(local, weights=y[mine], minlength=len(own))
            size = np.bincount(local, minlength=len(own)).astype(np.float64)
            both = (counts[:, own] @ pos > 0) & (counts[:, own] @ (size - pos) > 0)
            if refit_fits is not None:
                both &= refit_fits.defined
            if not both.any():  # one class only: prevalence alone is defined, over every replicate
                both = np.ones(len(counts), dtype=bool)
            sub = counts[both][:, own]  # the same replicates for every interval of the subgroup
            alpha = level(expanded, len(own))
            metrics = [_auroc_row(scores[mine], y[mine], local, sub, alpha)]
            rep = clinical_report(p[mine], y[mine], local, sub, thresholds=thresholds, curves=False, alpha=alpha,
                                  decision_p=None if decision_p is None else decision_p[mine],
                                  refit=None if refit_fits is None else refit_fits.subset(both, mine))
            metrics += [m for m in rep.metrics if not m.name.startswith("net_benefit_treat_all")]
            with np.errstate(invalid="ignore", divide="ignore"):
                prev = (sub.astype(np.float64) @ pos) / (sub.astype(np.float64) @ size)
            metrics.append(MetricRow("prevalence", float(y[mine].mean()), *percentile_interval(prev, alpha),
                                     uses_probabilities=False, replicates_kept=int(np.isfinite(prev).sum())))
            caveat = None
            if len(own) < MIN_SUBJECTS:
                caveat = (f"only {len(own)} subjects (fewer than {MIN_SUBJECTS}): its intervals are wide "
                          "and unstable; do not read a difference between subgroups from them")
            if y[mine].min() == y[mine].max():
                caveat = ((caveat + "; ") if caveat else "") + "one class only: AUROC and calibration are undefined"
            rows.append({"group": str(group), "n": int(mine.sum()), "n_subjects": int(len(own)),
                         "metrics": metrics, "caveat": caveat, "replicates_kept": int(both.sum()),
                         "withheld_reason": None})
        out[name] = rows
    return out


def _auroc_row(scores, y, clusters, counts, alpha: float) -> MetricRow:
    pairs = cluster_pair_counts(scores, y, clusters)
    reps = replicate_aurocs(pairs, counts)
    return MetricRow("auroc", auroc(scores, y), *percentile_interval(reps, alpha),
                     replicates_kept=int(np.isfinite(reps).sum()),
                     uses_probabilities=False)
