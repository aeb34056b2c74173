"""A read question's answer and parameters as HTML, read along its declared Structs.

The page ``api.site.question_pages`` derives for a question without a hand-made one shows the very
JSON its ``/v1`` route sends, walked along the body Struct's declared fields (``msgspec.inspect``),
so that a new question needs no template: a Struct is a list of definitions in the order it declares
its fields, a list of Structs a table whose columns are those fields, a union the member the value
decoded as, a scalar its text; a list shows its first ``MAX_ITEMS``, as the leaderboard page
shows its first rows, so that a page stays small. Its form is read off the parameter Struct the same way: a choice of
a ``Literal``'s values, a number within a numeric field's bounds, text otherwise.

Every piece of text from the answer goes through ``markupsafe.escape`` (``Markup.format`` escapes what
it is given), and only an ``http(s)`` URL becomes a link, so nothing an answer holds (a model's name,
a spec's free text) can add markup to the page.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import msgspec
from markupsafe import Markup, escape
from msgspec import inspect as mi

from api.read_question import ReadQuestion

_URL_RE = re.compile(r"^https?://[^\s]+$")
_CODE_RE = re.compile(r"`([^`]+)`")
MAX_ITEMS = 50  # items a list shows (its JSON twin has them all): a page stays small (docs/api.md, "The website")
_ANY = mi.AnyType()
_NONE = Markup('<span class="muted">none</span>')
_RECORDS = (mi.StructType, mi.TypedDictType, mi.DataclassType)
_SEQUENCES = (mi.ListType, mi.VarTupleType, mi.TupleType, mi.SetType, mi.FrozenSetType)


@lru_cache(maxsize=256)
def type_of(struct: type) -> mi.Type:
    """``msgspec.inspect.type_info`` of a declared Struct, read once."""
    return mi.type_info(struct)


def prose(text: str) -> Markup:
    """A declaration's description as HTML: escaped, with its `code` spans set as code."""
    return Markup(_CODE_RE.sub(r"<code>\1</code>", str(escape(text))))


def _unwrap(t: mi.Type) -> mi.Type:
    while isinstance(t, mi.Metadata):
        t = t.type
    return t


def _fits(t: mi.Type, value: Any) -> bool:
    if value is None:
        return isinstance(t, mi.NoneType)
    if isinstance(value, dict):
        if isinstance(t, mi.StructType) and t.tag_field is not None:
            return value.get(t.tag_field) == t.tag
        return isinstance(t, (*_RECORDS, mi.DictType))
    if isinstance(value, list):
        return isinstance(t, _SEQUENCES) or (isinstance(t, mi.StructType) and t.array_like)
    return not isinstance(t, (mi.NoneType, *_RECORDS, mi.DictType, *_SEQUENCES))


def _member(t: mi.Type, value: Any) -> mi.Type:
    """The type ``value`` was decoded as: ``t``, or the member of the union ``t`` that fits it."""
    t = _unwrap(t)
    if isinstance(t, mi.UnionType):
        return next((m for m in map(_unwrap, t.types) if _fits(m, value)), _ANY)
    return t


def _fields(t: mi.Type, value: dict[str, Any]) -> list[tuple[str, mi.Type]]:
    """The names (as encoded) and types of a record, the Struct's order first, then any other key."""
    if isinstance(t, _RECORDS):
        declared = [(f.encode_name, f.type) for f in t.fields]
    else:
        declared = [(k, t.value_type if isinstance(t, mi.DictType) else _ANY) for k in value]
    names = {name for name, _ in declared}
    return declared + [(k, _ANY) for k in value if k not in names]


def html(value: Any, t: mi.Type = _ANY) -> Markup:
    """``value`` (decoded JSON) as HTML, read as the type ``t`` declares it."""
    t = _member(t, value)
    if value is None:
        return _NONE
    if isinstance(t, mi.StructType) and t.array_like and isinstance(value, list):
        value = dict(zip((f.encode_name for f in t.fields), value, strict=False))
    if isinstance(value, dict):
        return _definitions(value, t)
    if isinstance(value, list):
        return _listing(value, t)
    return _scalar(value)


def _definitions(value: dict[str, Any], t: mi.Type) -> Markup:
    items = [Markup("<div><dt>{}</dt><dd>{}</dd></div>").format(name, html(value[name], ft))
             for name, ft in _fields(t, value) if name in value]
    return Markup('<dl class="facts">{}</dl>').format(Markup("").join(items)) if items else _NONE


def _item_type(t: mi.Type, index: int) -> mi.Type:
    if isinstance(t, mi.TupleType):
        return t.item_types[index] if index < len(t.item_types) else _ANY
    return t.item_type if isinstance(t, _SEQUENCES) else _ANY


