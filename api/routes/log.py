"""The transparency log: ``GET /v1/log/checkpoint``, ``/v1/log/entries``, ``/v1/log/consistency``,
``/v1/results/{run_id}/proof`` and ``/v1/releases/{id}/proof``.

Everything comes from ``<data>/log`` through ``warehouse.tlog.reader``, which serves a log only
while it verifies (every hash recomputed, the checkpoint's signature and its key's lifetime
checked) and answers ``log_unavailable`` (503) otherwise; proofs are against the verified
checkpoint, which each proof carries (docs/transparency-log.md). Encoded proofs and the checkpoint
are kept in the verified view, so a proof costs one lookup until the log changes.

Its file name is shared on purpose: each route's module is named after its path (docs/api.md),
beside the module that holds what the route serves.
"""

from typing import Annotated, Any, Callable, Optional

from litestar import Request
from litestar.di import NamedDependency
from litestar.handlers import HTTPRouteHandler
from litestar.params import FromPath, Parameter, QueryParameter
from litestar.response.base import ASGIResponse

from api import log_schemas
from api.errors import invalid_parameter, log_unavailable, release_not_found, run_not_found
from api.params import RUN_ID_PATTERN
from api.responses import Prepared, prepare, respond
from api.routing import read_only
from api.service import Service
from warehouse.tlog.reader import PAGE_MAX, LogUnavailable, LogView, open_view
from warehouse.tlog.store import LogStore

MEMOISED = {"checkpoint", "result", "release"}  # pages and consistency proofs are cheap to build, and unbounded
UNAVAILABLE = {503: "`log_unavailable`: the transparency log is missing or does not verify"}


def require_verified_log(service: Service) -> None:
    """``log_unavailable`` when this data directory has a transparency log that does not verify (the
    release routes call it: a release is only served while the log that attests it verifies). A data
    directory published before the log existed has none yet and is served as before."""
    root = service.settings.data.root
    if LogStore.of_data(root).entries_path.exists():
        try:
            open_view(root)
        except LogUnavailable as exc:
            raise log_unavailable(str(exc)) from None


def log_answer(service: Service, key: Any, build: Callable[[LogView], Any]) -> Prepared:
    """The encoded answer ``build`` makes from the verified log, kept in the view under ``key``;
    ``log_unavailable`` or ``invalid_parameter`` otherwise (the routes and the MCP tools share it)."""
    try:
        view = open_view(service.settings.data.root)
    except LogUnavailable as exc:
        raise log_unavailable(str(exc)) from None
    prepared = view.memo.get(key)
    if prepared is None:
        try:
            body = build(view)
        except ValueError as exc:
            raise invalid_parameter(str(exc)) from None
        prepared = prepare(body)
        if key[0] in MEMOISED:  # one per entry at most: bounded by the log, whatever clients ask
            view.memo[key] = prepared
    return prepared


def tool_answer(service: Service, name: str, args: Any) -> Prepared:
    """The answer of the MCP tool ``name`` (``api.agent_tools``), as its route answers it."""
    if name == "log_checkpoint":
        return log_answer(service, ("checkpoint",), lambda v: v.checkpoint_body())
    if name == "log_entries":
        return log_answer(service, ("entries", args.start, args.end), lambda v: v.entries_body(args.start, args.end))
    if name == "log_consistency":
        return log_answer(service, ("consistency", args.from_, args.to),
                          lambda v: v.consistency_body(args.from_, args.to))
    if name == "result_proof":
        return log_answer(service, ("result", args.run_id), _proof("result", args.run_id))
    return log_answer(service, ("release", args.id), _proof("release", args.id))


def _answer(request: Request, service: Service, key: Any, build: Callable[[LogView], Any]) -> ASGIResponse:
    tables = service.tables(request.scope)
    return respond(request.scope, log_answer(service, key, build), version=tables.version)


def _proof(kind: str, entry_id: str) -> Callable[[LogView], Any]:
    def build(view: LogView) -> Any:
        body = view.proof_body(kind, entry_id)
        if body is None:
            why = "no entry of the transparency log's checkpoint holds this run id"
            raise run_not_found(entry_id, why) if kind == "result" else release_not_found(entry_id)
        return body
    return build


