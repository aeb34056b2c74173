"""The rank-interval bench keeps working at tiny size (the full run is done by hand)."""

from bench import ranks


def test_ranks_bench_runs_at_tiny_scale(capsys):
    assert ranks.main(["--tiny"]) == 0
    out = capsys.readouterr().out
    assert "same intervals: True" in out and "same: True" in out
