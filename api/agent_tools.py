"""The MCP tools: names, descriptions, and typed input and output schemas from msgspec Structs.

Each tool is a read question of ``api.questions`` that declares one: ``/v1`` answers the same
question, and the tool's output schema is generated from the very Struct that route's body is
encoded from (``api.schemas``), so an agent sees the same shapes over MCP and HTTP. Inputs are the
question's parameter Struct (``api.question_args``): its JSON Schema is the tool's ``inputSchema``
and ``arguments`` are converted into it, so a bad argument is refused the way ``/v1`` refuses a bad
query parameter (``invalid_parameter`` naming it). Every tool is read-only. What answers the
questions (this process's tables, or another server over HTTP) is ``api.agent_sources``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import msgspec

from api.errors import ApiError, invalid_parameter
from api.questions import ReadQuestion, text, tools


@dataclass(frozen=True)
class ToolSpec:
    """An MCP tool, as ``api.questions`` declares it: its question gives the input and output Structs."""

    name: str
    title: str
    description: str
    args: type[msgspec.Struct]
    output: type[msgspec.Struct]
    route: str  # the /v1 route asking the same question
    question: ReadQuestion


def tool_specs() -> tuple[ToolSpec, ...]:
    """Every tool, in ``tools/list`` order, derived from the table of read questions."""
    return tuple(ToolSpec(q.tool.name, q.tool.title, text(q.tool.description), q.args, q.body, q.path, q)
                 for q in tools() if q.tool is not None)


def tool_by_name() -> dict[str, ToolSpec]:
    return {tool.name: tool for tool in tool_specs()}


TOOLS = tool_specs()  # the built-in tools (a question registered later is in ``tool_specs()``)


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
        for t in tool_specs()
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
    return ApiError(404, "not_found", f"no tool {name[:100]!r}; the tools are {', '.join(tool_by_name())}")
