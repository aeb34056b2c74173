"""The parser bench keeps working at tiny size (the full run is done by hand; docs/benchmarks.md)."""

from bench import parse_adversarial


def test_parse_adversarial_bench_runs_at_tiny_scale(capsys):
    assert parse_adversarial.main(["--tiny"]) == 0
    out = capsys.readouterr().out
    assert "same: True" in out and "same: False" not in out and "old/new" in out
