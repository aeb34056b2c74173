"""The published warehouse: a new immutable DuckDB version behind an atomically switched pointer.

It depends on every family's metrics asset (made by the factory in ``definitions``), which is the
lineage the UI shows: any new or changed result upstream makes it stale, and the
``publish_on_new_results`` sensor (``sensors.py``) runs the ``publish`` job after any metrics
partition updates. Publishing reads finished result.json files only, so skipped or failed
partitions upstream never block it.
"""


import dagster as dg

from pipelines.dagster.resources import MedbenchResource
from pipelines.dagster.engine_calls import publish_results

from .metadata import typed


def published_asset(metrics_assets: list[dg.AssetsDefinition]) -> dg.AssetsDefinition:
    @dg.asset(name="published_warehouse", group_name="warehouse", kinds={"duckdb"}, deps=metrics_assets,
              description="datasets, tasks, models, results, metrics and the predictions view, as served by /v1.")
    def published_warehouse(context: dg.AssetExecutionContext, medbench: MedbenchResource) -> dg.MaterializeResult:
        data = medbench.data()
        version, changed, n = publish_results(medbench.specs(), data, context.log.info)
        return dg.MaterializeResult(
            data_version=dg.DataVersion(str(version)),
            metadata=typed({"warehouse_version": str(version), "new_version": bool(changed), "results": int(n),
                            "duckdb": data.duckdb_link}))

    return published_warehouse
