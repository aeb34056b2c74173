"""The first hour, as a newcomer spends it (issue #40): a checkout with no data yet, the demo on another
port than 8000, then every command the README, Getting started and Submitting a model print.

A copy of the checkout's tracked files (so its default data directory, ``<checkout>/data``, is fresh
and the real one is never touched) with ``.venv`` pointing at the venv running the tests, then:

1. ``.venv/bin/medbench demo --port P --no-serve``: what ``./scripts/demo --port P --no-serve`` runs
   once ``scripts/setup`` has (setup itself installs Debian and pip packages: it needs root and the
   network, so it is the one step not taken here); its output must name the ``export
   MEDBENCH_API_URL=...`` line for port P, with no MEDBENCH_DATA anywhere;
2. ``.venv/bin/medbench serve --port P`` (the command the demo printed), started and stopped;
3. every command of a block marked runnable (docs/contributing.md) in the three pages, exactly as
   printed, after the printed export line, from the checkout: each exits 0 and acts on the demo's
   data (it prints something, and no "(0 rows)").

Every other command of those pages is listed in ``EXEMPT`` with the reason: a placeholder gets a
filled-in twin that runs instead, ``ui`` is started and stopped; a page gaining a command that is
neither marked nor listed fails here.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from bench._servers import LOOPBACK, free_port
from support.paths import REPO

pytestmark = pytest.mark.slow
PAGES = ("README.md", "docs/getting-started.md", "docs/submitting.md")
MARKER = "<!-- runnable -->"
PLACEHOLDER = re.compile(r"<[a-z_]+>")

# command (as printed) -> (why it is not marked runnable, what runs instead: a twin, "start-stop", or None)
EXEMPT: dict[str, tuple[str, str | None]] = {
    "./scripts/demo": ("the test's first step (without scripts/setup: root and the network)", None),
    "./scripts/test": ("runs every test lane: this test is one of them", None),
    ".venv/bin/medbench verify <run_id>": ("a placeholder", ".venv/bin/medbench verify {run_id}"),
    ".venv/bin/medbench ui": ("long-running", "start-stop"),
    "medbench materialize --demo": ("the demo step materialized it (the README's runnable block repeats it)", None),
    "medbench materialize --demo --task vitaldb-ioh --model medbench/neg-last-map":
        ("one partition of the demo", ".venv/bin/medbench materialize --demo --task vitaldb-ioh --model "
                                       "medbench/neg-last-map"),
    "medbench materialize --task clinicalqa@0 --model medbench/random":
        ("real data: downloads from Hugging Face, and a data directory holds one kind", None),
    "medbench materialize --demo --force --model medbench/random":
        ("recomputes one model (a minute)", None),
    "medbench serve": ("long-running: the test's second step starts and stops it", None),
    "medbench demo": ("the test's first step", None),
    "medbench ui": ("long-running", "start-stop"),
    "medbench tokens create --owner acme --scope submit --expires-in 90d --note \"acme's CI\"":
        ("a maintainer's token for acme", ".venv/bin/medbench tokens create --owner acme --scope submit "
                                          "--expires-in 90d --note \"acme's CI\""),
    "medbench tokens list": ("bare `medbench`: an activated venv", ".venv/bin/medbench tokens list"),
    "medbench tokens revoke 3f9c0a1b2c4d": ("an example token id", ".venv/bin/medbench tokens revoke {token_id}"),
    "export MEDBENCH_TOKEN=mbt_...": ("a placeholder secret", None),
    "medbench submit acme-m1.toml --task clinicalqa@0 --api-url https://medbench.example":
        ("a Hub model and a remote server", None),
    "medbench submissions status 7c1e0d2a9b3f": ("an example submission id", None),
    "medbench submissions list --owner acme": ("bare `medbench`", ".venv/bin/medbench submissions list --owner acme"),
    "curl https://medbench.example/v1/submissions/7c1e0d2a9b3f": ("a remote server", None),
    "medbench submissions approve 7c1e0d2a9b3f --reason \"weights checked\"": ("an example submission id", None),
    "medbench submissions reject 7c1e0d2a9b3f --reason \"revision is not public\"":
        ("an example submission id", None),
    "medbench submissions run": ("bare `medbench`; nothing approved waits", ".venv/bin/medbench submissions run"),
    "medbench tokens create --owner acme --scope submit":
        ("the demo-endpoint walk-through: needs `medbench demo` serving its loopback endpoint "
         "(tests/e2e/test_submission_flow.py runs it)", None),
    "cat > acme-sim.toml <<'TOML'": ("the same walk-through (a here-document)", None),
    "MEDBENCH_TOKEN=mbt_... medbench submit acme-sim.toml --task clinicalqa@0 --api-url http://127.0.0.1:8000":
        ("the same walk-through", None),
    "medbench submissions approve <id> --reason \"demo\"": ("the same walk-through", None),
    "medbench submissions status <id> --api-url http://127.0.0.1:8000": ("the same walk-through", None),
}


def blocks(page: Path) -> list[tuple[bool, list[str]]]:
    """Each shell block of a page: (marked runnable, its commands: ``#`` lines dropped, ``\\`` joined,
    a here-document's body skipped)."""
    out: list[tuple[bool, list[str]]] = []
    lines = page.read_text().splitlines()
    i = 0
    while i < len(lines):
        if lines[i].strip() in ("```bash", "```sh", "```shell"):
            marked = i > 0 and lines[i - 1].strip() == MARKER
            commands, pending, heredoc = [], "", None
            i += 1
            while lines[i].strip() != "```":
                line = lines[i].strip()
                i += 1
                if heredoc is not None:
                    heredoc = None if line == heredoc else heredoc
                    continue
                if not line or line.startswith("#") and not pending:
                    continue
                if line.endswith("\\"):
                    pending += line[:-1].rstrip() + " "
                    continue
                command = re.sub(r"\s+#\s.*$", "", pending + line).strip()
                pending = ""
                commands.append(" ".join(command.split()))
                if m := re.search(r"<<'?(\w+)'?", command):
                    heredoc = m.group(1)
            out.append((marked, commands))
        i += 1
    return out


def test_every_command_of_the_pages_is_runnable_or_exempt_with_a_reason() -> None:
    unlisted = []
    for name in PAGES:
        for marked, commands in blocks(REPO / name):
            for command in commands:
                if marked:
                    assert not PLACEHOLDER.search(command), (name, command)
                elif " ".join(command.split()) not in {" ".join(k.split()) for k in EXEMPT}:
                    unlisted.append((name, command))
    assert not unlisted, unlisted


@pytest.fixture(scope="module")
def checkout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The checkout's tracked files and ``.venv``: ``<checkout>/data`` does not exist yet."""
    folder = tmp_path_factory.mktemp("newcomer") / "medbench"
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True).stdout
    for name in filter(None, tracked.decode().split("\0")):
        source = REPO / name
        if source.is_file():
            target = folder / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    (folder / ".venv").symlink_to(Path(sys.prefix))
    assert not (folder / "data").exists()
    return folder


