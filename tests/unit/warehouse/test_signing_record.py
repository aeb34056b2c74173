"""Whole-record signatures (docs/api.md "Signatures"): every field not on the left-out list is signed,
offline and behind a mirror that rewrites answers; keys' lifetimes; legacy signatures; pinning and
the exit codes of ``medbench verify`` (0 valid, 1 invalid, 3 unreachable, 4 valid but not pinned).
"""

from __future__ import annotations

import datetime as dt
import json
import re
from pathlib import Path
from typing import Any

import httpx
import msgspec
import pytest
from litestar.testing import TestClient

from api.app import create_app
from api.client import ApiClient
from pipelines.cli.main import main
from support.api_data import catalog
from warehouse.keys import load_key, read_keys, record_key, sign_catalog, write_new_key
from medbench.layout import DataDir
from warehouse.publish import publish
from medbench.records import Breakdown, MetricValue, Provenance, ResultRecord, Subgroup, encode_record
from warehouse.signing import (LEFT_OUT, LEGACY_FIELDS, NOT_PUBLISHED, NOT_SERVED, read_signature, sign_results,
                               signature_path)

UTC = dt.timezone.utc
DAY = dt.date(2026, 12, 1)


def _rich(record):
    """A result with every optional part filled, so that editing any field changes a real value."""
    metric = MetricValue("accuracy", 0.5, 0.4, 0.6, "wilson")
    return msgspec.structs.replace(
        record, tier="official", contamination=False, contamination_status="unlikely", contamination_basis="cutoff before release",
        subgroups={"sex": [Subgroup(group="F", n=10, n_subjects=9, metrics=[metric])]},
        breakdowns={"category": [Breakdown(group="cardiology", n=12, metric=metric)]},
        provenance=Provenance(submitted_by="alice", submission_id="s1", package_sha256="ab" * 32, sandbox="gvisor"),
        extras={**record.extras, "unparsed_sample": [{"instance_id": "q1", "output": "maybe"}]},
        generation_key="0123456789abcdef")


@pytest.fixture
def published(tmp_path: Path) -> tuple[DataDir, str, Path]:
    """A signed data directory whose first result has every part filled; (data, that run id, key file)."""
    key = tmp_path / "keys" / "k1.pem"
    write_new_key(key)
    data = DataDir(tmp_path / "data")
    cat = catalog(data)
    cat.results = [_rich(cat.results[0]), *cat.results[1:]]
    for r in cat.results:
        data.result_path(r.run_id).write_bytes(encode_record(r))
    sign = sign_catalog(data, cat, load_key(key), today=DAY)
    publish(data, cat, now=dt.datetime.combine(DAY, dt.time(13), tzinfo=UTC), sign=sign)
    return data, cat.results[0].run_id, key


def _verify(capsys: pytest.CaptureFixture, *args: str) -> tuple[int, str]:
    code = main(["verify", *args])
    out = capsys.readouterr()
    return code, out.out + out.err


def _edit(value: Any, name: str = "") -> Any:
    """``value`` changed, still of its JSON type (a date stays a date, a tier a tier)."""
    if name == "tier":
        return "baseline" if value == "official" else "official"
    if name == "contamination_status":
        return "possible" if value != "possible" else "unlikely"
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    if isinstance(value, float):
        return value + 0.125
    if isinstance(value, str):
        if re.fullmatch(r"\d{4}-\d\d-\d\d", value):
            return (dt.date.fromisoformat(value) + dt.timedelta(days=1)).isoformat()
        if re.match(r"\d{4}-\d\d-\d\dT", value):
            return value[:17] + ("00" if value[17:19] != "00" else "01") + value[19:]
        last = value[-1:]
        return value[:-1] + (str((int(last) + 1) % 10) if last.isdigit() else "a" if last != "a" else "b")
    if isinstance(value, list):  # an empty list gains an element (a metric said to be withheld, say)
        return [_edit(value[0]), *value[1:]] if value else [{"name": "edited", "reason": "edited"}]
    if isinstance(value, dict):
        for key in sorted(value):
            if value[key] is not None and value[key] != {} and value[key] != []:
                return {**value, key: _edit(value[key], key)}
        return {**value, sorted(value)[0]: "x"}
    return True  # None: a flag, a rate


def _edit_like(served: Any, stored: Any, name: str = "") -> Any:
    """``served`` with one value changed that ``stored`` (the record's own) holds too: a served object
    may carry more keys than the record, and those are not the record's."""
    if name == "judge" and served is None:  # a result no judge graded, rewritten as if one had
        return {"model": "x/judge", "revision": "1", "prompt_sha256": "0" * 64, "samples": 1}
    if isinstance(served, dict) and isinstance(stored, dict):
        for key in sorted(stored):
            if key in served and stored[key] not in (None, {}, []):
                return {**served, key: _edit_like(served[key], stored[key], key)}
    if isinstance(served, list) and isinstance(stored, list) and served and stored:
        return [_edit_like(served[0], stored[0]), *served[1:]]
    return _edit(served, name)