def handlers() -> list[HTTPRouteHandler]:
    @read_only(
        "/v1/log/checkpoint", operation_id="getLogCheckpoint", summary="The transparency log's signed checkpoint",
        description="The tree size and root hash of the append-only Merkle log of every result, release, withdrawal "
        "and key rotation, signed: `note` is the C2SP tlog-checkpoint signed note. Keep it: later, "
        "`/v1/log/consistency` proves the log extends it.",
        body=log_schemas.Checkpoint, errors=UNAVAILABLE,
    )
    async def checkpoint(request: Request, service: NamedDependency[Service]) -> ASGIResponse:
        return _answer(request, service, ("checkpoint",), lambda v: v.checkpoint_body())

    @read_only(
        "/v1/log/entries", operation_id="listLogEntries", summary="Entries of the transparency log, in order",
        description=f"Entries `[start, end)` of the checkpointed log, at most {PAGE_MAX} per page (`end` defaults to "
        f"`start + {PAGE_MAX}` or the tree size); `entry` is the exact leaf text, hashed as SHA-256(0x00 || entry).",
        body=log_schemas.LogEntryPage, errors={400: "`invalid_parameter`", **UNAVAILABLE},
    )
    async def entries(request: Request, service: NamedDependency[Service],
                      start: int = Parameter(default=0, ge=0, description="First entry index."),
                      end: Optional[int] = Parameter(default=None, ge=0, description="One past the last entry index."),
                      ) -> ASGIResponse:
        return _answer(request, service, ("entries", start, end), lambda v: v.entries_body(start, end))

    @read_only(
        "/v1/log/consistency", operation_id="getLogConsistency", summary="Proof that the log extends an older one",
        description="RFC 9162 consistency proof between the trees of `from` and `to` entries (`to` defaults to the "
        "checkpoint's size): with a checkpoint you kept, it proves nothing was edited, removed or reordered since.",
        body=log_schemas.ConsistencyProof, errors={400: "`invalid_parameter`", **UNAVAILABLE},
    )
    async def consistency(request: Request, service: NamedDependency[Service],
                          first: Annotated[int, QueryParameter(name="from", ge=1, description="The older tree size.")],
                          to: Optional[int] = Parameter(default=None, ge=1, description="The newer tree size."),
                          ) -> ASGIResponse:
        return _answer(request, service, ("consistency", first, to), lambda v: v.consistency_body(first, to))

    @read_only(
        "/v1/results/{run_id:str}/proof", operation_id="getResultProof",
        summary="Proof that a result is in the transparency log",
        description="RFC 9162 inclusion proof of the result's log entry (its record's sha256) against the current "
        "checkpoint, which the answer carries.",
        body=log_schemas.InclusionProof, errors={400: "`invalid_parameter`", 404: "`run_not_found`", **UNAVAILABLE},
    )
    async def result_proof(request: Request, service: NamedDependency[Service],
                           run_id: FromPath[str] = Parameter(pattern=RUN_ID_PATTERN)) -> ASGIResponse:
        return _answer(request, service, ("result", run_id), _proof("result", run_id))

    @read_only(
        "/v1/releases/{id:str}/proof", operation_id="getReleaseProof",
        summary="Proof that a release is in the transparency log",
        description="RFC 9162 inclusion proof of the release's log entry (its `manifest_sha256`) against the current "
        "checkpoint, which the answer carries.",
        body=log_schemas.InclusionProof, errors={400: "`invalid_parameter`", 404: "`release_not_found`", **UNAVAILABLE},
    )
    async def release_proof(request: Request, service: NamedDependency[Service],
                            id: FromPath[str]) -> ASGIResponse:  # noqa: A002 (the route's {id}, docs/api.md)
        return _answer(request, service, ("release", id), _proof("release", id))

    return [*checkpoint, *entries, *consistency, *result_proof, *release_proof]
