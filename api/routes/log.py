"""The answers of the transparency log's questions: ``GET /v1/log/checkpoint``, ``/v1/log/entries``,
``/v1/log/consistency``, ``/v1/results/{run_id}/proof`` and ``/v1/releases/{id}/proof`` (their routes
and MCP tools are declared in ``api.questions``).

Everything comes from ``<data>/log`` through ``warehouse.tlog.reader``, which serves a log only
while it verifies (every hash recomputed, the checkpoint's signature and its key's lifetime
checked) and answers ``log_unavailable`` (503) otherwise; proofs are against the verified
checkpoint, which each proof carries (docs/transparency-log.md). Encoded proofs and the checkpoint
are kept in the verified view, so a proof costs one lookup until the log changes.

Its file name is shared on purpose: each route's module is named after its path (docs/api.md),
beside the module that holds what the route serves.
"""

from collections.abc import Callable
from typing import Any

from api.errors import (
    invalid_parameter,
    log_unavailable,
    release_not_found,
    run_not_found,
)
from api.responses import Prepared, prepare
from api.service import Service
from warehouse.tlog.reader import LogUnavailable, LogView, open_view
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


def _proof(kind: str, entry_id: str) -> Callable[[LogView], Any]:
    def build(view: LogView) -> Any:
        body = view.proof_body(kind, entry_id)
        if body is None:
            why = "no entry of the transparency log's checkpoint holds this run id"
            raise run_not_found(entry_id, why) if kind == "result" else release_not_found(entry_id)
        return body
    return build
