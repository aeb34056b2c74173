"""Shared fixtures for every lane: published warehouses built from synthetic catalogs (shared read-only,
or one per test), the website's warehouses, and the demo materialized once per session through the real
`medbench materialize --demo` path.

Tests are laid out by layer: ``unit/<package>/`` (the fast lane: ``pytest tests/unit``), ``contract/``
(the API's JSON contract, OpenAPI snapshot, clients, MCP), ``e2e/`` (materialize, serve, browser,
benches at tiny size), ``faults/`` (a fault per test, against real processes; slow lane). Helpers that
tests import live in ``support/``; fixtures live here.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from support.api_data import publish_fixture
from support.commands import run_medbench
from support.site_data import BULK, publish_site


_KEY_DIR: str | None = None


def pytest_configure(config: pytest.Config) -> None:
    """Signing keys for the whole run (``warehouse.keys``), in one temporary directory removed at the end:
    demo materializations keep their per-data-directory keys there (``MEDBENCH_KEY_HOME``), never under
    the user's ~/.config, and publishes of real data sign with one test key (``MEDBENCH_SIGNING_KEY``).
    Specs with secret values outside demo data directories hash under one test identity key
    (``MEDBENCH_IDENTITY_KEY``, ``medbench.identity_form``). Subprocesses inherit all three.
    Tests of a missing key unset them.

    ``MEDBENCH_DATA`` names an empty directory of the run too: what reads the default data directory
    (the identity key asks its ``KIND``) never sees the checkout's ``./data``, which ``./scripts/demo``
    fills with demo data, nor the maintainer's own data directory; a test that needs one sets its own."""
    global _KEY_DIR
    from medbench.identity_form import IDENTITY_KEY_ENV
    from medbench.layout import DATA_ENV
    from warehouse.keys import KEY_ENV, KEY_HOME_ENV, write_new_key

    _KEY_DIR = tempfile.mkdtemp(prefix="medbench-test-keys-")
    os.environ[KEY_HOME_ENV] = str(Path(_KEY_DIR) / "demo")
    write_new_key(Path(_KEY_DIR) / "publisher.pem")
    os.environ[KEY_ENV] = str(Path(_KEY_DIR) / "publisher.pem")
    (Path(_KEY_DIR) / "identity.key").write_bytes(os.urandom(32))
    os.environ[IDENTITY_KEY_ENV] = str(Path(_KEY_DIR) / "identity.key")
    (Path(_KEY_DIR) / "data").mkdir()
    os.environ[DATA_ENV] = str(Path(_KEY_DIR) / "data")


def pytest_unconfigure(config: pytest.Config) -> None:
    if _KEY_DIR:
        shutil.rmtree(_KEY_DIR, ignore_errors=True)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test that needs the whole demo materialized in a subprocess is slow by construction: it goes
    to the slow lane (which CI runs) whatever its module says."""
    for item in items:
        if "demo_data" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.slow)


@pytest.fixture(scope="session")
def demo_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data directory with the demo materialized once (shared, treat as read-only)."""
    data = tmp_path_factory.mktemp("demo-data")
    run_medbench("materialize", "--demo", data=data)
    return data


@pytest.fixture(scope="session")
def shared_data(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A published warehouse the read-only tests share (never written after creation)."""
    root = tmp_path_factory.mktemp("api-shared") / "data"
    return root, publish_fixture(root)


@pytest.fixture
def own_data(tmp_path: Path) -> tuple[Path, str]:
    """A published warehouse for one test that changes it (republish, reuses)."""
    root = tmp_path / "data"
    return root, publish_fixture(root)


@pytest.fixture(scope="session")
def site_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return publish_site(tmp_path_factory.mktemp("site-real") / "data", demo=False)


@pytest.fixture(scope="session")
def site_demo_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return publish_site(tmp_path_factory.mktemp("site-demo") / "data", demo=True)


@pytest.fixture(scope="session")
def site_bulk_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return publish_site(tmp_path_factory.mktemp("site-bulk") / "data", demo=False, bulk=BULK)
