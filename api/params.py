"""The request parameters that name things: ``task`` (``slug`` or ``slug@version``) and ``model``.

Parameters are only ever compared with keys of in-memory indexes (never put into SQL or paths), so
parsing is about giving a clear ``invalid_parameter`` for malformed input rather than about safety.
Their declarations live here too, so that what the OpenAPI document promises (a ``pattern``) is
exactly what the server accepts: Litestar validates the same pattern it documents.

The framework is lenient where a client deserves an error: of a parameter given twice it silently
keeps the last value, and percent-encoded bytes that are not UTF-8 become U+FFFD. ``query_guard``
refuses both, for the parameters a route declares, before the handler runs.

Litestar is imported only when a declaration is built (by the routes), so that the table of read
questions (``api.questions``), which names these declarations, costs the typed client nothing.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Collection
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote_to_bytes

from api.errors import invalid_parameter

if TYPE_CHECKING:
    from litestar import Request

_VERSION_RE = re.compile(r"[0-9]{1,9}")
# The blanks dropped around a parameter, spelled out: ``\s`` means more in Python (str.isspace: also
# \x1c-\x1f, \x85, U+2028, ...) than in the ECMA regular expressions of JSON Schema, so a pattern with
# ``\s`` documents one thing and validates another (a fresh schemathesis seed found ``task=+++%0C%1F``).
BLANKS = " \t\n\r\f\v"
_B = r"[ \t\n\r\f\v]"
NOT_BLANK_PATTERN = r"[^ \t\n\r\f\v]"
# What ``parse_task_ref`` accepts, for the OpenAPI document (Litestar validates it as well): a slug
# that is not blank and has no '@', then optionally '@' and a whole number; blanks around are dropped.
TASK_REF_PATTERN = rf"^{_B}*[^@ \t\n\r\f\v][^@]*(@[0-9]{{1,9}}{_B}*)?$"
TASK_DESCRIPTION = "`slug@version`, or `slug` for the latest version."
# A run id, as ``medbench.layout.RUN_ID_RE`` accepts it (documented on every run id parameter).
RUN_ID_PATTERN = r"^[0-9a-f]{12}$"
RUN_ID_DESCRIPTION = "Run id: 12 lowercase hex digits."
# A model slug's two parts (``provider/name``), as the warehouse's specs name them.
SLUG_PART_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]*$"
# Answers are memoised per parameter values; names longer than this (made up, never published) are not.
MAX_CACHED_PARAMETER_CHARS = 512


def task_parameter(required: bool = True) -> Any:
    """The ``task`` query parameter as every route declares it (documented and validated alike)."""
    from litestar.openapi.spec import Example
    from litestar.params import Parameter

    extra = {} if required else {"default": None}
    return Parameter(description=TASK_DESCRIPTION, pattern=TASK_REF_PATTERN,
                     examples=[Example(value="clinicalqa@0")], **extra)


def model_parameter(description: str) -> Any:
    """A required model name: anything but blank (slugs and provider model ids have no fixed form)."""
    from litestar.openapi.spec import Example
    from litestar.params import Parameter

    return Parameter(description=description, pattern=NOT_BLANK_PATTERN, examples=[Example(value="medbench/random")])


def limit_parameter(description: str = "Page size.") -> Any:
    """``limit``: at most this many rows (1..1000, default 100), the same bounds on every listing."""
    from litestar.params import Parameter

    return Parameter(default=100, ge=1, le=1000, description=description)


def offset_parameter() -> Any:
    """``offset``: rows to skip before the page starts."""
    from litestar.params import Parameter

    return Parameter(default=0, ge=0, description="Items to skip.")


def run_id_parameter(description: str) -> Any:
    """A run id in the query string: its form is checked (``invalid_parameter`` naming it)."""
    from litestar.openapi.spec import Example
    from litestar.params import Parameter

    return Parameter(description=f"{description} {RUN_ID_DESCRIPTION}", pattern=RUN_ID_PATTERN,
                     examples=[Example(value="0123456789ab")])


def parse_task_ref(text: str, name: str = "task") -> tuple[str, int | None]:
    """``"clinicalqa@0"`` -> ``("clinicalqa", 0)``; ``"clinicalqa"`` -> ``("clinicalqa", None)`` (latest)."""
    text = text.strip(BLANKS)
    slug, at, version = text.partition("@")
    if not slug:
        raise invalid_parameter(f"{name} must name a task, as in clinicalqa or clinicalqa@0")
    if at:
        if not _VERSION_RE.fullmatch(version):
            raise invalid_parameter(f"{name} {text!r}: the version after '@' must be a whole number, as in clinicalqa@0")
        return slug, int(version)
    return slug, None


def require(value: str | None, name: str) -> str:
    """The parameter's text without surrounding blanks; a missing one and a present but blank one
    (``?model=``, ``?a=%09``) are both ``invalid_parameter``, each said as it is and naming it."""
    if value is None:
        raise invalid_parameter(f"missing query parameter {name!r}")
    if not value.strip(BLANKS):
        raise invalid_parameter(f"query parameter {name!r} is blank; give a value")
    return value.strip(BLANKS)


def check_query(query_string: bytes, declared: Collection[str]) -> None:
    """``invalid_parameter`` for a declared parameter given twice or not UTF-8 once percent-decoded."""
    seen: set[str] = set()
    for pair in query_string.split(b"&"):
        raw_key, _, raw_value = pair.partition(b"=")
        try:
            key = unquote_to_bytes(raw_key.replace(b"+", b" ")).decode("utf-8")
        except UnicodeDecodeError:
            continue  # not a parameter this route declares
        if key not in declared:
            continue
        if key in seen:
            raise invalid_parameter(f"query parameter {key!r} is given more than once; give it once")
        seen.add(key)
        try:
            unquote_to_bytes(raw_value.replace(b"+", b" ")).decode("utf-8")
        except UnicodeDecodeError:
            raise invalid_parameter(f"query parameter {key!r} is not UTF-8 text once percent-decoded") from None


def query_guard(declared: Collection[str]) -> Callable[[Request], Awaitable[None]]:
    """A ``before_request`` hook applying ``check_query`` to the route's own query parameters."""
    names = frozenset(declared)

    async def guard(request: Request) -> None:
        query_string = request.scope["query_string"]
        if query_string:
            check_query(query_string, names)

    return guard


