"""Reading a specs directory (TOML under ``specs/``) into the spec Structs, validated together.

The Structs, their strict decoding and their hash are the core's (``medbench.specs``,
re-exported here); what this module adds is the directory and the plug-ins: a task file names its
``family``, and the family (from the ``Plugins`` the loader is handed, so one registered by a test
or an installed distribution works too) supplies the type of its settings table; a model file
names its ``backend``, whose declared ``settings_type`` types its ``[settings]`` table (the same
strictness: a misspelt key is an error that names the file and the key). The loader checks that a
task's ``dataset`` and ``kind`` are its family's, and has each backend check (and complete) its
models' specs (a replay model is pinned to its outputs file's content).

The specs directory is ``MEDBENCH_SPECS`` (default: the checkout's ``specs/``), so tests, benches
and deployments can use their own.

Its file name is shared on purpose: the engine's step of that name; the Dagster assets, the official
tier and the CLI have their own module for the same step, each calling this one.
"""

from __future__ import annotations

import os
from functools import cached_property
from pathlib import Path
from typing import Any, get_args

import msgspec

from medbench.canonical import SpecStruct, canonical_json, spec_builtins  # noqa: F401 (re-exported)
from medbench.registry import Plugins
from medbench.specs import (  # noqa: F401 (re-exported: the loader's callers name them from here)
    BootstrapSpec, DatasetSpec, IntervalsSpec, ModelSpec, PriceSpec, PriceTable, SourceSpec, SpecError, TaskSpec,
    SpecBase, model_spec_type, spec_hash, task_spec_type,
)
from pipelines.engine.spec_decoding import decode_strict
from medbench.kinds import kind as kind_of

SPECS_DIR_ENV = "MEDBENCH_SPECS"
DEFAULT_SPECS_DIR = Path(__file__).resolve().parents[2] / "specs"


class _TaskHead(msgspec.Struct):
    """Just enough of a task file to pick its family (every other key is checked by the family's type)."""

    family: str


class _ModelHead(msgspec.Struct):
    """Phase one of decoding a model file: its backend only (every other key is checked in phase two)."""

    backend: str


# --------------------------------------------------------------------------- loading


def decode_model(path: Path, plugins: Plugins) -> ModelSpec:
    """Two phases: ``backend`` first, then the whole file as that backend's ModelSpec, so the
    ``[settings]`` table is checked key by key against the backend's own settings Struct; then the
    backend checks (and completes) the decoded spec."""
    head = decode_strict(path, _ModelHead)
    if head.backend not in plugins.backends:
        raise SpecError(f"{path}: key `backend`: invalid value {head.backend!r} "
                        f"(one of: {', '.join(plugins.backends.names())})")
    backend = plugins.backends.get(head.backend)
    try:
        spec = decode_strict(path, model_spec_type(backend.name, backend.settings_type))
    except SpecError as exc:
        for key, allowed in _tag_choices(backend.settings_type).items():
            if f"key `settings.{key}`: invalid value" in str(exc):
                raise SpecError(f"{exc} (one of: {', '.join(allowed)})") from None
        raise
    return backend.check_spec(path, spec)


def _tag_choices(settings_type: Any) -> dict[str, list[str]]:
    """{tag field: tags} of a tagged union of settings Structs (the ``rule`` of a rule backend)."""
    out: dict[str, list[str]] = {}
    for member in get_args(settings_type):  # a Union's members; a plain Struct has none
        config = member.__struct_config__
        if config.tag_field is not None:
            out.setdefault(config.tag_field, []).append(config.tag)
    return out


def specs_root(root: Path | str | None = None) -> Path:
    """The specs directory: ``root`` when given, else ``MEDBENCH_SPECS``, else the checkout's ``specs/``."""
    return Path(root or os.environ.get(SPECS_DIR_ENV) or DEFAULT_SPECS_DIR)


