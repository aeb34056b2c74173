"""The spec Structs (TOML under ``specs/``), decoded strictly, and their hash.

Specs are data, not code: they are the single source of truth for what is evaluated and how.
Decoding is strict (an unknown or missing key is an error that names the file and the key) so a
typo can never silently change what a score means. The spec hash is the sha256 of the canonical
JSON of the decoded spec with default values omitted (``medbench.canonical``): it enters
every run id, so any change to a spec makes new results, while adding an optional field later does
not re-key (and re-pay for) existing ones.

Why here, in the core: every layer reads these shapes, so they import nothing of the project. The
two tables a plug-in owns are typed by the plug-in, not here: a task's settings table by its
family (``task_spec_type``), a model's ``[settings]`` by its backend (``model_spec_type``, given the
backend's declared ``settings_type``). Reading a specs directory is the engine's
(``pipelines.engine.specs``).

Its file name is shared on purpose: the core's declaration (no I/O); the module of the same name
elsewhere reads, fills or implements it.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from typing import Any, ClassVar, Literal

import msgspec

from medbench.canonical import SpecStruct, spec_builtins
from medbench.identity_form import identity_form
from medbench.records import DatasetCard, ModelCard


class SpecError(ValueError):
    """A spec file is malformed; the message names the file and the offending key."""


def query_or_fragment(url: str) -> str | None:
    """What a server URL carries that must not be there: ``"a query"``, ``"a fragment"``, or None.

    Requests go to ``{base_url}/chat/completions``: with ``?x=1`` or ``#f`` in ``base_url`` they went to
    ``/v1?x=1/chat/completions`` instead (docs/adding-a-model.md), so such a URL is refused, never sent.
    """
    query, fragment = url.find("?"), url.find("#")
    if query >= 0 and (fragment < 0 or query < fragment):
        return "a query (?...)"
    return "a fragment (#...)" if fragment >= 0 else None


class SpecBase(SpecStruct):
    """Base of the spec Structs: frozen, strict, keyword-only, defaults omitted when hashed."""


_Spec = SpecBase  # vocab: keep (the name plug-ins' settings Structs subclassed before it was public)


# --------------------------------------------------------------------------- datasets


class SourceSpec(SpecBase):
    # the type of source its dataset module (pipelines/datasets/<slug>/) reads (``huggingface``); the key is
    # the spec file's, kept (renaming it would change every dataset spec's hash): in code, "kind" alone is a task kind
    kind: str
    location: str
    split: str
    revision: str


class DatasetSpec(SpecBase, DatasetCard):
    description: str
    source: SourceSpec


# --------------------------------------------------------------------------- tasks


class BootstrapSpec(SpecBase):
    replicates: int
    seed: int
    unit: Literal["item", "subject"]


class IntervalsSpec(SpecBase):
    """How a task's 95% intervals are computed (``[intervals]``), part of the spec hash.

    A changed interval method changes published numbers, so it is a spec change (new run ids, the
    old results superseded), never a code change under old run ids. The defaults are the methods
    of the results published before this table existed, so their specs keep their meaning:
    ``proportion``: a single proportion (accuracy, parse rate, accuracy by category) by a percentile
    bootstrap over items, or by the Wilson score interval (honest at 0/n and n/n);
    ``prevalence``: the cluster-bootstrap prevalence interval over the replicates that hold both
    classes only, or over all replicates (prevalence is defined in one-class replicates too);
    ``cluster`` and ``min_clusters``: see docs/statistics.md, "Intervals with few subjects";
    ``recalibration``: the validation recalibration map and alarm thresholds of a score task held
    fixed in every bootstrap replicate, or refit in each on its resampled validation subjects
    (docs/statistics.md, "Fair calibration and thresholds from validation").
    """

    proportion: Literal["bootstrap-percentile", "wilson"] = "bootstrap-percentile"
    prevalence: Literal["two-class-replicates", "all-replicates"] = "two-class-replicates"
    # cluster-bootstrap intervals: the plain percentile interval, or the expanded percentile interval
    # that keeps its coverage with few clusters (``medbench.stats.intervals``)
    cluster: Literal["percentile", "expanded-percentile"] = "percentile"
    # subgroups with fewer clusters than this publish counts only (0: no minimum)
    min_clusters: int = 0
    recalibration: Literal["fixed", "per-replicate"] = "fixed"


class TaskSpec(SpecBase):
    """One task version (``specs/tasks/<slug>/<version>.toml``), whatever its family.

    ``family`` names the task family (a registered plug-in) that builds, predicts and scores it.
    The family's settings live in the table named by its ``settings_key`` (``[choice]``, ``[ioh]``,
    ...) and are decoded strictly with its ``settings_type``: the loader decodes each file with a
    subclass of this Struct made for the family (``task_spec_type``), which adds that one field, so
    ``task.settings`` (generically) and ``task.<settings_key>`` (e.g. ``task.choice``) give the
    typed table, and the spec's JSON (and so its hash) keeps the table under its key.

    ``kind`` stays in the file (the warehouse and the API read it) but is not free: it must equal
    the family's declared kind (``choice`` or ``score``); the loader refuses a file where it does
    not, naming the key.
    """

    slug: str
    version: int
    family: str
    dataset: str
    kind: str  # a kind of medbench.kinds (checked when the specs load): adding a kind edits no spec type
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


# --------------------------------------------------------------------------- models


class PriceSpec(SpecBase):
    basis: Literal["free", "tokens", "device_hours"]
    key: str = ""


class ModelSpec(SpecBase, ModelCard):
    """A model spec; decoded as the subclass of its backend (``model_spec_type``), whose ``settings``
    field has that backend's settings type."""

    # slug, name, type, provider, provider_model_id, revision: the card's, first
    description: str
    backend: str
    tasks: list[str]
    price: PriceSpec
    settings: Any
    release_date: dt.date | None = None
    # the cutoff of the model's *own* training data, fine-tuning included (never its base model's)
    knowledge_cutoff: dt.date | None = None
    # datasets its authors declare it was trained on, each a dataset's slug, DOI, name or source
    # location; empty by default, which the spec hash leaves out (no existing run id changes)
    training_data: list[str] = []


