"""The rank sets against a line-by-line port of csranks (``tests/support/csranks_port.py``) on a
committed fixture of bootstrap replicates, and the constant-difference case of the parse-rate board
(docs/statistics.md, "Rank intervals")."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from medbench.stats.rank_sets import _zero_se, simultaneous_rank_sets
from medbench.stats.ranks import accuracy_replicate_sums
from tests.support.csranks_port import csranks_simul

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "csranks_replicates.json"


def _fixture() -> tuple[np.ndarray, np.ndarray]:
    data = json.loads(FIXTURE.read_text())
    return np.array(data["estimates"], dtype=np.float64), np.array(data["replicates"], dtype=np.float64)


def test_sets_equal_the_csranks_port_on_the_committed_replicates():
    est, reps = _fixture()
    low, high = csranks_simul(est, reps, zero_sd=_zero_se(est))
    sets = simultaneous_rank_sets(est, reps)
    assert sets.low.tolist() == low.tolist() and sets.high.tolist() == high.tolist()
    # the always-right model is confidently first, the always-wrong one last, although the two of
    # them differ by the same 300 in every replicate (SD 0)
    assert (sets.low[8], sets.high[8]) == (1, 1) and (sets.low[9], sets.high[9]) == (10, 10)
    # dropping both directions of a decided pair (medbench's step-down before the port) found model 6
    # confidently above model 7 here ([9, 9]); csranks keeps the reverse directions in the maximum
    assert (sets.low[7], sets.high[7]) == (8, 9)


def test_sets_equal_the_port_on_fresh_boards_with_ties():
    rng = np.random.default_rng(12)
    for trial in range(6):
        p = np.sort(rng.choice([0.45, 0.5, 0.55, 0.6, 0.7], size=7))
        correct = rng.random((7, 250)) < p[:, None]
        reps = accuracy_replicate_sums(correct, 300, trial)
        est = correct.sum(axis=1).astype(np.float64)
        low, high = csranks_simul(est, reps, zero_sd=_zero_se(est))
        sets = simultaneous_rank_sets(est, reps)
        assert sets.low.tolist() == low.tolist() and sets.high.tolist() == high.tolist(), trial


def test_parse_rate_board_a_constant_gap_is_decided():
    """Eight models parse all 1,045 items in every replicate, tiny-llama none: every difference has
    SD 0, the eight are tied among themselves and all above tiny-llama."""
    est = np.array([1045.0] * 8 + [0.0])
    reps = np.tile(est, (1000, 1))
    sets = simultaneous_rank_sets(est, reps)
    assert sets.low.tolist() == [1] * 8 + [9]
    assert sets.high.tolist() == [8] * 8 + [9]
    low, high = csranks_simul(est, reps, zero_sd=_zero_se(est))
    assert sets.low.tolist() == low.tolist() and sets.high.tolist() == high.tolist()
