"""Load with ``wrk`` (a C load generator: the client must not be the bottleneck) and read its report.

A small Lua script makes each connection cycle through a list of request paths (every model's
lookup, every run's result), so a run measures a realistic mix rather than one cached URL. The
numbers come from wrk's own report: requests/s, and the 50th and 99th latency percentiles of
``--latency`` (wrk corrects for coordinated omission there). Non-2xx answers and socket errors are
reported too: a fast error is not a fast answer.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

ROTATE_LUA = """
local paths = {}
local i = 0
init = function(args)
  for line in io.lines(args[1]) do paths[#paths + 1] = line end
  i = math.random(#paths) - 1
end
request = function()
  i = (i % #paths) + 1
  return wrk.format("GET", paths[i])
end
"""
_UNITS_MS = {"us": 1e-3, "ms": 1.0, "s": 1e3, "m": 60e3}


@dataclass(frozen=True)
class WrkResult:
    requests: int
    requests_per_s: float
    p50_ms: float
    p99_ms: float
    non_2xx: int
    socket_errors: int

    @property
    def clean(self) -> bool:
        return self.non_2xx == 0 and self.socket_errors == 0


def wrk_path() -> str:
    path = shutil.which("wrk")
    if path is None:
        raise RuntimeError("wrk is not installed (Debian package `wrk`; scripts/setup installs it)")
    return path


def run_wrk(base: str, paths: list[str], seconds: float, connections: int, work: Path, label: str,
            threads: int = 1, headers: Sequence[str] = ()) -> WrkResult:
    """``seconds`` of load on ``base`` cycling through ``paths``; ``label`` names the path list file;
    ``headers`` (``"Name: value"``) go with every request."""
    script, listing = work / "rotate.lua", work / f"paths-{label}.txt"
    script.write_text(ROTATE_LUA)
    listing.write_text("\n".join(paths) + "\n")
    command = [wrk_path(), f"-t{threads}", f"-c{connections}", f"-d{max(1, round(seconds))}s", "--latency",
               "--timeout", "10s", *(f"-H{h}" for h in headers), "-s", str(script), base + paths[0], "--", str(listing)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=seconds + 120)
    if done.returncode != 0:
        raise RuntimeError(f"wrk failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return parse_report(done.stdout)


def _ms(value: str, unit: str) -> float:
    return float(value) * _UNITS_MS[unit]


def parse_report(text: str) -> WrkResult:
    latency = {p: _ms(v, u) for p, v, u in re.findall(r"^\s+(50|99)%\s+([\d.]+)(us|ms|s|m)\s*$", text, re.M)}
    requests = re.search(r"^\s+(\d+) requests in", text, re.M)
    rate = re.search(r"^Requests/sec:\s+([\d.]+)", text, re.M)
    if not (requests and rate and "50" in latency and "99" in latency):
        raise RuntimeError(f"unexpected wrk report:\n{text}")
    non_2xx = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", text)
    errors = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", text)
    return WrkResult(
        requests=int(requests.group(1)), requests_per_s=float(rate.group(1)), p50_ms=latency["50"], p99_ms=latency["99"],
        non_2xx=int(non_2xx.group(1)) if non_2xx else 0,
        socket_errors=sum(int(n) for n in errors.groups()) if errors else 0,
    )
