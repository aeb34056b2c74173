"""The read questions of medbench, each declared once: its parameters, its answer function and its types.

A question (lookup, leaderboard, results, result, compare, models, tasks, datasets, releases, the
log) is one ``ReadQuestion`` (``api.read_question``) in ``QUESTIONS``; every surface derives from that entry rather than
being written per question (docs/api.md, "One table of read questions"):

- the ``/v1`` route (``api.question_routes`` builds the Litestar handler from ``params``: names,
  types, defaults and the declarations the OpenAPI document shows);
- the MCP tool (``tool``: its name and text; ``args``, the Struct its ``inputSchema`` comes from;
  ``body``, its ``outputSchema``) and the one dispatch that answers every tool, here
  (``api.question_answers.ask``) or through another server (``api.agent_sources.RemoteAnswers``,
  which asks ``path`` with the same parameters);
- the typed client method (``client``: ``api.client.ApiClient`` gets one method per question);
- the CLI command (``cli``, with each parameter's ``CliArg``: ``pipelines.cli.client``);
- the website's page (``site_page``: the hand-made page of ``api.site.routes`` that shows the answer,
  or, when None, the page ``api.site.question_pages`` derives at ``site_path``: a form of the
  parameters and the answer's body as tables, linked from ``/questions``).

A new read question is one entry here plus its answer function, ``answer(asked, args)``: ``asked``
carries the service, the tables of the version asked about and the base URL for self-links;
``args`` is the ``args`` Struct. It returns the encoded body (``Prepared``) or an ``Answer``.

Plain data: nothing here imports Litestar or the server's tables (declarations are built when the
routes are, answer functions are named ``"module:function"`` and imported when first asked), so the
typed client and the CLI pay nothing for the table.
"""

from __future__ import annotations

from functools import partial
from typing import Any, Optional

import msgspec

from api import question_args as qa
from api import schemas
from api.log_questions import LOG_QUESTIONS
from api.params import (
    TASK_REF_PATTERN,
    limit_parameter,
    metric_parameter,
    model_parameter,
    offset_parameter,
    release_parameter,
    run_id_parameter,
    task_parameter,
)
from api.read_question import (  # noqa: F401  (api.questions.X: the table and what it is made of)
    V1,
    Cli,
    CliArg,
    Param,
    ReadQuestion,
    Tool,
    described,
    path_shape,
    resolve,
    text,
)

MODEL_TYPES = ("llm", "ml", "rule")
RELEASE_HELP = "answer as of this release (an id of GET /v1/releases; default: the current one)"
TASK_HELP = "slug@version, or slug for the latest version"


def _opt(annotation: Any) -> Any:
    return Optional[annotation]  # noqa: UP045 (the routes' annotation, as Litestar documents it)


def _task_version() -> Any:
    from typing import Annotated

    from litestar.params import Parameter

    # Litestar 2.25 documents the inner constraint and validates the outer one of an Optional parameter
    return _opt(Annotated[int, Parameter(ge=0)])


def _comparison_text() -> str:
    from api.reporting import comparison_methods

    return ("Paired comparison of result a with result b of the same task version on their shared items: "
            "difference with a 95% paired interval and a p-value from one procedure (`method`; `p_at_floor`: p is "
            "a bound). " + comparison_methods())


def _compare_description() -> str:
    from api.reporting import comparison_methods

    return ("Compares result `a` with result `b` on the items both scored (instance_id intersection): "
            "`difference` is metric(a) - metric(b) there, with a 95% paired interval and a two-sided p-value from "
            "one procedure, named in `method`, so that the interval excludes 0 exactly when p < 0.05. "
            + comparison_methods() + " Seed and replicates are the task's own bootstrap settings. Two results of a "
            "rubric task graded by different judges also get `judges`: their agreement on the answers both hold, "
            "overall and per criterion (docs/api.md).")


JUDGE = Param("judge", _opt(str), described(
    "Rubric tasks: the board of results graded by this judge model (slug) instead of the task's own "
    "judge; point ranks only (rank sets are computed for the task's judge).", default=None, max_length=200))
