"""The demo's simulated LLM panel (issue 26, item 2): eight replay models in realistic answer styles,
per-category profiles, an exact tie, a lower parse rate for the hedger, every one labelled simulated
and evaluated on demo data only. The committed outputs files are the generator's bytes."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest

from pipelines.backends.registry import (
    DEMO_ONLY,
    NotRunnable,
    ReplayBackend,
    not_runnable_reason,
)
from pipelines.datasets.clinicalqa.demo import demo_clinicalqa_rows
from pipelines.datasets.clinicalqa.simulated import (
    OUTPUTS_DIR,
    PANEL,
    panel_replies,
    replay_bytes,
)
from pipelines.datasets.clinicalqa.simulated_styles import NEEDS
from pipelines.tasks.clinicalqa.parsing.versions import PARSERS, parse_answer
from support.plugins import specs
from medbench.layout import DataDir

SPECS = specs()
TASK = SPECS.task("clinicalqa@0")
ROWS = demo_clinicalqa_rows(11)
OPTION_TEXTS = {str(r["question_id"]): {k[-1]: v for k, v in r["options"].items()} for r in ROWS}
SIMULATED = {slug: m for slug, m in SPECS.models.items() if slug.startswith("medbench-sim/")}


@pytest.fixture(scope="module")
def panel():
    return panel_replies()


def _version_number(version: str) -> int:
    return int(version.lstrip("v"))


def test_at_least_eight_simulated_models_each_with_its_spec() -> None:
    assert len(PANEL) >= 8 and len({p.style for p in PANEL}) >= 8
    assert set(SIMULATED) == {f"medbench-sim/{p.name}" for p in PANEL}
    for model in SIMULATED.values():
        assert model.backend == "replay" and model.tasks == ["clinicalqa@0"] and model.price.basis == "free"
        assert Path(model.settings.resolved) == OUTPUTS_DIR / f"{model.provider_model_id}.jsonl"


def test_every_simulated_model_is_labelled_simulated_and_demo_only() -> None:
    for model in SIMULATED.values():
        assert model.name.startswith("Simulated LLM: "), model.slug
        assert model.description.startswith("SIMULATED, not a real model"), model.slug
        assert model.settings.demo_only is True


def test_the_committed_outputs_are_the_generator_s_bytes(panel) -> None:
    """A change to the demo items or the generator must rewrite the files (the module says how)."""
    for profile in PANEL:
        path = OUTPUTS_DIR / f"{profile.name}.jsonl"
        assert path.read_bytes() == replay_bytes(panel[profile.name]), (
            f"{path} is stale: run python -m pipelines.datasets.clinicalqa.simulated")


def test_the_generator_is_deterministic(panel) -> None:
    assert panel_replies() == panel


@pytest.mark.parametrize("version", sorted(PARSERS))
def test_every_reply_reads_as_intended_by_each_parser_that_reads_its_style(panel, version: str) -> None:
    """The letter a reply commits to is what a parser of its style's version (or later) reads;
    hedges and refusals read as no answer. Styles that need a later version than ``version`` are
    left to that version (``NEEDS``)."""
    checked = 0
    for profile in PANEL:
        if _version_number(NEEDS[profile.style]) > _version_number(version):
            continue
        for reply in panel[profile.name]:
            got = parse_answer(reply.output, TASK.choice.options, version, OPTION_TEXTS[reply.instance_id])
            assert got.prediction == reply.intended, (profile.name, reply.output, got)
            checked += 1
    if _version_number(version) >= 2:
        assert checked >= 4 * len(ROWS)


def test_v2_misreads_the_styles_that_need_v3(panel) -> None:
    """What the report lists as v2's misses: each style marked v3 has replies v2 reads otherwise."""
    for profile in PANEL:
        misread = sum(parse_answer(r.output, TASK.choice.options, "v2", OPTION_TEXTS[r.instance_id]).prediction
                      != r.intended for r in panel[profile.name])
        assert (misread > 0) == (NEEDS[profile.style] == "v3"), (profile.name, misread)


