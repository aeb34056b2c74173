"""An approved submission's model spec, written to the data directory's submissions-specs folder
(``DataDir.submitted_specs``: ``models/<provider>/<name>.toml``) and validated again before any run.

Why validated again: the spec was checked when the API accepted it, but what runs is the file, and
between the two lie a database and a TOML writer. The file is decoded by the spec loader's strict
decoder (``specs.decode_model``: unknown keys are errors), its settings must decode as the few
knobs a submitter may choose (``submission_request.SUBMITTED_SETTINGS``: an openai model names an
endpoint and nothing else; a Hub model a Hub id, at a 40-hex commit), no URL, path or secret may
appear anywhere in them, and its hash must be the hash the submission was accepted with. A file that
fails is removed, and the submission fails with the reason. Nothing in the file is ever executed:
it is data for the loader, like every spec.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
from pathlib import Path
from typing import Any

import msgspec

from medbench.canonical import spec_builtins
from medbench.registry import Plugins
from medbench.specs import SpecError, spec_hash
from pipelines.engine.submission_check import COMMIT_RE, HUB_ID_RE, SLUG_RE, scan_settings
from pipelines.engine.submission_request import ACCEPTED_BACKENDS, SUBMITTED_SETTINGS
from medbench.layout import DataDir
from medbench.submissions import StoreError, Submission

_DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_BARE_KEY_RE = re.compile(r"^[A-Za-z0-9_-]+$")


def _key(name: str) -> str:
    return name if _BARE_KEY_RE.fullmatch(name) else json.dumps(name)


def _value(value: Any, key: str = "") -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        if key in ("release_date", "knowledge_cutoff") and _DATE_RE.fullmatch(value):
            return value  # a TOML date, as the decoder expects
        return json.dumps(value, ensure_ascii=False)  # JSON's escapes are TOML basic-string escapes
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_key(k)} = {_value(v, k)}" for k, v in value.items()) + "}"
    raise SpecError(f"cannot write {type(value).__name__} values into a spec file")


def to_toml(spec: dict[str, Any], header: str) -> str:
    """A spec dict as TOML: scalars first, then one ``[table]`` per top-level table."""
    lines = [f"# {line}" for line in header.splitlines()]
    tables = {k: v for k, v in spec.items() if isinstance(v, dict)}
    lines += [f"{_key(k)} = {_value(v, k)}" for k, v in spec.items() if k not in tables and v is not None]
    for name, table in tables.items():
        lines += ["", f"[{_key(name)}]"]
        lines += [f"{_key(k)} = {_value(v, k)}" for k, v in table.items() if v is not None]
    return "\n".join(lines) + "\n"


def spec_path(data: DataDir, slug: str) -> Path:
    if not SLUG_RE.fullmatch(slug) or ".." in slug:
        raise SpecError(f"model.slug: {slug!r} is not a <provider>/<name> slug")
    return data.submitted_specs / "models" / f"{slug}.toml"


def revalidate(path: Path, sub: Submission, plugins: Plugins) -> Any:
    """The written file, decoded strictly and checked as a submission's spec; SpecError says what is wrong."""
    from pipelines.engine.specs import decode_model

    spec = decode_model(path, plugins)
    where = f"{path}: key"
    if spec.backend not in ACCEPTED_BACKENDS:
        raise SpecError(f"{where} `backend`: {spec.backend!r} is not accepted from a submission")
    if spec.provider != sub.owner or spec.slug != sub.model.get("slug") or not spec.slug.startswith(sub.owner + "/"):
        raise SpecError(f"{where} `slug`: {spec.slug!r} is not {sub.owner}'s submitted model")
    settings = spec_builtins(spec.settings)
    scan_settings(settings)
    try:
        chosen = msgspec.convert(settings, SUBMITTED_SETTINGS[spec.backend], strict=True, str_keys=True)
    except msgspec.ValidationError as exc:
        raise SpecError(f"{where} `settings`: not a submitter's setting ({exc})") from None
    if spec.backend == "openai" and not chosen.endpoint:
        raise SpecError(f"{where} `settings.endpoint`: a submitted openai model names a configured endpoint")
    if spec.backend != "openai":
        if not HUB_ID_RE.fullmatch(chosen.model):
            raise SpecError(f"{where} `settings.model`: {chosen.model!r} is not a Hugging Face Hub id (org/name)")
        if not COMMIT_RE.fullmatch(spec.revision):
            raise SpecError(f"{where} `revision`: {spec.revision!r} is not a 40-hex commit")
    if spec_hash(spec) != sub.model_spec_hash:
        raise SpecError(f"{path}: the written spec's hash {spec_hash(spec)[:12]} is not the submitted "
                        f"{sub.model_spec_hash[:12]}: the stored submission was changed")
    return spec


def write_submitted_spec(sub: Submission, data: DataDir, plugins: Plugins) -> Path:
    """Write the submission's spec (atomically) and validate it again; on any problem the file is
    removed and SpecError (one line) raised."""
    try:
        path = spec_path(data, str(sub.model.get("slug", "")))
    except (StoreError, TypeError) as exc:
        raise SpecError(str(exc)) from None
    path.parent.mkdir(parents=True, exist_ok=True)
    header = (f"Submitted by {sub.owner}: submission {sub.id}, approved; written {dt.date.today().isoformat()} "
              "by medbench (never edited by hand).")
    text = to_toml(dict(sub.model), header)
    partial = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    partial.write_text(text, encoding="utf-8")
    try:
        revalidate(partial, sub, plugins)
    except (SpecError, StoreError) as exc:
        partial.unlink(missing_ok=True)
        raise SpecError(str(exc).replace(str(partial), str(path))) from None
    os.replace(partial, path)
    return path
