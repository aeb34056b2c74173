"""Releases and withdrawals (issue 28): every release answers as it stood, whatever files are kept.

Five publishes that each change content make five releases; only three DuckDB files stay, yet every
release answers ``/v1/leaderboard?release=`` (and the results, result and lookup routes) with what it
had when published. A withdrawn result is still served, marked withdrawn, and leaves the current
leaderboard and lookup, while the release before keeps it.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import json
from pathlib import Path

import pytest
from litestar.testing import TestClient

from api.app import create_app
from support.api_data import catalog
from medbench.layout import DataDir
from warehouse.publish import KEEP_VERSIONS, publish
from medbench.records import encode_record
from warehouse.releases import manifest_bytes, read_releases
from warehouse.versions import kept_versions
from warehouse.withdrawals import WithdrawalError, public_map, withdraw, withdrawals

UTC = dt.timezone.utc
BOARD = "/v1/leaderboard?task=clinicalqa@0"
START = dt.datetime(2026, 11, 1, 12, tzinfo=UTC)


def _client(root: Path) -> TestClient:
    return TestClient(app=create_app(root, extra_route_handlers=()))


def _publish(data: DataDir, results, step: int) -> str:
    full = catalog(data, with_late_run=True)
    c = dataclasses.replace(full, results=results, withdrawn=public_map(withdrawals(data)))
    version, changed = publish(data, c, now=START + dt.timedelta(hours=step))
    assert changed
    return version


def _write_results(data: DataDir, records) -> None:
    """The result.json files the pipeline writes (the API fixture writes only predictions)."""
    for r in records:
        data.result_path(r.run_id).write_bytes(encode_record(r))


@pytest.fixture()
def five(tmp_path: Path) -> tuple[Path, list[str], dict[str, dict]]:
    """Five content-changing publishes (one more result each time, then a withdrawal); the current
    leaderboard body seen right after each, by release id."""
    root = tmp_path / "data"
    data = DataDir(root)
    records = catalog(data, with_late_run=True).results
    _write_results(data, records)
    others = [r for r in records if r.task != "clinicalqa@0"]
    board = sorted((r for r in records if r.task == "clinicalqa@0"), key=lambda r: r.created_at)
    boards: dict[str, dict] = {}
    versions = []
    for step in range(4):  # one more clinicalqa@0 result each time (the fourth supersedes the first)
        versions.append(_publish(data, others + board[: 1 + step], step))
        with _client(root) as c:
            boards[versions[-1]] = c.get(BOARD).json()
    leader = boards[versions[-1]]["rows"][0]["run_id"]
    withdraw(data, leader, "label leak found in the prompt", now=START + dt.timedelta(hours=5))
    versions.append(_publish(data, records, 5))
    with _client(root) as c:
        boards[versions[-1]] = c.get(BOARD).json()
    return root, versions, boards


def test_every_release_answers_its_leaderboard_although_three_files_are_kept(five) -> None:
    root, versions, boards = five
    data = DataDir(root)
    assert len(kept_versions(data)) == KEEP_VERSIONS < len(versions)
    assert [r.id for r in read_releases(data)] == versions
    with _client(root) as c:
        listing = c.get("/v1/releases").json()
        assert [r["id"] for r in listing["releases"]] == versions[::-1] and listing["total"] == 5
        assert listing["releases"][0]["previous"] == versions[-2]
        for version in versions:
            response = c.get(f"{BOARD}&release={version}")
            assert response.status_code == 200, response.text
            assert response.json() == boards[version]
        assert len({tuple(r["run_id"] for r in b["rows"]) for b in boards.values()}) == 5  # five different states


def test_release_detail_manifest_and_bibtex(five) -> None:
    root, versions, _ = five
    with _client(root) as c:
        body = c.get(f"/v1/releases/{versions[0]}").json()
        assert body["manifest_sha256"] == hashlib.sha256(manifest_bytes(body["manifest"])).hexdigest()
        # as docs/api.md says anyone can check it, with the standard library alone
        plain = json.dumps(body["manifest"], sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
        assert hashlib.sha256(plain).hexdigest() == body["manifest_sha256"]
        assert body["manifest"]["release"] == versions[0] and body["signature"] is None
        assert {r["run_id"] for r in body["manifest"]["results"]} and all(
            len(r["predictions_sha256"]) == 64 for r in body["manifest"]["results"])
        assert f"medbench-release-{versions[0]}" in body["bibtex"] and body["url"] in body["bibtex"]
        for bad in ("20990101T000000000000Z-deadbeef", "nonsense"):
            missing = c.get(f"/v1/releases/{bad}")
            assert missing.status_code == 404 and missing.json()["error"] == "release_not_found"
            assert c.get(f"{BOARD}&release={bad}").json()["error"] == "release_not_found"
        assert c.get("/v1/stats").json()["release"] == versions[-1]


def test_withdrawn_result_is_served_marked_and_leaves_current_answers(five) -> None:
    root, versions, boards = five
    data = DataDir(root)
    (run_id, w), = withdrawals(data).items()
    with _client(root) as c:
        result = c.get(f"/v1/results/{run_id}").json()
        assert result["status"] == "withdrawn"
        assert result["withdrawn"] == {"reason": "label leak found in the prompt", "date": "2026-11-01"}
        assert c.get(f"/artifacts/{run_id}/predictions.parquet").status_code == 200
        assert run_id not in [r["run_id"] for r in c.get(BOARD).json()["rows"]]
        model = result["model"]["slug"]
        lookup = c.get(f"/v1/lookup?model={model}&task=clinicalqa@0").json()
        assert lookup["withdrawn"] == [run_id] and (lookup["result"] is None or lookup["result"]["run_id"] != run_id)
        # the release before the withdrawal still has it, current, on its leaderboard and in its lookup
        before = versions[-2]
        assert run_id in [r["run_id"] for r in c.get(f"{BOARD}&release={before}").json()["rows"]]
        old = c.get(f"/v1/results/{run_id}?release={before}").json()
        assert old["status"] == "current" and old["withdrawn"] is None
        assert c.get(f"/v1/lookup?model={model}&task=clinicalqa@0&release={before}").json()["result"]["run_id"] == run_id
        rows = {r["run_id"]: r for r in c.get("/v1/results?task=clinicalqa@0&limit=1000").json()["results"]}
        assert rows[run_id]["status"] == "withdrawn"  # a listing never shows it as current (issue #40)
        assert {r["status"] for r in rows.values()} >= {"current", "withdrawn"}
        old_rows = c.get(f"/v1/results?task=clinicalqa@0&limit=1000&release={before}").json()["results"]
        assert {r["run_id"]: r["status"] for r in old_rows}[run_id] == "current"
        listed = c.get(f"/v1/results?task=clinicalqa@0&release={versions[0]}").json()
        assert listed["total"] == sum(1 for r in read_releases(data)[0].manifest["results"]
                                      if r["task"] == "clinicalqa@0")


def test_withdrawing_twice_or_an_unknown_id_is_refused(own_data) -> None:
    root, _ = own_data
    data = DataDir(root)
    records = catalog(data).results
    _write_results(data, records)
    run_id = records[0].run_id
    withdraw(data, run_id, "because")
    with pytest.raises(WithdrawalError, match="already withdrawn"):
        withdraw(data, run_id, "again")
    with pytest.raises(WithdrawalError, match="no result"):
        withdraw(data, "0123456789ab", "unknown")
    with pytest.raises(WithdrawalError, match="not a run id"):
        withdraw(data, "xyz", "malformed")
    assert len(withdrawals(data)) == 1 and data.result_path(run_id).exists()  # nothing deleted


def test_supersedes_is_shown_beside_superseded_by(own_data) -> None:
    root, _ = own_data
    with _client(root) as c:
        results = c.get("/v1/results?limit=1000").json()["results"]
        old = next(r for r in results if r["superseded_by"])
        newer = c.get(f"/v1/results/{old['superseded_by']}").json()
        assert old["run_id"] in newer["supersedes"] and newer["status"] == "current"
        assert c.get(f"/v1/results/{old['run_id']}").json()["status"] == "superseded"


def test_the_site_picks_a_release_and_says_as_of_which(five) -> None:
    root, versions, _ = five
    (run_id, _w), = withdrawals(DataDir(root)).items()
    with TestClient(app=create_app(root)) as c:
        current = c.get("/tasks/clinicalqa?version=0").text
        assert '<select id="release" name="release">' in current and all(v in current for v in versions)
        assert 'id="as-of"' not in current and f"/r/{run_id}" not in current
        old = c.get(f"/tasks/clinicalqa?version=0&release={versions[-2]}").text
        assert 'id="as-of"' in old and "As of release" in old and f"/r/{run_id}" in old
        assert f'<option value="{versions[-2]}" selected>' in old
        page = c.get(f"/r/{run_id}").text
        assert 'id="withdrawn"' in page and "label leak found in the prompt" in page
        assert 'id="withdrawn"' not in c.get(f"/r/{run_id}?release={versions[-2]}").text
        assert c.get("/tasks/clinicalqa?version=0&release=nonsense").status_code == 404


def test_the_citation_url_is_a_release_page(five) -> None:
    """Issue #40: the ``url`` of every release and its BibTeX's ``howpublished`` answered 404; it is a
    page with the release, its leaderboards as published, the results it marks and the BibTeX."""
    root, versions, _ = five
    (run_id, _w), = withdrawals(DataDir(root)).items()
    with TestClient(app=create_app(root)) as c:
        for version in (versions[-2], versions[-1]):
            body = c.get(f"/v1/releases/{version}").json()
            assert body["url"].endswith(f"/releases/{version}") and body["url"] in body["bibtex"]
            page = c.get(f"/releases/{version}", headers={"accept": "text/html"})
            assert page.status_code == 200 and page.headers["content-type"].startswith("text/html"), page.text[:300]
            assert f"medbench-release-{version}" in page.text and body["manifest_sha256"] in page.text
            assert f'href="/v1/releases/{version}"' in page.text  # its JSON twin
            for row in body["manifest"]["leaderboards"]["clinicalqa@0"]:
                assert f"/r/{row['run_id']}?release={version}" in page.text
        latest = c.get(f"/releases/{versions[-1]}").text
        assert "label leak found in the prompt" in latest and f'href="/releases/{versions[-2]}"' in latest
        assert c.get("/v1/releases").json()["releases"][0]["url"].endswith(f"/releases/{versions[-1]}")
        old = c.get(f"/tasks/clinicalqa?version=0&release={versions[-2]}").text
        assert f'<a href="/releases/{versions[-2]}">' in old  # the as-of notice links the page
        assert "current results ranked" not in old and f"results as of release {versions[-2]}" in old
        assert "UTC, " in old and " results (" in old  # the picker says when and how many, not ids alone
        missing = c.get("/releases/20990101T000000000000Z-deadbeef", headers={"accept": "text/html"})
        assert missing.status_code == 404 and missing.headers["content-type"].startswith("text/html")


def test_client_commands_take_release(five, capsys, monkeypatch) -> None:
    from pipelines.cli.main import main
    from support.serving import serve_in_thread

    root, versions, boards = five
    (run_id, _w), = withdrawals(DataDir(root)).items()
    with serve_in_thread(root) as base:
        monkeypatch.setenv("MEDBENCH_API_URL", base)
        assert main(["leaderboard", "clinicalqa@0", "--json", "--release", versions[0]]) == 0
        rows = json.loads(capsys.readouterr().out)["rows"]
        assert [r["run_id"] for r in rows] == [r["run_id"] for r in boards[versions[0]]["rows"]]
        assert main(["result", run_id]) == 0
        assert "WITHDRAWN on 2026-11-01: label leak found in the prompt" in capsys.readouterr().out
        assert main(["result", run_id, "--release", versions[-2]]) == 0
        assert "WITHDRAWN" not in capsys.readouterr().out
        assert main(["leaderboard", "clinicalqa@0", "--release", "20990101T000000000000Z-deadbeef"]) == 1
        assert "no release" in capsys.readouterr().err


def test_withdrawn_means_withdrawn_on_every_surface(five, capsys, monkeypatch) -> None:
    """Issue #40: lookup suggested `eval`, eval said "reused ... 0.6880" (exit 0), verify said "valid"
    with no word of it, /models said "No result yet"; each now says withdrawn, with date and reason."""
    import argparse

    from pipelines.cli import verify
    from pipelines.cli.main import main
    from support.serving import serve_in_thread

    root, versions, _ = five
    data = DataDir(root)
    (run_id, w), = withdrawals(data).items()
    with TestClient(app=create_app(root)) as c:
        slug = c.get(f"/v1/results/{run_id}").json()["model"]["slug"]
        assert c.get(f"/v1/lookup?model={slug}&task=clinicalqa@0").json()["status"] == "not_evaluated"
        models = c.get("/models").text
    said = f"withdrawn on {w.date}: label leak found in the prompt"
    card = models[models.index(f'id="{slug}"'):]
    assert said in card.split("</article>", 1)[0] and "No result yet" not in card.split("</article>", 1)[0]
    with serve_in_thread(root) as base:
        monkeypatch.setenv("MEDBENCH_API_URL", base)
        assert main(["lookup", slug, "clinicalqa@0"]) == 1
        out = capsys.readouterr().out
        assert said in out and run_id in out and "medbench eval" not in out, out
        assert main(["eval", slug, "clinicalqa@0"]) == 1
        err = capsys.readouterr().err
        assert said in err and "reused" not in err, err
    args = argparse.Namespace(id=run_id, json=False)
    assert verify._report(args, "result", [], withdrawn={"date": str(w.date), "reason": w.reason}) == verify.VALID
    assert f"valid, {said}" in capsys.readouterr().out
    assert verify._report(args, "result", ["bad"], withdrawn={"date": str(w.date), "reason": w.reason}) == verify.INVALID
    assert "withdrawn" not in capsys.readouterr().out  # an invalid signature is not "valid, withdrawn"
