"""``/healthz``: what is served when all is well, and a 503 naming the cause when nothing can be."""

from __future__ import annotations

from pathlib import Path

from litestar.testing import TestClient

from api.app import create_app


def test_ok_names_the_version(own_data: tuple[Path, str]) -> None:
    with TestClient(create_app(own_data[0])) as c:
        response = c.get("/healthz")
        assert response.status_code == 200
        assert response.json() == {"status": "ok", "warehouse_version": own_data[1]}


def unavailable(root: Path) -> str:
    with TestClient(create_app(root)) as c:
        response = c.get("/healthz")
        assert response.status_code == 503 and response.headers["content-type"].startswith("application/json")
        body = response.json()
        assert body["error"] == "warehouse_unavailable"
        return body["message"]


def test_503_says_why_nothing_is_served(tmp_path: Path, own_data: tuple[Path, str]) -> None:
    assert "data directory does not exist" in unavailable(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    assert "no warehouse has been published" in unavailable(tmp_path / "empty")
    root, version = own_data
    (root / "warehouse" / "CURRENT").write_text("20990101T000000000000Z-deadbeef\n")
    with TestClient(create_app(root)) as c:  # the kept version is served instead, and health says so
        body = c.get("/healthz").json()
        assert body["warehouse_version"] == version and body["served_from"] == "fallback"
        assert "20990101T000000000000Z-deadbeef" in body["warning"] and "missing" in body["warning"]
    (root / "warehouse" / f"medbench-{version}.duckdb").unlink()
    message = unavailable(root)
    assert "20990101T000000000000Z-deadbeef" in message and "cannot be loaded" in message
    assert str(root) not in message  # no server paths in a public answer
