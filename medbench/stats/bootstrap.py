"""Seeded percentile bootstrap of a mean: the 95% interval published next to every score.

Replicate r resamples the n values with replacement, using the indices drawn by
``np.random.default_rng(seed).integers(0, n, size=n)`` in order, r = 0, 1, ...; the interval is
the 2.5th and 97.5th percentiles (numpy's default linear interpolation) of the replicate means.
That definition is independent of how the work is split: replicates are drawn in chunks of rows
of one ``integers`` call (numpy's stream for a (k, n) draw equals k draws of n), so the result is
the same as the one-replicate-at-a-time loop, while memory stays bounded by ``max_chunk_values``
indices however many replicates are asked for.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

DEFAULT_MAX_CHUNK_VALUES = 4_000_000  # indices per chunk: 32 MB of int64


class BootstrapMean(NamedTuple):
    mean: float
    ci_low: float
    ci_high: float


def bootstrap_replicate_means(
    values: np.ndarray, replicates: int, seed: int, max_chunk_values: int = DEFAULT_MAX_CHUNK_VALUES
) -> np.ndarray:
    """The mean of each of ``replicates`` resamples of ``values`` (float64, length ``replicates``)."""
    data = np.asarray(values, dtype=np.float64)
    if data.ndim != 1 or data.size == 0:
        raise ValueError(f"bootstrap needs a non-empty 1-d array of values, got shape {data.shape}")
    if replicates < 1:
        raise ValueError(f"bootstrap needs at least one replicate, got {replicates}")
    n = data.size
    rng = np.random.default_rng(seed)
    rows_per_chunk = max(1, max_chunk_values // n)
    means = np.empty(replicates, dtype=np.float64)
    for start in range(0, replicates, rows_per_chunk):
        rows = min(rows_per_chunk, replicates - start)
        idx = rng.integers(0, n, size=(rows, n))
        means[start : start + rows] = data[idx].mean(axis=1)
    return means


def percentile_bootstrap_mean(
    values: np.ndarray, replicates: int, seed: int, max_chunk_values: int = DEFAULT_MAX_CHUNK_VALUES
) -> BootstrapMean:
    """(sample mean, 2.5th percentile, 97.5th percentile) of the bootstrap replicate means."""
    means = bootstrap_replicate_means(values, replicates, seed, max_chunk_values)
    low, high = np.percentile(means, [2.5, 97.5])
    return BootstrapMean(float(np.mean(np.asarray(values, dtype=np.float64))), float(low), float(high))
