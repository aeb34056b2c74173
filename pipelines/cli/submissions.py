"""``medbench submit``, ``medbench submissions status|list|approve|reject`` and ``medbench tokens
create|list|revoke``.

``submit`` and ``submissions status|list`` are API clients (``--api-url``, exit codes of docs/cli.md:
0 found, 1 not found or refused, 2 usage or invalid submission, 3 unreachable). ``tokens`` and
``submissions approve|reject`` are the maintainers' and work on the store directly (the data
directory's, or ``$MEDBENCH_SUBMISSIONS_DB``): no HTTP route creates a token or approves a
submission. A token's secret is printed once, by ``tokens create``, and never again.

Its file name is shared on purpose: each ``medbench`` command's module is named after the command or
the noun it serves (docs/cli.md), whatever other package has a module of that name.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tomllib
from pathlib import Path
from typing import Any

from pipelines.cli.client import api_url_option, common_options, emit, plain, run

TOKEN_ENV = "MEDBENCH_TOKEN"
_DURATION_RE = re.compile(r"^(\d+)([smhd])$")
_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def duration(text: str) -> float | None:
    """``90d``, ``12h``, ``30m``, ``45s`` -> seconds; ``never`` -> None."""
    if text == "never":
        return None
    match = _DURATION_RE.match(text)
    if not match or int(match.group(1)) == 0:
        raise argparse.ArgumentTypeError(f"{text!r}: give a positive number and a unit (90d, 12h, 30m, 45s) or never")
    return int(match.group(1)) * _SECONDS[match.group(2)]


def add_parser(sub: argparse._SubParsersAction) -> None:
    common = common_options()
    p = sub.add_parser("submit", parents=[common], help="submit a model for evaluation (a token with scope submit)",
                       description="Submit SPEC.toml (a model spec without provider, tasks and price) for evaluation "
                       "on the given tasks. The token comes from --token or $MEDBENCH_TOKEN.")
    p.add_argument("spec", type=Path, metavar="SPEC.toml")
    p.add_argument("--task", action="append", default=[], metavar="T", help="slug@version (repeatable)")
    p.add_argument("--tier", choices=("baseline", "official"), default="baseline")
    p.add_argument("--package", type=Path, default=None, metavar="WHEEL",
                   help="official tier: the wheel to submit (its sha256 is sent, then the file is uploaded)")
    p.add_argument("--token", default=None, help=f"the bearer token (default: ${TOKEN_ENV})")
    p.set_defaults(func=lambda args: run(_submit, args))

    subs = sub.add_parser("submissions", help="submissions: status, list; approve and reject (maintainers)")
    actions = subs.add_subparsers(dest="action", required=True, metavar="ACTION")
    p = actions.add_parser("status", parents=[common], help="one submission: its state and history")
    p.add_argument("id")
    p.set_defaults(func=lambda args: run(_status, args))
    p = actions.add_parser("list", parents=[common], help="submissions, newest first")
    p.add_argument("--owner", default=None)
    p.add_argument("--state", default=None)
    p.add_argument("--limit", type=int, default=None)
    p.add_argument("--offset", type=int, default=None)
    p.set_defaults(func=lambda args: run(_list, args))
    for action, help_text in (("approve", "queue a submission for evaluation (maintainers; reads the store directly)"),
                              ("reject", "reject a submission, with the reason its owner will read (maintainers)")):
        p = actions.add_parser(action, help=help_text)
        p.add_argument("id")
        p.add_argument("--reason", required=True, help="one line, shown in the submission's history")
        p.set_defaults(func=_decide)

    from pipelines.cli.submissions_run import add_action

    add_action(actions)

    tokens = sub.add_parser("tokens", help="API tokens (maintainers): create, list, revoke")
    actions = tokens.add_subparsers(dest="action", required=True, metavar="ACTION")
    p = actions.add_parser("create", help="create a token and print its secret (once)")
    p.add_argument("--owner", required=True, help="the provider it submits as (the slug namespace)")
    p.add_argument("--scope", action="append", required=True, choices=("submit",))
    p.add_argument("--expires-in", type=duration, default=duration("90d"), metavar="DURATION",
                   help="90d (default), 12h, 30m, 45s, or never")
    p.add_argument("--note", default="", help="what the token is for (shown by tokens list)")
    p.set_defaults(func=_token_create)
    p = actions.add_parser("list", help="one line per token, id first")
    p.set_defaults(func=_token_list)
    p = actions.add_parser("revoke", help="revoke a token: refused from the next request on, in every server process")
    p.add_argument("token_id")
    p.set_defaults(func=_token_revoke)


def _store():
    from medbench.submissions import SubmissionStore

    return SubmissionStore.for_data()


# -- client commands -------------------------------------------------------------------------------


def read_spec(path: Path) -> dict[str, Any]:
    """The spec file as the JSON body's ``model``: TOML dates become ISO strings."""
    from medbench.specs import SpecError

    try:
        spec = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecError(f"{path}: cannot read the spec file ({exc})") from None
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(f"{path}: not valid TOML ({exc})") from None
    import msgspec

    return msgspec.to_builtins(spec)


