"""A real PostgreSQL 15 cluster for tests: started by the test session on a private loopback port in a
temporary directory, and stopped after. Used by the production-instance tests (tests/e2e) and by the
submissions store's tests, which run against both SQLite and PostgreSQL.

PostgreSQL refuses to run as root, so when the tests run as root (CI) the cluster is created and run
as `nobody` (setpriv). Missing binaries fail the test with the package to install: these tests are
never skipped silently (scripts/setup installs `postgresql`).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

PG_BIN = Path(os.environ.get("MEDBENCH_PG_BIN", "/usr/lib/postgresql/15/bin"))
START_TIMEOUT = 60


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def need_binary(path: Path | str | None, package: str) -> str:
    if not path or not Path(path).exists():
        pytest.fail(f"{path or package} not found: install the Debian package `{package}` "
                    "(scripts/setup does, as root)", pytrace=False)
    return str(path)


def _as_unprivileged() -> list[str]:
    """The prefix that drops root to nobody (PostgreSQL will not run as root); empty when not root."""
    if os.getuid() != 0:
        return []
    return [need_binary(shutil.which("setpriv"), "util-linux"), "--reuid=nobody", "--regid=nogroup", "--clear-groups"]


@dataclass
class Postgres:
    host: str
    port: int
    user: str
    password: str
    db: str

    def env(self) -> dict[str, str]:
        """What deploy/dagster.yaml reads."""
        return {"MEDBENCH_PG_HOST": self.host, "MEDBENCH_PG_PORT": str(self.port), "MEDBENCH_PG_USER": self.user,
                "MEDBENCH_PG_PASSWORD": self.password, "MEDBENCH_PG_DB": self.db}

    def url(self) -> str:
        """The SQLAlchemy URL of this database (the submissions store's MEDBENCH_SUBMISSIONS_DB)."""
        return f"postgresql+psycopg2://{self.user}:{self.password}@{self.host}:{self.port}/{self.db}"

    def query(self, sql: str) -> list[tuple]:
        import psycopg2

        with psycopg2.connect(host=self.host, port=self.port, user=self.user, password=self.password,
                              dbname=self.db, connect_timeout=10) as conn, conn.cursor() as cur:
            cur.execute(sql)
            return cur.fetchall()

    def create_db(self, name: str) -> Postgres:
        import psycopg2

        conn = psycopg2.connect(host=self.host, port=self.port, user=self.user, password=self.password,
                                dbname=self.db, connect_timeout=10)
        conn.autocommit = True
        with conn.cursor() as cur:
            cur.execute(f'CREATE DATABASE "{name}"')
        conn.close()
        return Postgres(self.host, self.port, self.user, self.password, name)


def start_postgres(tmp_path_factory):
    """A fresh PostgreSQL cluster on 127.0.0.1:<free port>, owned by an unprivileged user."""
    initdb, pg_ctl = need_binary(PG_BIN / "initdb", "postgresql"), need_binary(PG_BIN / "pg_ctl", "postgresql")
    prefix = _as_unprivileged()
    # As root the cluster runs as nobody, who must reach its folder: pytest's temp folders are 0700 at
    # a depth that differs under xdist (popen-gwN), so the cluster lives in a folder of its own in /tmp.
    base = Path(tempfile.mkdtemp(prefix="medbench-pg-")) if prefix else tmp_path_factory.mktemp("postgres")
    pgdata, sock, log = base / "data", base / "sock", base / "server.log"
    sock.mkdir()
    if prefix:  # the cluster's directory must belong to the user that runs it
        os.chmod(base, 0o755)
        shutil.chown(base, "nobody", "nogroup")
        shutil.chown(sock, "nobody", "nogroup")
    user, password, db = "medbench", "medbench", "postgres"
    pwfile = base / "pw"
    pwfile.write_text(password + "\n")
    if prefix:
        shutil.chown(pwfile, "nobody", "nogroup")
    subprocess.run([*prefix, initdb, "-D", str(pgdata), "-U", user, "--pwfile", str(pwfile), "-A", "scram-sha-256",
                    "-E", "UTF8", "--no-sync"], check=True, capture_output=True, timeout=START_TIMEOUT)
    port = free_port()
    opts = f"-c listen_addresses=127.0.0.1 -p {port} -k {sock} -c fsync=off -c max_connections=200"
    subprocess.run([*prefix, pg_ctl, "-D", str(pgdata), "-l", str(log), "-o", opts, "-w", "-t", str(START_TIMEOUT),
                    "start"], check=True, capture_output=True, timeout=START_TIMEOUT + 10)
    postmaster = int((pgdata / "postmaster.pid").read_text().split()[0])
    try:
        yield Postgres("127.0.0.1", port, user, password, db)
    finally:
        subprocess.run([*prefix, pg_ctl, "-D", str(pgdata), "-m", "fast", "-w", "-t", "30", "stop"],
                       capture_output=True, timeout=60)
        _stop_pid(postmaster)  # when pg_ctl could not (e.g. the temp folder's modes changed meanwhile)
        if prefix:
            shutil.rmtree(base, ignore_errors=True)


def _stop_pid(pid: int, first: int = 2, timeout: float = 30) -> None:
    """SIGINT (PostgreSQL's fast shutdown), then SIGKILL, by process id."""
    for sig in (first, 9):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.2)


@pytest.fixture(scope="session")
def postgres(tmp_path_factory) -> Postgres:
    """A fresh PostgreSQL cluster for the session (see start_postgres)."""
    yield from start_postgres(tmp_path_factory)