def _known_metrics() -> list[str]:
    """The metric names the checked-in task specs publish (``metrics = [...]`` in ``specs/tasks``): the
    ``metric`` parameter's known values in the OpenAPI document. A task from a plug-in may publish
    others; whatever a task does not publish answers ``metric_not_found`` naming its own."""
    import tomllib
    from pathlib import Path

    names: set[str] = set()
    for path in sorted((Path(__file__).resolve().parent.parent / "specs" / "tasks").glob("*/*.toml")):
        try:
            names.update(str(m) for m in tomllib.loads(path.read_text(encoding="utf-8")).get("metrics", []))
        except (OSError, ValueError):
            continue
    return sorted(names)


KNOWN_METRICS = _known_metrics()


def metric_parameter() -> Any:
    """``metric`` of the leaderboard: a name the task publishes (its known values listed, not an enum)."""
    from litestar.openapi.spec import Example
    from litestar.params import Parameter

    known = ", ".join(f"`{m}`" for m in KNOWN_METRICS)
    return Parameter(default=None, description="Rank by this published metric, in its direction (default: the "
                     f"task's primary metric). Known values: {known}; one the task does not publish answers 404 "
                     "`metric_not_found` naming the task's metrics.",
                     examples=[Example(value=m) for m in KNOWN_METRICS[:3]])


def release_parameter() -> Any:
    """The ``release`` query parameter of the leaderboard, results, result and lookup routes."""
    from litestar.params import Parameter

    return Parameter(default=None, description="Answer as of this release (an id of `GET /v1/releases`); "
                     "default: the current one.")
