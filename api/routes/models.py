"""``GET /v1/models`` (find a model by name, slug or provider model id) and ``GET /v1/models/{provider}/{name}``.

The answers are ``api.model_answers`` (the MCP ``find_models`` tool's too); this module declares the
parameters, so the OpenAPI document and Litestar's validation say the same thing.
"""

from typing import Annotated, Optional

from litestar import Request
from litestar.di import NamedDependency
from litestar.handlers import HTTPRouteHandler
from litestar.params import Parameter
from litestar.response.base import ASGIResponse

from api import model_answers, schemas
from api.params import limit_parameter, offset_parameter
from api.responses import respond
from api.routing import read_only
from api.service import Service


def handlers() -> list[HTTPRouteHandler]:
    @read_only(
        "/v1/models", operation_id="listModels", summary="Models, by name, slug or provider model id",
        description="Every model of the warehouse with its current results (`evaluations`: task version and run "
        "id). `q` is a case-insensitive substring of the name, the slug or the provider model id; all filters "
        "combine with AND; no match is an empty list.",
        body=schemas.ModelPage,
        errors={400: "`invalid_parameter`"},
    )
    async def models(
        request: Request,
        service: NamedDependency[Service],
        q: Optional[str] = Parameter(default=None, description="Substring of the name, slug or provider model id."),
        type: Optional[schemas.ModelType] = Parameter(default=None, description="Only models of this type."),
        provider: Optional[str] = Parameter(default=None, description="Only models of this provider."),
        limit: int = limit_parameter(),
        offset: int = offset_parameter(),
    ) -> ASGIResponse:
        tables = service.tables(request.scope)
        prepared = model_answers.models(tables, q, type, provider, limit, offset)
        return respond(request.scope, prepared, version=tables.version)

    @read_only(
        "/v1/models/{provider:str}/{name:str}", operation_id="getModel", summary="One model by its slug",
        description="The model `provider/name` as listed by /v1/models, with its current results.",
        body=schemas.ModelInfo,
        errors={400: "`invalid_parameter`", 404: "`model_not_found`"},
    )
    async def model(
        request: Request,
        service: NamedDependency[Service],
        provider: Annotated[str, Parameter(description="The slug's provider part.")],
        name: Annotated[str, Parameter(description="The slug's name part.")],
    ) -> ASGIResponse:
        tables = service.tables(request.scope)
        return respond(request.scope, model_answers.model(tables, provider, name), version=tables.version)

    return [*models, *model]
