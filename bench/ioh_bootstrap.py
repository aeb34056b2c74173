"""Benchmark: cluster-bootstrap AUROC from per-cluster pair counts vs a roc_auc_score loop.

10,000 replicates over 300,000 windows from 1,200 subjects with continuous scores. Ours
(``medbench.stats.auroc.cluster_bootstrap``, AUROC interval) runs in a child process that reports
its time and peak RSS. The reference builds each resample's windows from the same drawn subjects
and calls ``sklearn.metrics.roc_auc_score``; a few replicates are timed and the time is scaled to
all of them, and those replicates are compared with ours. Targets (issue 7): >= 100x, < 10 s in
all, identical to 1e-9, peak < 4 GiB.

    python -m bench.ioh_bootstrap [--scale tiny|full]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from bench._measure import GIB, report_child, run_child

SCALES = {
    "tiny": {"windows": 20_000, "subjects": 100, "replicates": 500, "reference_replicates": 3},
    "full": {"windows": 300_000, "subjects": 1_200, "replicates": 10_000, "reference_replicates": 10},
}
SEED = 20261029
TARGET_RATIO, TARGET_SECONDS, TARGET_PEAK_GIB, TARGET_DIFF = 100, 10.0, 4.0, 1e-9


def synthetic_windows(n_windows: int, n_subjects: int, seed: int = 3) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(scores, labels, subject ids): uneven windows per subject, subject-level prevalence and effects."""
    rng = np.random.default_rng(seed)
    weights = rng.lognormal(0, 0.6, n_subjects)
    subject_of = rng.choice(n_subjects, size=n_windows, p=weights / weights.sum())
    subject_ids = rng.permutation(np.arange(10_000, 10_000 + n_subjects))[subject_of]
    risk = rng.beta(1.2, 12, n_subjects)[subject_of]
    labels = (rng.random(n_windows) < risk).astype(np.int8)
    scores = 1.4 * labels + rng.normal(0, 0.5, n_subjects)[subject_of] + rng.normal(0, 1, n_windows)
    return scores, labels, subject_ids


def child(payload: dict) -> None:
    from medbench.stats.auroc import cluster_bootstrap

    scores, labels, subjects = synthetic_windows(payload["windows"], payload["subjects"])
    start = time.perf_counter()
    result = cluster_bootstrap(scores, labels, subjects, payload["replicates"], SEED, with_auprc=False)
    seconds = time.perf_counter() - start
    np.save(payload["values"], result.replicate_values)
    start = time.perf_counter()
    full = cluster_bootstrap(scores, labels, subjects, 1000, SEED, with_auprc=True)
    full_seconds = time.perf_counter() - start
    report_child(
        {
            "seconds": seconds,
            "auroc": result.auroc,
            "ci": [result.ci_low, result.ci_high],
            "dropped": result.n_dropped,
            "with_auprc_1000_seconds": full_seconds,
            "auprc": full.auprc,
            "auprc_ci": [full.auprc_ci_low, full.auprc_ci_high],
        }
    )


def reference_replicates(scores, labels, subjects, replicates: int, seed: int, count: int) -> tuple[np.ndarray, float]:
    """roc_auc_score on the first ``count`` resamples drawn exactly as the bootstrap draws them."""
    from sklearn.metrics import roc_auc_score

    from medbench.stats.auroc import resample_cluster_draws

    ids, inverse = np.unique(subjects, return_inverse=True)
    order = np.argsort(inverse, kind="stable")
    members = np.split(order, np.cumsum(np.bincount(inverse, minlength=len(ids)))[:-1])
    draws = resample_cluster_draws(len(ids), replicates, seed)[:count]
    out = np.full(count, np.nan)
    start = time.perf_counter()
    for r, drawn in enumerate(draws):
        idx = np.concatenate([members[k] for k in drawn])
        if labels[idx].min() != labels[idx].max():
            out[r] = roc_auc_score(labels[idx], scores[idx])
    return out, (time.perf_counter() - start) / count


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", choices=sorted(SCALES), default="full")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(json.loads(args.child))
        return 0
    scale = SCALES[args.scale]
    with tempfile.TemporaryDirectory(prefix="bench-ioh-bootstrap-") as work:
        values_path = Path(work) / "values.npy"
        payload = {k: scale[k] for k in ("windows", "subjects", "replicates")} | {"values": str(values_path)}
        result = run_child("bench.ioh_bootstrap", payload)
        ours = np.load(values_path)
    fast_s, peak_gib = result["seconds"], result["peak_rss_bytes"] / GIB
    print(f"ioh_bootstrap (scale {args.scale}): {scale['replicates']:,} cluster-bootstrap AUROC replicates over "
          f"{scale['windows']:,} windows from {scale['subjects']:,} subjects", flush=True)  # fmt: skip
    print(f"pair-count bootstrap: {fast_s:.2f} s in all, AUROC {result['auroc']:.4f} "
          f"[{result['ci'][0]:.4f}, {result['ci'][1]:.4f}], {result['dropped']} one-class replicates dropped, "
          f"peak RSS {peak_gib:.2f} GiB (ru_maxrss of the child process)", flush=True)  # fmt: skip
    auprc_s, (auprc_low, auprc_high) = result["with_auprc_1000_seconds"], result["auprc_ci"]
    print(f"with the exact weighted AUPRC interval too, 1,000 replicates: {auprc_s:.2f} s "
          f"(AUPRC {result['auprc']:.4f} [{auprc_low:.4f}, {auprc_high:.4f}])", flush=True)  # fmt: skip

    scores, labels, subjects = synthetic_windows(scale["windows"], scale["subjects"])
    count = scale["reference_replicates"]
    reference, per_replicate = reference_replicates(scores, labels, subjects, scale["replicates"], SEED, count)
    estimated = per_replicate * scale["replicates"]
    both = np.isfinite(reference) & np.isfinite(ours[:count])
    if not np.array_equal(np.isfinite(reference), np.isfinite(ours[:count])):
        raise AssertionError("the two disagree on which replicates have one class only")
    diff = float(np.max(np.abs(reference[both] - ours[:count][both]))) if both.any() else 0.0
    print(f"roc_auc_score loop: {per_replicate * 1e3:.1f} ms per replicate (timed on {count}) -> "
          f"{estimated:,.0f} s estimated for {scale['replicates']:,}", flush=True)  # fmt: skip
    print(f"largest difference over the {count} compared replicates: {diff:.3g}")
    ratio = estimated / fast_s
    ok = ratio >= TARGET_RATIO and fast_s < TARGET_SECONDS and peak_gib < TARGET_PEAK_GIB and diff <= TARGET_DIFF
    print(f"ratio: {ratio:,.0f}x faster than the roc_auc_score loop (targets at full scale: >= {TARGET_RATIO}x, "
          f"< {TARGET_SECONDS:.0f} s, < {TARGET_PEAK_GIB:.0f} GiB peak, difference <= {TARGET_DIFF:g}: "
          f"{'met' if ok else 'NOT met'})")  # fmt: skip
    if diff > TARGET_DIFF:
        raise AssertionError(f"bootstrap differs from the roc_auc_score loop by {diff}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