def _submit(client: Any, args: argparse.Namespace) -> int:
    from api.client import UsageError

    token = args.token or os.environ.get(TOKEN_ENV)
    if not token:
        raise UsageError(f"no token: pass --token or set ${TOKEN_ENV} (the maintainers create tokens)")
    model = read_spec(args.spec)
    tasks = args.task or model.pop("tasks", [])
    model.pop("tasks", None)
    for medbench_owned in ("provider", "price"):  # the token's owner and the maintainers' price table decide
        if model.pop(medbench_owned, None) is not None:
            print(f"note: `{medbench_owned}` in {args.spec} is left out: medbench sets it", file=sys.stderr)
    request: dict[str, Any] = {"model": model, "tasks": tasks, "tier": args.tier}
    if args.package is not None:
        from medbench.packages import sha256_of

        if not args.package.is_file():
            raise UsageError(f"--package {args.package}: no such file")
        request["package_sha256"] = sha256_of(args.package)
    answer = plain(client.submit(request, token))
    if args.package is not None and answer.get("state") == "awaiting_package":
        answer = plain(client.upload_package(answer["id"], args.package, token))
    if args.json:
        emit(answer)
    elif answer.get("status") == "already_evaluated":
        print("already evaluated (rule one): nothing was queued")
        for result in answer["results"]:
            print(f"  {result['task']}  {result['metric']['name']} {result['metric']['value']:.4f}  {result['url']}")
    else:
        print(describe(answer))
        print(f"follow it: medbench submissions status {answer['id']}{api_url_option(args)}")
    return 0


def describe(sub: dict[str, Any]) -> str:
    lines = [f"submission {sub['id']}: {sub['state']}" + (f" ({sub['state_reason']})" if sub.get("state_reason") else ""),
             f"  model {sub['model']['slug']} on {', '.join(sub['tasks'])} ({sub['tier']}), owner {sub['owner']}"]
    if sub["run_ids"]:
        lines.append(f"  runs: {', '.join(sub['run_ids'])}")
    lines += [f"  {h['at']}  {h['state']}" + (f": {h['reason']}" if h.get("reason") else "") for h in sub["history"]]
    return "\n".join(lines)


def _status(client: Any, args: argparse.Namespace) -> int:
    sub = plain(client.submission(args.id))
    emit(sub) if args.json else print(describe(sub))
    return 0


def _list(client: Any, args: argparse.Namespace) -> int:
    page = plain(client.submissions(owner=args.owner, state=args.state, limit=args.limit, offset=args.offset))
    if args.json:
        emit(page)
    else:
        for sub in page["submissions"]:
            print(f"{sub['id']}  {sub['state']:<17}  {sub['owner']}  {sub['model']['slug']}  {','.join(sub['tasks'])}  "
                  f"{sub['updated_at']}")
        print(f"{len(page['submissions'])} of {page['total']}", file=sys.stderr)
    return 0 if page["submissions"] else 1


# -- maintainers' commands (the store, directly) -------------------------------------------------


def _decide(args: argparse.Namespace) -> int:
    from medbench.submissions import IllegalTransition, SubmissionNotFound

    from pipelines.engine.submission_review import review

    try:
        sub = review(_store(), args.id, args.action, args.reason)  # the same as the Dagster job review_submission
    except SubmissionNotFound as exc:
        from medbench.layout import DataDir, where

        print(f"medbench submissions {args.action}: {exc} {where(DataDir().root)}", file=sys.stderr)
        return 1
    except (IllegalTransition, ValueError) as exc:
        print(f"medbench submissions {args.action}: {exc}", file=sys.stderr)
        return 1
    print(f"submission {sub.id}: {sub.state} ({sub.state_reason})")
    if args.action == "approve" and sub.tier == "official":
        from pipelines.official.policy import from_env

        res = sub.resources
        policy = from_env(res.pool, res.memory_gib, res.wall_minutes) if res else from_env()
        asked = f" (asked: {res.memory_gib:g} GiB, {res.wall_minutes:g} min)" if res else ""
        print(f"effective sandbox limits: {policy.effective_limits()}{asked}")
    return 0


def _token_create(args: argparse.Namespace) -> int:
    token, secret = _store().tokens.create(args.owner, args.scope, expires_in_s=args.expires_in, note=args.note)
    print(token.line(), file=sys.stderr)
    print("the secret below is shown once and never stored; give it to the token's owner:", file=sys.stderr)
    print(secret)
    return 0


def _token_list(args: argparse.Namespace) -> int:
    for token in _store().tokens.list():
        print(token.line())
    return 0


def _token_revoke(args: argparse.Namespace) -> int:
    from medbench.submissions import TokenNotFound

    try:
        token = _store().tokens.revoke(args.token_id)
    except TokenNotFound as exc:
        from medbench.layout import DataDir, where

        print(f"medbench tokens revoke: {exc} {where(DataDir().root)}", file=sys.stderr)
        return 1
    print(token.line())
    return 0
