"""The parameters of the read questions (``api.questions``) as msgspec Structs.

One Struct per question: the MCP tool's ``inputSchema`` is generated from it, MCP ``arguments`` are
converted into it (a bad one is ``invalid_parameter`` naming it, as ``/v1`` refuses a bad query
parameter), and the ``/v1`` route builds the same Struct from its query and path parameters, so an
answer function (``api.question_answers``) receives one thing whichever surface asked. Plain data:
msgspec, ``api.schemas`` and the patterns of ``api.params`` only, so the typed client can name them.
"""

from __future__ import annotations

from typing import Annotated

import msgspec
from msgspec import Meta

from api import schemas
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


class ResultsArgs(_Args):
    dataset: str | None = None
    task: str | None = None
    model: str | None = None
    model_type: schemas.ModelType | None = None
    tier: schemas.Tier | None = None
    limit: Limit = 100
    offset: Offset = 0
    release: Release = None


class PageArgs(_Args):
    limit: Limit = 100
    offset: Offset = 0


class ReleaseArgs(_Args):
    id: str


class ModelArgs(_Args):
    provider: str
    name: str


LOOKUP_ADVICE = (
    "Rule one of medbench: look up before you run. Before evaluating a model on a medbench task yourself, "
    "call this: if the answer is `evaluated`, cite that result (its `bibtex`) and download its per-item "
    "predictions (`predictions_url`, checked with `predictions_sha256`) instead of recomputing it. "
    "`model` accepts a slug or the provider's model id; `task` accepts `slug@version` or `slug`. "
    "An unknown model is `not_evaluated`, not an error."
)
