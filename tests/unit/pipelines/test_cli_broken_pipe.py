"""A BrokenPipeError is "stdout closed" (``medbench ... | head``, exit 0) only when our stdout's
reader is really gone. Any other broken pipe (a socket, a child process) is an error: once it was
swallowed as exit 0 with the report unprinted (``medbench materialize`` against Postgres)."""

from __future__ import annotations

import os
import subprocess
import sys

from support.paths import REPO

RAISE_BROKEN_PIPE = """
import sys, time
import pipelines.cli.main as cli

def run(args):
    time.sleep(0.3)  # the reader of a closed stdout is gone by then
    raise BrokenPipeError(32, "Broken pipe (a socket)")

real = cli.build_parser
def build_parser():
    parser = real()
    parse = parser.parse_args
    parser.parse_args = lambda argv: (lambda ns: (setattr(ns, "func", run), ns)[1])(parse(argv))
    return parser
cli.build_parser = build_parser
sys.exit(cli.main(["stats"]))
"""


def _run(stdout) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-c", RAISE_BROKEN_PIPE],
                          cwd=REPO, env=env, stdout=stdout, stderr=subprocess.PIPE, text=True, timeout=120)


def test_a_broken_pipe_elsewhere_is_an_error_in_one_line() -> None:
    done = _run(subprocess.PIPE)
    assert done.returncode == 1, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "BrokenPipeError" in lines[0] and "Traceback" not in done.stderr


def test_a_closed_stdout_is_not_an_error() -> None:
    read, write = os.pipe()
    os.close(read)  # `| head` that has already exited
    try:
        done = _run(write)
    finally:
        os.close(write)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
