"""Spec files (TOML under ``specs/``) decoded into frozen msgspec Structs.

Specs are data, not code: they are the single source of truth for what is evaluated and how.
Decoding is strict (an unknown or missing key is an error that names the file and the key) so a
typo can never silently change what a score means; a model's ``[settings]`` table is typed by its
``backend`` (``pipelines.backends.settings``), so the same holds there. The spec hash is the sha256
of the canonical JSON of the decoded spec with default values omitted (``pipelines.engine.canonical``):
it enters every run id, so any change to a spec makes new results, while adding an optional field
later does not re-key (and re-pay for) existing ones.

The specs directory is ``MEDBENCH_SPECS`` (default: the checkout's ``specs/``), so tests, benches
and deployments can use their own. A task file names its ``family``; the family (looked up in
``pipelines.tasks.registry``, so one registered at runtime works too) supplies the type of its
settings table, and the loader checks that the task's ``dataset`` and ``kind`` are the family's.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import os
from functools import cached_property
from pathlib import Path
from typing import Any, ClassVar, Literal

import msgspec

from pipelines.backends.settings import MODEL_SETTINGS, BackendName, BackendSettings
from pipelines.backends.redact import has_userinfo
from pipelines.engine.replay_pin import pin_replay
from pipelines.engine.canonical import SpecStruct, canonical_json, spec_builtins  # noqa: F401 (re-exported)
from pipelines.engine.spec_decoding import SpecError, _decode, _explain, _read  # noqa: F401 (re-exported)

SPECS_DIR_ENV = "MEDBENCH_SPECS"
DEFAULT_SPECS_DIR = Path(__file__).resolve().parents[2] / "specs"


class _Spec(SpecStruct):
    """Base of the spec Structs: frozen, strict, keyword-only, defaults omitted when hashed."""


# --------------------------------------------------------------------------- datasets


class SourceSpec(_Spec):
    kind: str  # where the data comes from, as its dataset module (pipelines/datasets/<slug>/) reads it
    location: str
    split: str
    revision: str


class DatasetSpec(_Spec):
    slug: str
    name: str
    license: str
    license_url: str
    citation: str
    doi: str
    public_since: dt.date
    description: str
    source: SourceSpec


# --------------------------------------------------------------------------- tasks


class BootstrapSpec(_Spec):
    replicates: int
    seed: int
    unit: Literal["item", "subject"]


class IntervalsSpec(_Spec):
    """How a task's 95% intervals are computed (``[intervals]``), part of the spec hash.

    A changed interval method changes published numbers, so it is a spec change (new run ids, the
    old results superseded), never a code change under old run ids. The defaults are the methods
    of the results published before this table existed, so their specs keep their meaning:
    ``proportion``: a single proportion (accuracy, parse rate, accuracy by category) by a percentile
    bootstrap over items, or by the Wilson score interval (honest at 0/n and n/n);
    ``prevalence``: the cluster-bootstrap prevalence interval over the replicates that hold both
    classes only, or over all replicates (prevalence is defined in one-class replicates too).
    """

    proportion: Literal["bootstrap-percentile", "wilson"] = "bootstrap-percentile"
    prevalence: Literal["two-class-replicates", "all-replicates"] = "two-class-replicates"


class TaskSpec(_Spec):
    """One task version (``specs/tasks/<slug>/<version>.toml``), whatever its family.

    ``family`` names the task family (``pipelines.tasks.registry``) that builds, predicts and
    scores it. The family's settings live in the table named by its ``settings_key`` (``[choice]``,
    ``[ioh]``, ...) and are decoded strictly with its ``settings_type``: the loader decodes each
    file with a subclass of this Struct made for the family (``task_spec_type``), which adds that
    one field, so ``task.settings`` (generically) and ``task.<settings_key>`` (e.g. ``task.choice``)
    give the typed table, and the spec's JSON (and so its hash) keeps the table under its key.

    ``kind`` stays in the file (the warehouse and the API read it) but is not free: it must equal
    the family's declared kind (``choice`` or ``score``); the loader refuses a file where it does
    not, naming the key.
    """

    slug: str
    version: int
    family: str
    dataset: str
    kind: Literal["choice", "score"]
    title: str
    description: str
    primary_metric: str
    preview: bool
    metrics: list[str]
    bootstrap: BootstrapSpec
    intervals: IntervalsSpec = IntervalsSpec()

    settings_key: ClassVar[str] = ""

    @property
    def ref(self) -> str:
        """The public name of this task version, ``slug@version``."""
        return f"{self.slug}@{self.version}"

    @property
    def settings(self) -> Any:
        """The family's typed settings table (the field named by the family's ``settings_key``)."""
        if not self.settings_key:
            raise AttributeError(f"{self.ref}: a bare TaskSpec has no settings; decode it with task_spec_type(family)")
        return getattr(self, self.settings_key)


_TASK_TYPES: dict[tuple[str, str, type], type[TaskSpec]] = {}


def task_spec_type(family: Any) -> type[TaskSpec]:
    """The TaskSpec subclass of one family: the common fields plus ``<settings_key>: <settings_type>``."""
    key = (family.name, family.settings_key, family.settings_type)
    typ = _TASK_TYPES.get(key)
    if typ is None:
        typ = msgspec.defstruct(
            f"TaskSpec[{family.name}]", [(family.settings_key, family.settings_type)], bases=(TaskSpec,),
            kw_only=True, namespace={"settings_key": family.settings_key}, module=__name__,
        )
        _TASK_TYPES[key] = typ
        globals()[typ.__qualname__] = typ  # so that pickle (Dagster's multiprocess executor) finds the class
    return typ


class _TaskHead(msgspec.Struct):
    """Just enough of a task file to pick its family (every other key is checked by the family's type)."""

    family: str


# --------------------------------------------------------------------------- models


class PriceSpec(_Spec):
    basis: Literal["free", "tokens", "device_hours"]
    key: str = ""


class ModelSpec(_Spec):
    """A model spec; decoded as the subclass of its backend (``MODEL_SPECS``), whose ``settings``
    field has that backend's settings type."""

    slug: str
    name: str
    type: Literal["llm", "ml", "rule"]
    provider: str
    provider_model_id: str
    revision: str
    description: str
    backend: BackendName
    tasks: list[str]
    price: PriceSpec
    settings: BackendSettings
    release_date: dt.date | None = None
    # the cutoff of the model's *own* training data, fine-tuning included (never its base model's)
    knowledge_cutoff: dt.date | None = None
    # datasets its authors declare it was trained on, each a dataset's slug, DOI, name or source
    # location; empty by default, which the spec hash leaves out (no existing run id changes)
    training_data: list[str] = []


def _model_spec_type(backend: str, settings_type: Any) -> type[ModelSpec]:
    """ModelSpec with ``backend`` fixed and ``settings`` typed; the table may be left out only
    when every settings key has a default."""
    try:
        default = settings_type()
    except TypeError:  # a union, or a required key
        settings_field: tuple = ("settings", settings_type)
    else:
        settings_field = ("settings", settings_type, default)
    return msgspec.defstruct(f"ModelSpec[{backend}]", [("backend", Literal[backend]), settings_field],
                             bases=(ModelSpec,), module=__name__)


MODEL_SPECS: dict[str, type[ModelSpec]] = {b: _model_spec_type(b, t) for b, t in MODEL_SETTINGS.items()}
"""backend -> the ModelSpec subclass a model file with that backend decodes into."""


class _ModelHead(msgspec.Struct):
    """Phase one of decoding a model file: its backend only (every other key is checked in phase two)."""

    backend: BackendName


class PriceTable(_Spec):
    date: dt.date
    device_hours: dict[str, float] = {}
    tokens: dict[str, dict[str, float]] = {}


# --------------------------------------------------------------------------- hashing


def spec_hash(spec: msgspec.Struct) -> str:
    """sha256 of the canonical JSON of the decoded spec (default values omitted, keys sorted)."""
    return hashlib.sha256(canonical_json(spec)).hexdigest()


# --------------------------------------------------------------------------- loading


def _decode_model(path: Path) -> ModelSpec:
    """Two phases: ``backend`` first, then the whole file as that backend's ModelSpec, so the
    ``[settings]`` table is checked key by key against the backend's own settings Struct."""
    try:
        head = _decode(path, _ModelHead)
        return _decode(path, MODEL_SPECS[head.backend])
    except SpecError as exc:
        for key, allowed in _MODEL_CHOICES.items():
            if f"key `{key}`: invalid value" in str(exc):
                raise SpecError(f"{exc} (one of: {', '.join(allowed)})") from None
        raise


def _tags(union: Any) -> list[str]:
    return [t.__struct_config__.tag for t in union.__args__]


_MODEL_CHOICES = {
    "backend": list(MODEL_SETTINGS),
    "settings.rule": _tags(MODEL_SETTINGS["rule"]),
    "settings.estimator": _tags(MODEL_SETTINGS["sklearn"]),
}


def specs_root(root: Path | str | None = None) -> Path:
    """The specs directory: ``root`` when given, else ``MEDBENCH_SPECS``, else the checkout's ``specs/``."""
    return Path(root or os.environ.get(SPECS_DIR_ENV) or DEFAULT_SPECS_DIR)


class Specs:
    """All specs of one specs directory, validated together (cross-references included)."""

    def __init__(self, root: Path | str | None = None):
        self.root = specs_root(root)
        self.datasets: dict[str, DatasetSpec] = {}
        self.tasks: dict[str, TaskSpec] = {}
        self.models: dict[str, ModelSpec] = {}
        for path in sorted((self.root / "datasets").glob("*.toml")):
            spec = _decode(path, DatasetSpec)
            _expect(path, "slug", spec.slug, path.stem)
            self.datasets[spec.slug] = spec
        for path in sorted((self.root / "tasks").glob("*/*.toml")):
            spec = _decode_task(path)
            _expect(path, "slug", spec.slug, path.parent.name)
            _expect(path, "version", str(spec.version), path.stem)
            _check_task(path, spec, self.datasets)
            self.tasks[spec.ref] = spec
        for path in sorted((self.root / "models").glob("*/*.toml")):
            spec = _decode_model(path)
            _expect(path, "slug", spec.slug, f"{path.parent.name}/{path.stem}")
            _expect(path, "provider", spec.provider, path.parent.name)
            if spec.backend == "openai" and has_userinfo(spec.settings.base_url or ""):
                raise SpecError(f"{path}: key `settings.base_url` holds credentials (user:password@): remove "
                                "them and name the key's environment variable in `settings.api_key_env`")
            if spec.backend == "replay":  # its outputs file is its revision (pipelines.engine.replay_pin)
                spec = pin_replay(path, spec, SpecError)
            for ref in spec.tasks:
                if ref not in self.tasks:
                    raise SpecError(f"{path}: key `tasks` names unknown task {ref!r}; known: {sorted(self.tasks)}")
            self.models[spec.slug] = spec
        self.prices = _decode(self.root / "prices.toml", PriceTable)

    # -- lookups -------------------------------------------------------------------------

    def task(self, ref: str) -> TaskSpec:
        """Resolve ``slug@version`` or ``slug`` (latest version)."""
        if ref in self.tasks:
            return self.tasks[ref]
        versions = [t for t in self.tasks.values() if t.slug == ref]
        if not versions:
            raise KeyError(f"unknown task {ref!r}; known: {', '.join(sorted(self.tasks))}")
        return max(versions, key=lambda t: t.version)

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


def _decode_task(path: Path) -> TaskSpec:
    from pipelines.tasks.registry import family

    head = _decode(path, _TaskHead)
    try:
        fam = family(head.family)
    except KeyError as exc:
        raise SpecError(f"{path}: key `family`: {exc.args[0]}") from None
    return _decode(path, task_spec_type(fam))


def _check_task(path: Path, spec: TaskSpec, datasets: dict[str, DatasetSpec]) -> None:
    from pipelines.tasks.registry import family

    fam = family(spec.family)
    if spec.dataset not in datasets:
        raise SpecError(f"{path}: key `dataset` names unknown dataset {spec.dataset!r}")
    if spec.dataset != fam.dataset:
        raise SpecError(f"{path}: key `dataset` is {spec.dataset!r} but family {fam.name!r} reads {fam.dataset!r}")
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


def load_specs(root: Path | str | None = None) -> Specs:
    return Specs(root)


def load_model_spec(slug: str, root: Path | str | None = None) -> ModelSpec | None:
    """One model's spec file alone (``models/<provider>/<name>.toml``), or None when there is none.

    Why: a process that needs one fact of one model (the run coordinator tagging a run with its
    pool) should not decode and cross-check a thousand spec files per run it submits."""
    base = specs_root(root) / "models"
    path = base / f"{slug}.toml"
    if "/" not in slug or ".." in slug.split("/") or not path.is_file():
        return None
    return _decode_model(path)
