"""The published warehouse: a new immutable DuckDB version behind an atomically switched pointer."""


import dagster as dg

from pipelines.engine.release import release
from pipelines.dagster.resources import MedbenchResource


@dg.asset(group_name="warehouse", kinds={"duckdb"}, deps=["metrics"])
def published_warehouse(context: dg.AssetExecutionContext, medbench: MedbenchResource) -> dg.MaterializeResult:
    """datasets, tasks, models, results, metrics and the predictions view, as served by /v1."""
    data = medbench.data()
    version, changed, n = release(medbench.specs(), data, context.log.info)
    return dg.MaterializeResult(metadata={"warehouse_version": version, "new_version": changed, "results": n,
                                          "duckdb": str(data.duckdb_link)})
