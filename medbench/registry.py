"""One generic registry of named plug-ins, and the ``Plugins`` bundle the engine is handed.

Modelled on lm-evaluation-harness's ``Registry`` (``lm_eval/api/registry.py``): objects are
registered under a name, directly or lazily (an entry point, loaded on first lookup); a second
object under a taken name is an error naming both, and every failed lookup lists the known names.
Built-in and installed plug-ins alike come from the entry-point groups ``medbench.families``,
``medbench.datasets`` and ``medbench.backends`` (the built-ins are declared in this project's
``pyproject.toml``), so a separately installed distribution adds a family, a dataset or a backend
with zero edits here.

Why no module-level registry: the registries are filled only at the composition roots (the CLI,
the Dagster code location), which hand one ``Plugins`` to ``load_specs`` and so to the engine; a
test builds its own. Nothing imports a module that fills itself.

Its file name is shared on purpose: the core's declaration (no I/O); the module of the same name
elsewhere reads, fills or implements it.
"""

from __future__ import annotations

import dataclasses
import threading
from dataclasses import dataclass
from importlib import metadata
from operator import attrgetter
from pathlib import Path
from typing import Any, Callable, Generic, Iterator, TypeVar

from medbench.conformance import PluginError, check_conforms

T = TypeVar("T")

GROUPS = {"families": "medbench.families", "datasets": "medbench.datasets", "backends": "medbench.backends",
          "kinds": "medbench.kinds"}
# a distribution's spec folder (a callable returning a folder laid out like ``specs/``); the project's
# own specs are the specs directory itself, so this group holds plug-ins' folders only
SPECS_GROUP = "medbench.specs"
# the groups a ``Plugins`` bundle fills per composition root (and ``specs``, a list of folders); kinds are one process-wide registry
# (``medbench.kinds.kind_registry``), since the API reads published files by kind without a bundle
BUNDLED = ("families", "datasets", "backends")


def _describe(obj: Any) -> str:
    if isinstance(obj, metadata.EntryPoint):
        return f"entry point {obj.value!r}" + (f" of {obj.dist.name}" if obj.dist is not None else "")
    cls = obj if isinstance(obj, type) else type(obj)
    return f"{cls.__module__}.{cls.__qualname__}"


