"""Metrics of a choice task from its predictions: accuracy (unparsable = wrong), parse rate, and
accuracy by category, each with a seeded percentile-bootstrap 95% CI over items."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pyarrow as pa

from pipelines.scoring.summary import ScoreSummary
from pipelines.specs import BootstrapSpec
from pipelines.stats.bootstrap import percentile_bootstrap_mean


def choice_metrics(predictions: pa.Table, categories: dict[str, str], bootstrap: BootstrapSpec) -> ScoreSummary:
    ids = predictions.column("instance_id").to_pylist()
    correct = np.asarray(predictions.column("correct").to_pylist(), dtype=np.float64)
    status = predictions.column("parse_status").to_pylist()
    parsed = np.asarray([s == "ok" for s in status], dtype=np.float64)
    reps, seed = bootstrap.replicates, bootstrap.seed
    metrics = [
        ("accuracy", *percentile_bootstrap_mean(correct, reps, seed)),
        ("parse_rate", *percentile_bootstrap_mean(parsed, reps, seed)),
    ]
    cats = np.asarray([categories[i] for i in ids])
    by_category = []
    for cat in sorted(set(cats.tolist())):
        mask = cats == cat
        value, lo, hi = percentile_bootstrap_mean(correct[mask], reps, seed)
        metrics.append((f"accuracy[{cat}]", value, lo, hi))
        by_category.append({"category": cat, "n": int(mask.sum()), "accuracy": value, "ci_low": lo, "ci_high": hi})
    extras = {"by_category": by_category, "parse_status": dict(sorted(Counter(status).items()))}
    return ScoreSummary(metrics=[(n, float(v), float(lo), float(hi)) for n, v, lo, hi in metrics],
                        n=len(ids), parse_rate=float(parsed.mean()) if len(ids) else 0.0, extras=extras)
