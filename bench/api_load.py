"""Benchmark: the read-only API under wrk, against Datasette on the same data and against a trivial route.

One uvicorn worker each, on loopback, ``wrk`` with 50 connections, ``--duration`` seconds per route
after a warm-up, cycling through every model's lookup, both leaderboards and every run's result:

- ours: ``medbench``'s app exactly as ``medbench serve`` runs it, plus two bench-only constant
  JSON answers: ``/bench/const``, a Litestar route (the framework's ceiling, the issue's "trivial
  route"), and ``/bench/bare``, a bare ASGI callable in front of the app (uvicorn's own ceiling on
  this machine: no framework code at all). Repeated lookups, leaderboards and results are answered
  by the answer cache, the ASGI wrapper around the Litestar app (``api.answer_cache.AnswerCache``),
  before Litestar runs, which is why they can run faster than the trivial Litestar route; the bare
  answer bounds what any Python route can do.
  The same lookups with an ``Origin`` header (``lookup-cors``), as browsers send them: replayed too,
  with the CORS headers Litestar's CORS middleware computes for them;
- Datasette (``datasette serve -i``) on an immutable SQLite copy of the same published tables, with a
  canned query per route (see ``bench._datasette``).

The same lookups and leaderboards asked ``?release=<id>`` (``lookup-release``, ``leaderboard-release``,
issue 28: answered from the release log through a per-release view of the tables): p99 <= 1.2x the
current answers' p99. Every run's inclusion proof (``proof``, ``/v1/results/{id}/proof``, issue 37,
from the synthetic warehouse's transparency log): p99 <= 1.2x the result route's. Targets (issue 4): lookup and leaderboard >= 15x Datasette's requests/s, and lookup-cors too (issue
22); lookup >= 0.7x the trivial route; p99 <= 20 ms on our routes. The servers above run as
``medbench serve --read-only`` does; the lookups are measured again on a server with the submission
routes on (plain ``medbench serve``), as a ratio in the same run (issue 29: at least 0.9x). The data is a synthetic warehouse
of a few hundred results in a scratch data directory, so the reuses the benchmark's lookups count go to its own store.
``--soak SECONDS`` instead loads our routes for that long and prints the server's resident memory
at the start and the end (target: growth under 10%).

``--results N`` then measures lookup, leaderboard and result again on a board of N results (over
2,000 paths per route spread evenly over it), with their p99 against the first board's in the same
invocation (issue 43: at most 1.5x).

    python -m bench.api_load [--duration 10] [--warmup 3] [--smoke] [--soak 600] [--access-log] [--results N]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from litestar import get

from bench import _datasette
from bench._api_warehouse import CHOICE_TASK, SCORE_TASK, publish_synthetic
from bench._servers import Running, free_port, running
from bench._wrk import WrkResult, run_wrk
from warehouse.publish import Catalog

MODELS = {"full": 150, "smoke": 4}
CONNECTIONS = 50
TARGET_VS_DATASETTE, TARGET_VS_CEILING, TARGET_P99_MS, TARGET_SOAK_GROWTH = 15.0, 0.7, 20.0, 0.10
TARGET_WRITES_ON = 0.90  # lookup rps with the submission routes on, relative to --read-only (issue 29)
TARGET_AT_SIZE_P99 = 1.5  # issue 43: --results N, p99 at most 1.5x the small board's, in the same run
TARGET_RELEASE_P99 = 1.2  # issue 28: p99 of ?release= at most 1.2x the current release's, in the same run
TARGET_PROOF_P99 = 1.2  # issue 37: p99 of /v1/results/{id}/proof at most 1.2x /v1/results/{id}'s, in the same run
RELEASE_ROUTES = ("lookup", "leaderboard")
CONST_PATH = "/bench/const"
BARE_PATH = "/bench/bare"
CROSS_ORIGIN = "Origin: https://bench.example"  # as a browser's fetch from another site sends it
BARE_BODY = b'{"status":"ok"}'
BARE_START = {"type": "http.response.start", "status": 200,
              "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(BARE_BODY)).encode())]}
ROUTES = ("lookup", "leaderboard", "result")
MIB = 1024 * 1024


# ---- the server under test: the deployed app plus one constant route -------------------------

@get(CONST_PATH)
async def const() -> dict[str, str]:
    return {"status": "ok"}


def bench_app(data_dir: Path, writes: bool = False) -> Any:
    from api.app import create_app

    desk = None
    if writes:  # the submission routes on, as plain `medbench serve` runs; otherwise as `--read-only`
        from pipelines.cli.submission_desk import build_desk

        desk = build_desk(data_dir)
    app = create_app(data_dir, desk=desk)  # exactly the app `medbench serve` runs, website included
    app.app.register(const)  # bench-only, on the Litestar app inside the answer cache: never in production
    return app


def with_bare_answer(app: Any) -> Any:
    """The app behind one bench-only bare ASGI answer: uvicorn's ceiling, measured on the same server."""

    async def bench_server(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"] == BARE_PATH:
            await send(BARE_START)
            await send({"type": "http.response.body", "body": BARE_BODY})
            return
        await app(scope, receive, send)

    return bench_server


def serve(port: int, data_dir: Path, access_log: bool, writes: bool = False) -> None:
    from api.server import run_app

    run_app(with_bare_answer(bench_app(data_dir, writes)), "127.0.0.1", port, access_log=access_log)


@contextlib.contextmanager
def our_server(data_dir: Path, log: Path | None, access_log: bool, writes: bool = False) -> Iterator[Running]:
    port = free_port()
    command = [sys.executable, "-m", "bench.api_load", "--serve", str(port), str(data_dir)]
    command += ["--access-log"] if access_log else []
    command += ["--writes"] if writes else []
    with running(command, port, "/healthz", log) as server:
        yield server


@contextlib.contextmanager
def datasette_server(duckdb_file: Path, work: Path) -> Iterator[Running]:
    database, metadata = work / f"{_datasette.DATABASE}.db", work / "metadata.json"
    _datasette.sqlite_copy(duckdb_file, database)
    _datasette.write_metadata(metadata)
    port = free_port()
    with running(_datasette.command(database, metadata, port), port, "/-/versions.json", work / "datasette.log") as server:
        yield server


# ---- what is requested --------------------------------------------------------------------------

@dataclass(frozen=True)
class Paths:
    ours: dict[str, list[str]]
    datasette: dict[str, list[str]]


def request_paths(catalog: Catalog) -> Paths:
    pairs = sorted({(r.model.slug, r.task) for r in catalog.results})
    run_ids = sorted(r.run_id for r in catalog.results)
    tasks = [CHOICE_TASK, SCORE_TASK]
    ours = {
        "lookup": [f"/v1/lookup?model={model}&task={task}" for model, task in pairs],
        "leaderboard": [f"/v1/leaderboard?task={task}" for task in tasks],
        "result": [f"/v1/results/{run_id}" for run_id in run_ids],
        "proof": [f"/v1/results/{run_id}/proof" for run_id in run_ids],
    }
    datasette = {
        "lookup": [_datasette.lookup_path(model, task) for model, task in pairs],
        "leaderboard": [_datasette.leaderboard_path(task) for task in tasks],
        "result": [_datasette.result_path(run_id) for run_id in run_ids],
    }
    return Paths(ours, datasette)


def check_same_answers(ours: Running, datasette: Running, paths: Paths) -> str:
    """Both servers must give the same results for the routes measured, or the comparison means nothing."""
    with httpx.Client(base_url=ours.base, timeout=30) as a, httpx.Client(base_url=datasette.base, timeout=30) as b:
        lookups = list(zip(paths.ours["lookup"], paths.datasette["lookup"], strict=True))[::7]
        for mine, theirs in lookups:
            expected = a.get(mine).json()["result"]["run_id"]
            (row,) = b.get(theirs).raise_for_status().json()
            assert json.loads(row["record"])["run_id"] == expected, (mine, theirs)
        for mine, theirs in zip(paths.ours["leaderboard"], paths.datasette["leaderboard"], strict=True):
            board = b.get(theirs).raise_for_status().json()
            assert [r["run_id"] for r in a.get(mine).json()["rows"]] == [r["run_id"] for r in board], (mine, theirs)
        results = list(zip(paths.ours["result"], paths.datasette["result"], strict=True))[::11]
        for mine, theirs in results:
            (row,) = b.get(theirs).raise_for_status().json()
            assert a.get(mine).json()["run_id"] == row["run_id"]
    return f"{len(lookups)} lookups, {len(paths.ours['leaderboard'])} leaderboards and {len(results)} results"


# ---- measuring and reporting ------------------------------------------------------------------

def measure(base: str, paths: list[str], seconds: float, warmup: float, work: Path, label: str,
            headers: tuple[str, ...] = ()) -> WrkResult:
    if warmup > 0:
        run_wrk(base, paths, warmup, CONNECTIONS, work, label, headers=headers)
    result = run_wrk(base, paths, seconds, CONNECTIONS, work, label, headers=headers)
    if not result.clean:
        raise RuntimeError(f"{label}: {result.non_2xx} non-2xx responses and {result.socket_errors} socket errors")
    return result


def _cell(r: WrkResult) -> str:
    return f"{r.requests_per_s:9.0f} {r.p50_ms:7.2f} ms {r.p99_ms:7.2f} ms"


def _verdict(ok: bool) -> str:
    return "met" if ok else "NOT met"


def report(ours: dict[str, WrkResult], theirs: dict[str, WrkResult]) -> list[str]:
    lines = [f"{'route':<12} {'medbench req/s':>14} {'p50':>10} {'p99':>10} | {'datasette req/s':>15} {'p50':>10} "
             f"{'p99':>10} | medbench/datasette"]
    for route in ROUTES:
        ratio = ours[route].requests_per_s / theirs[route].requests_per_s
        lines.append(f"{route:<12} {_cell(ours[route]):>36} | {_cell(theirs[route]):>37} | {ratio:8.1f}x")
    cors_x = ours["lookup-cors"].requests_per_s / theirs["lookup"].requests_per_s
    lines.append(f"{'lookup-cors':<12} {_cell(ours['lookup-cors']):>36} | (with an Origin header: as browsers send it, "
                 f"answer cache plus CORS headers) {cors_x:.1f}x datasette's lookup")
    lines.append(f"{'const':<12} {_cell(ours['const']):>36} | (trivial Litestar route on our server: the framework ceiling)")
    lines.append(f"{'bare':<12} {_cell(ours['bare']):>36} | (bare ASGI answer on our server: uvicorn's ceiling)")
    vs_ceiling = ours["lookup"].requests_per_s / ours["const"].requests_per_s
    for reference, words in (("const", "the trivial route"), ("bare", "the bare ASGI answer")):
        lines.append("; ".join(f"{route} vs {words}: {ours[route].requests_per_s / ours[reference].requests_per_s:.2f}x"
                               for route in ROUTES))
    lookup_x = ours["lookup"].requests_per_s / theirs["lookup"].requests_per_s
    board_x = ours["leaderboard"].requests_per_s / theirs["leaderboard"].requests_per_s
    worst_p99 = max(ours[route].p99_ms for route in ROUTES)
    lines.append(
        f"targets: lookup >= {TARGET_VS_DATASETTE:.0f}x datasette: {_verdict(lookup_x >= TARGET_VS_DATASETTE)} "
        f"({lookup_x:.1f}x); "
        f"leaderboard >= {TARGET_VS_DATASETTE:.0f}x datasette: {_verdict(board_x >= TARGET_VS_DATASETTE)} ({board_x:.1f}x); "
        f"lookup-cors >= {TARGET_VS_DATASETTE:.0f}x datasette's lookup: {_verdict(cors_x >= TARGET_VS_DATASETTE)} "
        f"({cors_x:.1f}x); "
        f"lookup >= {TARGET_VS_CEILING}x trivial route: {_verdict(vs_ceiling >= TARGET_VS_CEILING)} ({vs_ceiling:.2f}x); "
        f"p99 <= {TARGET_P99_MS:.0f} ms: {_verdict(worst_p99 <= TARGET_P99_MS)} (worst {worst_p99:.2f} ms)"
    )
    for route in RELEASE_ROUTES:
        if f"{route}-release" in ours:
            ratio = ours[f"{route}-release"].p99_ms / max(ours[route].p99_ms, 1e-9)
            lines.append(f"{route + '-release':<12} {_cell(ours[f'{route}-release']):>36} | (as of a release, "
                         f"?release=) p99 {ratio:.2f}x the current {route}'s: target <= {TARGET_RELEASE_P99}x "
                         f"{_verdict(ratio <= TARGET_RELEASE_P99)}")
    if "proof" in ours:
        ratio = ours["proof"].p99_ms / max(ours["result"].p99_ms, 1e-9)
        lines.append(f"{'proof':<12} {_cell(ours['proof']):>36} | (/v1/results/{{id}}/proof, the inclusion proof) p99 "
                     f"{ratio:.2f}x the result's: target <= {TARGET_PROOF_P99}x {_verdict(ratio <= TARGET_PROOF_P99)}")
    return lines


def release_paths(paths: list[str], release: str) -> list[str]:
    """The same requests, as of ``release``."""
    return [f"{p}{'&' if '?' in p else '?'}release={release}" for p in paths]


def reuses_line(server: Running, data_root: Path) -> str:
    from api.reuse import STORE_NAME

    counted = httpx.get(f"{server.base}/v1/stats").json()["reuses"]
    return f"reuses counted during the run: {counted:,} (scratch store {data_root / 'state' / STORE_NAME})"


def compare(args: argparse.Namespace, work: Path) -> None:
    data, catalog, version = publish_synthetic(work / "data", args.models)
    paths = request_paths(catalog)
    print(f"api_load: {len(catalog.results)} results ({len(catalog.models)} models x 2 tasks, every tenth with a "
          f"superseded run), warehouse {version}", flush=True)
    print(f"wrk 1 thread x {CONNECTIONS} connections on loopback, {args.duration:g} s per route after "
          f"{args.warmup:g} s warm-up; one uvicorn worker per server, {access_log_words(args)}; paths cycle over "
          f"{len(paths.ours['lookup'])} lookups, {len(paths.ours['leaderboard'])} leaderboards, "
          f"{len(paths.ours['result'])} results", flush=True)
    with (
        our_server(data.root, work / "medbench.log", args.access_log) as ours,
        datasette_server(data.version_file(version), work) as theirs,
    ):
        print(f"same answers from both servers on {check_same_answers(ours, theirs, paths)}", flush=True)
        with httpx.Client(base_url=ours.base, timeout=30) as c:  # the current release, asked by id: same rows
            for path in paths.ours["leaderboard"]:
                assert c.get(release_paths([path], version)[0]).json()["rows"] == c.get(path).json()["rows"], path
        mine: dict[str, WrkResult] = {}
        for route in ROUTES:
            mine[route] = measure(ours.base, paths.ours[route], args.duration, args.warmup, work, f"ours-{route}")
        mine["lookup-cors"] = measure(ours.base, paths.ours["lookup"], args.duration, args.warmup, work,
                                      "ours-lookup-cors", headers=(CROSS_ORIGIN,))
        for route in RELEASE_ROUTES:
            mine[f"{route}-release"] = measure(ours.base, release_paths(paths.ours[route], version), args.duration,
                                               args.warmup, work, f"ours-{route}-release")
        mine["proof"] = measure(ours.base, paths.ours["proof"], args.duration, args.warmup, work, "ours-proof")
        mine["const"] = measure(ours.base, [CONST_PATH], args.duration, args.warmup, work, "ours-const")
        mine["bare"] = measure(ours.base, [BARE_PATH], args.duration, args.warmup, work, "ours-bare")
        reuses = reuses_line(ours, data.root)
        theirs_results = {
            route: measure(theirs.base, paths.datasette[route], args.duration, args.warmup, work, f"datasette-{route}")
            for route in ROUTES
        }
        # the same lookups from a server with the submission routes on (plain `medbench serve`); the one
        # above serves as `--read-only` does (issue 29: reads stay within 10%)
        with our_server(data.root, work / "medbench-writes.log", args.access_log, writes=True) as writable:
            with_writes = measure(writable.base, paths.ours["lookup"], args.duration, args.warmup, work,
                                  "ours-lookup-writes")
    for line in report(mine, theirs_results):
        print(line, flush=True)
    ratio = with_writes.requests_per_s / mine["lookup"].requests_per_s
    print(f"lookup with the submission routes on: {_cell(with_writes)}; vs --read-only: {ratio:.2f}x "
          f"(target >= {TARGET_WRITES_ON:.2f}x: {_verdict(ratio >= TARGET_WRITES_ON)})", flush=True)
    print(reuses, flush=True)
    if args.results:
        at_size(args, work, mine, len(catalog.results))


PATHS_AT_SIZE = 2000  # paths per route wrk cycles over on the large board (evenly spread over it)


def at_size(args: argparse.Namespace, work: Path, small: dict[str, WrkResult], small_results: int) -> None:
    """The same routes on a board of ``args.results`` results, in the same invocation: p99 within
    ``TARGET_AT_SIZE_P99``x the small board's (issue 43)."""
    data, catalog, version = publish_synthetic(work / "data-large", max(1, round(args.results / 2.1)))
    paths = request_paths(catalog).ours
    # the routes measured here only: the proof route (issue 37) is timed on the small board alone
    paths = {route: paths[route][::max(1, len(paths[route]) // PATHS_AT_SIZE)] for route in ROUTES}
    print(f"api_load at size: {len(catalog.results):,} results, warehouse {version}; paths cycle over "
          f"{', '.join(f'{len(p)} {route}' for route, p in paths.items())}", flush=True)
    with our_server(data.root, work / "medbench-large.log", args.access_log) as ours:
        large = {route: measure(ours.base, paths[route], args.duration, args.warmup, work, f"large-{route}")
                 for route in ROUTES}
        rss = ours.rss_bytes()
    for route in ROUTES:
        ratio = large[route].p99_ms / max(small[route].p99_ms, 1e-9)
        print(f"{route} at {len(catalog.results):,} results: {_cell(large[route])}; p99 {ratio:.2f}x the "
              f"{small_results}-result run's (target <= {TARGET_AT_SIZE_P99:.1f}x: "
              f"{_verdict(ratio <= TARGET_AT_SIZE_P99)})", flush=True)
    print(f"server RSS at {len(catalog.results):,} results after the load: {rss / MIB:.1f} MiB", flush=True)


def soak(args: argparse.Namespace, work: Path) -> None:
    data, catalog, version = publish_synthetic(work / "data", args.models)
    paths = request_paths(catalog)
    mixed = [p for route in ROUTES for p in paths.ours[route]]
    print(f"soak: {args.soak:g} s at {CONNECTIONS} connections over {len(mixed)} lookup, leaderboard and result paths "
          f"({len(catalog.results)} results, warehouse {version}; {access_log_words(args)})", flush=True)
    with our_server(data.root, None, args.access_log) as ours:  # no log file: ten minutes of access log is only noise
        launched = ours.rss_bytes()
        run_wrk(ours.base, mixed, max(args.warmup, 10.0), CONNECTIONS, work, "soak-warmup")
        start = ours.rss_bytes()
        started = time.monotonic()
        result = run_wrk(ours.base, mixed, args.soak, CONNECTIONS, work, "soak")
        end = ours.rss_bytes()
        elapsed = time.monotonic() - started
        reuses = reuses_line(ours, data.root)
    growth = (end - start) / start
    print(f"soak load: {result.requests:,} requests in {elapsed:.0f} s, {result.requests_per_s:.0f} req/s, "
          f"p50 {result.p50_ms:.2f} ms, p99 {result.p99_ms:.2f} ms, {result.non_2xx} non-2xx, "
          f"{result.socket_errors} socket errors")
    print(f"server RSS: {launched / MIB:.1f} MiB before any request, {start / MIB:.1f} MiB at start (after warm-up), "
          f"{end / MIB:.1f} MiB at end: growth {growth:+.1%} (target < {TARGET_SOAK_GROWTH:.0%}: "
          f"{_verdict(growth < TARGET_SOAK_GROWTH and result.clean)})")
    print(reuses, flush=True)


def access_log_words(args: argparse.Namespace) -> str:
    return "medbench as `medbench serve` runs it" + (" with --access-log" if args.access_log else "")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, help="seconds of measured load per route (default 10; 2 with --smoke)")
    parser.add_argument("--warmup", type=float, help="seconds of unmeasured load before each (default 3; 0 with --smoke)")
    parser.add_argument("--smoke", action="store_true", help="a tiny warehouse, 2 s per route, no warm-up (CI)")
    parser.add_argument("--soak", type=float, metavar="SECONDS", help="load our routes this long; print memory at start and end")
    parser.add_argument("--access-log", dest="access_log", action="store_true",
                        help="turn on uvicorn's line per request on our server, as `medbench serve --access-log` does")
    parser.add_argument("--results", type=int, metavar="N",
                        help="then measure lookup, leaderboard and result again on a board of N results (p99 vs the small one)")
    parser.add_argument("--serve", nargs=2, metavar=("PORT", "DATA_DIR"), help=argparse.SUPPRESS)
    parser.add_argument("--writes", action="store_true", help=argparse.SUPPRESS)  # --serve with the submission routes on
    args = parser.parse_args(argv)
    if args.serve:
        serve(int(args.serve[0]), Path(args.serve[1]), args.access_log, args.writes)
        return 0
    args.models = MODELS["smoke" if args.smoke else "full"]
    args.duration = args.duration if args.duration is not None else (2.0 if args.smoke else 10.0)
    args.warmup = args.warmup if args.warmup is not None else (0.0 if args.smoke else 3.0)
    with tempfile.TemporaryDirectory(prefix="bench-api-load-") as scratch:
        (soak if args.soak else compare)(args, Path(scratch))
    return 0


if __name__ == "__main__":
    sys.exit(main())
