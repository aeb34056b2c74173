"""A result's withheld metrics (docs/statistics.md, "Withheld metrics") on /v1/results, on its
leaderboard row, on the task page (the leaderboard says why) and on the result page."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import msgspec
from litestar.testing import TestClient
from support.api_data import RUN_IDS, catalog

from api.app import create_app
from medbench.layout import DataDir
from warehouse.publish import publish
from medbench.records import Withheld

WHY = "ppv[t=0.9] is undefined on these test items (no value: e.g. one class only, or no alarm)"


def test_withheld_metrics_are_listed_with_their_reason_everywhere(tmp_path: Path) -> None:
    data = DataDir(tmp_path / "data")
    cat = catalog(data)
    run = RUN_IDS["gptoss-cqa0"]
    results = [msgspec.structs.replace(r, withheld=[Withheld("ppv[t=0.9]", WHY)]) if r.run_id == run else r
               for r in cat.results]
    publish(data, dataclasses.replace(cat, results=results))
    with TestClient(create_app(data.root)) as client:
        body = client.get(f"/v1/results/{run}").json()
        assert body["withheld"] == [{"name": "ppv[t=0.9]", "reason": WHY}]
        assert "ppv[t=0.9]" not in {m["name"] for m in body["metrics"]}
        rows = {r["run_id"]: r for r in client.get("/v1/leaderboard?task=clinicalqa@0").json()["rows"]}
        assert rows[run]["withheld"] == [{"name": "ppv[t=0.9]", "reason": WHY}]
        assert all(r["withheld"] == [] for k, r in rows.items() if k != run)
        page = client.get("/tasks/clinicalqa?version=0").text
        assert page.count('class="muted withheld"') == 1 and "1 metric withheld: ppv[t=0.9]" in page
        assert 'id="withheld-metrics"' in client.get(f"/r/{run}").text
