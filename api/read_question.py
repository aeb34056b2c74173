"""What a read question is (``ReadQuestion``) and how each surface takes its parameters (``Param``, ``CliArg``).

The declarations of ``api.questions``' table: plain frozen dataclasses, so that the table costs its
readers (the typed client, the CLI) nothing beyond msgspec. Litestar declarations and answer
functions are named lazily: a ``Param``'s ``declare`` is called when the routes are built, and an
answer named ``"module:function"`` is imported when first asked.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

V1 = "/v1"  # every question's route starts with it; its site page, when derived, is its path without it
_PARAMETER_RE = re.compile(r"{[^}]*}")


def path_shape(path: str) -> str:
    """A path with its parameters unnamed and untyped: ``/r/{run_id}`` and ``/r/{x:str}`` are one route."""
    return _PARAMETER_RE.sub("{}", path)


@dataclass(frozen=True)
class CliArg:
    """How the CLI takes a parameter: a positional argument (``flag`` None) or an option."""

    flag: str | None = None
    help: str | None = None
    choices: tuple[str, ...] | None = None
    type: Callable[[str], Any] | None = None
    metavar: str | None = None


@dataclass(frozen=True)
class Param:
    """One parameter: its name on the wire (query string or path), its type, and how each surface takes it.

    ``declare`` builds the Litestar declaration the route and the OpenAPI document show (the query
    parameter's default, or a path parameter's ``Annotated`` metadata); ``route_type`` overrides
    the route's annotation where it carries its own declaration. ``field`` is the ``args`` Struct's
    field when its name is not the wire name (``from`` is ``from_``)."""

    name: str
    type: Any = str
    declare: Callable[[], Any] | None = None
    in_path: bool = False
    field: str | None = None
    route_type: Callable[[], Any] | None = None
    cli: CliArg | None = None

    @property
    def attr(self) -> str:
        return self.field or self.name


@dataclass(frozen=True)
class Tool:
    """The MCP tool asking a question; ``order`` places it in ``tools/list`` (new tools: after the rest)."""

    name: str
    title: str
    description: str | Callable[[], str]
    order: int = 1000


@dataclass(frozen=True)
class Cli:
    """The CLI command asking a question (``pipelines.cli.client`` prints its answer)."""

    command: str
    help: str
    order: int = 1000  # its place in ``medbench --help`` (new commands: after the rest)


@dataclass(frozen=True)
class ReadQuestion:
    name: str
    path: str  # the /v1 route (path parameters in braces)
    params: tuple[Param, ...]
    args: type  # the parameters as one msgspec Struct (api.question_args)
    answer: str | Callable[..., Any]  # answer(asked, args) -> Prepared | Answer, or "module:function"
    body: type  # the Struct of the 200 body
    operation_id: str = ""
    summary: str = ""
    description: str | Callable[[], str] = ""  # a callable: text built when the routes are
    errors: Mapping[int, str] = field(default_factory=dict)
    tool: Tool | None = None
    client: str | None = None  # the ApiClient method
    cli: Cli | None = None
    route: bool = True  # False: the route is declared by hand (the log's, in api.routes.log)
    warehouse: bool = True  # False: answered without the published tables (the submissions store)
    threaded: bool = False  # the answer reads files: run it in a worker thread
    cache_control: str | None = None  # None: the published answers' default
    remote: str | None = None  # "module:function" asking another server, when not GET path with params
    # the website's hand-made page showing this answer ("/tasks/{slug}", a route of ``api.site.routes``);
    # None: the page derived from this declaration (``api.site.question_pages``), at ``site_path``
    site_page: str | None = None

    @property
    def has_release(self) -> bool:
        return any(p.name == "release" for p in self.params)

    @property
    def site_path(self) -> str:
        """Where the website shows this answer: its hand-made page, or the ``/v1`` path without ``/v1``."""
        return self.site_page or self.path.removeprefix(V1)

    def answer_fn(self) -> Callable[..., Any]:
        return resolve(self.answer)


def resolve(ref: str | Callable[..., Any]) -> Callable[..., Any]:
    if callable(ref):
        return ref
    module, _, name = ref.partition(":")
    return getattr(importlib.import_module(module), name)


def described(description: str | None, **extra: Any) -> Callable[[], Any]:
    """A lazy Litestar ``Parameter(description=..., **extra)``: what most parameters declare."""

    def declare() -> Any:
        from litestar.params import Parameter

        return Parameter(description=description, **extra)
    return declare


def text(value: str | Callable[[], str]) -> str:
    return value() if callable(value) else value
