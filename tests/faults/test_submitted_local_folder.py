"""A submitted Hub model is loaded from the Hub cache at its pinned commit, never from a local folder
of the same name (issue 35, item 5).

The fault: a submission's ``settings.model`` must be a Hub id (``org/name``), but
``models/tiny-llama-seed0`` is one too, and the transformers backend passed it to ``from_pretrained``,
which loads a folder of that name under the worker's current directory first, and dropped the
pinned revision because that folder exists. A submission's model now resolves through the Hub cache
(``registry.hub_snapshot``: ``snapshot_download`` at the spec's revision); a maintainer's own spec
keeps loading a local folder as before.
"""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest
from support.plugins import builtin_plugins
from support.plugins import specs as load_specs

from pipelines.backends import registry
from medbench.layout import DataDir

COMMIT = "0123456789abcdef0123456789abcdef01234567"
NAME = "models/tiny-llama-seed0"


@pytest.fixture
def setup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    worker = tmp_path / "worker"
    (worker / NAME).mkdir(parents=True)
    (worker / NAME / "config.json").write_text("{}")  # the folder an attacker planted under the worker's cwd
    monkeypatch.chdir(worker)
    asked: list[tuple[str, str]] = []
    cache = tmp_path / "hf-cache" / "snapshots" / COMMIT

    def snapshot_download(repo_id: str, revision: str) -> str:
        asked.append((repo_id, revision))
        return str(cache)

    import huggingface_hub

    monkeypatch.setattr(huggingface_hub, "snapshot_download", snapshot_download)
    base = load_specs().model("medbench/tiny-llama")
    model = msgspec.structs.replace(base, slug="acme/tiny", provider="acme", revision=COMMIT,
                                    settings=msgspec.structs.replace(base.settings, model=NAME))
    data = DataDir(tmp_path / "data")
    return model, data, asked, cache


def submit(data: DataDir, slug: str) -> None:
    path = data.submitted_specs / "models" / f"{slug}.toml"
    path.parent.mkdir(parents=True)
    path.write_text("# written by the submissions desk\n")


def test_a_submission_never_loads_a_local_folder(setup) -> None:
    model, data, asked, cache = setup
    submit(data, model.slug)
    assert registry.submitted(model, data)
    generator = builtin_plugins().backends.get("transformers").text_generator(model, data, max_new_tokens=8,
                                                                              options=("A", "B"))
    assert generator.model_path == str(cache) and Path(generator.model_path).is_absolute()
    assert generator.revision == COMMIT
    assert asked == [(NAME, COMMIT)]


def test_the_vllm_backend_resolves_a_submission_the_same_way(setup) -> None:
    """The vllm backend loads what ``model_source`` gives (vllm itself is on GPU machines only)."""
    from pipelines.backends.settings import VllmSettings

    model, data, asked, cache = setup
    submit(data, model.slug)
    model = msgspec.structs.replace(model, backend="vllm", settings=VllmSettings(model=NAME))
    assert registry.model_source(model, data) == (str(cache), COMMIT)
    assert asked == [(NAME, COMMIT)]


def test_a_maintainers_spec_keeps_its_local_folder(setup) -> None:
    model, data, asked, _ = setup
    assert not registry.submitted(model, data)
    generator = builtin_plugins().backends.get("transformers").text_generator(model, data, max_new_tokens=8,
                                                                              options=("A", "B"))
    assert generator.model_path == NAME and generator.revision is None and asked == []
