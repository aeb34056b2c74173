"""The documentation site builds with ``mkdocs build --strict``, and the shell blocks it marks runnable
run as printed.

Issue #25 (docs): the README had grown to 930 lines mixing the tutorial, the reference and the
runbook; everything but the two commands moved into ``docs/``, a MkDocs site. A page that links to
a missing page or anchor, or is left out of the nav, fails the strict build here (the default lane,
so CI). Commands a reader is told to type rot unless they run: every block marked
``<!-- runnable -->`` (docs/contributing.md) is run exactly as printed, from a folder laid out like a
checkout after ``./scripts/setup`` and ``medbench demo`` (``.venv``, ``data``), with a
``medbench serve`` of that data behind ``MEDBENCH_API_URL``. That includes the analysts' DuckDB
queries (issue #23: the one-liner ``python -c "import duckdb; ..."`` once failed as printed).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from support.live_server import live_api
from support.paths import REPO

DOCS = REPO / "docs"
MARKER = "<!-- runnable -->"
SHELLS = ("bash", "sh", "shell")
FENCE = re.compile(r"^(`{3,}|~{3,})\s*([\w+-]*)")
ANSI = re.compile(r"\x1b\[[0-9;]*m")


@dataclass(frozen=True)
class Command:
    page: str
    line: int      # where the command starts in the page (1-based)
    text: str

    def __str__(self) -> str:
        return f"{self.page}:{self.line}"


def runnable_blocks(text: str, page: str) -> list[tuple[int, list[tuple[int, str]]]]:
    """The marked shell blocks of one page: (line of the fence, [(line, content), ...]) each.

    Fence-aware: a marker inside a code block (an example of the convention) is not a marker. A
    marker outside one must be followed by a shell fence, else the page is wrong (ValueError)."""
    lines = text.splitlines()
    blocks: list[tuple[int, list[tuple[int, str]]]] = []
    fence: str | None = None
    marked = False
    body: list[tuple[int, str]] = []
    start = 0
    for number, line in enumerate(lines, 1):
        if fence is not None:
            stripped = line.strip()
            if stripped and set(stripped) == {fence[0]} and len(stripped) >= len(fence):  # the closing fence
                if marked:
                    blocks.append((start, body))
                fence, marked, body = None, False, []
            elif marked:
                body.append((number, line))
            continue
        opening = FENCE.match(line)
        if marked and not line.strip():
            raise ValueError(f"{page}:{number - 1}: {MARKER} must be followed directly by a ```bash block")
        if opening:
            if marked and opening.group(2) not in SHELLS:
                raise ValueError(f"{page}:{number}: {MARKER} marks a {opening.group(2) or 'plain'} block, not a shell block")
            fence, start = opening.group(1), number
            continue
        if marked:
            raise ValueError(f"{page}:{number}: {MARKER} must be followed directly by a ```bash block")
        marked = line.strip() == MARKER
    if marked or fence is not None:
        raise ValueError(f"{page}: a {MARKER} block or a fence is not closed")
    return blocks


def commands_of(block: list[tuple[int, str]], page: str) -> list[Command]:
    """One command per line; ``#`` lines are comments, a line ending in ``\\`` continues."""
    commands, pending, first = [], "", 0
    for number, raw in block:
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if not pending:
            first = number
        if line.endswith("\\"):
            pending += line[:-1].rstrip() + " "
            continue
        commands.append(Command(page, first, pending + line))
        pending = ""
    return commands


def all_commands() -> list[Command]:
    commands = []
    for path in sorted(DOCS.glob("*.md")):
        for _, block in runnable_blocks(path.read_text(), path.name):
            commands.extend(commands_of(block, path.name))
    return commands


COMMANDS = all_commands()


# --------------------------------------------------------------------------- the site


