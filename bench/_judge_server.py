"""The deterministic loopback judge for bench/vs_inspect, in a process of its own.

It is the demo's OpenAI-compatible endpoint (``pipelines.datasets.clinicalqa.simulated_server``),
whose model ``judge`` grades a rubric judge prompt by string matching without flips: the same prompt
always gets the same reply. In its own process the server's threads never hold the interpreter lock
the clients being timed need. ``python -m bench._judge_server`` prints its base URL on one line and
serves until its standard input closes; ``serving()`` does that from the benchmark.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


@contextmanager
def serving() -> Iterator[str]:
    """Start the judge server in a child process; yield its base URL; stop it on exit."""
    proc = subprocess.Popen([sys.executable, "-m", "bench._judge_server"], cwd=REPO, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline().strip() if proc.stdout else ""
        if not line.startswith("http://"):
            raise RuntimeError(f"the loopback judge server did not start (it printed {line!r})")
        yield line
    finally:
        if proc.stdin:
            proc.stdin.close()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def main() -> None:
    from pipelines.datasets.clinicalqa.simulated_server import SimulatedChatServer

    with SimulatedChatServer() as server:
        print(server.base_url, flush=True)
        sys.stdin.read()  # until the benchmark closes our standard input


if __name__ == "__main__":
    main()
