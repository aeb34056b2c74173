"""The write path's front desk: ``POST /v1/submissions`` from the bearer token to the stored submission.

Order matters and is the contract: the token is checked (401 ``unauthorized`` says whether it was
missing, unknown, expired or revoked; 403 ``forbidden`` without the ``submit`` scope) and counted
against its rate limit (429 ``rate_limited``, ``Retry-After``) *before* a byte of the body is read;
then the body is read up to 64 KiB (413 ``payload_too_large``), decoded as JSON (nesting bounded),
and handed to the validator ``medbench serve`` gave the app (``check``: the spec decoder and the
maintainers' policy, engine code the API never imports). Rule one answers 200 ``already_evaluated``
when every task is published for this exact model spec; otherwise the store dedupes, charges the
owner's quota and records the submission. A refusal stores nothing. The token itself is never logged,
echoed or stored: only its id travels with the submission.

Its file name is shared on purpose: the service's own module of that name (the pipeline's serves
another side).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import anyio.to_thread
import msgspec
from litestar import Request

from api import render, schemas
from api.errors import ApiError
from api.tables import Tables
from medbench.submissions import (
    AuthFailure, Checked, QuotaExceeded, Submission, SubmissionRefused, SubmissionStore, Token,
)

MAX_BODY_BYTES = 64 * 1024
MAX_JSON_DEPTH = 32
SUBMIT_SCOPE = "submit"


@dataclass
class SubmissionDesk:
    """What ``medbench serve`` hands the app to turn the write routes on (``--read-only``: none)."""

    store: SubmissionStore
    check: Callable[[Any, str], Checked]  # (decoded body, owner) -> Checked, or raises SubmissionRefused
    quota_for: Callable[[str], int | None]  # accepted submissions per owner per 7 days
    rate_limit: int = 30  # requests per token per window
    rate_window_s: float = 60.0


def unauthorized(failure: AuthFailure) -> ApiError:
    return ApiError(401, "unauthorized", failure.message(), headers={"www-authenticate": 'Bearer realm="medbench"'})


def bearer(request: Request) -> str | None:
    value = request.headers.get("authorization", "")
    scheme, _, secret = value.partition(" ")
    return secret.strip() or None if scheme.lower() == "bearer" else None


async def authorize(desk: SubmissionDesk, request: Request) -> Token:
    """The request's token, checked and counted against its rate limit, before the body is read."""
    found = await anyio.to_thread.run_sync(desk.store.tokens.authenticate, bearer(request))
    if isinstance(found, AuthFailure):
        raise unauthorized(found)
    if SUBMIT_SCOPE not in found.scopes:
        raise ApiError(403, "forbidden", f"token {found.id} lacks the {SUBMIT_SCOPE!r} scope")
    wait = await anyio.to_thread.run_sync(desk.store.tokens.hit, found.id, desk.rate_limit, desk.rate_window_s)
    if wait is not None:
        raise ApiError(429, "rate_limited", f"more than {desk.rate_limit} requests in {desk.rate_window_s:g} s "
                       f"with this token; retry in {wait} s", headers={"retry-after": str(wait)})
    return found


def too_large() -> ApiError:
    return ApiError(413, "payload_too_large", f"the submission is larger than {MAX_BODY_BYTES} bytes; "
                    "a submission is a model spec and a task list")


async def read_body(request: Request) -> bytes:
    """At most MAX_BODY_BYTES: refused from Content-Length before reading, or as the stream passes it."""
    length = request.headers.get("content-length", "")
    if length.isdigit() and int(length) > MAX_BODY_BYTES:
        raise too_large()
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            raise too_large()
        chunks.append(chunk)
    return b"".join(chunks)


def invalid(field: str, problem: str) -> ApiError:
    return ApiError(422, "invalid_submission", f"{field}: {problem}" if field else problem)