def test_the_site_builds_strictly_and_offline(tmp_path: Path) -> None:
    site = tmp_path / "site"
    dead = "http://127.0.0.1:9"  # nothing listens: any fetch during the build fails
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "HTTP_PROXY": dead, "HTTPS_PROXY": dead, "http_proxy": dead,
           "https_proxy": dead, "NO_PROXY": "", "no_proxy": ""}
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(REPO / "mkdocs.yml"), "-d", str(site)],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False)
    output = ANSI.sub("", proc.stdout + proc.stderr)
    assert proc.returncode == 0, output[-4000:]
    problems = [line for line in output.splitlines() if re.match(r"\s*(WARNING|ERROR)\b", line)]
    assert not problems, problems
    pages = sorted(p.stem for p in DOCS.glob("*.md"))
    assert pages and all((site / f"{page}.html").is_file() for page in pages), pages
    for html in site.glob("*.html"):  # nothing loaded from another origin (no CDN, no web fonts)
        text = html.read_text()
        assert not re.search(r"<(?:script|link)[^>]+(?:src|href)=\"(?:https?:)?//", text), html.name
    assert "PostgreSQL" in (site / "operations.html").read_text()  # deploy/README.md is included


def test_every_docs_page_is_in_the_nav() -> None:
    nav = (REPO / "mkdocs.yml").read_text()
    for path in DOCS.glob("*.md"):
        assert re.search(rf":\s*{re.escape(path.name)}\s*$", nav, re.MULTILINE), path.name


def test_the_readme_is_short_keeps_the_two_commands_and_links_into_docs() -> None:
    text = (REPO / "README.md").read_text()
    assert len(text.splitlines()) < 200
    assert "```bash\n./scripts/demo   # " in text and "\n./scripts/test   # " in text  # what CI and users run
    links = re.findall(r"\]\((docs/[^)#]+)", text)
    assert links, "the README links into docs/"
    assert all((REPO / link).is_file() for link in links), [link for link in links if not (REPO / link).is_file()]


# --------------------------------------------------------------------------- the runnable blocks


def test_markers_are_found_and_checked() -> None:
    page = "\n".join(["text", MARKER, "```bash", "# a comment", "echo one \\", "  two", "echo three", "```",
                      "````markdown", MARKER, "```bash", "echo shown-not-run", "```", "````"])
    [(fence, block)] = runnable_blocks(page, "x.md")
    assert fence == 3 and [str(c) + " " + c.text for c in commands_of(block, "x.md")] == ["x.md:5 echo one two", "x.md:7 echo three"]
    for wrong in ([MARKER, "```json", "{}", "```"], [MARKER, "", "```bash", "true", "```"], [MARKER, "text"]):
        with pytest.raises(ValueError):
            runnable_blocks("\n".join(wrong), "x.md")


def test_the_docs_have_runnable_blocks() -> None:
    pages = {c.page for c in COMMANDS}
    assert {"getting-started.md", "cli.md", "api.md", "duckdb.md"} <= pages, pages
    for command in COMMANDS:  # the system Python has no duckdb; a bare `medbench` needs an activated venv
        assert not command.text.startswith(("medbench ", "python ", "pytest ")), command


def test_the_duckdb_page_runs_every_printed_query() -> None:
    queries = [c for c in COMMANDS if c.page == "duckdb.md"]
    assert len(queries) >= 5, queries
    for command in queries:
        assert command.text.startswith((".venv/bin/medbench sql ", ".venv/bin/python ")), command


