"""The one Dagster resource: where the specs and the data directory are."""


import dagster as dg

from pipelines.orchestration.plugins import plugins
from pipelines.dagster.engine_calls import Specs, cached_specs
from medbench.layout import DataDir


class MedbenchResource(dg.ConfigurableResource):
    """Empty strings mean the defaults: MEDBENCH_DATA / MEDBENCH_SPECS or the checkout's folders."""

    data_dir: str = ""
    specs_dir: str = ""

    def data(self) -> DataDir:
        data = DataDir(self.data_dir or None)
        if data.demo_or_real() is None:
            raise dg.Failure(
                description=f"{data.root} has no KIND yet: start with `medbench materialize --demo` (demo data) "
                "or `medbench materialize` (real data), which records the kind once."
            )
        return data

    def specs(self) -> Specs:
        """The specs as now on disk; decoded once per process while no spec file changes."""
        return cached_specs(self.specs_dir or None, plugins())
