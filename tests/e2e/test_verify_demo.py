"""``medbench verify`` accepts every demo result and release, from the server and from the files alone
(docs/api.md, "Signatures"), and the keys the server lists are the ones the data directory keeps."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from pipelines.cli.main import main
from support.live_server import live_api
from warehouse.keys import read_keys
from medbench.layout import DataDir
from warehouse.releases import read_releases


def test_verify_accepts_every_demo_result_and_release(demo_data: Path, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture) -> None:
    data = DataDir(demo_data)
    run_ids = sorted(p.parent.name for p in data.artifacts.glob("*/result.json"))
    release_ids = [r.id for r in read_releases(data)]
    assert run_ids and release_ids
    keys = read_keys(data)
    assert keys and all(k.key_id.startswith("demo-") for k in keys)  # a demo key says so
    for ident in run_ids + release_ids:  # offline, the key read from the directory itself is not pinned
        assert main(["verify", ident, "--offline", str(data.root)]) == 4, capsys.readouterr()
        assert main(["verify", ident, "--offline", str(data.root), "--trusted-keys", keys[-1].fingerprint]) == 0, \
            capsys.readouterr()
    with live_api(data.root, tmp_path / "server.log") as server:
        served = httpx.get(f"{server.base}/v1/keys").json()["keys"]
        for ident in run_ids + release_ids:
            assert main(["verify", ident, "--api-url", server.base]) == 0, capsys.readouterr()
        assert main(["verify", "0" * 12, "--api-url", server.base]) == 1  # no such result
    assert [k["key_id"] for k in served] == [k.key_id for k in read_keys(data)]
    out = capsys.readouterr().out
    assert out.count("valid: result") == 2 * len(run_ids) and out.count("valid: release") == 2 * len(release_ids)
    assert out.count("valid, key not pinned: result") == len(run_ids) and "legacy" not in out


def test_verify_says_unreachable_with_exit_3(capsys: pytest.CaptureFixture) -> None:
    from bench._servers import free_port

    assert main(["verify", "0" * 12, "--api-url", f"http://127.0.0.1:{free_port()}"]) == 3
    assert "cannot reach" in capsys.readouterr().err
