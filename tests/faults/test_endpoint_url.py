"""A ``base_url`` with a query or a fragment is a spec error (one line ``file: key: problem``, exit 2).

The fault (issue 35): requests go to ``{base_url}/chat/completions``, so ``http://h/v1?x=1`` sent
them to ``/v1?x=1/chat/completions``, the query's path, and the server answered something else. A
maintainer's model spec (``settings.base_url``), a configured endpoint (``[endpoints.<name>]`` of
``submissions.toml``) and a URL read from ``base_url_env`` at run time are all refused, with the
query's values redacted.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from support.commands import run_medbench
from support.model_specs import specs_with_served
from support.plugins import specs as load_specs

from pipelines.backends.openai_backend import OpenAIChatGenerator
from medbench.specs import SpecError
from pipelines.engine.submission_policy import FILE_NAME, load_policy
from medbench.layout import DataDir

BAD = ["http://h.example/v1?token=tok123", "http://h.example/v1#frag", "http://h.example/v1?"]


@pytest.mark.parametrize("url", BAD)
def test_a_model_spec_base_url_with_a_query_or_fragment_is_a_spec_error(tmp_path: Path, url: str) -> None:
    with pytest.raises(SpecError, match=r"served\.toml: key `settings\.base_url`: .* has a (query|fragment)") as info:
        load_specs(specs_with_served(tmp_path / "specs", url))
    assert "tok123" not in str(info.value) and "\n" not in str(info.value)


def test_the_cli_says_it_in_one_line_and_exits_2(tmp_path: Path) -> None:
    specs = specs_with_served(tmp_path / "specs", "http://h.example/v1?x=1")
    proc = run_medbench("materialize", "--dry-run", "--model", "acme/served", data=tmp_path / "data", check=False,
                        timeout=300, env={"MEDBENCH_SPECS": str(specs)})
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-2000:])
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert lines[0].startswith(f"medbench: {specs / 'models' / 'acme' / 'served.toml'}: key `settings.base_url`: ")
    assert "has a query" in lines[0]


@pytest.mark.parametrize("url", BAD)
def test_a_configured_endpoint_with_a_query_or_fragment_is_a_spec_error(tmp_path: Path, url: str) -> None:
    specs, data = tmp_path / "specs", tmp_path / "data"
    specs.mkdir()
    (specs / FILE_NAME).write_text('[endpoints.ok]\nbase_url = "http://ok.example/v1"\n')
    data.mkdir()
    (data / FILE_NAME).write_text(f'[endpoints.bad]\nbase_url = "{url}"\n')
    with pytest.raises(SpecError) as info:
        load_policy(specs, DataDir(data))
    message = str(info.value)
    assert message.startswith(f"{data / FILE_NAME}: key `endpoints.bad.base_url`: the URL has a "), message
    assert "tok123" not in message and "\n" not in message


def test_a_url_read_at_run_time_is_refused_too() -> None:
    with pytest.raises(ValueError, match=r"settings\.base_url: .* has a query") as info:
        OpenAIChatGenerator("http://h.example/v1?token=tok123", "m", 8)
    assert "tok123" not in str(info.value)


def test_an_ordinary_url_is_accepted(tmp_path: Path) -> None:
    model = load_specs(specs_with_served(tmp_path / "specs", "http://127.0.0.1:8000/v1/")).model("acme/served")
    assert model.settings.base_url == "http://127.0.0.1:8000/v1/"
    assert OpenAIChatGenerator("http://127.0.0.1:8000/v1/", "m", 8).base_url == "http://127.0.0.1:8000/v1"