def submitted_model_files() -> list[Path]:
    """The model specs written from approved submissions in the data directory (``MEDBENCH_DATA``):
    loaded with the checkout's, so the code location and the CLI see submitted models."""
    from medbench.layout import DataDir

    return sorted((DataDir().submitted_specs / "models").glob("*/*.toml"))


class Specs:
    """All specs of one specs directory, validated together (cross-references included)."""

    def __init__(self, root: Path | str | None, plugins: Plugins):
        self.root = specs_root(root)
        self.plugins = plugins
        self.datasets: dict[str, DatasetSpec] = {}
        self.tasks: dict[str, TaskSpec] = {}
        self.models: dict[str, ModelSpec] = {}
        roots = [self.root, *(folder for _, folder in getattr(plugins, "specs", ()))]
        for path in _files(roots, "datasets", "*.toml"):
            spec = decode_strict(path, DatasetSpec)
            _expect(path, "slug", spec.slug, path.stem)
            self.datasets[spec.slug] = spec
        for path in _files(roots, "tasks", "*/*.toml"):
            spec = _decode_task(path, plugins)
            _expect(path, "slug", spec.slug, path.parent.name)
            _expect(path, "version", str(spec.version), path.stem)
            _check_task(path, spec, self.datasets, plugins)
            self.tasks[spec.ref] = spec
        checkout_models = _files(roots, "models", "*/*.toml")
        for path in checkout_models + submitted_model_files():
            spec = decode_model(path, plugins)
            _expect(path, "slug", spec.slug, f"{path.parent.name}/{path.stem}")
            _expect(path, "provider", spec.provider, path.parent.name)
            for ref in spec.tasks:
                if ref not in self.tasks:
                    raise SpecError(f"{path}: key `tasks` names unknown task {ref!r}; known: {sorted(self.tasks)}")
            if spec.slug in self.models:
                raise SpecError(f"{path}: key `slug`: {spec.slug!r} is already a model of the specs directory; "
                                "remove the submitted spec or the checkout's")
            self.models[spec.slug] = spec
        self.prices = decode_strict(self.root / "prices.toml", PriceTable)

    # -- lookups -------------------------------------------------------------------------

    def task(self, ref: str) -> TaskSpec:
        """Resolve ``slug@version`` or ``slug`` (latest version)."""
        if ref in self.tasks:
            return self.tasks[ref]
        versions = [t for t in self.tasks.values() if t.slug == ref]
        if not versions:
            raise KeyError(f"unknown task {ref!r}; known: {', '.join(sorted(self.tasks))}{self._installed_hint(ref)}")
        return max(versions, key=lambda t: t.version)

    def _installed_hint(self, ref: str) -> str:
        """When a family of that name is installed but no spec of it was found: say so, and how."""
        name = ref.partition("@")[0]
        families = getattr(self.plugins, "families", None)
        if families is None or name not in families:
            return ""
        return (f"; family {name!r} is installed ({families.origin(name)}) but no spec of it was found: its "
                "distribution declares its spec folder in the entry-point group medbench.specs "
                "(docs/adding-a-task.md), or add its files to the specs directory")

    def model(self, ref: str) -> ModelSpec:
        """Resolve a model slug or a provider model id (which must then be unambiguous)."""
        if ref in self.models:
            return self.models[ref]
        hits = [m for m in self.models.values() if m.provider_model_id == ref]
        if len(hits) == 1:
            return hits[0]
        if hits:
            raise KeyError(f"model id {ref!r} is ambiguous: {', '.join(sorted(m.slug for m in hits))}")
        raise KeyError(f"unknown model {ref!r}; known: {', '.join(sorted(self.models))}")

    def family_of(self, task: TaskSpec) -> Any:
        """The task's family (a ``TaskFamily`` of these specs' plug-ins)."""
        return self.plugins.families.get(task.family)

    def backend_of(self, model: ModelSpec) -> Any:
        """The model's backend (a ``Backend`` of these specs' plug-ins)."""
        return self.plugins.backends.get(model.backend)

    def dataset_of(self, task: TaskSpec) -> DatasetSpec:
        return self.datasets[task.dataset]

    def evaluations(self) -> list[tuple[TaskSpec, ModelSpec]]:
        """Every valid (task version, model) pair: the models' own task lists, not a cross product."""
        pairs = [(self.tasks[ref], m) for m in self.models.values() for ref in m.tasks]
        return sorted(pairs, key=lambda p: (p[0].ref, p[1].slug))

    @cached_property
    def hashes(self) -> dict[str, str]:
        out = {f"task:{k}": spec_hash(v) for k, v in self.tasks.items()}
        out.update({f"model:{k}": spec_hash(v) for k, v in self.models.items()})
        out.update({f"dataset:{k}": spec_hash(v) for k, v in self.datasets.items()})
        return out


