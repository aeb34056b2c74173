"""API bodies reuse the warehouse records where their fields and types are the same (docs/api.md).

A body Struct that copies a record field for field (same name, fields, types, defaults and JSON
options) is a second place to change; ``api.schemas`` names the record's Struct instead, or subclasses
it where only the name (``Usage``) or the encoding (``Versions``: ``plugins: []`` always present)
differs. The ones that differ stay the API's own, each for a reason a client sees: ``Metric``
(``method`` is always set, ``direction`` an enum), ``Dataset`` (another field order and types),
``Subgroup`` and ``Breakdown`` (they hold the API's ``Metric``).
"""

from __future__ import annotations

import inspect

import msgspec

from api import log_schemas, schemas
from medbench import records


def _shape(struct: type) -> tuple:
    config = struct.__struct_config__
    return (tuple((f.encode_name, f.type, f.default, f.default_factory) for f in msgspec.structs.fields(struct)),
            config.omit_defaults, config.array_like, config.tag)


def _structs(module: object) -> dict[str, type]:
    return {name: obj for name, obj in vars(module).items()
            if inspect.isclass(obj) and issubclass(obj, msgspec.Struct) and obj is not msgspec.Struct}


def test_no_body_struct_copies_a_record_struct() -> None:
    ours = {**_structs(schemas), **_structs(log_schemas)}
    copies = [name for name, struct in ours.items()
              if name in _structs(records) and struct is not _structs(records)[name]
              and _shape(struct) == _shape(_structs(records)[name])]
    assert copies == []


def test_the_reused_records_are_the_bodies() -> None:
    for name in ("Provenance", "UsagePart", "Withheld", "PluginVersion"):
        assert getattr(schemas, name) is getattr(records, name), name


def test_the_renamed_and_re_encoded_records_add_no_field() -> None:
    for ours, theirs in ((schemas.Usage, records.UsageRecord), (schemas.Versions, records.Versions)):
        assert issubclass(ours, theirs) and ours.__struct_fields__ == theirs.__struct_fields__
    assert schemas.Versions.__struct_config__.omit_defaults is False  # the body always says plugins: []
