"""A newcomer's first hour on the website (issue #23, item 4), through the ASGI test client.

What a first visit ran into: a caption naming a chance line the axis cannot show, a compare form
that mixed tasks and compared a result with itself (and an error page for two tasks), no icon, a
models page ignoring ``?q=``, no CSV of a leaderboard, and a start banner without the site's address.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from html import unescape
from pathlib import Path

import msgspec
import pytest
from litestar.testing import TestClient

from api.app import create_app
from api.server import banner
from api.site import downloads, views
from api.tables import TableStore
from support.api_data import RUN_IDS
from support.site_data import BULK
from medbench.layout import DataDir

CSV_COLUMNS = [
    "rank", "rank_low", "rank_high", "tied_with_leader", "model_slug", "model_name", "model_type", "tier",
    "metric_name", "metric_value", "metric_ci_low", "metric_ci_high", "n", "parse_rate", "cost_usd",
    "contamination", "eval_date", "run_id", "url",
]


@pytest.fixture(scope="module")
def client(site_data: Path) -> Iterator[TestClient]:
    with TestClient(create_app(site_data)) as c:
        yield c


def selects(html: str) -> dict[str, tuple[list[str], str | None]]:
    """Each <select id=...>: its option values and the one a browser shows (the selected, else the first)."""
    out = {}
    for sid, body in re.findall(r'<select id="([^"]+)"[^>]*>(.*?)</select>', html, re.S):
        values = re.findall(r'<option value="([^"]*)"', body)
        chosen = re.search(r'<option value="([^"]*)" selected', body)
        out[sid] = (values, chosen.group(1) if chosen else (values[0] if values else None))
    return out


def task_of(client: TestClient, run_id: str) -> str:
    return client.get(f"/v1/results/{run_id}").json()["task"]


# --------------------------------------------------------------------------- the chance line


def test_the_caption_does_not_name_a_chance_line_the_axis_cannot_show(client: TestClient) -> None:
    html = client.get("/tasks/vitaldb-ioh").text
    axis = re.search(r'aria-label="scale from ([0-9.]+) to ([0-9.]+)"', html)
    assert float(axis.group(1)) > 0.5  # chance AUROC lies left of this axis
    caption = re.search(r"<caption>(.*?)</caption>", html, re.S).group(1)
    assert "dashed line" not in caption and "chance" not in caption
    assert "stroke-dasharray" not in html.split('<table class="board">')[1].split("</table>")[0]


def test_the_caption_names_the_chance_line_where_every_bar_draws_it(site_data: Path) -> None:
    tables = TableStore(DataDir(site_data)).current()
    task = dataclasses.replace(tables.task_by_ref["clinicalqa@0"],
                               spec={**tables.task_by_ref["clinicalqa@0"].spec, "choice": {"options": list("ABCDE")}})
    board = views.leaderboard(tables, task, "rule", "http://x")  # the axis focuses on these rows (near chance)
    assert board["chance_line"] == 0.2 and board["rows"]
    assert all("stroke-dasharray" in b.bar for b in board["rows"])
    auroc = views.leaderboard(tables, tables.task_by_ref["vitaldb-ioh@0"], None, "http://x")
    assert auroc["chance_line"] is None and not any("stroke-dasharray" in b.bar for b in auroc["rows"])


# --------------------------------------------------------------------------- compare


def test_the_compare_form_defaults_to_the_top_two_results_of_one_task(client: TestClient) -> None:
    html = client.get("/compare").text
    picks = selects(html)
    (a_values, a), (b_values, b) = picks["pick-a"], picks["pick-b"]
    assert a_values == b_values and a != b
    task = picks["pick-task"][1]
    assert {task_of(client, r) for r in a_values} == {task}
    top = [r["run_id"] for r in client.get(f"/v1/leaderboard?task={task}").json()["rows"]]
    assert [a, b] == top[:2] and a_values[:len(top)] == top
    compared = client.get(f"/compare?a={a}&b={b}")  # what pressing Compare asks for
    assert compared.status_code == 200 and 'id="difference"' in compared.text


def test_the_compare_form_offers_one_task_at_a_time(client: TestClient) -> None:
    picks = selects(client.get("/compare?task=vitaldb-ioh@0").text)
    assert picks["pick-task"][1] == "vitaldb-ioh@0"
    values, a = picks["pick-a"]
    assert {task_of(client, r) for r in values} == {"vitaldb-ioh@0"}
    top = [r["run_id"] for r in client.get("/v1/leaderboard?task=vitaldb-ioh@0").json()["rows"]]
    assert (a, picks["pick-b"][1]) == (top[0], top[1])
    assert client.get("/compare?task=nope@3").status_code == 404


def test_two_results_of_different_tasks_get_the_form_and_a_message(client: TestClient) -> None:
    a, b = RUN_IDS["medgemma-cqa0"], RUN_IDS["logreg-ioh0"]
    response = client.get(f"/compare?a={a}&b={b}")
    assert response.status_code == 400 and response.headers["content-type"] == "text/html; charset=utf-8"
    html = response.text
    message = unescape(re.search(r'<p class="notice" id="compare-mismatch"[^>]*>(.*?)</p>', html, re.S).group(1))
    assert a in message and b in message and "clinicalqa@0" in message and "vitaldb-ioh@0" in message
    picks = selects(html)  # the form again, for A's task, ready for another B
    values, picked_a = picks["pick-a"]
    assert picked_a == a and picks["pick-b"][1] in values and picks["pick-b"][1] != a
    assert {task_of(client, r) for r in values} == {"clinicalqa@0"}
    assert 'class="error-status"' not in html and "<nav" in html


# --------------------------------------------------------------------------- favicon


def test_every_page_links_an_icon_that_is_served(client: TestClient) -> None:
    for path in ("/", "/models", f"/r/{RUN_IDS['medgemma-cqa0']}", "/nope-no-page"):
        html = client.get(path).text
        if "<html" in html:
            assert '<link rel="icon" href="/favicon.ico" type="image/svg+xml">' in html, path
    icon = client.get("/favicon.ico")
    assert icon.status_code == 200 and icon.headers["content-type"] == "image/svg+xml"
    assert ET.fromstring(icon.content).tag == "{http://www.w3.org/2000/svg}svg"


# --------------------------------------------------------------------------- /models?q=


@pytest.mark.parametrize("q", ["MEDGEMMA", "gpt-oss", "medbench/", "  LogReg ", "no-such-model", ""])
def test_models_page_filters_by_q_like_the_api(client: TestClient, q: str) -> None:
    html = client.get("/models", params={"q": q}).text
    shown = re.findall(r'<article class="card" id="([^"]+)"', html)
    api = [m["slug"] for m in client.get("/v1/models", params={"q": q, "limit": 1000}).json()["models"]]
    assert sorted(shown) == sorted(api)
    every = client.get("/v1/models", params={"limit": 1000}).json()["models"]
    if not q.strip():
        assert len(shown) == len(every)
    elif q == "no-such-model":
        assert shown == [] and "0 models matching" in html
    else:
        assert 0 < len(shown) < len(every)
    box = re.search(r'<input type="search" id="q" name="q" value="([^"]*)"', html).group(1)
    assert unescape(box) == (q if q.strip() else "")


def test_models_search_box_escapes_q(client: TestClient) -> None:
    html = client.get("/models", params={"q": '"><script>x'}).text
    assert '"><script>x' not in html and 'value="&#34;&gt;&lt;script&gt;x"' in html


# --------------------------------------------------------------------------- CSV


def read_csv(response) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(response.content.decode("utf-8"))))


def test_the_leaderboard_downloads_as_csv_with_the_json_rows(client: TestClient) -> None:
    page = client.get("/tasks/clinicalqa?version=0&model_type=llm").text
    href = unescape(re.search(r'<a id="leaderboard-csv" href="([^"]+)" download>', page).group(1))
    assert href == "/tasks/clinicalqa/leaderboard.csv?version=0&model_type=llm"
    response = client.get(href)
    assert response.status_code == 200 and response.headers["content-type"] == "text/csv; charset=utf-8"
    assert response.headers["content-disposition"] == 'attachment; filename="medbench-clinicalqa-0-leaderboard-llm.csv"'
    assert response.headers["x-medbench-warehouse"] and response.headers["etag"]
    header = next(csv.reader(io.StringIO(response.text)))
    assert header == CSV_COLUMNS
    rows = read_csv(response)
    api = client.get("/v1/leaderboard?task=clinicalqa@0&model_type=llm").json()["rows"]
    assert len(rows) == len(api) >= 2
    for got, want in zip(rows, api):
        assert [int(got[k]) for k in ("rank", "rank_low", "rank_high", "n")] == [want[k] for k in ("rank", "rank_low", "rank_high", "n")]
        assert got["tied_with_leader"] == str(want["tied_with_leader"]).lower()
        assert (got["model_slug"], got["model_name"], got["model_type"]) == tuple(want["model"][k] for k in ("slug", "name", "type"))
        assert (got["tier"], got["run_id"], got["url"], got["eval_date"]) == (want["tier"], want["run_id"], want["url"], want["eval_date"])
        assert got["metric_name"] == want["metric"]["name"]
        for k in ("value", "ci_low", "ci_high"):
            assert float(got[f"metric_{k}"]) == want["metric"][k]
        assert float(got["cost_usd"]) == want["cost_usd"]
        assert (float(got["parse_rate"]) if got["parse_rate"] else None) == want["parse_rate"]


def test_the_csv_has_every_row_not_only_the_page(site_bulk_data: Path) -> None:
    with TestClient(create_app(site_bulk_data)) as c:
        rows = read_csv(c.get("/tasks/clinicalqa/leaderboard.csv?version=0"))
        assert len(rows) == BULK + 3 > views.MAX_ROWS
        assert [int(r["rank"]) for r in rows] == list(range(1, BULK + 4))


def test_csv_errors_are_the_site_errors(client: TestClient) -> None:
    assert client.get("/tasks/nope/leaderboard.csv").status_code == 404
    assert client.get("/tasks/clinicalqa/leaderboard.csv?model_type=robot").status_code == 400


@pytest.mark.parametrize("text", ["=HYPERLINK(\"http://x\")", "+1+1", "-2+3", "@SUM(A1)", "\tx", "\r=1"])
def test_a_cell_a_spreadsheet_would_run_gets_a_quote(text: str) -> None:
    assert downloads.safe_cell(text) == "'" + text
    assert downloads.safe_cell("Med-Gemma = good") == "Med-Gemma = good"
    assert downloads.safe_cell(-0.5) == -0.5 and downloads.safe_cell(None) == "" and downloads.safe_cell(True) == "true"


def test_a_formula_in_a_model_name_reaches_the_csv_as_text(site_data: Path) -> None:
    tables = TableStore(DataDir(site_data)).current()
    task = tables.task_by_ref["clinicalqa@0"]
    board = tables.leaderboards[task.ref]
    first = board[0]
    evil = dataclasses.replace(first, record=msgspec.structs.replace(
        first.record, model=msgspec.structs.replace(first.record.model, name="=cmd|' /C calc'!A0")))
    tables = dataclasses.replace(tables, leaderboards={**tables.leaderboards, task.ref: (evil, *board[1:])})
    rows = list(csv.DictReader(io.StringIO(downloads.leaderboard_csv(tables, task, None, "http://x").decode())))
    assert rows[0]["model_name"] == "'=cmd|' /C calc'!A0"


# --------------------------------------------------------------------------- the start banner


def test_the_start_banner_gives_the_website_address(site_data: Path) -> None:
    tables = TableStore(DataDir(site_data)).current()
    for t in (tables, None):
        text = banner("http://127.0.0.1:8000", t, site_data)
        assert any(line.startswith("website: open http://127.0.0.1:8000/ in a browser") for line in text.splitlines())


def test_the_start_banner_prints_the_export_line_for_its_address(site_data: Path, tmp_path: Path) -> None:
    """Issue #40: a demo on another port left `lookup`, `verify`, ... asking :8000; the banner (of
    `medbench serve` and `medbench demo`) prints the line that points the CLI at it."""
    tables = TableStore(DataDir(site_data)).current()
    for t, root in ((tables, site_data), (None, tmp_path)):
        lines = banner("http://127.0.0.1:8123", t, root).splitlines()
        assert any(line.startswith("export MEDBENCH_API_URL=http://127.0.0.1:8123 ") for line in lines), lines
    empty = banner("http://127.0.0.1:8123", None, tmp_path)
    assert str(tmp_path) in empty and "MEDBENCH_DATA=DIR" in empty