def _signed_names(data: DataDir, run_id: str) -> list[str]:
    record = json.loads(data.result_path(run_id).read_bytes())
    names = sorted(set(record) - set(LEFT_OUT) - set(NOT_PUBLISHED))
    assert {"tier", "provenance", "n", "subgroups", "breakdowns", "contamination_status", "eval_date", "dataset",
            "demo", "predictions_sha256", "created_at"} <= set(names)
    return names


FIELDS = sorted({f.encode_name for f in msgspec.structs.fields(ResultRecord)} - set(LEFT_OUT) - set(NOT_PUBLISHED))


@pytest.mark.parametrize("name", FIELDS)
def test_every_signed_field_edited_in_result_json_is_invalid_offline(published, capsys, name):
    data, run_id, key = published
    assert name in _signed_names(data, run_id)
    pin = load_key(key).fingerprint
    assert _verify(capsys, run_id, "--offline", str(data.root), "--trusted-keys", pin)[0] == 0
    record = json.loads(data.result_path(run_id).read_bytes())
    record[name] = _edit_like(record[name], record[name], name)
    data.result_path(run_id).write_bytes(json.dumps(record).encode())
    code, out = _verify(capsys, run_id, "--offline", str(data.root), "--trusted-keys", pin)
    assert code == 1 and out.startswith("INVALID:"), (name, out)
    assert _verify(capsys, run_id, "--offline", str(data.root))[0] == 1  # unpinned too


def _mirror(monkeypatch: pytest.MonkeyPatch, client: TestClient, rewrite) -> None:
    """Make ``medbench verify`` speak to ``client`` through a mirror that passes every answer through
    ``rewrite(path, json) -> json``."""
    import api.client as api_client

    def forward(request: httpx.Request) -> httpx.Response:
        answer = client.get(request.url.raw_path.decode())
        if answer.headers.get("content-type", "").startswith("application/json"):
            body = rewrite(request.url.path, answer.json())
            headers = {k: v for k, v in answer.headers.items() if k.lower() not in ("content-length", "etag")}
            return httpx.Response(answer.status_code, headers=headers, content=json.dumps(body).encode())
        return httpx.Response(answer.status_code, headers=answer.headers, content=answer.content)

    monkeypatch.setattr(api_client, "ApiClient", lambda base_url=None, **kw: ApiClient(
        "http://mirror.test", transport=httpx.MockTransport(forward)))


SERVED = sorted(set(FIELDS) - set(NOT_SERVED)) + ["metric", "unparsed_sample"]


@pytest.mark.parametrize("name", SERVED)
def test_every_signed_field_rewritten_by_a_mirror_is_invalid(published, capsys, tmp_path, monkeypatch, name):
    data, run_id, _ = published
    trusted = tmp_path / "trusted.json"
    trusted.write_text(json.dumps({"keys": msgspec.to_builtins(read_keys(data))}))
    target = f"/v1/results/{run_id}"
    record = json.loads(data.result_path(run_id).read_bytes())
    stored = (record["metrics"][0] if name == "metric" else record["extras"]["unparsed_sample"]
              if name == "unparsed_sample" else record[name])
    with TestClient(create_app(data.root, extra_route_handlers=())) as client:
        _mirror(monkeypatch, client, lambda path, body: body)
        code, out = _verify(capsys, run_id, "--trusted-keys", str(trusted))
        assert code == 0 and "pinned in" in out, out
        _mirror(monkeypatch, client, lambda path, body: {**body, name: _edit_like(body[name], stored, name)}
                if path == target else body)
        code, out = _verify(capsys, run_id, "--trusted-keys", str(trusted))
    assert code == 1 and out.startswith(f"INVALID: result {run_id}:"), (name, out)


def test_a_signature_made_after_its_keys_valid_until_is_invalid(published, capsys, tmp_path):
    data, run_id, key = published
    old = load_key(key)
    record_key(data, load_key(_new_key(tmp_path / "k2.pem")), today=DAY + dt.timedelta(days=2))  # rotation
    assert read_keys(data)[0].valid_until == DAY + dt.timedelta(days=2)
    pin = old.fingerprint
    assert _verify(capsys, run_id, "--offline", str(data.root), "--trusted-keys", pin)[0] == 0  # signed before
    late = old.sign_result(_record(data, run_id), dt.datetime.combine(DAY + dt.timedelta(days=3), dt.time(9), UTC))
    signature_path(data, run_id).write_bytes(msgspec.json.encode(late))
    code, out = _verify(capsys, run_id, "--offline", str(data.root), "--trusted-keys", pin)
    assert code == 1 and "after its key's valid_until 2026-12-03" in out, out


def _new_key(path: Path) -> Path:
    write_new_key(path)
    return path


def _record(data: DataDir, run_id: str):
    from medbench.records import decode_record

    return decode_record(data.result_path(run_id).read_bytes())


