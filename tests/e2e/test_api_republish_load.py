"""Republishing under load: no failed request, and no response that mixes two versions.

A live server (``medbench serve``, its own process) answers concurrent clients on lookup, the
leaderboard, the result listing, single results, predictions downloads and stats while the warehouse
is republished again and again. Version k of the warehouse holds the fixture's results plus runs
1..k of one model on one task (``medbench/random`` on ``clinicalqa@1``), run j scoring j/1000 and
its predictions file holding 40 + j rows. So every body tells which version it came from, and each
one is checked against the version its ``X-Medbench-Warehouse`` header names: lookup and the
leaderboard show run k, the listing has k runs, run j is superseded by run k (or current if j = k),
and run j's predictions are its own bytes, served only from versions that hold run j.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import random
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import msgspec
import pytest

from support.api_data import DATASETS, MODELS, TASKS, catalog, make_record, write_choice_predictions
from support.live_server import live_api
from medbench.layout import DataDir
from warehouse.publish import Catalog, publish
from medbench.records import ResultRecord

pytestmark = pytest.mark.slow

MODEL, TASK = "medbench/random", "clinicalqa@1"
PUBLISHES = 16  # versions 1..16
CLIENTS = 6
START = dt.datetime(2026, 11, 1, 9, tzinfo=dt.timezone.utc)


@dataclass
class Versioned:
    """Runs 1..k of the versioned model and what each published version is expected to say."""

    data: DataDir
    base: list[ResultRecord]
    runs: dict[int, ResultRecord] = field(default_factory=dict)  # j -> run j
    sha: dict[int, str] = field(default_factory=dict)  # j -> sha256 of run j's predictions
    index_of_run: dict[str, int] = field(default_factory=dict)  # run id -> j
    version_index: dict[str, int] = field(default_factory=dict)  # content hash prefix -> k

    def add_run(self, j: int) -> None:
        """Write run j's predictions (once: a published file is never rewritten) and its record."""
        spec = (MODEL, TASK, j / 1000, dt.date(2026, 11, 1), START + dt.timedelta(minutes=j), "v2", None)
        record = make_record(self.data, f"versioned-run-{j}", spec)
        path = self.data.predictions_path(record.run_id)
        write_choice_predictions(path, 40 + j)
        self.sha[j] = hashlib.sha256(path.read_bytes()).hexdigest()
        self.runs[j] = msgspec.structs.replace(record, n=40 + j, predictions_sha256=self.sha[j])
        self.index_of_run[record.run_id] = j

    def publish(self, k: int) -> str:
        self.add_run(k)
        content = Catalog(datasets=DATASETS, tasks=TASKS, models=MODELS, demo=False,
                          results=[*self.base, *(self.runs[j] for j in range(1, k + 1))])
        self.version_index[content.content_hash()[:8]] = k  # known before any reader can see it
        version, changed = publish(self.data, content)
        assert changed
        return version

    def index(self, response: httpx.Response) -> int:
        return self.version_index[response.headers["x-medbench-warehouse"].rsplit("-", 1)[1]]


MCP_HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json",
               "mcp-protocol-version": "2025-06-18"}


@dataclass
class ClientLog:
    requests: Counter = field(default_factory=Counter)
    versions: list[int] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)