def environment(checkout: Path, home: Path) -> dict[str, str]:
    """A newcomer's shell: no MEDBENCH_* or DAGSTER_HOME set; this checkout's code first on the path."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEDBENCH_", "DAGSTER_"))}
    env.update(PYTHONPATH=str(checkout), HOME=str(home), PYTHONUNBUFFERED="1")
    return env


def shell(command: str, checkout: Path, env: dict[str, str], export: str, timeout: int = 300):
    return subprocess.run(["bash", "-c", f"{export}\n{command}"], cwd=checkout, env=env, capture_output=True,
                          text=True, timeout=timeout, check=False)


def started(command: list[str], checkout: Path, env: dict[str, str], url: str, log: Path,
            timeout_s: float = 240) -> subprocess.Popen:
    with open(log, "wb") as out:
        process = subprocess.Popen(command, cwd=checkout, env=env, stdout=out, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            httpx.get(url, timeout=5.0)
            return process
        except httpx.TransportError:
            assert process.poll() is None, log.read_text()[-3000:]
            assert time.monotonic() < deadline, log.read_text()[-3000:]
            time.sleep(0.5)


def stopped(process: subprocess.Popen) -> int:
    os.killpg(process.pid, signal.SIGTERM)
    try:
        return process.wait(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        return process.wait()


@pytest.fixture(scope="module")
def demo(checkout: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[dict[str, str], str, str]]:
    home = tmp_path_factory.mktemp("home")
    env = environment(checkout, home)
    port = free_port()
    proc = subprocess.run([".venv/bin/medbench", "demo", "--port", str(port), "--no-serve"], cwd=checkout, env=env,
                          capture_output=True, text=True, timeout=1500, check=False)
    assert proc.returncode == 0, (proc.stdout[-3000:], proc.stderr[-3000:])
    export = next(line for line in proc.stdout.splitlines() if line.startswith("export MEDBENCH_API_URL="))
    assert export.split()[1] == f"MEDBENCH_API_URL=http://{LOOPBACK}:{port}", export
    assert (checkout / "data" / "medbench.duckdb").exists()  # the one default directory, not data/demo
    serve = re.search(r"^serve it: medbench (serve.*)$", proc.stdout, re.M).group(1)
    server = started([".venv/bin/medbench", *serve.split()], checkout, env, f"http://{LOOPBACK}:{port}/healthz",
                     home / "serve.log")
    try:
        yield env, export, proc.stdout
    finally:
        stopped(server)


def test_the_printed_commands_run_as_printed_on_the_demo(checkout: Path, demo) -> None:
    env, export, _ = demo
    ran = []
    for name in PAGES:
        for marked, commands in blocks(checkout / name):
            for command in commands if marked else []:
                proc = shell(command, checkout, env, export)
                out = proc.stdout.strip()
                assert proc.returncode == 0, (name, command, proc.stdout[-1500:], proc.stderr[-1500:])
                assert out and "(0 rows)" not in out, (name, command, out)
                ran.append(command)
    assert any("lookup" in c for c in ran) and any(" sql " in c for c in ran), ran


def test_the_exempt_commands_twins_run(checkout: Path, demo, tmp_path: Path) -> None:
    env, export, _ = demo
    run_id = re.search(r"run ([0-9a-f]{12})", shell(".venv/bin/medbench lookup random clinicalqa@0", checkout, env,
                                                    export).stdout).group(1)
    made = shell(EXEMPT["medbench tokens create --owner acme --scope submit --expires-in 90d --note \"acme's CI\""][1],
                 checkout, env, export)
    assert made.returncode == 0 and made.stdout.startswith("mbt_"), made.stderr
    token_id = made.stderr.split()[0]
    values = {"run_id": run_id, "token_id": token_id}
    for command, (_, twin) in EXEMPT.items():
        if twin is None or twin == "start-stop" or "tokens create" in command:
            continue
        proc = shell(twin.format(**values), checkout, env, export)
        exit_ok = (0, 1) if "submissions list" in twin else (0,)  # no submission yet: an empty list exits 1
        assert proc.returncode in exit_ok, (command, twin, proc.stdout[-1500:], proc.stderr[-1500:])
    port = free_port()
    ui = started([".venv/bin/medbench", "ui", "--port", str(port)], checkout, env, f"http://{LOOPBACK}:{port}/",
                 tmp_path / "ui.log")
    assert stopped(ui) == 0
