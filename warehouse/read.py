"""Read access to the current published version, for the API and for analysts' scripts.

A reader resolves the pointer once and opens that version's immutable file read-only, so it
keeps a consistent view for as long as it holds the connection, whatever is published meanwhile.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import duckdb

from warehouse.layout import DataDir
from warehouse.publish import current_version
from warehouse.records import ResultRecord, decode_record


class NoWarehouse(RuntimeError):
    """Nothing has been published in this data directory yet."""


@dataclass
class Snapshot:
    version: str
    con: duckdb.DuckDBPyConnection

    def close(self) -> None:
        self.con.close()


def open_current(data: DataDir | None = None) -> Snapshot:
    data = data or DataDir()
    version = current_version(data)
    if version is None:
        raise NoWarehouse(f"no published warehouse in {data.root}: run `medbench materialize --demo` first")
    con = duckdb.connect(str(data.version_file(version)), read_only=True)
    return Snapshot(version=version, con=con)


def current_record(
    data: DataDir, sql: str, params: Sequence[Any] = ()
) -> tuple[ResultRecord, tuple[Any, ...]] | None:
    """The first row ``sql`` returns on the current published version, or None when it returns none:
    its first column (a ``results.record``) decoded, and the row's other columns as they are.
    Raises NoWarehouse when nothing is published in ``data`` yet."""
    snap = open_current(data)
    try:
        row = snap.con.execute(sql, list(params)).fetchone()
    finally:
        snap.close()
    if row is None:
        return None
    return decode_record(row[0]), tuple(row[1:])
