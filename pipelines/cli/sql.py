"""``medbench sql [--data DIR] [--format table|csv|json] QUERY``: one query on the published DuckDB file.

Why a command: the README's analyst one-liner (``python -c "import duckdb; ..."``) failed as printed
(the system Python has no duckdb: it is in the project's venv), and DuckDB's own display drops
columns that do not fit the terminal (``metric_value`` was hidden), so the first query an analyst
copied answered an error or a table without the number they came for. This prints every column and
every character of every value, whatever the terminal's width (a table, CSV or JSON).

The file is the one ``warehouse/CURRENT`` names (the ``medbench.duckdb`` link's target; with the
same fallback to the newest sound kept version as the server when the pointer is damaged), opened
read-only: a query cannot change the warehouse. Exit 0 with the result; 2 for a query DuckDB
refuses (its message on one line); 1 when nothing is published in the data directory.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

FORMATS = ("table", "csv", "json")


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "sql", help="run one SQL query on the published DuckDB file (read-only) and print every column",
        description="Run QUERY on the data directory's published warehouse (the file medbench.duckdb links to), "
        "read-only, and print the whole result: every column, values never cut (tables: docs/duckdb.md, "
        "'The DuckDB file').",
    )
    p.add_argument("query", metavar="QUERY", help='the SQL, e.g. "SELECT task, model_slug, metric_value FROM results"')
    p.add_argument("--data", type=Path, default=None, metavar="DIR",
                   help="the data directory (default: MEDBENCH_DATA, else ./data), or a medbench DuckDB file")
    p.add_argument("--format", choices=FORMATS, default="table", help="how to print the result (default: table)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import duckdb

    from medbench.layout import DataDir
    from warehouse.read import NoWarehouse, open_current

    if args.data is not None and args.data.is_file():  # a DuckDB file itself (a copy, a moved file)
        return _query_file(args.data, args.query, args.format)
    data = DataDir(args.data)
    try:
        snapshot = open_current(data)
    except NoWarehouse as exc:
        message = str(exc).replace("with MEDBENCH_DATA=DIR", "with --data DIR or MEDBENCH_DATA=DIR")
        if "medbench materialize" not in message:  # a damaged warehouse: say what repairs it
            message += "; run `medbench materialize` to publish a sound version"
        print(f"medbench sql: {message}", file=sys.stderr)
        return 1
    except duckdb.Error as exc:
        print(f"medbench sql: the published warehouse in {data.root} cannot be opened ({one_line(exc)}); "
              "run `medbench materialize` to publish it again", file=sys.stderr)
        return 1
    try:
        return _print_query(snapshot.con, args.query, args.format)
    finally:
        snapshot.close()


def _query_file(path: Path, query: str, fmt: str) -> int:
    """``--data FILE.duckdb``: the file itself, read-only (no data directory, so no ``warehouse/CURRENT``)."""
    import duckdb

    try:
        con = duckdb.connect(str(path), read_only=True)
    except duckdb.Error as exc:
        print(f"medbench sql: {path} cannot be opened as a DuckDB file ({one_line(exc)}); pass a data directory "
              "or a medbench DuckDB file to --data", file=sys.stderr)
        return 1
    try:
        return _print_query(con, query, fmt)
    finally:
        con.close()


def _print_query(con: Any, query: str, fmt: str) -> int:
    import duckdb

    try:
        cursor = con.execute(query)
        columns = [d[0] for d in cursor.description] if cursor.description else []
        rows = cursor.fetchall() if columns else []
    except duckdb.Error as exc:
        print(f"medbench sql: {one_line(exc)}", file=sys.stderr)
        return 2
    if columns:
        sys.stdout.write(render(columns, rows, fmt))
    return 0


def one_line(exc: BaseException) -> str:
    """DuckDB's message without its caret drawing: ``Catalog Error: Table ... does not exist! Did you mean ...``."""
    lines = []
    for line in str(exc).splitlines():
        if line.startswith("LINE "):
            break
        if line.strip():
            lines.append(line.strip())
    return " ".join(lines) or type(exc).__name__


def render(columns: list[str], rows: list[tuple], fmt: str) -> str:
    if fmt == "csv":
        return _csv(columns, rows)
    if fmt == "json":
        import msgspec

        records = [dict(zip(columns, row)) for row in rows]
        return msgspec.json.format(msgspec.json.encode(records, enc_hook=str), indent=2).decode() + "\n"
    return _table(columns, rows)


def _csv(columns: list[str], rows: list[tuple]) -> str:
    import csv
    import io

    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(columns)
    writer.writerows([["" if v is None else _text(v) for v in row] for row in rows])
    return out.getvalue()


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _cell(value: Any) -> str:
    """A value on one line of the table (newlines and tabs shown escaped), never shortened."""
    if value is None:
        return "NULL"
    return _text(value).replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t")


def _table(columns: list[str], rows: list[tuple]) -> str:
    cells = [[_cell(v) for v in row] for row in rows]
    widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(columns)]
    numeric = [bool(rows) and all(isinstance(r[i], (int, float)) and not isinstance(r[i], bool)
                                  for r in rows if r[i] is not None) for i in range(len(columns))]

    def line(values: list[str]) -> str:
        return " | ".join(v.rjust(w) if num else v.ljust(w) for v, w, num in zip(values, widths, numeric)).rstrip()

    out = [line(columns), "-+-".join("-" * w for w in widths)]
    out += [line(r) for r in cells]
    out.append(f"({len(rows)} row{'' if len(rows) == 1 else 's'})")
    return "\n".join(out) + "\n"
