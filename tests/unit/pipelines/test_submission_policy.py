"""The maintainers' submission policy: the checkout's file, then the data directory's, key by key;
strict like every spec (an unknown key names the files and the key)."""

from __future__ import annotations

from pathlib import Path

import pytest

from medbench.specs import SpecError
from pipelines.engine.submission_policy import FILE_NAME, load_policy
from medbench.layout import DataDir


def write(folder: Path, text: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / FILE_NAME).write_text(text)


def test_the_checkouts_policy_loads() -> None:
    policy = load_policy(data=DataDir("/nonexistent-medbench-data"))
    assert policy.limits.quota_per_week >= 1 and policy.limits.rate_limit >= 1


def test_the_data_directorys_file_wins_key_by_key(tmp_path: Path) -> None:
    specs, data = tmp_path / "specs", tmp_path / "data"
    write(specs, "[limits]\nquota_per_week = 5\nrate_limit = 7\n[endpoints.a]\nbase_url = \"http://a.example/v1\"\n")
    write(data, "[limits]\nquota_per_week = 50\n[owners.acme]\nauto_approve = true\n"
                "[endpoints.loop]\nbase_url_env = \"LOOP_URL\"\nmodels = [\"sim\"]\n")
    policy = load_policy(specs, DataDir(data))
    assert (policy.limits.quota_per_week, policy.limits.rate_limit) == (50, 7)
    assert sorted(policy.endpoints) == ["a", "loop"] and policy.endpoints["loop"].models == ["sim"]
    assert policy.auto_approves("acme") and not policy.auto_approves("beta")
    assert policy.quota_for("acme") == 50


def test_defaults_without_any_file_and_per_owner_quota(tmp_path: Path) -> None:
    write(tmp_path / "data", "[owners.big]\nquota_per_week = 500\n")
    policy = load_policy(tmp_path / "no-specs", DataDir(tmp_path / "data"))
    assert policy.quota_for("big") == 500 and policy.quota_for("small") == policy.limits.quota_per_week


def test_an_unknown_key_names_the_files_and_the_key(tmp_path: Path) -> None:
    write(tmp_path / "data", "[limits]\nquota = 3\n")
    with pytest.raises(SpecError, match=r"submissions.toml: unknown key `limits.quota`"):
        load_policy(tmp_path / "no-specs", DataDir(tmp_path / "data"))
