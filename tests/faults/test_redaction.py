"""No secret in a model's settings reaches any published file or served body.

The fault (issue #22, item 3, a security probe): redaction worked from a list of secret-looking
names, so ``clientSecret``, ``accessToken``, ``privateKey``, ``bearerToken``, ``pass``, ``creds``
and a ``base_url`` with ``?accessToken=`` were published verbatim in ``result.json``, ``run.json``,
the DuckDB ``models.spec``, ``/v1/results/{id}`` and the result page. Here a model spec holding
each of them (and headers, nested tables and lists in ``extra_body``, a URL with ``user:pw@``) is
materialized end to end against the loopback chat server; then every file of the data directory
(Parquet and DuckDB read back as values too, since they compress) and every served body is
searched for each secret value.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import duckdb
import httpx
import pyarrow.parquet as pq
import pytest
from support.commands import run_medbench
from support.loopback_chat_server import LoopbackChatServer
from support.paths import REPO
from support.serving import serve_in_thread

from medbench.layout import DataDir

pytestmark = pytest.mark.slow

SECRETS = {
    "clientSecret": "zq01-client-secret", "accessToken": "zq02-access-token", "privateKey": "zq03-private-key",
    "bearerToken": "zq04-bearer-token", "pass": "zq05-pass", "creds": "zq06-creds",
}
QUERY_TOKEN, USERINFO_PW, HEADER, DEEP, IN_LIST, API_KEY = (
    "zq07-query-token", "zq08-userinfo-pw", "zq09-header", "zq10-deep", "zq11-in-list", "zq12-api-key")
ALL_SECRETS = [*SECRETS.values(), QUERY_TOKEN, USERINFO_PW, HEADER, DEEP, IN_LIST, API_KEY]

SPEC = """slug = "acme/leaky"
name = "Leaky"
type = "llm"
provider = "acme"
provider_model_id = "leaky"
revision = "1"
description = "A served model whose settings hold secrets under names no deny-list has."
backend = "openai"
tasks = ["clinicalqa@0"]

[settings]
base_url = "{base_url}"
api_key_env = "LEAKY_KEY"
concurrency = 4

[settings.extra_body]
{probes}
callback = "https://bob:{userinfo_pw}@cb.example/hook"
webhook = "https://cb.example/hook?accessToken={query_token}"
list = ["{in_list}", 3]

[settings.extra_body.headers]
Authorization = "Bearer {header}"
nested = {{ deep = "{deep}" }}

[price]
basis = "free"
"""


def _write_specs(root: Path, base_url: str) -> Path:
    import shutil

    shutil.copytree(REPO / "specs", root)
    (root / "models" / "acme").mkdir()
    probes = "\n".join(f'{key} = "{value}"' for key, value in SECRETS.items())
    (root / "models" / "acme" / "leaky.toml").write_text(
        SPEC.format(base_url=base_url, query_token=QUERY_TOKEN, probes=probes, userinfo_pw=USERINFO_PW,
                    in_list=IN_LIST, header=HEADER, deep=DEEP), encoding="utf-8")
    return root


def _leaks(where: str, text: str | bytes) -> list[str]:
    raw = text.encode() if isinstance(text, str) else text
    return [f"{where}: {secret}" for secret in ALL_SECRETS if secret.encode() in raw]


def _data_dir_leaks(data: Path) -> list[str]:
    found: list[str] = []
    for path in sorted(p for p in data.rglob("*") if p.is_file()):
        found += _leaks(str(path.relative_to(data)), path.read_bytes())
        if path.suffix == ".parquet":
            found += _leaks(f"{path.name} (values)", json.dumps(pq.read_table(path).to_pylist(), default=str))
    with duckdb.connect(str(DataDir(data).duckdb_link), read_only=True) as con:
        for table, in con.execute("SELECT table_name FROM information_schema.tables").fetchall():
            rows = con.execute(f'SELECT * FROM "{table}"').fetchall()
            found += _leaks(f"duckdb {table}", json.dumps(rows, default=str))
    return found


def test_no_secret_in_the_settings_is_published_anywhere(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with LoopbackChatServer() as server:
        specs = _write_specs(tmp_path / "specs", server.base_url)
        out = run_medbench("materialize", "--demo", "--task", "clinicalqa@0", "--model", "acme/leaky", data=data,
                           env={"MEDBENCH_SPECS": str(specs), "LEAKY_KEY": API_KEY}).stdout
        assert server.requests and server.requests[0].body["clientSecret"] == SECRETS["clientSecret"]  # it ran with them
        assert server.requests[0].authorization == f"Bearer {API_KEY}"
    match = re.search(r"clinicalqa@0\|acme/leaky\s+ran\s+([0-9a-f]{12})", out)
    assert match, out
    run_id = match[1]
    found = _leaks("materialize output", out)

    layout = DataDir(data)
    assert layout.predictions_path(run_id).exists() and (layout.run_dir(run_id) / "run.json").exists()
    found += _data_dir_leaks(data)
    with serve_in_thread(data) as base:
        for path in (f"/v1/results/{run_id}", f"/r/{run_id}", "/v1/results?model=acme/leaky", "/v1/models",
                     f"/v1/compare?a={run_id}&b={run_id}"):
            response = httpx.get(base + path, timeout=30)
            assert response.status_code in (200, 400, 404), (path, response.status_code)
            found += _leaks(path, response.content)
        served = httpx.get(f"{base}/v1/results/{run_id}", timeout=30).json()["config"]["backend_settings"]
    assert not found, "\n".join(found)

    # Every key is kept, every free-form value and every URL secret is `<redacted>`, typed settings are shown.
    shown = json.loads(layout.result_path(run_id).read_text())["config"]["backend_settings"]
    assert served == shown
    assert {key: shown["extra_body"][key] for key in SECRETS} == {key: "<redacted>" for key in SECRETS}
    assert shown["extra_body"]["headers"] == {"Authorization": "<redacted>", "nested": {"deep": "<redacted>"}}
    assert shown["extra_body"]["list"] == ["<redacted>", "<redacted>"]
    # a query in base_url is a spec error since issue 35: the query token stands in a free-form URL
    assert shown["base_url"] == server.base_url and shown["extra_body"]["webhook"] == "<redacted>"
    assert (shown["api_key_env"], shown["concurrency"], shown["model"]) == ("LEAKY_KEY", 4, None)
    with duckdb.connect(str(layout.duckdb_link), read_only=True) as con:
        spec = json.loads(con.execute("SELECT spec FROM models WHERE slug = 'acme/leaky'").fetchone()[0])
    assert (spec["slug"], spec["revision"], spec["backend"]) == ("acme/leaky", "1", "openai")
    assert spec["settings"]["api_key_env"] == "LEAKY_KEY" and spec["settings"]["extra_body"]["pass"] == "<redacted>"
