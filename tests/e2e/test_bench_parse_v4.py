"""The parser v4 bench keeps working at tiny size (the full run is done by hand): every row prints,
and v4 reads each adversarial reply as v3 does except the two written in v4's new classes."""

from bench import parse_v4


def test_parse_v4_bench_runs_at_tiny_scale(capsys):
    assert parse_v4.main(["--tiny"]) == 0
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if line.startswith("'")]
    assert len(rows) == len(parse_v4.UNITS)
    differing = {line.split("'")[1] for line in rows if line.rstrip().endswith("False")}
    assert differing == {"答案是A或B。", "| A | ✅ |\\n"}
    assert "v4 on 20 replies of 4096 bytes" in out
