"""bench/api_load keeps working: the smoke size (tiny warehouse, 2 s per route) prints every line.

Only the shape of the output is checked: speed on a shared CI machine proves nothing (the full runs
are done by hand and quoted in notes).
"""

from __future__ import annotations

import re

import pytest

from bench import api_load
from bench._wrk import parse_report

WRK_REPORT = """Running 2s test @ http://127.0.0.1:4000/v1/lookup
  1 threads and 50 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     7.53ms    2.01ms  40.12ms   91.23%
    Req/Sec     6.70k   410.22     7.10k    85.00%
  Latency Distribution
     50%    7.10ms
     75%    7.90ms
     90%    9.02ms
     99%    1.02s
  13345 requests in 2.00s, 50.12MB read
  Socket errors: connect 0, read 2, write 0, timeout 1
  Non-2xx or 3xx responses: 4
Requests/sec:   6670.51
Transfer/sec:     25.05MB
"""


def test_wrk_report_is_read_with_units_and_errors() -> None:
    result = parse_report(WRK_REPORT)
    assert (result.requests, result.requests_per_s) == (13345, 6670.51)
    assert (result.p50_ms, result.p99_ms) == (7.1, 1020.0)
    assert (result.non_2xx, result.socket_errors) == (4, 3) and not result.clean


@pytest.mark.slow
def test_smoke_run_prints_every_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert api_load.main(["--smoke", "--results", "60"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].startswith("api_load: 9 results (4 models x 2 tasks")
    assert "2 s per route after 0 s warm-up" in lines[1]
    assert re.search(r"^same answers from both servers on \d+ lookups, 2 leaderboards and \d+ results$", out, re.M)
    number = r"\s+\d+\s+[\d.]+ ms\s+[\d.]+ ms"
    for route in ("lookup", "leaderboard", "result"):
        assert re.search(rf"^{route}{number} \|{number} \|\s+[\d.]+x$", out, re.M), out
    assert re.search(rf"^lookup-cors{number} \| \(with an Origin header: .*\) [\d.]+x datasette's lookup$", out, re.M), out
    assert re.search(rf"^const{number} \| \(trivial Litestar route", out, re.M), out
    assert re.search(rf"^bare{number} \| \(bare ASGI answer", out, re.M), out
    for route in ("lookup", "leaderboard"):  # issue 28: the same questions as of a release
        assert re.search(rf"^{route}-release{number} \| \(as of a release, \?release=\) p99 [\d.]+x the current "
                         rf"{route}'s: target <= 1.2x (met|NOT met)$", out, re.M), out
    for words in ("the trivial route", "the bare ASGI answer"):
        assert re.search(rf"^lookup vs {words}: [\d.]+x; leaderboard vs {words}: [\d.]+x; "
                         rf"result vs {words}: [\d.]+x$", out, re.M), out
    assert re.search(r"^targets: lookup >= 15x datasette: (met|NOT met) \([\d.]+x\); leaderboard >= 15x datasette: "
                     r"(met|NOT met) .*p99 <= 20 ms: (met|NOT met) \(worst [\d.]+ ms\)$", out, re.M), out
    assert re.search(rf"^lookup with the submission routes on:{number}; vs --read-only: [\d.]+x "
                     r"\(target >= 0\.90x: (met|NOT met)\)$", out, re.M), out
    counted = re.search(r"^reuses counted during the run: ([\d,]+) \(scratch store (.+)\)$", out, re.M)
    assert counted and int(counted.group(1).replace(",", "")) > 0, out
    # issue 43: the same routes on a larger board, p99 against the small board's in the same run
    assert re.search(r"^api_load at size: \d+ results, warehouse \S+; paths cycle over \d+ lookup, \d+ leaderboard, "
                     r"\d+ result$", out, re.M), out
    for route in ("lookup", "leaderboard", "result"):
        assert re.search(rf"^{route} at \d+ results:{number}; p99 [\d.]+x the 9-result run's \(target <= 1\.5x: "
                         r"(met|NOT met)\)$", out, re.M), out
