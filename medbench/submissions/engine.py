"""Opening the store: the URL, the engine, and migrations to the newest schema.

SQLite (the embedded default, ``<data dir>/state/submissions.sqlite3``) runs in WAL mode, so readers
never wait for a writer, and every write transaction starts with ``BEGIN IMMEDIATE``: writers queue
for the one write lock instead of failing halfway with "database is locked", which makes a quota
check and its insert one atomic step across every server process. PostgreSQL (deployments:
``MEDBENCH_SUBMISSIONS_DB=postgresql+psycopg2://...``) gets the same atomicity from row locks and a
per-owner advisory lock (see store.py). Migrations run under a lock of their own, so that several
server processes starting at once migrate once.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import sqlalchemy as sa
from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory

from medbench.layout import DataDir

URL_ENV = "MEDBENCH_SUBMISSIONS_DB"
MIGRATIONS = Path(__file__).resolve().parent / "migrations"
_BUSY_TIMEOUT_S = 60
_PG_MIGRATION_LOCK = 7_202_612_290  # an arbitrary, fixed advisory-lock key for this store's migrations


def store_url(data: DataDir | None = None) -> str:
    """``$MEDBENCH_SUBMISSIONS_DB`` when set, else the SQLite file in the data directory's state folder."""
    configured = os.environ.get(URL_ENV)
    if configured:
        return configured
    return f"sqlite:///{(data or DataDir()).submissions_db}"


def is_sqlite(url: str | sa.URL) -> bool:
    return sa.make_url(url).get_backend_name() == "sqlite"


def make_engines(url: str) -> tuple[sa.Engine, sa.Engine]:
    """(reader, writer). On SQLite the writer begins IMMEDIATE; on PostgreSQL they are one engine."""
    if not is_sqlite(url):
        engine = sa.create_engine(url, pool_pre_ping=True, pool_size=5, max_overflow=10)
        return engine, engine
    path = sa.make_url(url).database
    if path and path != ":memory:":
        Path(path).parent.mkdir(parents=True, exist_ok=True)
    reader = _sqlite_engine(url, immediate=False)
    writer = _sqlite_engine(url, immediate=True)
    return reader, writer


def _sqlite_engine(url: str, *, immediate: bool) -> sa.Engine:
    engine = sa.create_engine(url, connect_args={"timeout": _BUSY_TIMEOUT_S, "check_same_thread": False})

    @sa.event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection, _record) -> None:
        dbapi_connection.isolation_level = None  # SQLAlchemy emits BEGIN itself (below)
        cursor = dbapi_connection.cursor()
        cursor.execute(f"PRAGMA busy_timeout = {_BUSY_TIMEOUT_S * 1000}")
        cursor.execute("PRAGMA journal_mode = WAL")
        cursor.execute("PRAGMA synchronous = NORMAL")
        cursor.execute("PRAGMA foreign_keys = ON")
        cursor.close()

    @sa.event.listens_for(engine, "begin")
    def _on_begin(connection) -> None:
        connection.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")

    return engine


def _alembic_config(connection: sa.Connection) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.attributes["connection"] = connection
    return config


def head_revision() -> str:
    return ScriptDirectory(str(MIGRATIONS)).get_current_head() or ""


def current_revision(engine: sa.Engine) -> str | None:
    with engine.connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()


def migrate(engine: sa.Engine) -> None:
    """Bring the schema to the newest revision (a no-op when it is there already)."""
    if current_revision(engine) == head_revision():
        return
    with _migration_lock(engine), engine.connect() as connection:
        command.upgrade(_alembic_config(connection), "head")
        connection.commit()


@contextmanager
def _migration_lock(engine: sa.Engine) -> Iterator[None]:
    if is_sqlite(engine.url):
        path = engine.url.database
        if not path or path == ":memory:":
            yield
            return
        with open(f"{path}.migrate.lock", "a+") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)
        return
    with engine.connect() as connection:
        connection.execute(sa.text("SELECT pg_advisory_lock(:key)"), {"key": _PG_MIGRATION_LOCK})
        try:
            yield
        finally:
            connection.execute(sa.text("SELECT pg_advisory_unlock(:key)"), {"key": _PG_MIGRATION_LOCK})
            connection.commit()