_MODEL_TYPES: dict[tuple[str, Any], type[ModelSpec]] = {}


def model_spec_type(backend: str, settings_type: Any) -> type[ModelSpec]:
    """ModelSpec with ``backend`` fixed and ``settings`` typed by the backend's ``settings_type``;
    the table may be left out only when every settings key has a default."""
    key = (backend, settings_type)
    typ = _MODEL_TYPES.get(key)
    if typ is not None:
        return typ
    try:
        default = settings_type()
    except TypeError:  # a union, or a required key
        settings_field: tuple = ("settings", settings_type)
    else:
        settings_field = ("settings", settings_type, default)
    typ = msgspec.defstruct(f"ModelSpec[{backend}]", [("backend", Literal[backend]), settings_field],
                            bases=(ModelSpec,), module=__name__)
    _MODEL_TYPES[key] = typ
    globals()[typ.__qualname__] = typ  # so that pickle finds the class, as for task_spec_type
    return typ


class PriceTable(SpecBase):
    date: dt.date
    device_hours: dict[str, float] = {}
    tokens: dict[str, dict[str, float]] = {}


# --------------------------------------------------------------------------- hashing


def spec_hash(spec: msgspec.Struct) -> str:
    """sha256 of the canonical JSON of the decoded spec (default values omitted, keys sorted), each
    value that publication redacts replaced by its HMAC under the identity key
    (``medbench.identity_form``: the published hash cannot confirm a guessed secret)."""
    form = identity_form(spec, spec_builtins(spec))
    return hashlib.sha256(msgspec.json.encode(form, order="sorted")).hexdigest()