def _listing(values: list[Any], t: mi.Type) -> Markup:
    """A list of records as a table (one column per field any row has), anything else as a list."""
    if not values:
        return _NONE
    more = (Markup('<p class="muted more">{} more, not shown here: the JSON has them all.</p>')
            .format(len(values) - MAX_ITEMS) if len(values) > MAX_ITEMS else Markup(""))
    values = values[:MAX_ITEMS]
    if not all(isinstance(v, dict) for v in values):
        items = Markup("").join(Markup("<li>{}</li>").format(html(v, _item_type(t, i))) for i, v in enumerate(values))
        return Markup("<ul>{}</ul>{}").format(items, more)
    rows = [(v, dict(_fields(_member(_item_type(t, i), v), v))) for i, v in enumerate(values)]
    columns = list(dict.fromkeys(name for v, fields in rows for name in fields if name in v))
    head = Markup("").join(Markup("<th>{}</th>").format(c) for c in columns)
    body = Markup("").join(
        Markup("<tr>{}</tr>").format(Markup("").join(
            Markup("<td>{}</td>").format(html(v[c], fields[c]) if c in v else "") for c in columns))
        for v, fields in rows)
    return Markup('<div class="table-wrap"><table class="answer"><thead><tr>{}</tr></thead><tbody>{}</tbody>'
                  "</table></div>{}").format(head, body, more)


def _scalar(value: Any) -> Markup:
    if isinstance(value, bool):
        return Markup("true" if value else "false")
    if isinstance(value, str):
        if _URL_RE.match(value):
            return Markup('<a href="{0}">{0}</a>').format(value)
        return Markup("<pre>{}</pre>").format(value) if "\n" in value else escape(value)
    return escape(str(value))


@dataclass(frozen=True)
class Part:
    """One field of an answer: its name and its HTML; ``block``: a list or a record, shown under a heading."""

    name: str
    html: Markup
    block: bool


def answer_parts(body: Any, struct: type) -> list[Part]:
    """The fields of an answer's body, in the order its Struct declares them."""
    t = _member(type_of(struct), body)
    if not isinstance(body, dict):
        return [Part("answer", html(body, t), True)]
    return [Part(name, html(body[name], ft), isinstance(body[name], (dict, list)))
            for name, ft in _fields(t, body) if name in body]


# -- the form ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FormField:
    """One query parameter as a form control: a choice of ``choices``, a number or text."""

    name: str
    value: str
    help: str
    required: bool
    control: str  # "select", "number" or "text"
    choices: tuple[str, ...] = ()
    minimum: float | None = None
    maximum: float | None = None
    placeholder: str = ""


def _described(t: mi.Type) -> tuple[mi.Type, str]:
    """The type under any ``Annotated`` and ``None`` member, and the description its ``Meta`` gives."""
    description = ""
    while True:
        if isinstance(t, mi.Metadata):
            description = description or str((t.extra_json_schema or {}).get("description", ""))
            t = t.type
        elif isinstance(t, mi.UnionType) and t.includes_none and len(t.types) == 2:
            t = next(m for m in t.types if not isinstance(m, mi.NoneType))
        else:
            return t, description


def form_fields(question: ReadQuestion, given: Mapping[str, str]) -> list[FormField]:
    """The form of ``question``'s query parameters (path parameters are the page's path), filled with ``given``."""
    fields = {f.name: f for f in type_of(question.args).fields}  # type: ignore[attr-defined]
    out = []
    for param in question.params:
        if param.in_path:
            continue
        field = fields[param.attr]
        t, description = _described(field.type)
        help_text = description or (param.cli.help if param.cli and param.cli.help else "")
        default = "" if field.default in (msgspec.NODEFAULT, None) else str(field.default)
        common = {"name": param.name, "value": given.get(param.name, ""), "help": help_text,
                  "required": field.required, "placeholder": default}
        if isinstance(t, mi.LiteralType):
            out.append(FormField(**common, control="select", choices=tuple(str(v) for v in t.values)))
        elif isinstance(t, mi.EnumType):
            out.append(FormField(**common, control="select", choices=tuple(str(m.value) for m in t.cls)))
        elif isinstance(t, mi.BoolType):
            out.append(FormField(**common, control="select", choices=("true", "false")))
        elif isinstance(t, (mi.IntType, mi.FloatType)):
            out.append(FormField(**common, control="number", minimum=t.ge, maximum=t.le))
        else:
            out.append(FormField(**common, control="text"))
    return out
