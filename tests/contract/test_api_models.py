"""``/v1/models`` and ``/v1/models/{provider}/{name}``: docs/api.md's shape, the filters, pagination,
``model_not_found``; and the website's models page links to it as its JSON twin."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from litestar.testing import TestClient

from api.app import create_app
from support.api_data import RUN_IDS, assert_shape

MODEL_INFO = {"slug": "str", "name": "str", "type": "str", "provider": "str", "provider_model_id": "str",
              "revision": "str", "release_date": "date?", "knowledge_cutoff": "date?",
              "evaluations": [{"task": "str", "run_id": "str"}]}


@pytest.fixture(scope="module")
def client(shared_data: tuple[Path, str]) -> Iterator[TestClient]:
    with TestClient(create_app(shared_data[0]), base_url="http://testserver.local") as c:
        yield c


def test_the_listing_has_the_contract_shape(client: TestClient) -> None:
    page = client.get("/v1/models").json()
    assert set(page) == {"models", "total", "limit", "offset"} and (page["limit"], page["offset"]) == (100, 0)
    assert page["total"] == len(page["models"]) > 1
    for model in page["models"]:
        assert_shape(model, MODEL_INFO)
    assert [m["slug"] for m in page["models"]] == sorted(m["slug"] for m in page["models"])


def test_evaluations_are_the_lookup_answers(client: TestClient) -> None:
    (medgemma,) = client.get("/v1/models?q=medgemma").json()["models"]
    assert {e["task"]: e["run_id"] for e in medgemma["evaluations"]}["clinicalqa@0"] == RUN_IDS["medgemma-cqa0"]
    looked_up = client.get("/v1/lookup?model=kgpu/medgemma-27b&task=clinicalqa@0").json()
    assert looked_up["result"]["run_id"] == RUN_IDS["medgemma-cqa0"]


@pytest.mark.parametrize("q", ["MedGemma", "MEDGEMMA-27", "kgpu/med", "gemma-27b", " medgemma "])
def test_q_is_a_case_insensitive_substring_of_name_slug_or_provider_id(client: TestClient, q: str) -> None:
    assert [m["slug"] for m in client.get("/v1/models", params={"q": q}).json()["models"]] == ["kgpu/medgemma-27b"]


def test_filters_combine_and_paginate(client: TestClient) -> None:
    everything = client.get("/v1/models").json()
    llms = client.get("/v1/models?type=llm").json()
    assert llms["models"] and all(m["type"] == "llm" for m in llms["models"])
    kgpu = client.get("/v1/models?provider=kgpu&type=llm").json()
    assert kgpu["models"] and all(m["provider"] == "kgpu" for m in kgpu["models"])
    assert client.get("/v1/models?q=nothing-like-this").json() == {"models": [], "total": 0, "limit": 100, "offset": 0}
    second = client.get("/v1/models?limit=1&offset=1").json()
    assert second["models"] == everything["models"][1:2] and second["total"] == everything["total"]


@pytest.mark.parametrize("query", ["type=robot", "limit=0", "limit=1001", "offset=-1", "limit=x"])
def test_bad_parameters_are_invalid_naming_them(client: TestClient, query: str) -> None:
    response = client.get(f"/v1/models?{query}")
    assert response.status_code == 400 and response.json()["error"] == "invalid_parameter"
    assert f"'{query.split('=')[0]}'" in response.json()["message"]


def test_one_model_and_model_not_found(client: TestClient) -> None:
    one = client.get("/v1/models/kgpu/medgemma-27b")
    assert one.status_code == 200
    assert one.json() == client.get("/v1/models?q=kgpu/medgemma-27b").json()["models"][0]
    for path in ("/v1/models/kgpu/nothing", "/v1/models/nobody/medgemma-27b"):
        response = client.get(path)
        assert response.status_code == 404 and response.json()["error"] == "model_not_found"


def test_the_models_page_twin_is_v1_models(client: TestClient) -> None:
    assert 'href="/v1/models"' in client.get("/models").text
