"""Fixtures of the warehouse tests that need medbench to build what a test then checks without it."""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path

import pytest

from support.api_data import catalog
from warehouse.keys import keys_path, load_key, sign_catalog, write_new_key
from medbench.layout import DataDir
from warehouse.publish import publish
from medbench.records import encode_record
from warehouse.signing import signature_path


@pytest.fixture
def signed_result_files(tmp_path: Path) -> dict[str, str]:
    """One published, signed result as a reader gets it: paths of its ``result.json``, its
    ``signature.json``, its predictions file and the keys file (a ``/v1/keys`` answer), copied out
    of the data directory."""
    key = tmp_path / "keys" / "k.pem"
    write_new_key(key)
    data = DataDir(tmp_path / "data")
    cat = catalog(data)
    for r in cat.results:
        data.result_path(r.run_id).write_bytes(encode_record(r))
    day = dt.date(2026, 12, 1)
    sign = sign_catalog(data, cat, load_key(key), today=day)
    publish(data, cat, now=dt.datetime.combine(day, dt.time(12), tzinfo=dt.timezone.utc), sign=sign)
    run_id = cat.results[0].run_id
    out = tmp_path / "copied"
    out.mkdir()
    files = {"result": data.result_path(run_id), "signature": signature_path(data, run_id),
             "predictions": data.predictions_path(run_id), "keys": keys_path(data)}
    return {name: str(shutil.copy(path, out / f"{name}{path.suffix}")) for name, path in files.items()}