class Registry(Generic[T]):
    """Named objects of one kind (``what``: "task family", "dataset", "backend"); ``name_of`` reads
    the name an object declares (a family's ``name``, a dataset's ``slug``), which must match the
    name it is registered under."""

    def __init__(self, what: str, name_of: Callable[[Any], str] = attrgetter("name"), protocol: type | None = None):
        self.what = what
        self.name_of = name_of
        # the protocol every object must implement, checked when it is registered or its entry point
        # loaded (``medbench.conformance``): a half-written plug-in fails there, in one line
        self.protocol = protocol
        self._objs: dict[str, T | metadata.EntryPoint] = {}
        self._origins: dict[str, str] = {}
        self._lock = threading.RLock()

    def add(self, obj: T) -> T:
        """Register ``obj`` under the name it declares; returns it."""
        self._conforms(obj, "registered in-process")
        self.register(self.name_of(obj), obj)
        return obj

    def _conforms(self, obj: Any, origin: str) -> None:
        if self.protocol is not None:
            check_conforms(obj, self.protocol, self.what, origin)

    def register(self, name: str, obj: T | metadata.EntryPoint) -> None:
        """Add ``obj`` under ``name``; a name already taken by another object is an error naming both."""
        with self._lock:
            current = self._objs.get(name)
            if not isinstance(obj, metadata.EntryPoint) and self.name_of(obj) != name:
                raise ValueError(f"{self.what} {_describe(obj)} is named {self.name_of(obj)!r}, not {name!r}")
            if current is not None and current is not obj and (type(current) is not type(obj) or current != obj):
                raise ValueError(f"{self.what} {name!r} is registered twice: by {_describe(current)} "
                                 f"and by {_describe(obj)}; uninstall or rename one of them")
            self._objs[name] = obj
            self._origins.setdefault(name, _describe(obj))

    def origin(self, name: str) -> str:
        """Where ``name`` was registered from, in words (an entry point and its distribution, or a class)."""
        return self._origins.get(name, "")

    def get(self, name: str) -> T:
        """The object under ``name`` (loading its entry point on first use); else a KeyError listing the known."""
        try:
            target = self._objs[name]
        except KeyError:
            raise KeyError(f"unknown {self.what} {name!r}; known: {', '.join(sorted(self._objs)) or 'none'}") from None
        if isinstance(target, metadata.EntryPoint):
            with self._lock:
                target = self._objs[name]
                if isinstance(target, metadata.EntryPoint):
                    origin = f"distribution {target.dist.name}" if target.dist is not None else "an entry point"
                    try:
                        loaded = _instance(target.load())
                    except (ImportError, AttributeError, TypeError) as exc:  # a misspelt target, a broken import
                        raise PluginError(f"{origin}: {self.what} entry point {name!r} ({target.value}) cannot be "
                                          f"loaded: {type(exc).__name__}: {exc}; fix its module or the entry "
                                          "point (medbench --debug shows the traceback)") from exc
                    self._conforms(loaded, origin)
                    if self.name_of(loaded) != name:
                        raise ValueError(f"{self.what} entry point {name!r} ({target.value}) loads an object "
                                         f"named {self.name_of(loaded)!r}: make them agree")
                    self._objs[name] = target = loaded
        return target  # type: ignore[return-value]

    def __getitem__(self, name: str) -> T:
        return self.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self._objs

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._objs))

    def __len__(self) -> int:
        return len(self._objs)

    def names(self) -> list[str]:
        return sorted(self._objs)

    def items(self) -> list[tuple[str, T]]:
        """(name, object) pairs in name order, every entry point loaded."""
        return [(name, self.get(name)) for name in self.names()]

    def values(self) -> list[T]:
        return [obj for _, obj in self.items()]

    def as_dict(self) -> dict[str, T]:
        return dict(self.items())

    def load_entry_points(self, group: str) -> Registry[T]:
        """Register (lazily) every entry point of ``group`` in the installed distributions."""
        seen: dict[str, metadata.EntryPoint] = {}
        for ep in metadata.entry_points(group=group):
            if ep.name in seen and seen[ep.name].value == ep.value:
                continue  # the same distribution seen twice on sys.path (an editable install)
            seen[ep.name] = ep
            self.register(ep.name, ep)
        return self


def _instance(obj: Any) -> Any:
    """An entry point may name a class (instantiated without arguments) or an instance."""
    return obj() if isinstance(obj, type) else obj


@dataclass(frozen=True)
class Plugins:
    """The task families, datasets and backends one process runs with (each a ``Registry``)."""

    families: Registry[Any]
    datasets: Registry[Any]
    backends: Registry[Any]
    # spec folders the installed distributions declare (``medbench.specs``: a callable returning a
    # folder laid out like ``specs/``), as (distribution, folder): loaded with the project's specs
    specs: tuple[tuple[str, Path], ...] = ()

    @classmethod
    def empty(cls) -> Plugins:
        from medbench.protocols import Backend, Dataset, TaskFamily

        return cls(Registry("task family", protocol=TaskFamily), Registry("dataset", attrgetter("slug"), Dataset),
                   Registry("backend", protocol=Backend))


def installed_plugins() -> Plugins:
    """Every plug-in the installed distributions declare in the ``medbench.*`` entry-point groups
    (this project's built-ins included). For the composition roots only."""
    plugins = Plugins.empty()
    for field in BUNDLED:
        getattr(plugins, field).load_entry_points(GROUPS[field])
    return dataclasses.replace(plugins, specs=spec_folders())


def spec_folders() -> tuple[tuple[str, Path], ...]:
    """(distribution, folder) of every ``medbench.specs`` entry point (each named once on sys.path)."""
    seen: dict[str, tuple[str, Path]] = {}
    for ep in metadata.entry_points(group=SPECS_GROUP):
        if ep.value in seen:
            continue
        target = ep.load()
        folder = Path(target() if callable(target) else target)
        if not folder.is_dir():
            raise PluginError(f"entry point {SPECS_GROUP}:{ep.name} ({ep.value})"
                              f"{f' of {ep.dist.name}' if ep.dist is not None else ''} names {folder}, which is no folder")
        seen[ep.value] = (ep.dist.name if ep.dist is not None else ep.value, folder)
    return tuple(seen.values())
