"""The transparency log's read questions (docs/transparency-log.md): its checkpoint, its entries, and the
consistency and inclusion proofs, each declared once like every question of ``api.questions``.

Their answers come from the verified log (``api.routes.log``); each reads files, so it runs in a
worker thread, and each route may also answer ``log_unavailable`` (503).
"""

from __future__ import annotations

from typing import Any, Optional

from api import log_schemas
from api import question_args as qa
from api.params import RUN_ID_PATTERN
from api.read_question import Param, ReadQuestion, Tool, described

ANSWERS = "api.question_answers:"
LOG_MISSING = {503: "`log_unavailable`: the transparency log is missing or does not verify"}


def _entries_description() -> str:
    from warehouse.tlog.reader import PAGE_MAX

    return (f"Entries `[start, end)` of the checkpointed log, at most {PAGE_MAX} per page (`end` defaults to "
            f"`start + {PAGE_MAX}` or the tree size); `entry` is the exact leaf text, hashed as SHA-256(0x00 || entry).")


def _older_tree() -> Any:
    from typing import Annotated

    from litestar.params import QueryParameter

    return Annotated[int, QueryParameter(name="from", ge=1, description="The older tree size.")]


def _from_path() -> Any:
    from litestar.params import FromPath

    return FromPath[str]


LOG_QUESTIONS: tuple[ReadQuestion, ...] = (
    ReadQuestion(
        "log_checkpoint", "/v1/log/checkpoint", (), qa.NoArgs, ANSWERS + "log_checkpoint", log_schemas.Checkpoint,
        operation_id="getLogCheckpoint", summary="The transparency log's signed checkpoint",
        description="The tree size and root hash of the append-only Merkle log of every result, release, withdrawal "
        "and key rotation, signed: `note` is the C2SP tlog-checkpoint signed note. Keep it: later, "
        "`/v1/log/consistency` proves the log extends it.",
        errors=LOG_MISSING,
        threaded=True,
        tool=Tool("log_checkpoint", "The transparency log's checkpoint", "The signed checkpoint (tree size, root "
                  "hash, C2SP signed note) of the append-only Merkle log of every result, release, withdrawal and key "
                  "rotation.", order=10),
    ),
    ReadQuestion(
        "log_entries", "/v1/log/entries", (
            Param("start", int, described("First entry index.", default=0, ge=0)),
            Param("end", Optional[int], described("One past the last entry index.", default=None, ge=0)),  # noqa: UP045 (as the route declared it)
        ), qa.LogEntriesArgs, ANSWERS + "log_entries", log_schemas.LogEntryPage,
        operation_id="listLogEntries", summary="Entries of the transparency log, in order",
        description=_entries_description,
        errors={400: "`invalid_parameter`", **LOG_MISSING},
        threaded=True,
        tool=Tool("log_entries", "Entries of the transparency log", "Log entries [start, end), at most 1,000, each "
                  "with its exact leaf text and hash.", order=11),
    ),
    ReadQuestion(
        "log_consistency", "/v1/log/consistency", (
            Param("from", int, field="from_", route_type=_older_tree),
            Param("to", Optional[int], described("The newer tree size.", default=None, ge=1)),  # noqa: UP045 (as the route declared it)
        ), qa.LogConsistencyArgs, ANSWERS + "log_consistency", log_schemas.ConsistencyProof,
        operation_id="getLogConsistency", summary="Proof that the log extends an older one",
        description="RFC 9162 consistency proof between the trees of `from` and `to` entries (`to` defaults to the "
        "checkpoint's size): with a checkpoint you kept, it proves nothing was edited, removed or reordered since.",
        errors={400: "`invalid_parameter`", **LOG_MISSING},
        threaded=True,
        tool=Tool("log_consistency", "Proof that the log extends an older one", "RFC 9162 consistency proof from the "
                  "tree of `from` entries (a checkpoint you kept) to the tree of `to`.", order=12),
    ),
    ReadQuestion(
        "result_proof", "/v1/results/{run_id}/proof", (
            Param("run_id", str, described(None, pattern=RUN_ID_PATTERN), in_path=True, route_type=_from_path),
        ), qa.ResultProofArgs, ANSWERS + "result_proof", log_schemas.InclusionProof,
        operation_id="getResultProof", summary="Proof that a result is in the transparency log",
        description="RFC 9162 inclusion proof of the result's log entry (its record's sha256) against the current "
        "checkpoint, which the answer carries.",
        errors={400: "`invalid_parameter`", 404: "`run_not_found`", **LOG_MISSING},
        threaded=True,
        tool=Tool("result_proof", "Proof that a result is in the log", "RFC 9162 inclusion proof of a result's log "
                  "entry against the current checkpoint, which it carries.", order=13),
    ),
    ReadQuestion(
        "release_proof", "/v1/releases/{id}/proof", (Param("id", str, in_path=True),), qa.ReleaseProofArgs,
        ANSWERS + "release_proof", log_schemas.InclusionProof,
        operation_id="getReleaseProof", summary="Proof that a release is in the transparency log",
        description="RFC 9162 inclusion proof of the release's log entry (its `manifest_sha256`) against the current "
        "checkpoint, which the answer carries.",
        errors={400: "`invalid_parameter`", 404: "`release_not_found`", **LOG_MISSING},
        threaded=True,
        tool=Tool("release_proof", "Proof that a release is in the log", "RFC 9162 inclusion proof of a release's "
                  "log entry against the current checkpoint, which it carries.", order=14),
    ),
)
