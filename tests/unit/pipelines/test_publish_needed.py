"""``publish_needed``: when a materialization that ran nothing must still publish. A medbench upgraded
to a newer table schema republishes at once (so the release log, signatures and the portable tables
exist without waiting for a new result), not only when a result changed."""

import duckdb
from support.api_data import publish_fixture

from pipelines.dagster.rule_one import publish_needed
from medbench.layout import DataDir
from warehouse.schema import SCHEMA_VERSION


def test_a_current_version_needs_no_publish_and_one_of_an_older_schema_does(tmp_path):
    data = DataDir(tmp_path / "data")
    version = publish_fixture(data.root)
    assert publish_needed(data) is False
    con = duckdb.connect(str(data.version_file(version)))
    con.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", [str(SCHEMA_VERSION - 1)])
    con.close()
    assert publish_needed(data) is True


def test_no_servable_version_needs_a_publish(tmp_path):
    data = DataDir(tmp_path / "data")
    assert publish_needed(data) is True