def _expect(path: Path, key: str, got: str, want: str) -> None:
    if got != want:
        raise SpecError(f"{path}: key `{key}` is {got!r} but the file's place says {want!r}")


def _decode_task(path: Path, plugins: Plugins) -> TaskSpec:
    head = decode_strict(path, _TaskHead)
    try:
        fam = plugins.families.get(head.family)
    except KeyError as exc:
        raise SpecError(f"{path}: key `family`: {exc.args[0]}") from None
    return decode_strict(path, task_spec_type(fam))


def _check_task(path: Path, spec: TaskSpec, datasets: dict[str, DatasetSpec], plugins: Plugins) -> None:
    fam = plugins.families.get(spec.family)
    if spec.dataset not in datasets:
        raise SpecError(f"{path}: key `dataset` names unknown dataset {spec.dataset!r}")
    if spec.dataset != fam.dataset:
        raise SpecError(f"{path}: key `dataset` is {spec.dataset!r} but family {fam.name!r} reads {fam.dataset!r}")
    try:
        kind_of(spec.kind)
    except KeyError as exc:
        raise SpecError(f"{path}: key `kind`: {exc.args[0]}") from None
    if spec.kind != fam.kind:
        raise SpecError(f"{path}: key `kind` is {spec.kind!r} but family {fam.name!r} is of kind {fam.kind!r}")
    if spec.primary_metric != spec.metrics[0]:
        raise SpecError(f"{path}: key `metrics` must start with the primary metric {spec.primary_metric!r}")
    try:
        fam.check_settings(spec)
    except SpecError as exc:
        raise SpecError(f"{path}: {exc}") from None
    except ValueError as exc:
        raise SpecError(f"{path}: key `{fam.settings_key}`: {exc}") from None


def _files(roots: list[Path], folder: str, pattern: str) -> list[Path]:
    """The spec files of ``folder`` under every root (the specs directory, then each installed
    distribution's ``medbench.specs`` folder), sorted by their path inside it; the same path in two
    roots is an error naming both files."""
    found: dict[Path, Path] = {}
    for root in roots:
        for path in sorted((root / folder).glob(pattern)):
            rel = path.relative_to(root)
            if rel in found:
                raise SpecError(f"{path}: {rel} is also {found[rel]}: two spec files of one name; remove or "
                                "rename one of them")
            found[rel] = path
    return [found[rel] for rel in sorted(found)]


def load_specs(root: Path | str | None, plugins: Plugins) -> Specs:
    """Every spec of the directory ``root`` (None: ``MEDBENCH_SPECS`` or the checkout's), decoded and
    cross-checked with the families and backends of ``plugins``."""
    return Specs(root, plugins)


def load_model_spec(slug: str, root: Path | str | None, plugins: Plugins) -> ModelSpec | None:
    """One model's spec file alone (``models/<provider>/<name>.toml``), or None when there is none.

    Why: a process that needs one fact of one model (the run coordinator tagging a run with its
    pool) should not decode and cross-check a thousand spec files per run it submits."""
    base = specs_root(root) / "models"
    path = base / f"{slug}.toml"
    if "/" not in slug or ".." in slug.split("/") or not path.is_file():
        return None
    return decode_model(path, plugins)
