"""``/v1/openapi.json``: a snapshot (so a change of contract is always deliberate) and a structural
check that it is an OpenAPI 3.1 document describing every route of docs/api.md.

Regenerate the snapshot deliberately with ``MEDBENCH_UPDATE_SNAPSHOTS=1 pytest tests/contract/test_api_openapi.py``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from litestar.testing import TestClient

from api.app import create_app
from support.api_data import RESULT, ROW, SUMMARY

SNAPSHOT = Path(__file__).parent / "snapshots" / "openapi.json"
CONTRACT_PATHS = {
    "/v1/datasets", "/v1/tasks", "/v1/tasks/{slug}", "/v1/leaderboard", "/v1/results", "/v1/results/{run_id}",
    "/v1/lookup", "/v1/stats", "/v1/openapi.json", "/artifacts/{run_id}/predictions.parquet", "/healthz",
    "/v1/compare",  # issue 8: paired comparison of two results
    "/v1/models", "/v1/models/{provider}/{name}",  # agents first: find a model by any of its names
    "/artifacts/{run_id}/package.whl",  # issue 30: the submitted package an official result ran
    "/v1/submissions", "/v1/submissions/{submission_id}",  # issue 29: the write path
    "/v1/submissions/{submission_id}/package",  # issue 30: an official submission's wheel (PUT only)
    "/v1/releases", "/v1/releases/{id}",  # issue 28: citable releases
    "/v1/keys",  # issue 28: the public keys that check signatures
    "/v1/log/checkpoint", "/v1/log/entries", "/v1/log/consistency",  # issue 37: the transparency log
    "/v1/results/{run_id}/proof", "/v1/releases/{id}/proof",
}
WRITE_OPERATIONS = {("/v1/submissions", "post"), ("/v1/submissions/{submission_id}/package", "put")}
WRITE_ONLY_PATHS = {"/v1/submissions/{submission_id}/package"}  # every other path has a GET


def test_info_version_is_a_package_version_and_the_guide_version_is_kept(document: dict[str, Any]) -> None:
    from packaging.version import Version

    Version(document["info"]["version"])  # raises for a version that is not PEP 440
    assert document["info"]["x-guide-version"] == "p0" and "version p0" in document["info"]["description"]


def test_identifiers_have_patterns(document: dict[str, Any]) -> None:
    """Run ids, task refs and model slug parts say what they accept."""
    def pattern(path: str, name: str) -> str:
        (param,) = [p for p in document["paths"][path]["get"]["parameters"] if p["name"] == name]
        return param["schema"]["pattern"]

    assert pattern("/v1/results/{run_id}", "run_id") == pattern("/v1/compare", "a") == "^[0-9a-f]{12}$"
    assert "@" in pattern("/v1/lookup", "task") and "@" in pattern("/v1/tasks/{slug}", "slug")
    assert pattern("/v1/models/{provider}/{name}", "provider") == pattern("/v1/models/{provider}/{name}", "name")


@pytest.fixture(scope="module")
def document(shared_data: tuple[Path, str]) -> Iterator[dict[str, Any]]:
    with TestClient(create_app(shared_data[0])) as c:
        response = c.get("/v1/openapi.json")
        assert response.status_code == 200
        assert response.headers["content-type"] == "application/json"
        yield response.json()


def test_matches_the_snapshot(document: dict[str, Any]) -> None:
    rendered = json.dumps(document, indent=2, ensure_ascii=False) + "\n"
    if os.environ.get("MEDBENCH_UPDATE_SNAPSHOTS") == "1":
        SNAPSHOT.write_text(rendered, encoding="utf-8")
    expected = json.loads(SNAPSHOT.read_text(encoding="utf-8"))
    assert document == expected, (
        "the OpenAPI document changed; if the contract change is deliberate, regenerate the snapshot with "
        "MEDBENCH_UPDATE_SNAPSHOTS=1 and review the diff"
    )


def _refs(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref":
                yield value
            else:
                yield from _refs(value)
    elif isinstance(node, list):
        for item in node:
            yield from _refs(item)


def _keys(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            yield key
            yield from _keys(value)
    elif isinstance(node, list):
        for item in node:
            yield from _keys(item)


def test_is_structurally_openapi_3_1(document: dict[str, Any]) -> None:
    assert document["openapi"].startswith("3.1.")
    assert isinstance(document["info"]["title"], str) and isinstance(document["info"]["version"], str)
    assert set(document["paths"]) == CONTRACT_PATHS
    schemas = document["components"]["schemas"]
    for ref in _refs(document):
        assert ref.startswith("#/components/schemas/") and ref.rsplit("/", 1)[1] in schemas, ref
    assert "nullable" not in set(_keys(document))  # OpenAPI 3.0 keyword; 3.1 uses JSON Schema null
    operation_ids = []
    operations = [(path, method, op) for path, item in document["paths"].items() for method, op in item.items()]
    assert {(p, m) for p, m, _ in operations if m != "get"} == WRITE_OPERATIONS
    assert {p for p, m, _ in operations if m == "get"} == CONTRACT_PATHS - WRITE_ONLY_PATHS
    for path, method, operation in operations:
        operation_ids.append(operation["operationId"])
        assert "200" in operation["responses"], path
        for status, response in operation["responses"].items():
            assert isinstance(response["description"], str)
            if status.startswith(("4", "5")):
                assert response["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/Error"}
        for parameter in operation.get("parameters", []):
            assert parameter["in"] in ("query", "path") and "schema" in parameter
            if parameter["in"] == "path":
                assert parameter["required"] is True and "{" + parameter["name"] + "}" in path
    assert len(set(operation_ids)) == len(operation_ids)
    post = document["paths"]["/v1/submissions"]["post"]
    assert post["security"] == [{"bearer": []}] and document["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer"
    body = post["requestBody"]["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[1]
    assert set(document["components"]["schemas"][body]["required"]) == {"model", "tasks"}
    assert {"201", "401", "403", "405", "413", "422", "429"} <= set(post["responses"])


def _body_schema(document: dict[str, Any], path: str) -> str:
    ref = document["paths"][path]["get"]["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
    return ref.rsplit("/", 1)[1]


def test_documents_the_contract_objects(document: dict[str, Any]) -> None:
    schemas = document["components"]["schemas"]
    assert _body_schema(document, "/v1/leaderboard") == "Leaderboard"
    assert _body_schema(document, "/v1/results/{run_id}") == "Result"
    assert _body_schema(document, "/v1/lookup") == "Lookup"
    for name, shape in (("Row", ROW), ("ResultSummary", SUMMARY), ("Result", RESULT)):
        schema = schemas[name]
        assert set(shape) <= set(schema["required"]), name
        for field, kind in shape.items():
            prop = schema["properties"][field]
            if isinstance(kind, str) and kind.endswith("?"):
                assert {"type": "null"} in prop["oneOf"], (name, field)
    assert schemas["Error"]["required"] == ["error", "message"]
    assert schemas["Model"]["properties"]["type"]["enum"] == ["llm", "ml", "rule"]
    lookup_params = {p["name"]: p for p in document["paths"]["/v1/lookup"]["get"]["parameters"]}
    assert lookup_params["model"]["required"] and lookup_params["task"]["required"]
    limit = {p["name"]: p for p in document["paths"]["/v1/results"]["get"]["parameters"]}["limit"]["schema"]
    assert (limit["minimum"], limit["maximum"], limit["default"]) == (1, 1000, 100)
    parquet = document["paths"]["/artifacts/{run_id}/predictions.parquet"]["get"]["responses"]["200"]["content"]
    assert list(parquet) == ["application/vnd.apache.parquet"]
