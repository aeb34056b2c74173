"""The seeded percentile bootstrap: reproducible, chunking-independent, equal to the plain loop."""

from __future__ import annotations

import numpy as np
import pytest

from medbench.stats.bootstrap import (
    bootstrap_replicate_means,
    percentile_bootstrap_mean,
)


def _values(n: int = 257, p: float = 0.6, seed: int = 3) -> np.ndarray:
    return (np.random.default_rng(seed).random(n) < p).astype(np.float64)


def _loop(values: np.ndarray, replicates: int, seed: int) -> tuple[float, float, float]:
    rng = np.random.default_rng(seed)
    means = []
    for _ in range(replicates):
        idx = rng.integers(0, len(values), size=len(values))
        means.append(sum(values[i] for i in idx) / len(values))
    low, high = np.percentile(means, [2.5, 97.5])
    return float(np.mean(values)), float(low), float(high)


def test_same_seed_same_interval() -> None:
    v = _values()
    assert percentile_bootstrap_mean(v, 500, seed=7) == percentile_bootstrap_mean(v, 500, seed=7)


def test_other_seed_other_replicates() -> None:
    v = _values()
    assert not np.array_equal(bootstrap_replicate_means(v, 500, seed=7), bootstrap_replicate_means(v, 500, seed=8))


def test_interval_contains_the_mean() -> None:
    v = _values()
    mean, low, high = percentile_bootstrap_mean(v, 1000, seed=1)
    assert mean == pytest.approx(v.mean())
    assert low < mean < high
    assert 0.0 <= low and high <= 1.0


@pytest.mark.parametrize("chunk", [1, 7 * 257, 4_000_000])
def test_equals_a_straightforward_loop_whatever_the_chunking(chunk: int) -> None:
    v = _values()
    got = percentile_bootstrap_mean(v, 300, seed=11, max_chunk_values=chunk)
    want = _loop(v, 300, seed=11)
    assert got == pytest.approx(want, rel=0, abs=1e-12)


def test_constant_values_have_a_degenerate_interval() -> None:
    assert tuple(percentile_bootstrap_mean(np.ones(50), 200, seed=0)) == (1.0, 1.0, 1.0)


def test_replicate_means_length_and_bounds() -> None:
    means = bootstrap_replicate_means(_values(n=31), 123, seed=5, max_chunk_values=10)
    assert means.shape == (123,)
    assert means.min() >= 0.0 and means.max() <= 1.0


def test_rejects_empty_input_and_zero_replicates() -> None:
    with pytest.raises(ValueError, match="non-empty"):
        percentile_bootstrap_mean(np.array([]), 10, seed=0)
    with pytest.raises(ValueError, match="at least one replicate"):
        percentile_bootstrap_mean(np.ones(3), 0, seed=0)