@pytest.fixture(scope="module")
def checkout(shared_data: tuple[Path, str], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with ``.venv`` (the venv running the tests) and ``data`` (a published warehouse,
    copied: a server over it counts reuses, and the shared fixture is never written)."""
    root, _ = shared_data
    folder = tmp_path_factory.mktemp("checkout")
    (folder / ".venv").symlink_to(Path(sys.prefix))
    shutil.copytree(root, folder / "data", symlinks=True)
    return folder


@pytest.fixture(scope="module")
def api_url(checkout: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with live_api(checkout / "data", tmp_path_factory.mktemp("docs-api") / "server.log") as server:
        yield server.base


@pytest.mark.parametrize("command", COMMANDS, ids=str)
def test_each_runnable_command_runs_as_printed(checkout: Path, api_url: str, command: Command) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("MEDBENCH_DATA", "DAGSTER_HOME", "MEDBENCH_API_URL")}
    env["MEDBENCH_API_URL"] = api_url
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))  # this checkout's code
    proc = subprocess.run(["bash", "-c", command.text], cwd=checkout, env=env, capture_output=True, text=True,
                          timeout=120, check=False)
    assert proc.returncode == 0, (str(command), command.text, proc.stdout[-1000:], proc.stderr[-2000:])
    out = proc.stdout.strip()
    assert out and "(0 rows)" not in out and out != "[]", (str(command), command.text, out)
    if "--format csv" in command.text:
        assert len(out.splitlines()) >= 2, out  # a header and at least one row


def test_each_duckdb_query_leaves_a_withdrawn_result_out(tmp_path: Path) -> None:
    """Issue #40: the query labelled "the current results" still listed a withdrawn one. Each printed
    query over results runs, as printed, after a withdrawal: those over results filter on ``status``,
    and the withdrawn result's number shows only in the query that lists statuses."""
    import dataclasses
    import datetime as dt

    from support.api_data import catalog
    from medbench.layout import DataDir
    from warehouse.publish import publish
    from medbench.records import encode_record
    from warehouse.withdrawals import public_map, withdraw, withdrawals

    folder = tmp_path / "checkout"
    folder.mkdir()
    (folder / ".venv").symlink_to(Path(sys.prefix))
    data = DataDir(folder / "data")
    records = catalog(data).results
    for r in records:
        data.result_path(r.run_id).parent.mkdir(parents=True, exist_ok=True)
        data.result_path(r.run_id).write_bytes(encode_record(r))
    utc = dt.timezone.utc
    publish(data, catalog(data), now=dt.datetime(2026, 11, 1, 12, tzinfo=utc))
    gone = max((r for r in records if r.task == "clinicalqa@0"), key=lambda r: r.primary.value)
    withdraw(data, gone.run_id, "label leak", now=dt.datetime(2026, 11, 1, 13, tzinfo=utc))
    publish(data, dataclasses.replace(catalog(data), withdrawn=public_map(withdrawals(data))),
            now=dt.datetime(2026, 11, 1, 14, tzinfo=utc))
    queries = [c for c in COMMANDS if c.page == "duckdb.md" and re.search(r"\b(FROM|JOIN) results\b", c.text)]
    readme = [Command("README.md", 0, line) for line in (REPO / "README.md").read_text().splitlines()
              if line.startswith(".venv/bin/medbench sql ") and " results " in line]
    assert len(queries) >= 7 and readme, (queries, readme)
    env = {k: v for k, v in os.environ.items() if k not in ("MEDBENCH_DATA", "DAGSTER_HOME")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    def run(text: str) -> str:
        proc = subprocess.run(["bash", "-c", text], cwd=folder, env=env, capture_output=True, text=True, timeout=120,
                              check=False)
        assert proc.returncode == 0 and proc.stdout.strip(), (text, proc.stderr[-1000:])
        return proc.stdout

    for command in queries + readme:
        out = run(command.text)
        if "withdrawn_reason" in command.text:  # the query that lists every result's status
            assert gone.run_id in out and "label leak" in out, out
            continue
        assert "status = 'current'" in command.text, command
        if "predictions_score" not in command.text:  # the withdrawn result is a choice one: it was there, and is left out
            widened = command.text.replace("status = 'current'", "status IN ('current', 'withdrawn')")
            assert run(widened) != out, str(command)


def test_the_documented_debian_packages_are_the_ones_setup_installs() -> None:
    """Issue #40: the README and getting-started listed the packages without ``bubblewrap``."""
    setup = (REPO / "scripts" / "setup").read_text()
    installed = set(re.search(r"APT_PACKAGES=\(([^)]*)\)", setup).group(1).split())
    assert "bubblewrap" in installed
    for page in (REPO / "README.md", DOCS / "getting-started.md"):
        text = " ".join(page.read_text().split())
        listed = set(re.findall(r"`([a-z0-9-]+)`", text.split("installs", 1)[1].split("when run", 1)[0]))
        assert listed == installed, (page.name, listed ^ installed)
