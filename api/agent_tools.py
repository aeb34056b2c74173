"""The MCP tools: names, descriptions, and typed input and output schemas from msgspec Structs.

Each tool asks one question ``/v1`` already answers, and its output schema is generated from the
very Struct that route's body is encoded from (``api.schemas``), so an agent sees the same shapes
over MCP and HTTP. Inputs are Structs too: their JSON Schema is the tool's ``inputSchema`` and
``arguments`` are converted into them, so a bad argument is refused the way ``/v1`` refuses a bad
query parameter (``invalid_parameter`` naming it). Every tool is read-only. What answers the
questions (this process's tables, or another server over HTTP) is ``api.agent_sources``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Annotated, Any

import msgspec
from msgspec import Meta

from api import log_schemas, schemas
from api.errors import ApiError, invalid_parameter
from api.reporting import comparison_methods
from api.params import NOT_BLANK_PATTERN, RUN_ID_PATTERN, TASK_REF_PATTERN

Task = Annotated[str, Meta(pattern=TASK_REF_PATTERN, description="`slug@version`, or `slug` for the latest version.",
                           examples=["clinicalqa@0"])]
RunId = Annotated[str, Meta(description="Run id: 12 lowercase hex digits.", examples=["0123456789ab"])]
CheckedRunId = Annotated[str, Meta(pattern=RUN_ID_PATTERN, description="Run id: 12 lowercase hex digits.")]
Limit = Annotated[int, Meta(ge=1, le=1000, description="At most this many items (1..1000).")]
Offset = Annotated[int, Meta(ge=0, description="Items to skip.")]
Release = Annotated[str | None, Meta(description="Answer as of this release (an id of `GET /v1/releases`); "
                                     "default: the current one.")]


class _Args(msgspec.Struct, forbid_unknown_fields=True):
    pass


class LookupArgs(_Args):
    model: Annotated[str, Meta(pattern=NOT_BLANK_PATTERN, description="Model slug (`provider/name`) or the provider's model id.",
                               examples=["medbench/random"])]
    task: Task
    release: Release = None
    judge: Annotated[str | None, Meta(description="Rubric tasks: results graded by this judge model (slug) instead "
                                       "of the task's own judge.")] = None


class LeaderboardArgs(_Args):
    task: Task
    model_type: schemas.ModelType | None = None
    limit: Limit = 100
    metric: Annotated[str | None, Meta(description="Rank by this published metric, in its direction "
                                        "(default: the task's primary metric).")] = None
    tier: Annotated[schemas.Tier | None, Meta(description="Only rows of this tier (baseline or official); "
                                              "no match is rows: [].")] = None
    release: Release = None
    judge: Annotated[str | None, Meta(description="Rubric tasks: results graded by this judge model (slug) instead "
                                       "of the task's own judge.")] = None


class ResultArgs(_Args):
    run_id: RunId
    release: Release = None


class CompareArgs(_Args):
    a: CheckedRunId
    b: CheckedRunId


class NoArgs(_Args):
    pass


class TaskArgs(_Args):
    slug: Annotated[str, Meta(pattern=TASK_REF_PATTERN, description="Task slug, or `slug@version`.")]
    version: Annotated[int, Meta(ge=0, description="Task version; latest when absent.")] | None = None


class FindModelsArgs(_Args):
    q: Annotated[str, Meta(description="Case-insensitive substring of the name, slug or provider model id.")] | None = None
    type: schemas.ModelType | None = None
    provider: str | None = None
    limit: Limit = 100
    offset: Offset = 0


class SubmissionArgs(_Args):
    id: Annotated[str, Meta(pattern=r"^[0-9a-f]{12}$", description="Submission id: 12 lowercase hex digits.",
                            examples=["0123456789ab"])]


class ResultProofArgs(_Args):
    run_id: CheckedRunId


class ReleaseProofArgs(_Args):
    id: Annotated[str, Meta(description="Release id (`GET /v1/releases`).")]


class LogEntriesArgs(_Args):
    start: Annotated[int, Meta(ge=0, description="First entry index.")] = 0
    end: Annotated[int, Meta(ge=0, description="One past the last entry index (at most 1,000 entries).")] | None = None


class LogConsistencyArgs(_Args):
    from_: Annotated[int, Meta(ge=1, description="The older tree size (of a checkpoint you kept).")] = \
        msgspec.field(name="from")
    to: Annotated[int, Meta(ge=1, description="The newer tree size; the checkpoint's when absent.")] | None = None


@dataclass(frozen=True)
class ToolSpec:
    name: str
    title: str
    description: str
    args: type[_Args]
    output: type[msgspec.Struct]
    route: str  # the /v1 route asking the same question


LOOKUP_ADVICE = (
    "Rule one of medbench: look up before you run. Before evaluating a model on a medbench task yourself, "
    "call this: if the answer is `evaluated`, cite that result (its `bibtex`) and download its per-item "
    "predictions (`predictions_url`, checked with `predictions_sha256`) instead of recomputing it. "
    "`model` accepts a slug or the provider's model id; `task` accepts `slug@version` or `slug`. "
    "An unknown model is `not_evaluated`, not an error."
)

TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec("lookup", "Look up before you run", LOOKUP_ADVICE, LookupArgs, schemas.Lookup, "/v1/lookup"),
    ToolSpec("leaderboard", "Leaderboard of one task",
             "Ranked current results (one per model) of a task version, best first, with 95% intervals and rank "
             "sets (simultaneous, joined with the marginal interval). `metric` ranks by another published metric "
             "in its direction; `limit` bounds the rows (default 100).", LeaderboardArgs, schemas.Leaderboard,
             "/v1/leaderboard"),
    ToolSpec("get_result", "One result", "Everything about one result: all metrics with 95% CIs, configuration, "
             "exact versions, usage, cost, BibTeX and the predictions URL.", ResultArgs, schemas.Result,
             "/v1/results/{run_id}"),
    ToolSpec("compare", "Compare two results", "Paired comparison of result a with result b of the same task "
             "version on their shared items: difference with a 95% paired interval and a p-value from one procedure "
             "(`method`; `p_at_floor`: p is a bound). " + comparison_methods(),
             CompareArgs, schemas.Compare, "/v1/compare"),
    ToolSpec("list_tasks", "Tasks", "Every task version: dataset, kind, primary metric, preview flag, number of "
             "results.", NoArgs, schemas.TaskList, "/v1/tasks"),
    ToolSpec("get_task", "One task", "A task version with its whole specification (latest version unless "
             "`version` or `slug@version` says otherwise).", TaskArgs, schemas.TaskDetail, "/v1/tasks/{slug}"),
    ToolSpec("find_models", "Find models", "Models by name, slug or provider model id (`q`, case-insensitive "
             "substring), type or provider, each with its current results (task and run id). Paginated with "
             "`limit` and `offset`.", FindModelsArgs, schemas.ModelPage, "/v1/models"),
    ToolSpec("predictions_url", "Where a result's predictions are", "The URL of a result's per-item predictions "
             "(Parquet) and their sha256: download and check them instead of recomputing.", ResultArgs,
             schemas.PredictionsLink, "/artifacts/{run_id}/predictions.parquet"),
    ToolSpec("stats", "Counts", "Counts of datasets, tasks, models and results, total cost, reuses and the "
             "warehouse version served.", NoArgs, schemas.Stats, "/v1/stats"),
    ToolSpec("submission_status", "Where a submission stands", "A model submission's state (received, validated, "
             "awaiting_package, awaiting_approval, queued, running, evaluated, failed or rejected), the reason for "
             "it, its run ids once it runs, and every transition with its time and reason.", SubmissionArgs,
             schemas.Submission, "/v1/submissions/{id}"),
    ToolSpec("log_checkpoint", "The transparency log's checkpoint", "The signed checkpoint (tree size, root hash, "
             "C2SP signed note) of the append-only Merkle log of every result, release, withdrawal and key rotation.",
             NoArgs, log_schemas.Checkpoint, "/v1/log/checkpoint"),
    ToolSpec("log_entries", "Entries of the transparency log", "Log entries [start, end), at most 1,000, each with "
             "its exact leaf text and hash.", LogEntriesArgs, log_schemas.LogEntryPage, "/v1/log/entries"),
    ToolSpec("log_consistency", "Proof that the log extends an older one", "RFC 9162 consistency proof from the tree "
             "of `from` entries (a checkpoint you kept) to the tree of `to`.", LogConsistencyArgs,
             log_schemas.ConsistencyProof, "/v1/log/consistency"),
    ToolSpec("result_proof", "Proof that a result is in the log", "RFC 9162 inclusion proof of a result's log entry "
             "against the current checkpoint, which it carries.", ResultProofArgs, log_schemas.InclusionProof,
             "/v1/results/{run_id}/proof"),
    ToolSpec("release_proof", "Proof that a release is in the log", "RFC 9162 inclusion proof of a release's log "
             "entry against the current checkpoint, which it carries.", ReleaseProofArgs, log_schemas.InclusionProof,
             "/v1/releases/{id}/proof"),
)
LOG_TOOLS = frozenset({"log_checkpoint", "log_entries", "log_consistency", "result_proof", "release_proof"})
TOOL_BY_NAME = {tool.name: tool for tool in TOOLS}


def object_schema(struct: type) -> dict[str, Any]:
    """A Struct's JSON Schema with the Struct itself at the top (MCP wants ``"type": "object"`` there)
    and the Structs it refers to under ``$defs``."""
    (_,), components = msgspec.json.schema_components([struct], ref_template="#/$defs/{name}")
    top = dict(components.pop(struct.__name__))
    if components:
        top["$defs"] = components
    return top


def tool_definitions() -> list[dict[str, Any]]:
    """``tools/list``'s items as plain JSON (name, title, description, inputSchema, outputSchema, annotations)."""
    return [
        {"name": t.name, "title": t.title, "description": t.description,
         "inputSchema": object_schema(t.args), "outputSchema": object_schema(t.output),
         "annotations": {"readOnlyHint": True, "idempotentHint": True, "openWorldHint": False}}
        for t in TOOLS
    ]


_AT_RE = re.compile(r"\s*- at `\$\.?([^`\[]*)[^`]*`$")
_MISSING_RE = re.compile(r"Object missing required field `([^`]+)`")


def arguments(tool: ToolSpec, raw: dict[str, Any] | None) -> Any:
    """``raw`` as the tool's argument Struct, or ``invalid_parameter`` naming the offending argument."""
    try:
        return msgspec.convert(raw or {}, tool.args)
    except msgspec.ValidationError as exc:
        text = str(exc)
        if missing := _MISSING_RE.match(text):
            raise invalid_parameter(f"missing parameter {missing.group(1)!r}") from None
        found = _AT_RE.search(text)
        if found and found.group(1):
            raise invalid_parameter(f"parameter {found.group(1)!r}: {text[:found.start()]}") from None
        raise invalid_parameter(f"arguments of {tool.name}: {text}") from None


def unknown_tool(name: str) -> ApiError:
    return ApiError(404, "not_found", f"no tool {name[:100]!r}; the tools are {', '.join(TOOL_BY_NAME)}")
