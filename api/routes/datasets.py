"""``GET /v1/datasets``: the datasets with their license, license URL and citation."""

from litestar import Request
from litestar.di import NamedDependency
from litestar.handlers import HTTPRouteHandler
from litestar.response.base import ASGIResponse

from api import schemas
from api.responses import prepare, respond
from api.routing import read_only
from api.service import Service


def handlers() -> list[HTTPRouteHandler]:
    @read_only(
        "/v1/datasets", operation_id="listDatasets", summary="Datasets",
        description="Every dataset with its license, license URL, citation, DOI and the date it became public.",
        body=schemas.DatasetList,
    )
    async def datasets(request: Request, service: NamedDependency[Service]) -> ASGIResponse:
        tables = service.tables(request.scope)
        key = ("datasets",)
        prepared = tables.bodies.get(key) or tables.bodies.put(key, prepare(schemas.DatasetList(datasets=list(tables.datasets))))
        return respond(request.scope, prepared, version=tables.version)

    return datasets
