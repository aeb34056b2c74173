"""The suite never reads or writes the checkout's ``./data`` or a maintainer's own data directory.

``./scripts/demo`` fills ``./data`` with demo data, and the README runs it before ``./scripts/test``:
a test that fell back to the default data directory would see a demo ``KIND`` there (and hash secret
values under the public demo identity key, ``medbench.identity_form``). ``tests/conftest.py`` names an
empty directory of the run instead.
"""

from __future__ import annotations

import os

from support.paths import REPO

from medbench.layout import DATA_ENV, DataDir


def test_the_default_data_directory_is_the_runs_own_not_the_checkouts() -> None:
    root = DataDir().root.resolve()
    assert root != (REPO / "data").resolve() and REPO.resolve() not in root.parents
    assert os.environ[DATA_ENV] == str(DataDir().root)
    assert not (root / "KIND").exists()  # not claimed: neither demo nor real until a test says so