def check_round(client: httpx.Client, w: Versioned, rng: random.Random, log: ClientLog) -> None:
    """One request to each route, each body checked against the version its header names."""

    def get(route: str, url: str, **params: str) -> tuple[httpx.Response, int]:
        response = client.get(url, params=params)
        log.requests[route] += 1
        assert response.status_code == 200, f"{route}: {response.status_code} {response.text[:300]}"
        k = w.index(response)
        if log.versions and k < log.versions[-1]:
            raise AssertionError(f"{route}: version {k} after version {log.versions[-1]}")
        log.versions.append(k)
        return response, k

    response, k = get("lookup", "/v1/lookup", model=MODEL, task=TASK)
    result = response.json()["result"]
    assert (result["run_id"], result["metric"]["value"]) == (w.runs[k].run_id, k / 1000), (k, result["run_id"])
    assert result["superseded_by"] is None and result["n"] == 40 + k

    response, k = get("leaderboard", "/v1/leaderboard", task=TASK)
    rows = {row["model"]["slug"]: row for row in response.json()["rows"]}
    assert (rows[MODEL]["run_id"], rows[MODEL]["metric"]["value"]) == (w.runs[k].run_id, k / 1000), k
    assert len(rows) == 2

    response, k = get("results", "/v1/results", model=MODEL, task=TASK, limit="1000")
    page = response.json()
    assert page["total"] == k and {r["run_id"] for r in page["results"]} == {w.runs[j].run_id for j in range(1, k + 1)}

    j = rng.randint(1, log.versions[-1])  # a run every version from now on holds
    response, k = get("result", f"/v1/results/{w.runs[j].run_id}")
    assert k >= j
    assert response.json()["superseded_by"] == (None if j == k else w.runs[k].run_id), (j, k)

    response, k = get("predictions", f"/artifacts/{w.runs[j].run_id}/predictions.parquet")
    assert k >= j
    assert hashlib.sha256(response.content).hexdigest() == w.sha[j]
    assert response.headers["etag"] == f'"{w.sha[j]}"'

    # MCP's lookup tool: same tables, so the same version order and the same answer as /v1/lookup
    response = client.post("/mcp", headers=MCP_HEADERS, json={
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "lookup", "arguments": {"model": MODEL, "task": TASK}}})
    log.requests["mcp_lookup"] += 1
    assert response.status_code == 200, f"mcp: {response.status_code} {response.text[:300]}"
    answer = response.json()["result"]
    k = w.version_index[answer["_meta"]["medbench/warehouse_version"].rsplit("-", 1)[1]]
    if k < log.versions[-1]:
        raise AssertionError(f"mcp lookup: version {k} after version {log.versions[-1]}")
    log.versions.append(k)
    result = answer["structuredContent"]["result"]
    assert (result["run_id"], result["metric"]["value"]) == (w.runs[k].run_id, k / 1000), (k, result["run_id"])

    response, k = get("stats", "/v1/stats")
    assert response.json()["warehouse_version"] == response.headers["x-medbench-warehouse"]
    assert response.json()["results"] == len(w.base) + k


def test_republishing_under_concurrent_load(tmp_path: Path) -> None:
    data = DataDir(tmp_path / "data")
    w = Versioned(data=data, base=catalog(data).results)
    first = w.publish(1)
    stop = threading.Event()
    logs = [ClientLog() for _ in range(CLIENTS)]

    with live_api(data.root, tmp_path / "server.log") as server:

        def client_loop(seed: int, log: ClientLog) -> None:
            rng = random.Random(seed)
            with httpx.Client(base_url=server.base, timeout=30.0) as client:
                while not stop.is_set():
                    try:
                        check_round(client, w, rng, log)
                    except (AssertionError, httpx.HTTPError, KeyError, ValueError) as exc:
                        log.failures.append(f"{type(exc).__name__}: {exc}")
                        if len(log.failures) >= 20:
                            return

        threads = [threading.Thread(target=client_loop, args=(seed, log)) for seed, log in enumerate(logs)]
        for t in threads:
            t.start()
        try:
            deadline = time.monotonic() + 120  # an upper bound on waiting, not a measurement
            while not all(log.versions for log in logs) and time.monotonic() < deadline:
                time.sleep(0.05)  # every client has been answered from version 1 before the first republish
            for k in range(2, PUBLISHES + 1):
                w.publish(k)
                time.sleep(0.1)
            while not all(log.versions and log.versions[-1] == PUBLISHES for log in logs) and time.monotonic() < deadline:
                time.sleep(0.05)
        finally:
            stop.set()
            for t in threads:
                t.join(timeout=60)
        server_log = server.log()

    failures = [failure for log in logs for failure in log.failures]
    assert not failures, f"{len(failures)} failed requests, e.g. {failures[:5]}"
    assert all(log.versions and log.versions[0] == 1 and log.versions[-1] == PUBLISHES for log in logs), first
    total = sum((log.requests for log in logs), Counter())
    assert set(total) == {"lookup", "leaderboard", "results", "result", "predictions", "mcp_lookup", "stats"}
    assert len({k for log in logs for k in log.versions}) >= 2
    assert "Traceback" not in server_log, server_log