RELEASE = Param("release", _opt(str), release_parameter, cli=CliArg("--release", RELEASE_HELP, metavar="ID"))
LIMIT = Param("limit", int, limit_parameter)
OFFSET = Param("offset", int, offset_parameter)
LOG_UNAVAILABLE = {503: "`log_unavailable`: the transparency log does not verify"}
ANSWERS = "api.question_answers:"

_OWN: tuple[ReadQuestion, ...] = (
    ReadQuestion(
        "datasets", "/v1/datasets", (), qa.NoArgs, ANSWERS + "datasets", schemas.DatasetList,
        operation_id="listDatasets", summary="Datasets",
        description="Every dataset with its license, license URL, citation, DOI and the date it became public.",
        client="datasets", cli=Cli("datasets", "list the datasets with license and citation", order=1),
        site_page="/datasets",
    ),
    ReadQuestion(
        "tasks", "/v1/tasks", (), qa.NoArgs, ANSWERS + "tasks", schemas.TaskList,
        operation_id="listTasks", summary="Tasks",
        description="One item per task version: dataset, kind, primary metric, preview flag, number of results.",
        tool=Tool("list_tasks", "Tasks", "Every task version: dataset, kind, primary metric, preview flag, number of "
                  "results.", order=4),
        client="tasks", cli=Cli("tasks", "list the tasks (one line per version)", order=0), site_page="/",
    ),
    ReadQuestion(
        "task", "/v1/tasks/{slug}", (
            Param("slug", str, described("Task slug, or `slug@version`.", pattern=TASK_REF_PATTERN), in_path=True),
            Param("version", _opt(int), described("Task version; latest when absent.", default=None, ge=0),
                  route_type=_task_version),
        ), qa.TaskArgs, ANSWERS + "task", schemas.TaskDetail,
        operation_id="getTask", summary="One task version with its full specification",
        description="The task's item as in /v1/tasks plus `spec`, the whole decoded specification. "
        "The latest version unless `version` is given (`slug@version` in the path works too).",
        errors={400: "`invalid_parameter`: malformed slug or version",
                404: "`task_not_found` (also when the path's `@version` and `?version=` differ)"},
        tool=Tool("get_task", "One task", "A task version with its whole specification (latest version unless "
                  "`version` or `slug@version` says otherwise).", order=5),
        threaded=True, site_page="/tasks/{slug}",
    ),
    ReadQuestion(
        "leaderboard", "/v1/leaderboard", (
            Param("task", str, task_parameter, cli=CliArg(None, TASK_HELP)),
            Param("model_type", _opt(schemas.ModelType), described("Only models of this type.", default=None),
                  cli=CliArg("--model-type", choices=MODEL_TYPES)),
            Param("limit", int, partial(limit_parameter, "At most this many rows."),
                  cli=CliArg("--limit", "at most this many rows (1..1000)", type=int)),
            Param("metric", _opt(str), metric_parameter),
            Param("tier", _opt(schemas.Tier), described("Only rows of this tier, each keeping its rank on the whole "
                                                         "board; no match is `rows: []`.", default=None)),
            RELEASE, JUDGE,
        ), qa.LeaderboardArgs, ANSWERS + "leaderboard", schemas.Leaderboard,
        operation_id="getLeaderboard", summary="Ranked rows for one task",
        description="The task's current results (one per model), sorted by `metric` (default the primary) in its "
        "direction (higher, lower, or closest to its target), then eval_date, then run_id; `rank` is the 1-based "
        "position in the returned list. `rank_low`/`rank_high`: the hull of the simultaneous 95% rank set (Mogstad "
        "et al. 2024) and the marginal bootstrap interval (`marginal_rank_low`/`marginal_rank_high`), recomputed "
        "for the metric ranked by; `rank_method` says how, or that only point ranks are available.",
        errors={400: "`invalid_parameter`: no task, bad limit, unknown model_type",
                404: "`task_not_found`, `metric_not_found` (the task's metrics named), `release_not_found`"},
        tool=Tool("leaderboard", "Leaderboard of one task",
                  "Ranked current results (one per model) of a task version, best first, with 95% intervals and rank "
                  "sets (simultaneous, joined with the marginal interval). `metric` ranks by another published metric "
                  "in its direction; `limit` bounds the rows (default 100).", order=1),
        client="leaderboard", cli=Cli("leaderboard", "ranked results of one task", order=2),
        site_page="/tasks/{slug}",
    ),
    ReadQuestion(
        "results", "/v1/results", (
            Param("dataset", _opt(str), described("Dataset slug.", default=None)),
            Param("task", _opt(str), partial(task_parameter, required=False)),
            Param("model", _opt(str), described("Model slug or provider model id.", default=None)),
            Param("model_type", _opt(schemas.ModelType), described("Model type.", default=None)),
            Param("tier", _opt(schemas.Tier), described("Tier: baseline or official.", default=None)),
            LIMIT, OFFSET, RELEASE,
        ), qa.ResultsArgs, ANSWERS + "results", schemas.ResultPage,
        operation_id="listResults", summary="Results matching all given filters",
        description="Result summaries, filtered (all filters combine with AND) and paginated. "
        "`task` accepts `slug@version` or `slug` (latest version); `model` a slug or a provider model id.",
        errors={400: "`invalid_parameter`", 404: "`release_not_found`"},
        client="results",
    ),
    ReadQuestion(
        "result", "/v1/results/{run_id}", (Param("run_id", str, in_path=True, cli=CliArg()), RELEASE),
        qa.ResultArgs, ANSWERS + "result", schemas.Result,
        operation_id="getResult", summary="One result",
        description="All metrics with 95% CIs, configuration, versions, usage, cost, BibTeX and the predictions URL.",
        errors={400: "`invalid_parameter`", 404: "`run_not_found` (also for a malformed run id); `release_not_found`"},
        tool=Tool("get_result", "One result", "Everything about one result: all metrics with 95% CIs, configuration, "
                  "exact versions, usage, cost, BibTeX and the predictions URL.", order=2),
        client="result", cli=Cli("result", "one result: metrics with CIs, versions, cost, BibTeX", order=3),
        site_page="/r/{run_id}",
    ),
    ReadQuestion(
        "lookup", "/v1/lookup", (
            Param("model", str, partial(model_parameter, "Model slug (`provider/name`) or the provider's model id."),
                  cli=CliArg(None, "model slug (provider/name) or provider model id")),
            Param("task", str, task_parameter, cli=CliArg(None, TASK_HELP)),
            RELEASE,
            Param("judge", _opt(str), described("Rubric tasks: the result graded by this judge model (slug) instead "
                                                 "of the task's own judge.", default=None, max_length=200)),
        ), qa.LookupArgs, ANSWERS + "lookup", schemas.Lookup,
        operation_id="lookup", summary="Whether a model has been evaluated on a task",
        description="`{\"status\": \"evaluated\", \"result\": Result}` or `{\"status\": \"not_evaluated\", \"result\": "
        "null}`. With several results for the pair, the newest one not superseded.",
        errors={400: "`invalid_parameter`: missing parameter, or a provider model id shared by several models "
                "(the message lists their slugs)",
                404: "`task_not_found`, `release_not_found`"},
        tool=Tool("lookup", "Look up before you run", qa.LOOKUP_ADVICE, order=0),
        client="lookup", cli=Cli("lookup", "rule one: has MODEL been evaluated on TASK? (exit 1 when not)", order=4),
    ),
    ReadQuestion(
        "compare", "/v1/compare", (
            Param("a", str, partial(run_id_parameter, "The first result."),
                  cli=CliArg(None, "run id of the first result")),
            Param("b", str, partial(run_id_parameter, "The second result (same task version)."),
                  cli=CliArg(None, "run id of the second result")),
        ), qa.CompareArgs, ANSWERS + "compare", schemas.Compare,
        operation_id="compare", summary="Paired comparison of two results of one task",
        description=_compare_description,
        errors={400: "`invalid_parameter`: a or b missing or not a run id, results of different task versions, "
                "nothing comparable",
                404: "`run_not_found`"},
        tool=Tool("compare", "Compare two results", _comparison_text, order=3),
        client="compare", cli=Cli("compare", "paired comparison of two results of one task (a minus b)", order=8),
        site_page="/compare",
    ),
    ReadQuestion(
        "models", "/v1/models", (
            Param("q", _opt(str), described("Substring of the name, slug or provider model id.", default=None),
                  cli=CliArg("--q", "case-insensitive substring of the name, slug or provider model id")),
            Param("type", _opt(schemas.ModelType), described("Only models of this type.", default=None),
                  cli=CliArg("--type", choices=MODEL_TYPES)),
            Param("provider", _opt(str), described("Only models of this provider.", default=None),
                  cli=CliArg("--provider")),
            Param("limit", int, limit_parameter, cli=CliArg("--limit", "at most this many models (1..1000)", type=int)),
            Param("offset", int, offset_parameter, cli=CliArg("--offset", type=int)),
        ), qa.FindModelsArgs, ANSWERS + "models", schemas.ModelPage,
        operation_id="listModels", summary="Models, by name, slug or provider model id",
        description="Every model of the warehouse with its current results (`evaluations`: task version and run "
        "id). `q` is a case-insensitive substring of the name, the slug or the provider model id; all filters "
        "combine with AND; no match is an empty list.",
        errors={400: "`invalid_parameter`"},
        tool=Tool("find_models", "Find models", "Models by name, slug or provider model id (`q`, case-insensitive "
                  "substring), type or provider, each with its current results (task and run id). Paginated with "
                  "`limit` and `offset`.", order=6),
        client="models",
        cli=Cli("models", "find models by name, slug or provider model id (exit 1 when none matches)", order=7),
        site_page="/models",
    ),
    ReadQuestion(
        "model", "/v1/models/{provider}/{name}", (
            Param("provider", str, described("The slug's provider part."), in_path=True),
            Param("name", str, described("The slug's name part."), in_path=True),
        ), qa.ModelArgs, ANSWERS + "model", schemas.ModelInfo,
        operation_id="getModel", summary="One model by its slug",
        description="The model `provider/name` as listed by /v1/models, with its current results.",
        errors={400: "`invalid_parameter`", 404: "`model_not_found`"},
        client="model",
    ),
    ReadQuestion(
        "stats", "/v1/stats", (), qa.NoArgs, ANSWERS + "stats", schemas.Stats,
        operation_id="getStats", summary="Counts, total cost, number of reuses",
        description="`reuses` counts lookups answered `evaluated` and predictions downloads; it is live.",
        tool=Tool("stats", "Counts", "Counts of datasets, tasks, models and results, total cost, reuses and the "
                  "warehouse version served.", order=8),
        client="stats", cli=Cli("stats", "counts, total cost, reuses", order=6), cache_control="live",
        site_page="/",
    ),
    ReadQuestion(
        "releases", "/v1/releases", (LIMIT, OFFSET), qa.PageArgs, ANSWERS + "releases", schemas.ReleasePage,
        operation_id="listReleases", summary="Every release, newest first",
        description="Each publish that changed content is a release, kept for ever: its id (the warehouse version "
        "it was published as), time, number of results, tasks, the sha256 of its manifest and the release before it.",
        errors={400: "`invalid_parameter`", **LOG_UNAVAILABLE},
        client="releases",
    ),
    ReadQuestion(
        "release", "/v1/releases/{id}", (Param("id", str, in_path=True),), qa.ReleaseArgs, ANSWERS + "release",
        schemas.Release,
        operation_id="getRelease", summary="One release, its manifest and BibTeX",
        description="The manifest lists every result with its `predictions_sha256` and status, and each task's "
        "leaderboard rows as they stood; `manifest_sha256` is the sha256 of its canonical JSON (keys sorted, no "
        "whitespace). `?release=<id>` on the leaderboard, results, result and lookup routes answers as of it.",
        errors={400: "`invalid_parameter`", 404: "`release_not_found`", **LOG_UNAVAILABLE},
        client="release", site_page="/releases/{release_id}",
    ),
    ReadQuestion(
        "keys", "/v1/keys", (), qa.NoArgs, ANSWERS + "keys", schemas.KeyList,
        operation_id="listKeys", summary="The public keys that check signatures",
        description="Every Ed25519 public key that signed a result or a release (`signature.key_id` names one), "
        "oldest first, with its fingerprint and validity dates; `valid_until` is null for the key in use. "
        "`medbench verify` checks a result or a release against them, or against keys you already trust.",
        client="keys", site_page="/about",
    ),
    # -- asked on a route of another question, or of another store ---------------------------------------
    ReadQuestion(
        "predictions_url", "/v1/results/{run_id}", (Param("run_id", str, in_path=True), RELEASE), qa.ResultArgs,
        ANSWERS + "predictions_link", schemas.PredictionsLink, route=False, remote=ANSWERS + "remote_predictions_link",
        tool=Tool("predictions_url", "Where a result's predictions are", "The URL of a result's per-item predictions "
                  "(Parquet) and their sha256: download and check them instead of recomputing.", order=7),
        site_page="/r/{run_id}",
    ),
    ReadQuestion(
        "submission", "/v1/submissions/{submission_id}", (Param("submission_id", str, in_path=True, field="id"),),
        qa.SubmissionArgs, ANSWERS + "submission", schemas.Submission, route=False, warehouse=False, threaded=True,
        tool=Tool("submission_status", "Where a submission stands", "A model submission's state (received, "
                  "validated, awaiting_package, awaiting_approval, queued, running, evaluated, failed or rejected), "
                  "the reason for it, its run ids once it runs, and every transition with its time and reason.",
                  order=9),
        site_page="/submissions/{submission_id}",
    ),
)
QUESTIONS: tuple[ReadQuestion, ...] = (*_OWN, *LOG_QUESTIONS)


