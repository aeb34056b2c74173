"""A shape the site has never seen never gives a 500 (docs/adding-a-task.md): a participant flow of
keys no built-in family writes, a kind this server does not know, and extras no kind declares a
figure for all answer 200, and nothing is drawn from them."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from litestar.testing import TestClient
from support.api_data import RUN_IDS, catalog

from api.app import create_app
from medbench.layout import DataDir
from warehouse.publish import publish

NOW = dt.datetime(2026, 10, 29, 12, tzinfo=dt.UTC)


def test_unknown_flow_kind_and_extras_answer_200(tmp_path: Path) -> None:
    data = DataDir(tmp_path / "data")
    cat = catalog(data)
    tasks = []
    for t in cat.tasks:
        if t["slug"] == "vitaldb-ioh":
            t = {**t, "participant_flow": {"admissions": 12, "cohort": {"patients": 3}}}
        if t["slug"] == "clinicalqa" and t["version"] == 1:
            t = {**t, "kind": "never_installed"}
        tasks.append(t)
    cat.tasks = tasks
    publish(data, cat, now=NOW)
    with TestClient(create_app(data.root), base_url="http://testserver.local") as client:
        page = client.get("/tasks/vitaldb-ioh")
        assert page.status_code == 200 and 'id="participant-flow"' not in page.text
        assert client.get("/v1/tasks/vitaldb-ioh").json()["participant_flow"] is None
        assert client.get("/tasks/clinicalqa?version=1").status_code == 200
        unknown = client.get(f"/r/{RUN_IDS['medgemma-cqa1']}")
        assert unknown.status_code == 200 and '<figure class="picture"' not in unknown.text
        assert client.get(f"/v1/results/{RUN_IDS['medgemma-cqa1']}").json()["figures"] == []
