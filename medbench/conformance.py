"""Protocols enforced at registration: a plug-in that lacks a required member, or has one of the
wrong shape, fails when it is registered, in one line naming its distribution, its class and the
member (docs/adding-a-task.md, "Checked at load"), never later as a ``None`` score or an
``AttributeError`` deep in a run.

What is required is read from the protocol itself (``medbench.protocols``,
``medbench.kind``): a class-level annotation with no value, and a method whose body is only
a docstring and/or ``...``. A plug-in that subclasses the protocol inherits those stubs, so a stub
still in place counts as missing. The shape: an attribute annotated ``str`` is a string (``str |
None``: or None), a ``tuple`` one a tuple, a ``type`` one a class, a ``pa.Schema`` one a pyarrow
schema, a ``Mapping`` one a mapping, a ``bool`` one True or False; a method is callable and takes
the protocol's positional arguments. A required method a plug-in may still define under an older
spelling (``medbench.old_spellings``) is present under either name.
"""

from __future__ import annotations

import ast
import functools
import inspect
import textwrap
from collections.abc import Mapping
from typing import Any

import pyarrow as pa

from medbench.old_spellings import defines, old_method


class PluginError(ValueError):
    """A plug-in does not implement its protocol; the message is one line saying where and what."""


def _stub(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    body = list(fn.body)
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        body = body[1:]
    return all(isinstance(s, ast.Pass) or (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant)
                                           and s.value.value is Ellipsis) for s in body)


@functools.cache
def required_members(protocol: type) -> dict[str, tuple[str, str]]:
    """name -> ("attribute", annotation text) or ("method", "") of what ``protocol`` requires."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(protocol)))
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef))
    out: dict[str, tuple[str, str]] = {}
    for node in cls.body:
        if isinstance(node, ast.AnnAssign) and node.value is None and isinstance(node.target, ast.Name):
            out[node.target.id] = ("attribute", ast.unparse(node.annotation))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and _stub(node):
            out[node.name] = ("method", "")
    return out


def _shape_error(value: Any, annotation: str) -> str | None:
    inner = annotation.removeprefix("ClassVar[").removesuffix("]") if annotation.startswith("ClassVar[") else annotation
    options = {o.strip() for o in inner.split("|")}
    if options <= {"str", "None"} or options <= {"KindName", "None"}:
        ok = isinstance(value, str) or ("None" in options and value is None)
        return None if ok else f"must be a string{' or None' if 'None' in options else ''}, not {type(value).__name__}"
    if inner.startswith("tuple["):
        return None if isinstance(value, tuple) else f"must be a tuple, not {type(value).__name__}"
    if inner.startswith("type["):
        return None if isinstance(value, type) else f"must be a class, not {type(value).__name__}"
    expected = _SHAPES.get(inner.partition("[")[0])
    if expected is not None and not isinstance(value, expected[0]):
        return f"must be {expected[1]}, not {type(value).__name__}"
    return None


# annotation (without its parameters) -> (the type a value must be, in words): what a wrong value
# would otherwise break far from the plug-in (a schema the engine writes Parquet with, a table of
# SQL types the publisher reads, a flag the solver branches on)
_SHAPES: dict[str, tuple[type | tuple[type, ...], str]] = {
    "pa.Schema": (pa.Schema, "a pyarrow Schema"),
    "Mapping": (Mapping, "a mapping"),
    "bool": (bool, "True or False"),
}


def _positional(fn: Any) -> tuple[int, int, bool]:
    """(required positional parameters, all positional parameters, takes *args) of a bound callable."""
    params = list(inspect.signature(fn).parameters.values())
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    required = [p for p in positional if p.default is p.empty]
    return len(required), len(positional), any(p.kind == p.VAR_POSITIONAL for p in params)


def check_conforms(obj: Any, protocol: type, what: str, origin: str) -> None:
    """Raise ``PluginError`` when ``obj`` (an instance) lacks a member ``protocol`` requires or has one
    of the wrong shape. ``origin``: the distribution it came from, for the message."""
    cls = type(obj)
    where = f"{origin}: {what} {cls.__module__}.{cls.__qualname__}"
    for name, (sort, annotation) in required_members(protocol).items():
        if sort == "attribute":
            if not hasattr(obj, name):
                raise PluginError(f"{where} lacks the required attribute {name!r} ({protocol.__name__}); define it")
            problem = _shape_error(getattr(obj, name), annotation)
            if problem:
                raise PluginError(f"{where}: attribute {name!r} {problem} ({protocol.__name__}: {annotation})")
            continue
        defined = name
        if not defines(cls, protocol, name):
            old = old_method(protocol, name)  # a plug-in written before the one spelling
            if old is None or not defines(cls, protocol, old):
                raise PluginError(f"{where} lacks the required method {name}() ({protocol.__name__}); define it")
            defined = old
        member = getattr(obj, defined)
        if not callable(member):
            raise PluginError(f"{where}: {defined} must be a method, not {type(member).__name__}")
        want = _positional(getattr(protocol, name))[1] - 1  # the protocol's, without self
        required, allowed, star = _positional(member)
        if required > want or (allowed < want and not star):
            raise PluginError(f"{where}: method {defined}() takes {required}-{allowed} positional arguments; "
                              f"{protocol.__name__}.{name} is called with {want}")


__all__ = ["PluginError", "check_conforms", "required_members"]