def test_two_models_are_tied_exactly_on_the_same_items(panel) -> None:
    right = {name: tuple(r.intended == r.label for r in replies) for name, replies in panel.items()}
    tied = [(a, b) for a in right for b in right if a < b and right[a] == right[b]]
    assert tied == [("markdown-ko", "reasoning-ko")]
    assert panel["markdown-ko"] != panel["reasoning-ko"]  # the same knowledge, other words
    assert all(x.output != y.output for x, y in zip(panel["markdown-ko"], panel["reasoning-ko"]))


def test_accuracies_differ_by_model_and_by_category(panel) -> None:
    overall = {name: sum(r.intended == r.label for r in rs) / len(rs) for name, rs in panel.items()}
    assert len(set(overall.values())) == len(overall) - 1  # only the tied pair shares one
    best_category = {}
    for name, replies in panel.items():
        by = defaultdict(list)
        for r in replies:
            by[r.category].append(r.intended == r.label)
        accuracy = {c: sum(v) / len(v) for c, v in by.items()}
        assert max(accuracy.values()) - min(accuracy.values()) > 0.2, name
        best_category[name] = max(accuracy, key=accuracy.get)
    assert len(set(best_category.values())) >= 4


def test_the_hedger_parses_least(panel) -> None:
    committed = {name: sum(r.intended is not None for r in rs) / len(rs) for name, rs in panel.items()}
    assert min(committed, key=committed.get) == "hedging" and 0.7 < committed["hedging"] < 0.9
    assert {v for k, v in committed.items() if k != "hedging"} == {1.0}


def test_a_simulated_model_is_skipped_on_real_data_and_runs_on_demo_data(tmp_path: Path) -> None:
    real, demo = DataDir(tmp_path / "real"), DataDir(tmp_path / "demo")
    real.claim("real")
    demo.claim("demo")
    model = SIMULATED["medbench-sim/terse"]
    assert not_runnable_reason(model, real) == DEMO_ONLY
    assert not_runnable_reason(model, demo) is None
    assert not_runnable_reason(SPECS.models["medbench/random"], real) is None
    replay, cap = ReplayBackend(), TASK.settings.max_new_tokens
    with pytest.raises(NotRunnable, match="demo only"):
        replay.text_generator(model, real, max_new_tokens=cap, options=TASK.settings.options)
    assert replay.text_generator(model, demo, max_new_tokens=cap, options=TASK.settings.options) is not None


def test_on_real_data_the_plan_skips_them_and_the_catalog_leaves_them_out(tmp_path: Path) -> None:
    from pipelines.orchestration.plan import plan_selection
    from pipelines.engine.release import build_catalog

    real, demo = DataDir(tmp_path / "real"), DataDir(tmp_path / "demo")
    real.claim("real")
    demo.claim("demo")
    pairs = [(TASK, m) for m in SIMULATED.values()] + [(TASK, SPECS.models["medbench/random"])]
    planned = {p.model.slug: p for p in plan_selection(SPECS, real, pairs, force=False)}
    assert {s: p.status for s, p in planned.items()} == {**{s: "skip" for s in SIMULATED}, "medbench/random": "run"}
    assert all(planned[s].reason == DEMO_ONLY for s in SIMULATED)
    assert {p.status for p in plan_selection(SPECS, demo, pairs, force=False)} == {"run"}
    listed = {m["slug"] for m in build_catalog(SPECS, real).models}
    assert "medbench/random" in listed and not listed & set(SIMULATED)
    assert set(SIMULATED) <= {m["slug"] for m in build_catalog(SPECS, demo).models}


def test_the_dry_run_on_a_new_directory_plans_what_demo_runs(tmp_path: Path) -> None:
    """Issue #40: on a directory without ``KIND`` yet, ``--dry-run --demo`` said the simulated panel
    would be skipped ("demo only") while the demo then ran it; the plan reads ``--demo``."""
    from pipelines.orchestration.plan import plan_selection

    new = DataDir(tmp_path / "new")
    pairs = [(TASK, m) for m in SIMULATED.values()]
    assert {p.status for p in plan_selection(SPECS, new, pairs, force=False, demo=True)} == {"run"}
    assert {p.status for p in plan_selection(SPECS, new, pairs, force=False, demo=False)} == {"skip"}
    assert new.demo_or_real() is None and not new.root.exists()  # nothing claimed, nothing written