def _too_deep(body: bytes) -> bool:
    """Whether arrays and objects nest deeper than MAX_JSON_DEPTH, without recursion (brackets inside
    strings do not count), before the decoder, which recurses once per level, sees the body."""
    depth, in_string, escaped = 0, False, False
    for byte in body:
        if in_string:
            if escaped:
                escaped = False
            elif byte == 0x5C:  # backslash
                escaped = True
            elif byte == 0x22:  # quote
                in_string = False
        elif byte == 0x22:
            in_string = True
        elif byte in b"[{":
            depth += 1
            if depth > MAX_JSON_DEPTH:
                return True
        elif byte in b"]}":
            depth -= 1
    return False


def decode_body(body: bytes) -> Any:
    if not body.strip():
        raise invalid("", "empty body: send a JSON object {model, tasks, tier}")
    if _too_deep(body):
        raise invalid("", f"JSON nested more than {MAX_JSON_DEPTH} levels deep; a submission nests a few")
    try:
        return msgspec.json.decode(body)
    except (msgspec.DecodeError, RecursionError) as exc:
        raise invalid("", f"the body is not valid JSON ({exc})") from None


def rule_one(tables: Tables | None, checked: Checked, base: str) -> list[schemas.Result] | None:
    """Every requested task's current published result for this exact model spec (and package), or None."""
    if tables is None:
        return None
    found = []
    for ref in checked.tasks:
        published = tables.current.get((checked.model["slug"], ref))
        if published is None or published.record.versions.model_spec_hash != checked.model_spec_hash:
            return None
        if published.record.provenance.package_sha256 != checked.package_sha256:
            return None  # rule one applies to the exact package (none: medbench's own run)
        dataset = tables.dataset_by_slug.get(published.record.dataset)
        task = tables.task_by_ref.get(published.record.task)
        found.append(render.result(published, base, dataset, tables.versus_reference.get(published.run_id),
                                   kind_name=task.kind if task else None))
    return found


def published_identity(tables: Tables | None, checked: Checked, owner: str) -> None:
    """A provider model id published for another provider would make lookups ambiguous."""
    if tables is None:
        return
    taken = [s for s in tables.resolve_model(checked.model["provider_model_id"]) if not s.startswith(owner + "/")]
    if taken:
        raise invalid("model.provider_model_id", f"{checked.model['provider_model_id']!r} is already the id of "
                      f"{', '.join(taken)}: lookups by model id would become ambiguous")


def store_checked(desk: SubmissionDesk, checked: Checked, token: Token) -> tuple[Submission, bool]:
    """(the submission, whether it is new); QuotaExceeded when the owner's quota is used up."""
    made = desk.store.create(owner=token.owner, model=checked.model, tasks=checked.tasks, tier=checked.tier,
                             model_spec_hash=checked.model_spec_hash, quota=desk.quota_for(token.owner),
                             token_id=token.id, package_sha256=checked.package_sha256, resources=checked.resources)
    submission = made.submission
    if made.created and checked.auto_approve and submission.state == "awaiting_approval":
        submission = desk.store.transition(submission.id, "queued", f"auto-approved: {token.owner}'s submissions "
                                           "are approved by policy")
    return submission, made.created


async def submit(desk: SubmissionDesk, request: Request, tables: Tables | None, base: str) -> tuple[int, Any]:
    token = await authorize(desk, request)
    body = decode_body(await read_body(request))
    try:
        checked = await anyio.to_thread.run_sync(desk.check, body, token.owner)
    except SubmissionRefused as refused:
        raise ApiError(refused.status, refused.code, str(refused)) from None
    published_identity(tables, checked, token.owner)
    results = rule_one(tables, checked, base)
    if results is not None:
        return 200, schemas.AlreadyEvaluated(status="already_evaluated", results=results)
    try:
        submission, created = await anyio.to_thread.run_sync(store_checked, desk, checked, token)
    except QuotaExceeded as exc:
        raise ApiError(429, "quota_exceeded", str(exc), headers={"retry-after": str(exc.retry_after)}) from None
    except SubmissionRefused as refused:  # another provider took the id while this request was validated
        raise ApiError(refused.status, refused.code, str(refused)) from None
    return (201 if created else 200), submission