def registered() -> tuple[ReadQuestion, ...]:
    """The table as every surface reads it: ``QUESTIONS`` plus any ``register``-ed since."""
    return QUESTIONS + tuple(_EXTRA)


_EXTRA: list[ReadQuestion] = []


def check(question: ReadQuestion) -> None:
    """A declaration every surface can derive from: its parameters are its Struct's fields, each path
    parameter is in its path, its route is under ``/v1``, and the names it takes on each surface (its
    derived site page's path too) are free."""
    if not question.path.startswith(V1 + "/"):
        raise ValueError(f"read question {question.name!r}: its path {question.path!r} is not under {V1}/")
    fields = {f.name for f in msgspec.structs.fields(question.args)}
    declared = {p.attr for p in question.params}
    if fields != declared:
        raise ValueError(f"read question {question.name!r}: its parameters {sorted(declared)} are not the fields "
                         f"of {question.args.__name__} {sorted(fields)}; declare one Param per field")
    for p in question.params:
        if p.in_path and "{" + p.name + "}" not in question.path:
            raise ValueError(f"read question {question.name!r}: path parameter {p.name!r} is not in {question.path}")
    taken = [(q.tool and q.tool.name, q.client, q.cli and q.cli.command, q.route and q.path) for q in registered()]
    for i, mine in enumerate((question.tool and question.tool.name, question.client,
                              question.cli and question.cli.command, question.route and question.path)):
        if mine and any(other[i] == mine for other in taken):
            raise ValueError(f"read question {question.name!r}: {mine!r} is already another question's")
    shape = path_shape(question.site_path)
    if question.site_page is None and any(path_shape(q.site_path) == shape for q in registered()):
        raise ValueError(f"read question {question.name!r}: its site page {question.site_path!r} is already another "
                         "question's; name another path (site_page) or another route")


def register(question: ReadQuestion) -> ReadQuestion:
    """Add a question after the built-in ones (a plug-in's, or a test's); the surfaces built afterwards
    (routes of a new app, the MCP tools listed, the client's methods, the CLI's commands) include it."""
    if any(q.name == question.name for q in registered()):
        raise ValueError(f"a read question named {question.name!r} is already declared")
    check(question)
    _EXTRA.append(question)
    return question


def unregister(name: str) -> None:
    _EXTRA[:] = [q for q in _EXTRA if q.name != name]


def tools() -> list[ReadQuestion]:
    """The questions MCP asks, in ``tools/list`` order."""
    return sorted((q for q in registered() if q.tool is not None), key=lambda q: q.tool.order)  # type: ignore[union-attr]
