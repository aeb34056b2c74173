"""API bodies reuse the shared records instead of copying their fields (docs/concepts.md, "The layers").

A body whose fields are the same, with the same types, as a record's of ``medbench`` or a row of
``warehouse`` inherits them (``Versions``, ``Usage``, ``Judge``, ``Dataset`` through
``DatasetCard``, ``ModelDetail`` through ``ModelCard``), so a field declared in two layers cannot
drift. This test finds any API Struct that declares six or more consecutive fields (name and type)
that a record already declares in that order, the same bar as the ``duplicates`` tool's six lines.
"""

from __future__ import annotations

import importlib
import inspect

import msgspec

from medbench.records import ModelCard

API_MODULES = ("api.schemas", "api.metric_schemas", "api.release_schemas", "api.judge_schemas", "api.tables")
RECORD_MODULES = ("medbench.records", "medbench.specs", "medbench.submissions.records", "warehouse.schema")
LONGEST_ALLOWED = 5
# (API Struct, record): why the fields stay written twice
ALLOWED = {
    ("BaselineComparison", "BaselineComparisonRow"):
        "the row's key column run_id precedes these columns and its p_at_floor is nullable (files before "
        "schema 5): a shared base would move a published column (docs/duckdb.md)",
}


def _structs(modules: tuple[str, ...], prefix: str | tuple[str, ...]) -> list[type[msgspec.Struct]]:
    found: dict[str, type[msgspec.Struct]] = {}
    for name in modules:
        for _, cls in inspect.getmembers(importlib.import_module(name), inspect.isclass):
            if issubclass(cls, msgspec.Struct) and cls is not msgspec.Struct and cls.__module__.startswith(prefix):
                found[f"{cls.__module__}.{cls.__qualname__}"] = cls
    return [found[k] for k in sorted(found)]


def _fields(cls: type[msgspec.Struct]) -> list[tuple[str, str]]:
    return [(f.name, repr(f.type)) for f in msgspec.structs.fields(cls)]


def _own_fields(cls: type[msgspec.Struct]) -> list[tuple[str, str]]:
    """The fields ``cls`` declares itself, not those it inherits from another Struct."""
    bases = [b for b in cls.__mro__[1:] if isinstance(b, type) and issubclass(b, msgspec.Struct) and b is not msgspec.Struct]
    inherited = {name for base in bases for name in base.__struct_fields__}
    return [f for f in _fields(cls) if f[0] not in inherited]


def longest_shared_run(a: list[tuple[str, str]], b: list[tuple[str, str]]) -> int:
    best = 0
    for i in range(len(a)):
        for j in range(len(b)):
            k = 0
            while i + k < len(a) and j + k < len(b) and a[i + k] == b[j + k]:
                k += 1
            best = max(best, k)
    return best


def copies(api: list[type[msgspec.Struct]], records: list[type[msgspec.Struct]]) -> list[str]:
    out = []
    for body in api:
        own = _own_fields(body)
        for record in records:
            run = longest_shared_run(own, _fields(record))
            if run > LONGEST_ALLOWED and (body.__name__, record.__name__) not in ALLOWED:
                out.append(f"{body.__module__}.{body.__name__} repeats {run} fields of "
                           f"{record.__module__}.{record.__name__}: inherit them instead")
    return out


def test_no_api_body_copies_a_record() -> None:
    api = _structs(API_MODULES, "api")
    records = _structs(RECORD_MODULES, ("medbench", "warehouse"))
    assert len(api) > 30 and len(records) > 30  # the modules were read, not an empty comparison
    assert copies(api, records) == []


def test_every_allowance_is_still_needed() -> None:
    """An allowance whose copy is gone would hide the next one: each must still match."""
    api = {c.__name__: c for c in _structs(API_MODULES, "api")}
    records = {c.__name__: c for c in _structs(RECORD_MODULES, ("medbench", "warehouse"))}
    for body, record in ALLOWED:
        assert longest_shared_run(_own_fields(api[body]), _fields(records[record])) > LONGEST_ALLOWED


# A toy body that writes ModelCard's fields again (built from them, so it is an exact copy)
CopiedModel = msgspec.defstruct("CopiedModel", [(f.name, f.type) for f in msgspec.structs.fields(ModelCard)] + [("extra", int)],
                                module=__name__)


class InheritedModel(ModelCard):
    """A toy body that inherits them."""

    extra: int


def test_a_copied_body_is_found() -> None:
    assert copies([CopiedModel], [ModelCard]) == [
        f"{__name__}.CopiedModel repeats 6 fields of medbench.records.ModelCard: inherit them instead"]
    assert copies([InheritedModel], [ModelCard]) == []
