"""The website in headless Chromium over the demo warehouse and a real ``medbench serve``.

A person's path through the site: the home page, a task, a row of its leaderboard, the result
page (its numbers must be the API's), the predictions download (read back with pyarrow, checksum
checked), the copy button, and a comparison of two results. Every request the browser makes must
stay on the server (no CDN, no fonts), and a phone-sized window must not scroll sideways.
Screenshots are kept under tests/artifacts/ (git-ignored) for a person to look at.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import httpx
import pyarrow.parquet as pq
import pytest
from playwright.sync_api import expect, sync_playwright

from support.serving import serve_process
from support.paths import TESTS

pytestmark = [pytest.mark.browser, pytest.mark.slow]

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
ARTIFACTS = TESTS / "artifacts"


@pytest.fixture(scope="module")
def site(demo_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with serve_process(demo_data, tmp_path_factory.mktemp("logs") / "serve.log") as base:
        yield base


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture
def page(browser, site: str):
    context = browser.new_context(viewport={"width": 1200, "height": 900}, accept_downloads=True,
                                  permissions=["clipboard-read", "clipboard-write"])
    page = context.new_page()
    page.requests = []  # type: ignore[attr-defined]
    page.on("request", lambda request: page.requests.append(request.url))  # type: ignore[attr-defined]
    yield page
    assert page.requests and all(url.startswith(site) for url in page.requests), page.requests  # type: ignore[attr-defined]
    context.close()


def shot(page, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


def test_home_task_result_download_and_compare(page, site: str, tmp_path: Path) -> None:
    page.goto(f"{site}/")
    assert page.locator("#demo-banner").is_visible()
    assert page.locator("h1").inner_text() == "medbench"
    shot(page, "home")

    page.click("a[href='/tasks/vitaldb-ioh?version=0']")
    page.wait_for_url("**/tasks/vitaldb-ioh?version=0")
    board = httpx.get(f"{site}/v1/leaderboard", params={"task": "vitaldb-ioh@0"}).json()["rows"]
    rows = page.locator("table.board tbody tr")
    assert rows.count() == len(board) >= 2
    assert page.locator("table.board svg.ci-bar").count() == len(board)
    shot(page, "task")

    first, second = board[0], board[1]
    rows.first.locator("a.result-link").click()
    page.wait_for_url(f"**/r/{first['run_id']}")
    result = httpx.get(f"{site}/v1/results/{first['run_id']}").json()
    assert page.locator("#primary-value").inner_text() == f"{result['metric']['value']:.4f}"
    assert page.locator("#primary-ci-low").inner_text() == f"{result['metric']['ci_low']:.4f}"
    assert page.locator("#primary-ci-high").inner_text() == f"{result['metric']['ci_high']:.4f}"
    for m in result["metrics"]:
        cells = page.locator(f"tr[data-metric='{m['name']}'] td").all_inner_texts()
        better = f"closest to {m['target']}" if m["direction"] == "target" else m["direction"]
        assert cells == [f"{m['value']:.4f}", f"{m['ci_low']:.4f}", f"{m['ci_high']:.4f}", better, m["method"]]
    assert page.locator("#predictions-sha256").inner_text() == result["predictions_sha256"]
    assert page.locator("svg.roc-curve polyline[data-series='model']").count() == 1  # the declared ROC figure
    shot(page, "result")

    page.click("button[data-copy='bibtex']")
    # expect() polls from Playwright's own script: a string predicate (wait_for_function) is evaluated in the
    # page, where the site's CSP (no 'unsafe-eval') refuses it whenever the first check comes too early
    expect(page.locator("button[data-copy='bibtex']")).to_have_text("Copied")
    assert page.evaluate("navigator.clipboard.readText()") == result["bibtex"]

    with page.expect_download() as download:
        page.click("#predictions-download")
    saved = tmp_path / "predictions.parquet"
    download.value.save_as(saved)
    assert hashlib.sha256(saved.read_bytes()).hexdigest() == result["predictions_sha256"]
    table = pq.read_table(saved)
    assert table.num_rows == result["n"]
    assert table.column_names == ["instance_id", "score", "label", "caseid", "subjectid", "t"]

    page.select_option("#compare-b", second["run_id"])
    page.click("form.compare button[type='submit']")
    page.wait_for_url(f"**/compare?a={first['run_id']}&b={second['run_id']}")
    c = httpx.get(f"{site}/v1/compare", params={"a": first["run_id"], "b": second["run_id"]}).json()
    assert page.locator("#difference").inner_text() == f"{c['difference']:+.4f}"
    assert page.locator("#diff-ci-low").inner_text() == f"{c['ci_low']:+.4f}"
    assert page.locator("#diff-ci-high").inner_text() == f"{c['ci_high']:+.4f}"
    assert page.locator("#demo-banner").is_visible()
    shot(page, "compare")


def test_choice_result_draws_accuracy_by_category(page, site: str) -> None:
    found = httpx.get(f"{site}/v1/lookup", params={"model": "medbench/random", "task": "clinicalqa@0"}).json()
    result = found["result"]
    page.goto(f"{site}/r/{result['run_id']}")
    categories = [m for m in result["metrics"] if m["name"].startswith("accuracy[")]
    assert page.locator("svg.categories g").count() == len(categories) > 0
    shot(page, "result-clinicalqa")


def test_readable_on_a_phone(browser, site: str) -> None:
    context = browser.new_context(viewport={"width": 390, "height": 844}, device_scale_factor=2, is_mobile=True,
                                  has_touch=True)
    page = context.new_page()
    try:
        for path, name in (("/", "phone-home"), ("/tasks/vitaldb-ioh", "phone-task"), ("/agents", "phone-agents")):
            page.goto(f"{site}{path}")
            assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1"), path
            assert page.locator("#demo-banner").is_visible()
            shot(page, name)
    finally:
        context.close()


# A Korean glyph drawn with the page's own font stack, as pixels: every missing glyph is the same
# .notdef box ("tofu"), so distinct syllables drawing identical pixels, or the pixels of U+FFFF
# (a noncharacter no font has), mean the text is unreadable.
GLYPHS_JS = """(chars) => {
  const family = getComputedStyle(document.body).fontFamily;
  const draw = (ch) => {
    const canvas = document.createElement('canvas'); canvas.width = 64; canvas.height = 64;
    const ctx = canvas.getContext('2d'); ctx.font = '48px ' + family; ctx.textBaseline = 'top';
    ctx.fillStyle = '#000'; ctx.fillText(ch, 4, 4); return canvas.toDataURL();
  };
  const notdef = draw('\\uFFFF');
  const drawn = chars.map(draw);
  return {family: family, distinct: new Set(drawn).size, tofu: drawn.filter((d) => d === notdef).length};
}"""


def test_korean_text_is_drawn_with_real_glyphs(page, site: str) -> None:
    page.goto(f"{site}/tasks/clinicalqa")
    page.click("details summary")
    assert "정답" in page.locator("main").inner_text()  # the task's own Korean text
    glyphs = ["정", "답", "가", "외", "과", "한"]
    drawn = page.evaluate(GLYPHS_JS, glyphs)
    assert "Noto Sans CJK KR" in drawn["family"] and "Malgun Gothic" in drawn["family"], drawn
    assert drawn["distinct"] == len(glyphs) and drawn["tofu"] == 0, f"Korean drawn as empty boxes: {drawn}"
    shot(page, "korean-task")


def test_the_leaderboard_fits_a_1280_px_window(browser, site: str) -> None:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    try:
        for slug in ("vitaldb-ioh", "clinicalqa"):
            page.goto(f"{site}/tasks/{slug}")
            fit = page.evaluate("""() => {
              const table = document.querySelector('table.board'), wrap = table.closest('.table-wrap');
              const th = [...table.querySelectorAll('thead th')].find((e) => e.textContent.trim() === 'Evaluated');
              const w = wrap.getBoundingClientRect(), h = th.getBoundingClientRect();
              return {scroll: table.scrollWidth, client: wrap.clientWidth, wrapScroll: wrap.scrollWidth,
                      left: h.left >= w.left, right: h.right <= w.right + 0.5, inWindow: h.right <= innerWidth};
            }""")
            assert fit["scroll"] <= fit["client"] and fit["wrapScroll"] <= fit["client"], (slug, fit)
            assert fit["left"] and fit["right"] and fit["inWindow"], (slug, fit)
            shot(page, f"task-1280-{slug}")
    finally:
        context.close()


def test_the_chance_line_is_named_only_where_it_is_drawn(page, site: str) -> None:
    # five options: chance 0.2 lies on the axis of the rule models' board (the random baseline's interval)
    page.goto(f"{site}/tasks/clinicalqa?model_type=rule")
    assert "the dashed line is chance (0.200)" in page.locator("table.board caption").inner_text()
    assert page.locator("table.board svg.ci-bar line[stroke-dasharray]").count() == page.locator("table.board svg.ci-bar").count()
    page.goto(f"{site}/tasks/vitaldb-ioh")  # AUROC 0.5 is left of an axis starting near 0.75
    assert "dashed line" not in page.locator("table.board caption").inner_text()
    assert page.locator("table.board svg.ci-bar line[stroke-dasharray]").count() == 0


def test_no_console_error_and_an_icon_on_the_home_page(page, site: str) -> None:
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("response", lambda r: errors.append(f"{r.status} {r.url}") if r.status >= 400 else None)
    page.goto(f"{site}/")
    page.wait_for_load_state("networkidle")
    icon = page.evaluate("""async () => {
      const href = document.querySelector('link[rel=icon]').href, r = await fetch(href);
      return {href: href, status: r.status, type: r.headers.get('content-type')};
    }""")
    assert icon == {"href": f"{site}/favicon.ico", "status": 200, "type": "image/svg+xml"}
    assert errors == []


def test_the_compare_form_compares_two_results_of_one_task(page, site: str) -> None:
    page.goto(f"{site}/compare")
    page.select_option("#pick-task", "vitaldb-ioh@0")
    page.click("#pick-task-form button")
    page.wait_for_url("**/compare?task=vitaldb-ioh%400")
    board = httpx.get(f"{site}/v1/leaderboard", params={"task": "vitaldb-ioh@0"}).json()["rows"]
    assert page.locator("#pick-a option").evaluate_all("(os) => os.map((o) => o.value)") == [r["run_id"] for r in board]
    assert (page.input_value("#pick-a"), page.input_value("#pick-b")) == (board[0]["run_id"], board[1]["run_id"])
    page.click("#pick-pair-form button")
    page.wait_for_url(f"**/compare?a={board[0]['run_id']}&b={board[1]['run_id']}")
    assert page.locator("#difference").is_visible()
    other = httpx.get(f"{site}/v1/leaderboard", params={"task": "clinicalqa@0"}).json()["rows"][0]["run_id"]
    response = page.goto(f"{site}/compare?a={board[0]['run_id']}&b={other}")
    assert response.status == 400 and page.locator("#compare-mismatch").is_visible()
    assert page.locator("#pick-a").input_value() == board[0]["run_id"]
    shot(page, "compare-mismatch")


def test_interval_bars_are_at_least_40_px_at_1280_px(browser, site: str) -> None:
    """Issue #40: the demo's interval bars were about 9 px wide; every interval drawn is 40 px or more
    (a row the focused axis cannot hold is an arrow at its edge, its numbers in the table)."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    try:
        for slug in ("clinicalqa", "vitaldb-ioh"):
            page.goto(f"{site}/tasks/{slug}")
            widths = page.evaluate("""() => [...document.querySelectorAll('table.board svg.ci-bar')].map((svg) => {
              const band = svg.querySelector('line[stroke-width="6"]');
              return band ? band.getBoundingClientRect().width : null;
            })""")
            drawn = [w for w in widths if w is not None]
            assert drawn and all(w >= 40 for w in drawn), (slug, widths)
            shot(page, f"bars-1280-{slug}")
    finally:
        context.close()


def test_the_release_submissions_and_not_found_pages(page, site: str) -> None:
    """Issue #40: the citation URL answered 404, there was no submissions page, and a browser got JSON
    for an unknown path."""
    release = httpx.get(f"{site}/v1/releases").json()["releases"][0]
    page.goto(release["url"])
    assert release["id"] in page.locator("h1").inner_text()
    assert page.locator("#bibtex").is_visible() and release["url"] in page.locator("#bibtex").inner_text()
    links = page.locator("table.board a.result-link")
    assert links.count() >= 2
    links.first.click()
    page.wait_for_url(f"**?release={release['id']}")
    assert page.locator("#as-of a").first.get_attribute("href") == f"/releases/{release['id']}"
    assert page.locator("#signature").is_visible()
    shot(page, "release-result")
    page.goto(f"{site}/")
    page.click("header.site a[href='/submissions']")
    page.wait_for_url("**/submissions")
    assert page.locator("h1").inner_text() == "Submissions"
    response = page.goto(f"{site}/no/such/page")
    assert response.status == 404 and response.headers["content-type"].startswith("text/html")
    assert page.locator("h1").inner_text() == "Not found"
    shot(page, "not-found")
