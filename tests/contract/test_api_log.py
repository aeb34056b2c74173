"""The transparency-log routes (docs/transparency-log.md): the checkpoint, pages of entries, inclusion
proofs of results and releases, consistency proofs, and ``log_unavailable`` (503) while the log is
missing or does not verify, when current results are still served."""

from __future__ import annotations

import base64
import hashlib
import time

import pytest
from litestar.testing import TestClient

from api.app import create_app
from support.api_data import ORIGIN, catalog, log_everything
from medbench.layout import DataDir
from warehouse.releases import read_releases
from warehouse.tlog.checkpoint import verify_checkpoint
from warehouse.tlog.entries import record_sha256
from warehouse.tlog.merkle import verify_consistency, verify_inclusion
from warehouse.tlog.store import LogStore

def test_log_routes_answer_503_until_a_log_exists(own_data) -> None:
    root, _ = own_data
    with TestClient(create_app(root)) as client:
        for path in ("/v1/log/checkpoint", "/v1/log/entries", "/v1/log/consistency?from=1"):
            response = client.get(path)
            assert response.status_code == 503 and response.json()["error"] == "log_unavailable", path


def test_checkpoint_entries_and_proofs(own_data, tmp_path) -> None:
    root, _ = own_data
    records = catalog(DataDir(root)).results
    log_everything(root, tmp_path / "kept.checkpoint", records[:3])
    with TestClient(create_app(root)) as client:
        old = client.get("/v1/log/checkpoint").json()
        log_everything(root, tmp_path / "kept.checkpoint", records)
        cp = client.get("/v1/log/checkpoint").json()
        key = base64.b64decode(client.get("/v1/keys").json()["keys"][-1]["public_key"])
        checked, _ = verify_checkpoint(cp["note"], ORIGIN, [key])
        assert (checked.size, checked.root.hex()) == (cp["tree_size"], cp["root_hash"])
        assert cp["tree_size"] == 1 + len(records) + len(read_releases(DataDir(root)))
        assert cp["key_id"] == client.get("/v1/keys").json()["keys"][-1]["key_id"]

        page = client.get("/v1/log/entries?start=0&end=3").json()
        assert [e["index"] for e in page["entries"]] == [0, 1, 2] and page["entries"][0]["type"] == "key_rotation"
        assert page["entries"][1]["id"] == records[0].run_id
        assert client.get("/v1/log/entries?start=0&end=1001").json()["error"] == "invalid_parameter"
        assert client.get(f"/v1/log/entries?start={cp['tree_size'] + 1}").status_code == 400

        proof = client.get(f"/v1/results/{records[4].run_id}/proof").json()
        leaf = hashlib.sha256(b"\x00" + proof["entry"].encode()).digest()
        assert f'"record_sha256":"{record_sha256(records[4])}"' in proof["entry"]
        path = [bytes.fromhex(h) for h in proof["hashes"]]
        assert verify_inclusion(leaf, proof["leaf_index"], proof["tree_size"], path,
                                bytes.fromhex(proof["checkpoint"]["root_hash"]))
        release = read_releases(DataDir(root))[-1]
        rproof = client.get(f"/v1/releases/{release.id}/proof").json()
        assert release.manifest_sha256 in rproof["entry"] and rproof["tree_size"] == cp["tree_size"]
        missing = client.get("/v1/results/000000000000/proof")
        assert missing.status_code == 404 and missing.json()["error"] == "run_not_found"
        assert client.get("/v1/releases/2020-01-01T00:00:00Z-00000000/proof").json()["error"] == "release_not_found"

        consistency = client.get(f"/v1/log/consistency?from={old['tree_size']}&to={cp['tree_size']}").json()
        assert consistency["from"] == old["tree_size"] and consistency["to"] == cp["tree_size"]
        assert verify_consistency(old["tree_size"], cp["tree_size"], bytes.fromhex(old["root_hash"]),
                                  bytes.fromhex(cp["root_hash"]), [bytes.fromhex(h) for h in consistency["hashes"]])
        assert client.get(f"/v1/log/consistency?from=2&to={cp['tree_size'] + 1}").status_code == 400


@pytest.mark.parametrize("tamper", ["edit", "truncate", "duplicate"])
def test_a_log_that_does_not_verify_answers_log_unavailable(own_data, tmp_path, tamper: str) -> None:
    root, _ = own_data
    records = catalog(DataDir(root)).results
    log_everything(root, tmp_path / "kept.checkpoint", records)
    store = LogStore.of_data(root)
    with TestClient(create_app(root)) as client:
        assert client.get(f"/v1/results/{records[1].run_id}/proof").status_code == 200
        release_id = read_releases(DataDir(root))[-1].id
        assert client.get(f"/v1/releases/{release_id}").status_code == 200
        lines = store.entries_path.read_bytes().splitlines(keepends=True)
        if tamper == "edit":
            lines[2] = lines[2].replace(record_sha256(records[1]).encode(), b"0" * 64)
        elif tamper == "truncate":  # the log and its checkpoint's size disagree
            lines = lines[:3]
        else:
            lines.append(lines[2])
        store.entries_path.write_bytes(b"".join(lines))
        store.rebuild()
        for path in ("/v1/log/checkpoint", "/v1/log/entries", f"/v1/results/{records[1].run_id}/proof",
                     "/v1/releases", f"/v1/releases/{release_id}"):
            response = client.get(path)
            assert response.status_code == 503 and response.json()["error"] == "log_unavailable", (tamper, path)
        assert client.get(f"/v1/results/{records[1].run_id}").status_code == 200  # current results still served


