"""The registry of datasets: one entry per dataset slug, mirroring ``pipelines.tasks.registry``.

The built-in datasets are registered on first use; a test or a plug-in may ``register`` a dataset
of its own (with its spec file in its own ``MEDBENCH_SPECS`` directory).
"""

from __future__ import annotations

from pipelines.datasets.base import Dataset

_DATASETS: dict[str, Dataset] = {}
_BUILTINS_LOADED = False


def register(dataset: Dataset) -> Dataset:
    """Add a dataset (an instance implementing ``Dataset``); re-registering a slug replaces it."""
    _DATASETS[dataset.slug] = dataset
    return dataset


def unregister(slug: str) -> None:
    _DATASETS.pop(slug, None)


def _load_builtins() -> None:
    global _BUILTINS_LOADED
    if not _BUILTINS_LOADED:
        _BUILTINS_LOADED = True
        # Registry wiring: the one place that names the built-in datasets.
        from pipelines.datasets.clinicalqa.dataset import ClinicalQADataset
        from pipelines.datasets.vitaldb.dataset import VitalDbDataset

        for ds in (ClinicalQADataset(), VitalDbDataset()):
            _DATASETS.setdefault(ds.slug, ds)


def dataset(slug: str) -> Dataset:
    _load_builtins()
    try:
        return _DATASETS[slug]
    except KeyError:
        raise KeyError(f"unknown dataset {slug!r}; known: {', '.join(sorted(_DATASETS))}") from None


def datasets() -> dict[str, Dataset]:
    _load_builtins()
    return dict(_DATASETS)
