"""``POST /v1/submissions`` (a token with scope ``submit``), ``GET /v1/submissions/{id}`` and
``GET /v1/submissions?owner=&state=&limit=&offset=`` (public, no secrets).

The GETs read the submissions store, not the published warehouse: a submission's state moves without
a publish, so their answers are never cached (``Cache-Control: no-cache``; the ETag still lets a
poller revalidate cheaply). The POST's work is ``api.submission_desk``; with ``medbench serve
--read-only`` (no desk) it answers ``method_not_allowed`` 405 like every other write.

Its file name is shared on purpose: each route's module is named after its path (docs/api.md),
beside the module that holds what the route serves.
"""

from __future__ import annotations

import re
from typing import Annotated, Optional, Union

import anyio.to_thread
from litestar import Request, post, put
from litestar.di import NamedDependency
from litestar.exceptions import MethodNotAllowedException
from litestar.handlers import HTTPRouteHandler
from litestar.openapi import ResponseSpec
from litestar.params import FromPath, Parameter, QueryParameter
from litestar.response.base import ASGIResponse

from api import schemas
from api.errors import ApiError
from api.params import limit_parameter, offset_parameter
from api.responses import prepare, respond
from api.routing import error_specs, read_only
from api.service import Service
from api.package_upload import upload_package
from api.submission_desk import submit
from medbench.submissions import SubmissionNotFound

SUBMISSION_ID_RE = re.compile(r"^[0-9a-f]{12}$")
NO_CACHE = "no-cache"
POST_ERRORS = {
    400: "`bad_request`: the HTTP request itself cannot be parsed",
    401: "`unauthorized`: the token is missing, unknown, expired or revoked (the message says which)",
    403: "`forbidden`: the token lacks the `submit` scope, or the slug is outside its owner's namespace",
    405: "`method_not_allowed`: the server runs `--read-only`",
    413: "`payload_too_large`: the body is over 64 KiB",
    422: "`invalid_submission`: the message names the field and what is wrong with it",
    429: "`rate_limited` (with `Retry-After`) or `quota_exceeded`",
}


def submission_not_found(submission_id: str) -> ApiError:
    return ApiError(404, "submission_not_found", f"no submission {submission_id[:40]!r}; "
                    "GET /v1/submissions lists them")


def _version(service: Service) -> str:
    return service.store.peek_version() or "none"


def handlers() -> list[HTTPRouteHandler]:
    @read_only(
        "/v1/submissions", operation_id="listSubmissions", summary="Submissions, newest first",
        description="Every submission (public: no secrets), filtered by owner and state, paginated.",
        body=schemas.SubmissionPage, errors={400: "`invalid_parameter`"}, needs_warehouse=False,
    )
    async def list_submissions(
        request: Request,
        service: NamedDependency[Service],
        owner: Optional[str] = Parameter(default=None, description="The provider that submitted."),
        state_filter: Annotated[Optional[schemas.SubmissionState], QueryParameter(name="state", description="A state.")] = None,
        limit: int = limit_parameter(),
        offset: int = offset_parameter(),
    ) -> ASGIResponse:
        page, total = await anyio.to_thread.run_sync(
            lambda: service.submissions.list(owner=owner, state=state_filter, limit=limit, offset=offset))
        body = schemas.SubmissionPage(submissions=page, total=total, limit=limit, offset=offset)
        return respond(request.scope, prepare(body), version=_version(service), cache_control=NO_CACHE)

    @read_only(
        "/v1/submissions/{submission_id:str}", operation_id="getSubmission", summary="One submission and its history",
        description="Its state, the reason for it, its run ids, and every transition with its time and reason.",
        body=schemas.Submission, errors={400: "`invalid_parameter`", 404: "`submission_not_found`"},
        needs_warehouse=False,
    )
    async def get_submission(request: Request, service: NamedDependency[Service],
                             submission_id: FromPath[str]) -> ASGIResponse:
        if not SUBMISSION_ID_RE.fullmatch(submission_id):
            raise submission_not_found(submission_id)
        try:
            found = await anyio.to_thread.run_sync(service.submissions.get, submission_id)
        except SubmissionNotFound:
            raise submission_not_found(submission_id) from None
        return respond(request.scope, prepare(found), version=_version(service), cache_control=NO_CACHE)

    @post(
        "/v1/submissions", operation_id="createSubmission", summary="Submit a model for evaluation",
        description="`Authorization: Bearer <token>` (scope `submit`), checked before the body is read. "
        "201 with the new Submission; 200 with the open Submission of the same request (same model spec, "
        "tasks and tier); 200 `{\"status\": \"already_evaluated\", \"results\": [Result]}` when every task is "
        "already published for this exact model spec (nothing is queued).",
        status_code=201,
        responses={
            201: ResponseSpec(data_container=schemas.Submission, description="the new submission", generate_examples=False),
            200: ResponseSpec(data_container=Union[schemas.AlreadyEvaluated, schemas.Submission],
                              description="already evaluated, or the open submission of the same request",
                              generate_examples=False),
            **error_specs(POST_ERRORS)},
    )
    async def create_submission(request: Request, service: NamedDependency[Service]) -> ASGIResponse:
        if service.desk is None:
            raise MethodNotAllowedException()
        tables = service.store.current()
        status, body = await submit(service.desk, request, tables, service.base_url(request.scope))
        return respond(request.scope, prepare(body), version=tables.version if tables else "none",
                       cache_control="no-store", status=status)

    @put(
        "/v1/submissions/{submission_id:str}/package", operation_id="uploadPackage",
        request_max_body_size=None,  # the handler streams to disk under its own limit (api/package_upload.py)
        summary="Upload the wheel of an official submission",
        description="The owner's token; the wheel as the body, streamed to disk, at most 100 MiB; its sha256 must be "
        "the submission's `package_sha256`. 200 with the submission, now `awaiting_approval`.",
        status_code=200,
        responses={200: ResponseSpec(data_container=schemas.Submission, description="the submission",
                                     generate_examples=False),
                   **error_specs({**POST_ERRORS,
                                  403: "`forbidden`: the submission is another owner's, or the token lacks `submit`",
                                  404: "`submission_not_found`",
                                  413: "`payload_too_large`: the package is over 100 MiB",
                                  422: "`invalid_submission`: not a wheel, a sha256 that differs from "
                                       "`package_sha256`, or a submission not awaiting its package"})},
    )
    async def put_package(request: Request, service: NamedDependency[Service], submission_id: FromPath[str]) -> ASGIResponse:
        if service.desk is None:
            raise MethodNotAllowedException()
        if not SUBMISSION_ID_RE.fullmatch(submission_id):
            raise submission_not_found(submission_id)
        found = await upload_package(service.desk, service.settings.data, request, submission_id)
        return respond(request.scope, prepare(found), version=_version(service), cache_control="no-store")

    return [*list_submissions, *get_submission, create_submission, put_package]