MCP_HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json",
               "mcp-protocol-version": "2025-06-18"}


def call_tool(client: TestClient, name: str, arguments: dict) -> dict:
    response = client.post("/mcp", headers=MCP_HEADERS, json={"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                                              "params": {"name": name, "arguments": arguments}})
    assert response.status_code == 200, response.text
    return response.json()["result"]


def test_mcp_tools_answer_what_the_routes_answer(own_data, tmp_path) -> None:
    root, _ = own_data
    records = catalog(DataDir(root)).results
    log_everything(root, tmp_path / "kept.checkpoint", records[:2])
    log_everything(root, tmp_path / "kept.checkpoint", records)
    release_id = read_releases(DataDir(root))[-1].id
    with TestClient(create_app(root), base_url="http://127.0.0.1:8000") as client:  # /mcp checks the Host
        size = client.get("/v1/log/checkpoint").json()["tree_size"]
        for name, arguments, path in (
                ("log_checkpoint", {}, "/v1/log/checkpoint"),
                ("log_entries", {"start": 1, "end": 4}, "/v1/log/entries?start=1&end=4"),
                ("log_consistency", {"from": 3}, f"/v1/log/consistency?from=3&to={size}"),
                ("result_proof", {"run_id": records[2].run_id}, f"/v1/results/{records[2].run_id}/proof"),
                ("release_proof", {"id": release_id}, f"/v1/releases/{release_id}/proof")):
            result = call_tool(client, name, arguments)
            assert not result.get("isError"), (name, result)
            assert result["structuredContent"] == client.get(path).json(), name
        failed = call_tool(client, "result_proof", {"run_id": "000000000000"})
        assert failed["isError"] and failed["structuredContent"]["error"] == "run_not_found"


def test_the_result_page_links_its_inclusion_proof(own_data, tmp_path) -> None:
    root, _ = own_data
    records = catalog(DataDir(root)).results
    with TestClient(create_app(root)) as client:
        assert 'id="log-proof"' not in client.get(f"/r/{records[0].run_id}").text  # no log yet: no section
        log_everything(root, tmp_path / "kept.checkpoint", records)
        page = client.get(f"/r/{records[0].run_id}").text
        size = client.get("/v1/log/checkpoint").json()["tree_size"]
        assert f'href="/v1/results/{records[0].run_id}/proof"' in page
        assert f"Entry 1 of the log's checkpoint of {size} entries" in page
        checkpoint = client.get("/v1/log/checkpoint").json()
        assert f"Checkpoint <code>{checkpoint['origin']}</code> size {size}, signed with key <code>" \
               f"{checkpoint['key_id']}</code>" in page


def test_the_release_page_shows_its_checkpoint_and_links_its_inclusion_proof(own_data, tmp_path) -> None:
    root, _ = own_data
    release = read_releases(DataDir(root))[-1].id
    with TestClient(create_app(root)) as client:
        assert 'id="log-proof"' not in client.get(f"/releases/{release}").text  # no log yet: no section
        log_everything(root, tmp_path / "kept.checkpoint")
        page = client.get(f"/releases/{release}").text
        proof = client.get(f"/v1/releases/{release}/proof").json()
        assert f'href="/v1/releases/{release}/proof"' in page
        assert (f"Entry {proof['leaf_index']} of the log's checkpoint of {proof['tree_size']} entries (root "
                f'<code class="hash">{proof["checkpoint"]["root_hash"]}</code>)') in page
        assert f"signed with key <code>{proof['checkpoint']['key_id']}</code>" in page


def test_proofs_are_replayed_only_while_the_log_is_unchanged(own_data, tmp_path, monkeypatch) -> None:
    """The answer cache keeps a proof (issue 37: its p99 within 1.2x of a result's) with the log files'
    state, and asks the app again once they change, so an edited log answers 503 within the store's poll
    interval (the files are looked at once per interval, as the version pointer is)."""
    root, _ = own_data
    records = catalog(DataDir(root)).results
    log_everything(root, tmp_path / "kept.checkpoint", records)
    path = f"/v1/results/{records[1].run_id}/proof"
    app = create_app(root)
    with TestClient(app) as client:
        first = client.get(path)
        kept = [a for a in app.service.store.current().bodies._entries.values() if getattr(a, "fresh", None)]
        assert kept and kept[0].prepared.body == first.content  # kept, with its freshness check
        import warehouse.tlog.reader as reader

        looked, stamp = [], reader.log_stamp
        monkeypatch.setattr(reader, "log_stamp", lambda data_root: looked.append(1) or stamp(data_root))
        for _ in range(20):  # replays within one poll interval look at the files at most once
            assert client.get(path).content == first.content
        assert len(looked) <= 1
        store = LogStore.of_data(root)
        store.entries_path.write_bytes(store.entries_path.read_bytes().replace(b'"type":"release"', b'"type":"releasE"'))
        time.sleep(app.service.store.poll_s + 0.05)
        assert client.get(path).status_code == 503