def test_a_legacy_signature_gets_its_own_verdict_and_an_upgrade_re_signs_it(published, capsys):
    data, run_id, key = published
    signing = load_key(key)
    record = msgspec.to_builtins(_record(data, run_id))
    old_signed = json.dumps({k: record[k] for k in LEGACY_FIELDS}, sort_keys=True, separators=(",", ":")).encode()
    legacy = signing.sign(old_signed)
    del legacy["signed_at"]
    signature_path(data, run_id).write_bytes(msgspec.json.encode(legacy))
    code, out = _verify(capsys, run_id, "--offline", str(data.root), "--trusted-keys", signing.fingerprint)
    assert code == 0 and out.startswith(f"valid, legacy: {len(LEGACY_FIELDS)} fields signed: result {run_id}"), out
    assert len(LEGACY_FIELDS) == 7 and not out.startswith("valid:")
    signatures = sign_results(data, [_record(data, run_id)], signing, {signing.key_id})  # what a publish does
    assert "signed_at" in json.loads(signatures[run_id]["signed"]) and read_signature(data, run_id) == signatures[run_id]
    assert json.loads(signatures[run_id]["signed"])["run_id"] == run_id  # re-signing changes no run id
    code, out = _verify(capsys, run_id, "--offline", str(data.root), "--trusted-keys", signing.fingerprint)
    assert code == 0 and out.startswith("valid: result"), out


def test_offline_without_a_pinned_key_exits_4_with_the_fingerprint_and_where_the_key_came_from(published, capsys):
    data, run_id, key = published
    fingerprint = load_key(key).fingerprint
    code, out = _verify(capsys, run_id, "--offline", str(data.root))
    assert code == 4 and out.startswith(f"valid, key not pinned: result {run_id}"), out
    assert fingerprint in out and str(data.root / "releases" / "keys.json") in out
    code, out = _verify(capsys, run_id, "--offline", str(data.root), "--json")
    assert code == 4 and json.loads(out)["verdict"] == "valid, key not pinned" and json.loads(out)["pinned"] is False


def test_a_fingerprint_that_is_not_the_signers_is_invalid_and_online_prints_the_fingerprint(published, capsys,
                                                                                            tmp_path, monkeypatch):
    data, run_id, key = published
    other = load_key(_new_key(tmp_path / "other.pem")).fingerprint
    code, out = _verify(capsys, run_id, "--offline", str(data.root), "--trusted-keys", other)
    assert code == 1 and "not among the keys" in out, out
    with TestClient(create_app(data.root, extra_route_handlers=())) as client:
        _mirror(monkeypatch, client, lambda path, body: body)
        code, out = _verify(capsys, run_id)
    assert code == 0 and out.startswith(f"valid: result {run_id}") and load_key(key).fingerprint in out, out
    assert "the server's /v1/keys" in out


def test_a_key_swapped_into_the_directory_is_caught_only_by_a_pinned_key(published, capsys, tmp_path):
    """The attack of the issue: change an accuracy, re-sign with a new key, replace keys.json."""
    data, run_id, key = published
    pin = load_key(key).fingerprint
    record = json.loads(data.result_path(run_id).read_bytes())
    record["metrics"][0]["value"] = 0.9999
    data.result_path(run_id).write_bytes(json.dumps(record).encode())
    forger = load_key(_new_key(tmp_path / "forger.pem"))
    (data.root / "releases" / "keys.json").unlink()
    record_key(data, forger, today=DAY)
    signature_path(data, run_id).write_bytes(msgspec.json.encode(forger.sign_result(_record(data, run_id))))
    code, out = _verify(capsys, run_id, "--offline", str(data.root))
    assert code == 4 and forger.fingerprint in out and pin not in out  # never a plain "valid"
    assert _verify(capsys, run_id, "--offline", str(data.root), "--trusted-keys", pin)[0] == 1
    listed = json.loads((data.root / "releases" / "keys.json").read_text())
    listed["keys"][0]["fingerprint"] = pin  # the forged list claims the pinned fingerprint for the forger's key
    (data.root / "releases" / "keys.json").write_text(json.dumps(listed))
    code, out = _verify(capsys, run_id, "--offline", str(data.root), "--trusted-keys", pin)
    assert code == 1 and "not among the keys" in out, out


def test_unreachable_server_exits_3(capsys):
    from bench._servers import free_port

    code, out = _verify(capsys, "0" * 12, "--api-url", f"http://127.0.0.1:{free_port()}")
    assert code == 3 and "cannot reach" in out


def test_the_about_page_shows_the_keys_fingerprints(published):
    data, _, key = published
    with TestClient(create_app(data.root)) as client:
        page = client.get("/about").text
    signing = load_key(key)
    assert f'<code class="fingerprint">{signing.fingerprint}</code>' in page and signing.key_id in page


def test_generation_key_is_kept_in_result_json_but_published_nowhere(published):
    import duckdb

    data, run_id, _ = published
    assert json.loads(data.result_path(run_id).read_bytes())["generation_key"] == "0123456789abcdef"
    con = duckdb.connect(str(data.duckdb_link), read_only=True)
    try:
        (record,) = con.execute("SELECT record FROM results WHERE run_id = ?", [run_id]).fetchone()
    finally:
        con.close()
    assert "generation_key" not in json.loads(record) and json.loads(record)["run_id"] == run_id
    assert "0123456789abcdef" not in read_signature(data, run_id)["signed"]
