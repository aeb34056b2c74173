"""A vitaldb-ioh result in /v1/results and on its page: the one-class replicates left out (with a warning
above 1%), the paired AUROC difference to MAP alone, and the contamination flag's basis."""

from __future__ import annotations

import dataclasses
import html
import re
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest
from litestar.testing import TestClient
from support.api_data import RUN_IDS, run_id
from support.ioh_data import (
    BASELINE,
    NOW,
    OTHER,
    check_versus_baseline,
    ioh_catalog,
    publish_ioh,
)

from api.app import create_app
from support.plugins import specs as load_specs
from medbench.layout import DataDir
from warehouse.publish import publish

TASK = load_specs().task("vitaldb-ioh@0")


@pytest.fixture(scope="module")
def ioh_root(tmp_path_factory) -> Path:
    return publish_ioh(tmp_path_factory.mktemp("ioh") / "data").root


@pytest.fixture(scope="module")
def client(ioh_root: Path) -> Iterator[TestClient]:
    with TestClient(create_app(ioh_root)) as c:
        yield c


@pytest.fixture(scope="module")
def lopsided(tmp_path_factory) -> Iterator[TestClient]:
    """Positives in one subject of 12 only: about a third of the replicates hold one class."""
    data = publish_ioh(tmp_path_factory.mktemp("ioh-lopsided") / "data", positive_subjects=1)
    with TestClient(create_app(data.root)) as c:
        yield c


def dropped_paragraph(page: str) -> tuple[str, str]:
    m = re.search(r'<p id="dropped-replicates" class="([^"]*)">(.*?)</p>', page, re.S)
    assert m is not None, "the result page does not say how many replicates were left out"
    return m.group(1), m.group(2)


def test_many_one_class_replicates_are_counted_and_warned_about(lopsided: TestClient) -> None:
    run = RUN_IDS[OTHER]
    extras = lopsided.get(f"/v1/results/{run}").json()["extras"]
    dropped, drawn = extras["bootstrap_dropped_replicates"], extras["bootstrap_replicates"]
    assert drawn == TASK.bootstrap.replicates and dropped > 0.1 * drawn
    css, text = dropped_paragraph(lopsided.get(f"/r/{run}").text)
    assert css == "notice" and text.startswith("Warning:")
    assert f"{dropped} of {drawn} bootstrap replicates" in text


def test_without_one_class_replicates_there_is_no_warning(client: TestClient) -> None:
    run = RUN_IDS[OTHER]
    extras = client.get(f"/v1/results/{run}").json()["extras"]
    assert extras["bootstrap_dropped_replicates"] == 0
    css, text = dropped_paragraph(client.get(f"/r/{run}").text)
    assert css == "muted" and "Warning" not in text and f"0 of {extras['bootstrap_replicates']}" in text


def test_the_warning_starts_above_one_percent(tmp_path: Path) -> None:
    data = DataDir(tmp_path / "data")
    cat = ioh_catalog(data)
    counts = {RUN_IDS[BASELINE]: 10, RUN_IDS[OTHER]: 11}  # of 1,000: exactly 1% and just above
    results = [msgspec.structs.replace(r, extras={**r.extras, "bootstrap_dropped_replicates": counts[r.run_id]})
               if r.run_id in counts else r for r in cat.results]
    publish(data, dataclasses.replace(cat, results=results), now=NOW)
    with TestClient(create_app(data.root)) as c:
        at = dropped_paragraph(c.get(f"/r/{RUN_IDS[BASELINE]}").text)
        above = dropped_paragraph(c.get(f"/r/{RUN_IDS[OTHER]}").text)
    assert at[0] == "muted" and "Warning" not in at[1] and "10 of 1000" in at[1]
    assert above[0] == "notice" and above[1].startswith("Warning:") and "11 of 1000" in above[1]


def test_versus_baseline_is_the_paired_difference_to_map_alone(client: TestClient, ioh_root: Path) -> None:
    v = check_versus_baseline(client, ioh_root, RUN_IDS[OTHER], RUN_IDS[BASELINE])
    assert v["ci_low"] > 0  # a much better scorer than the baseline: the interval is away from 0


def test_the_baseline_itself_has_no_comparison(client: TestClient) -> None:
    base = RUN_IDS[BASELINE]
    assert client.get(f"/v1/results/{base}").json()["versus_baseline"] is None
    assert 'id="versus-baseline"' not in client.get(f"/r/{base}").text
    for label in ("medgemma-cqa0", "random-cqa0"):  # a task without a baseline model: none either
        assert client.get(f"/v1/results/{RUN_IDS[label]}").json()["versus_baseline"] is None


PUBLIC = "clinicalqa went public (2025-04-04)"


@pytest.mark.parametrize("label,flag,status,basis,shown", [
    ("medgemma-cqa0", True, "possible", f"knowledge cutoff 2025-06-01 is on or after {PUBLIC}", "possible contamination"),
    ("gptoss-cqa0", True, "possible", f"no knowledge cutoff is stated; released 2025-08-05, on or after {PUBLIC}",
     "possible contamination"),
    ("hf-gptoss-cqa0", False, "unlikely", f"knowledge cutoff 2024-01-01 is before {PUBLIC}", "unlikely"),
    ("random-cqa0", None, "unknown", "no training data declared, and no knowledge cutoff or release date is known "
     "for the model", "unknown"),
])
def test_contamination_says_its_status_and_basis(client: TestClient, label: str, flag, status, basis, shown) -> None:
    run = run_id(label)
    body = client.get(f"/v1/results/{run}").json()
    assert (body["contamination"], body["contamination_status"], body["contamination_basis"]) == (flag, status, basis)
    m = re.search(r'<dd id="contamination">(.*?)</dd>', client.get(f"/r/{run}").text, re.S)
    assert m is not None and " ".join(html.unescape(re.sub(r"<[^>]+>", "", m.group(1))).split()) == f"{shown} ({basis})"
    board = client.get("/tasks/clinicalqa?version=0").text
    row = re.search(rf'<tr data-run-id="{run}"[^>]*>(.*?)</tr>', board, re.S)
    if row is not None:  # current results only (an older run is not on the board)
        cell = re.search(r'<td class="contamination contamination-(\w+)" title="([^"]*)">(.*?)</td>', row.group(1), re.S)
        assert cell is not None and cell.group(1) == status and html.unescape(cell.group(2)) == basis
        assert ("⚠" in cell.group(3)) == (status in ("declared", "possible")) and shown in html.unescape(cell.group(3))
