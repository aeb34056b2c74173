"""The website through the ASGI test client, on synthetic warehouses (fast lane).

Every page: 200 HTML under 200 KB, no resource loaded from another origin, a link to its JSON
twin that answers, the demo banner exactly when the data is demo. Then what each page promises:
the leaderboard's numbers and bars, the result page's numbers (equal to the API's), its picture,
its BibTeX and download; HTML errors on site routes while /v1 stays JSON; escaping.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path

import pytest
from litestar.testing import TestClient

from api.app import create_app
from api.site import svg
from api.site.views import MAX_ROWS
from support.api_data import RUN_IDS
from support.site_data import BETTER, BULK, HOSTILE_NAME, WORSE

MAX_PAGE_BYTES = 200 * 1024
PAGES = [
    "/", "/tasks/clinicalqa", "/tasks/clinicalqa?version=1", "/tasks/vitaldb-ioh", "/tasks/clinicalqa?model_type=llm",
    f"/r/{RUN_IDS['medgemma-cqa0']}", f"/r/{RUN_IDS['neglastmap-ioh0']}", f"/r/{RUN_IDS['medgemma-cqa0-old']}",
    "/models", "/datasets", "/about", "/agents", "/compare",
    f"/compare?a={RUN_IDS[BETTER]}&b={RUN_IDS[WORSE]}",
    # pages derived from the table of read questions (api.site.question_pages), and its list
    "/results?limit=5", "/releases", "/lookup?model=kgpu/medgemma-27b&task=clinicalqa", "/questions",
]


class Links(HTMLParser):
    """Every URL a page would load (src, stylesheet/icon href) and every link."""

    def __init__(self) -> None:
        super().__init__()
        self.loads: list[str] = []
        self.anchors: list[str] = []
        self.alternate: list[str] = []
        self.tags: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        self.tags.append(tag)
        if a.get("src"):
            self.loads.append(a["src"])
        if tag == "link":
            rel = a.get("rel") or ""
            if "alternate" in rel:
                self.alternate.append(a.get("href") or "")
            else:
                self.loads.append(a.get("href") or "")
        if tag == "a" and a.get("href"):
            self.anchors.append(a["href"])


def parse(html: str) -> Links:
    links = Links()
    links.feed(html)
    return links


@pytest.fixture(scope="module")
def client(site_data: Path) -> Iterator[TestClient]:
    with TestClient(create_app(site_data)) as c:
        yield c


@pytest.fixture(scope="module")
def demo_client(site_demo_data: Path) -> Iterator[TestClient]:
    with TestClient(create_app(site_demo_data)) as c:
        yield c


@pytest.mark.parametrize("path", PAGES)
def test_every_page_is_small_self_contained_html_with_a_json_twin(client: TestClient, path: str) -> None:
    response = client.get(path)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "text/html; charset=utf-8"
    assert len(response.content) < MAX_PAGE_BYTES
    for name in ("etag", "x-medbench-warehouse", "cache-control"):
        assert name in response.headers
    html = response.text
    assert html.startswith("<!doctype html>") and '<meta name="viewport"' in html and '<html lang="en">' in html
    links = parse(html)
    assert {"header", "nav", "main", "footer", "h1"} <= set(links.tags)
    assert links.loads, "the stylesheet"
    for url in links.loads:
        assert not re.match(r"^(https?:)?//", url), f"{path} loads {url} from another origin"
    assert "demo-banner" not in html
    if path.startswith("/compare") and "?" not in path:
        return  # the empty compare form has no JSON twin
    assert len(links.alternate) == 1
    twin = links.alternate[0]
    assert twin.startswith("/v1/") and twin in links.anchors
    answer = client.get(twin)
    assert answer.status_code == 200 and answer.headers["content-type"] == "application/json"


@pytest.mark.parametrize("path", [*PAGES, "/r/" + RUN_IDS["gptoss-cqa0"]])
def test_demo_banner_on_every_page_of_demo_data(demo_client: TestClient, path: str) -> None:
    html = demo_client.get(path).text
    assert 'class="demo-banner"' in html and "DEMO DATA" in html
    assert "(demo)" in html.split("</title>")[0]


def test_stylesheet_is_served_locally(client: TestClient) -> None:
    response = client.get("/static/site.css")
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/css")
    assert "@media" in response.text and "http" not in response.text


def test_leaderboard_rows_match_the_api_with_a_ci_bar_each(client: TestClient) -> None:
    html = client.get("/tasks/clinicalqa?version=0").text
    rows = client.get("/v1/leaderboard?task=clinicalqa@0").json()["rows"]
    ids = re.findall(r'<tr data-run-id="([0-9a-f]{12})"', html)
    assert ids == [r["run_id"] for r in rows]
    for r in rows:
        row_html = html.split(f'data-run-id="{r["run_id"]}"')[1].split("</tr>")[0]
        assert f'href="/r/{r["run_id"]}"' in row_html
        m = r["metric"]
        assert f"{m['value']:.3f}" in row_html and f"[{m['ci_low']:.3f}, {m['ci_high']:.3f}]" in row_html
        assert '<svg class="ci-bar"' in row_html
    assert html.count('<svg class="ci-bar"') == len(rows)


def test_model_type_filter(client: TestClient) -> None:
    html = client.get("/tasks/clinicalqa?version=0&model_type=rule").text
    ids = re.findall(r'<tr data-run-id="([0-9a-f]{12})"', html)
    api = client.get("/v1/leaderboard?task=clinicalqa@0&model_type=rule").json()["rows"]
    assert ids == [r["run_id"] for r in api] == [RUN_IDS["random-cqa0"]]
    assert 'href="/v1/leaderboard?task=clinicalqa@0&amp;model_type=rule"' in html
    assert "No llm result" not in client.get("/tasks/clinicalqa?version=0&model_type=llm").text
    assert "No ml result" in client.get("/tasks/clinicalqa?version=0&model_type=ml").text
    # the filter offers only the types with a result on this board (issue #40: `ml` where none exists)
    offered = re.findall(r'<option value="(\w+)"', html.split('id="model_type"')[1].split("</select>")[0])
    assert offered == [t for t in ("llm", "ml", "rule") if t in {r["model"]["type"] for r in
                       client.get("/v1/leaderboard?task=clinicalqa@0").json()["rows"]}] and "ml" not in offered


def test_result_page_shows_the_api_numbers(client: TestClient) -> None:
    run = RUN_IDS["medgemma-cqa0"]
    html = client.get(f"/r/{run}").text
    r = client.get(f"/v1/results/{run}").json()
    assert f'id="primary-value">{r["metric"]["value"]:.4f}<' in html
    for m in r["metrics"]:
        row = html.split(f'data-metric="{m["name"]}"')[1].split("</tr>")[0]
        assert [f"{m[k]:.4f}" for k in ("value", "ci_low", "ci_high")] == re.findall(r'class="num">([0-9.]+)<', row)
    for text in (r["versions"]["task_spec_hash"], r["versions"]["model_spec_hash"], r["versions"]["dataset_snapshot"],
                 r["versions"]["code_revision"], r["usage"]["hardware"], r["predictions_sha256"], "$0.25",
                 "&#34;temperature&#34;: 0.0"):
        assert text in html
    assert f'href="/artifacts/{run}/predictions.parquet"' in html
    bibtex = html.split('<pre class="bibtex" id="bibtex">')[1].split("</pre>")[0]
    assert bibtex.replace("&#34;", '"').replace("&#39;", "'").replace("&amp;", "&") == r["bibtex"]
    assert 'data-copy="bibtex"' in html and "navigator.clipboard" in html


def test_result_pictures_fit_the_task(client: TestClient) -> None:
    choice = client.get(f"/r/{RUN_IDS['medgemma-cqa0']}").text
    assert '<svg class="categories"' in choice and "외과" in choice and 'id="by-category"' in choice
    assert "내과 &lt;Internal medicine&gt;" in choice  # a category name is text, not markup
    score = client.get(f"/r/{RUN_IDS['neglastmap-ioh0']}").text
    assert '<svg class="figure roc-curve"' in score and '<svg class="categories"' not in score
    points = re.search(r'<polyline class="series" data-series="model" points="([^"]+)"', score).group(1).split()
    assert len(points) == 3  # the fixture's ROC has three points


def test_compare_with_lists_the_other_results_of_the_task(client: TestClient) -> None:
    html = client.get(f"/r/{RUN_IDS['medgemma-cqa0']}").text
    form = html.split('<form class="compare"')[1].split("</form>")[0]
    options = re.findall(r'<option value="([0-9a-f]{12})"', form)
    others = {RUN_IDS[k] for k in ("medgemma-cqa0-old", "gptoss-cqa0", "random-cqa0")}
    assert set(options) == others
    assert f'name="a" value="{RUN_IDS["medgemma-cqa0"]}"' in form and 'action="/compare"' in form


def test_superseded_result_says_so(client: TestClient) -> None:
    html = client.get(f"/r/{RUN_IDS['medgemma-cqa0-old']}").text
    assert f'href="/r/{RUN_IDS["medgemma-cqa0"]}"' in html and "newer result" in html


def test_compare_page_shows_the_api_numbers(client: TestClient) -> None:
    a, b = RUN_IDS[BETTER], RUN_IDS[WORSE]
    html = client.get(f"/compare?a={a}&b={b}").text
    c = client.get(f"/v1/compare?a={a}&b={b}").json()
    assert f'id="difference">{c["difference"]:+.4f}<' in html
    assert f'id="diff-ci-low">{c["ci_low"]:+.4f}<' in html and f'id="diff-ci-high">{c["ci_high"]:+.4f}<' in html
    assert '<svg class="difference"' in html and "does better than" in html and "higher is better" in html
    assert f">{c['a_only_correct']}<" in html


def test_html_errors_on_site_routes_json_under_v1(client: TestClient) -> None:
    for path, status in [("/r/0123456789ab", 404), ("/r/nope", 404), ("/tasks/nope", 404), ("/tasks/clinicalqa?version=7", 404),
                         ("/tasks/clinicalqa?model_type=robot", 400), ("/tasks/clinicalqa?version=x", 400),
                         ("/compare?a=0123456789ab&b=0123456789ab", 404),
                         (f"/compare?a={RUN_IDS['medgemma-cqa0']}&b={RUN_IDS['logreg-ioh0']}", 400)]:
        response = client.get(path)
        assert response.status_code == status, path
        assert response.headers["content-type"] == "text/html; charset=utf-8"
        assert "<h1>" in response.text and "Traceback" not in response.text
    for path in ("/v1/results/0123456789ab", "/v1/nope", "/artifacts/0123456789ab/predictions.parquet"):
        response = client.get(path)
        assert response.status_code == 404 and response.headers["content-type"] == "application/json"
        browser = client.get(path, headers={"accept": "text/html,application/xhtml+xml,*/*;q=0.8"})
        assert browser.status_code == 404 and browser.headers["content-type"] == "application/json"
    for path in ("/nope", "/tasks/clinicalqa/nope/deeper", "/v1nope"):  # issue #40: a browser got JSON here
        browser = client.get(path, headers={"accept": "text/html,application/xhtml+xml,*/*;q=0.8"})
        assert browser.status_code == 404 and browser.headers["content-type"] == "text/html; charset=utf-8", path
        assert "<h1>Not found</h1>" in browser.text and 'href="/submissions"' in browser.text
        assert client.get(path).json()["error"] == "not_found"  # a script (no text/html) still gets JSON
    assert client.post("/").status_code == 405


def test_html_503_before_anything_is_published(tmp_path: Path) -> None:
    with TestClient(create_app(tmp_path / "empty")) as c:
        response = c.get("/")
        assert response.status_code == 503 and response.headers["content-type"] == "text/html; charset=utf-8"
        assert "medbench materialize --demo" in response.text
        assert c.get("/v1/stats").headers["content-type"] == "application/json"


def test_text_from_the_data_is_escaped(client: TestClient) -> None:
    for path in ("/tasks/clinicalqa?version=0", f"/r/{RUN_IDS[WORSE]}", f"/compare?a={RUN_IDS[BETTER]}&b={RUN_IDS[WORSE]}"):
        html = client.get(path).text
        assert HOSTILE_NAME not in html and "<script>alert" not in html
        assert "&lt;script&gt;alert(" in html


def test_head_of_a_page(client: TestClient) -> None:
    get, head = client.get("/about"), client.head("/about")
    assert head.status_code == 200 and head.content == b""
    assert head.headers["content-length"] == str(len(get.content)) and head.headers["etag"] == get.headers["etag"]


def test_agents_page_and_llms_txt_use_live_examples(client: TestClient) -> None:
    html = client.get("/agents").text
    top = client.get("/v1/leaderboard?task=clinicalqa@0").json()["rows"][0]
    assert "Rule one" in html
    assert f"http://testserver.local/v1/results/{top['run_id']}" in html
    assert "http://testserver.local/v1/lookup?model=" in html
    text = client.get("/llms.txt")
    assert text.status_code == 200 and text.headers["content-type"] == "text/plain; charset=utf-8"
    body = text.text
    assert body.startswith("# medbench\n") and "Rule one" in body and "&lt;" not in body
    lookup = re.search(r'curl "([^"]+)"', body).group(1)
    answer = client.get(lookup.removeprefix("http://testserver.local"))
    assert answer.status_code == 200 and answer.json()["status"] == "evaluated"
    for ref in ("clinicalqa@0", "clinicalqa@1", "vitaldb-ioh@0"):
        assert f"/v1/leaderboard?task={ref}" in body


def test_home_page_lists_every_task_with_its_leader(client: TestClient) -> None:
    html = client.get("/").text
    stats = client.get("/v1/stats").json()
    for t in client.get("/v1/tasks").json()["tasks"]:
        assert f'href="/tasks/{t["slug"]}?version={t["version"]}"' in html
        board = client.get(f"/v1/leaderboard?task={t['ref']}").json()["rows"]
        if board:
            assert f'href="/r/{board[0]["run_id"]}"' in html
    assert f"<dd>{stats['results']}</dd>" in html and f"<dd>{stats['models']}</dd>" in html


def test_models_and_datasets_pages(client: TestClient) -> None:
    models = client.get("/models").text
    for slug in ("kgpu/medgemma-27b", "hf/gpt-oss-20b", "medbench/logreg"):
        assert f'id="{slug}"' in models
    assert f'href="/r/{RUN_IDS["medgemma-cqa0"]}"' in models
    datasets = client.get("/datasets").text
    for d in client.get("/v1/datasets").json()["datasets"]:
        assert d["citation"] in datasets and f'href="https://doi.org/{d["doi"]}"' in datasets
        assert f'href="{d["license_url"]}"' in datasets


def test_a_long_leaderboard_is_cut_to_stay_small(site_bulk_data: Path) -> None:
    with TestClient(create_app(site_bulk_data)) as c:
        response = c.get("/tasks/clinicalqa?version=0")
        assert response.status_code == 200 and len(response.content) < MAX_PAGE_BYTES
        assert len(re.findall(r"<tr data-run-id=", response.text)) == MAX_ROWS < BULK
        assert f"of {BULK + 3} results" in response.text


# --------------------------------------------------------------------------- SVG helpers


@pytest.mark.parametrize("picture", [
    svg.ci_bar(0.7, 0.6, 0.8, svg.Scale(0.5, 1.0), reference=0.5),
    svg.scale_axis(svg.Scale(0.75, 0.95)),
    svg.roc_curve([0.0, 0.2, 1.0], [0.0, 0.7, 1.0], 0.81),
    svg.category_bars([{"category": "A & <B>", "n": 3, "accuracy": 0.5, "ci_low": 0.1, "ci_high": 0.9}], reference=0.2),
    svg.difference_bar(0.05, 0.01, 0.09),
])
def test_svg_is_well_formed_and_labelled(picture: str) -> None:
    root = ET.fromstring(str(picture))
    assert root.tag == "{http://www.w3.org/2000/svg}svg" and root.get("role") == "img" and root.get("aria-label")
    assert root.find("{http://www.w3.org/2000/svg}title") is not None


def test_ci_bar_puts_the_estimate_and_interval_where_they_belong() -> None:
    root = ET.fromstring(str(svg.ci_bar(0.75, 0.6, 0.9, svg.Scale(0.5, 1.0), width=106, height=20)))
    ns = "{http://www.w3.org/2000/svg}"
    interval = next(e for e in root.findall(f"{ns}line") if e.get("stroke-width") == "6")
    assert (float(interval.get("x1")), float(interval.get("x2"))) == (24.8, 81.2)  # 6 + 94 * (0.2, 0.8)
    assert float(root.find(f"{ns}circle").get("cx")) == 53.0  # 6 + 94 * 0.5


def test_interval_scale_holds_every_interval_within_bounds() -> None:
    scale = svg.interval_scale([0.62, 0.7], [0.8, 0.97])
    assert scale.low <= 0.62 and scale.high >= 0.97 and scale.high <= 1.0
    assert svg.interval_scale([], []) == svg.Scale(0.0, 1.0)
    assert all(scale.low <= t <= scale.high for t in scale.ticks())


def test_the_focused_axis_keeps_every_drawn_interval_40_px_wide() -> None:
    """Issue #40: one shared linear axis from a chance-level baseline to the leaders drew the leaders'
    intervals about 9 px wide; the axis follows the leaders, and a row it cannot hold is an arrow."""
    rows = [(0.86, 0.90), (0.82, 0.87), (0.80, 0.85), (0.21, 0.29)]
    scale = svg.focus_scale(rows)
    inner = svg.BAR_WIDTH - 12
    drawn = [(lo, hi) for lo, hi in rows if scale.contains(lo) and scale.contains(hi)]
    assert drawn == rows[:3] and all((hi - lo) / (scale.high - scale.low) * inner >= 40 for lo, hi in drawn)
    off = str(svg.ci_bar(0.25, 0.21, 0.29, scale))
    assert "off this axis (below" in off and "<circle" not in off
    assert svg.focus_scale([(0.4, 0.6)]) == svg.interval_scale([0.4], [0.6])


def test_the_result_page_shows_its_signature_and_each_breakdown_once(client: TestClient, site_data: Path) -> None:
    """Issue #40: the result page did not show its signature, and drew per-category accuracy in a
    picture and again in a table; the versions and configuration fold away."""
    from medbench.layout import DataDir
    from warehouse.signing import read_signature

    rows = client.get("/v1/leaderboard?task=clinicalqa@0").json()["rows"]
    for row in rows:
        html = client.get(f"/r/{row['run_id']}").text
        signature = client.get(f"/v1/results/{row['run_id']}").json()["signature"]
        shown = html.split('id="signature">')[1].split("</dd>")[0]
        if signature:
            assert signature["key_id"] in shown and signature["value"] in shown, shown
        else:
            assert "not signed" in shown and read_signature(DataDir(site_data), row["run_id"]) is None
        pictured = "Accuracy by category" in html
        assert not (pictured and 'data-field="category"' in html), row["run_id"]
        assert "<details><summary>Spec hashes" in html and 'id="config"' in html
