"""The one registry of plug-ins (``medbench.registry``): entry points, collisions, lookups, and
the hooks a plug-in may leave out (declared with defaults in ``medbench.protocols``)."""

from __future__ import annotations

from importlib import metadata
from pathlib import Path

import pytest

from medbench.protocols import Backend, NotRunnable, TaskFamily
from medbench.registry import GROUPS, Plugins, Registry, installed_plugins
from pipelines.engine.specs import load_specs
from support.paths import REPO


class Quiz(TaskFamily):
    """A family that declares only what is required: every optional hook is the protocol's default."""

    name = "quiz"
    kind = "choice"
    dataset = "quiz"
    settings_key = "quiz"


class Other(TaskFamily):
    name = "quiz"


def test_the_builtins_come_from_the_entry_points_of_this_project() -> None:
    plugins = installed_plugins()
    assert {"clinicalqa", "vitaldb-ioh"} <= set(plugins.families.names())
    assert {"clinicalqa", "vitaldb"} <= set(plugins.datasets.names())
    assert {"rule", "sklearn", "replay", "transformers", "openai", "vllm"} <= set(plugins.backends.names())
    for name, family in plugins.families.items():
        assert family.name == name and TaskFamily in type(family).__mro__
    pyproject = (REPO / "pyproject.toml").read_text()
    for group in GROUPS.values():
        assert f'[project.entry-points."{group}"]' in pyproject
        assert all(ep.value.startswith(("pipelines.", "medbench.")) for ep in metadata.entry_points(group=group)
                   if ep.dist is not None and ep.dist.name == "medbench")


def test_a_second_object_under_a_taken_name_is_an_error_naming_both() -> None:
    families: Registry = Registry("task family")
    families.add(Quiz())
    families.add(families.get("quiz"))  # the same object again is no collision
    with pytest.raises(ValueError, match=r"task family 'quiz' is registered twice: by .*Quiz and by .*Other"):
        families.add(Other())


def test_every_failed_lookup_lists_the_known_names() -> None:
    plugins = installed_plugins()
    with pytest.raises(KeyError, match=r"unknown task family 'nope'; known: clinicalqa, .*vitaldb-ioh"):
        plugins.families.get("nope")
    with pytest.raises(KeyError, match=r"unknown backend 'nope'; known: openai, replay, rule, sklearn"):
        plugins.backends.get("nope")
    with pytest.raises(KeyError, match=r"unknown dataset 'nope'; known: none"):
        Plugins.empty().datasets.get("nope")


def test_a_name_that_is_not_the_object_s_own_is_refused() -> None:
    with pytest.raises(ValueError, match=r"is named 'quiz', not 'exam'"):
        Registry("task family").register("exam", Quiz())


def test_optional_hooks_are_declared_with_defaults() -> None:
    quiz = Quiz()
    assert quiz.baseline_model(None) is None and quiz.check_descriptions == {} and quiz.scores_replays is False
    assert quiz.planned_items(None) is None and quiz.token_cap(None) is None

    class Plain(Backend):
        name = "plain"
        settings_type = dict

    plain = Plain()
    assert plain.pool(None) == "cpu" and plain.not_runnable_reason(None) is None and plain.devices(None) == 1
    assert plain.max_new_tokens(None, 7) == 7 and plain.fit_seed(None) is None


def test_a_backend_answers_only_what_it_declares() -> None:
    class Spec:
        slug = "acme/m"

    sklearn = installed_plugins().backends.get("sklearn")
    with pytest.raises(NotRunnable, match=r"acme/m: backend 'sklearn' does not answer choice tasks"):
        sklearn.text_generator(Spec(), None, max_new_tokens=8, options=("A",))
    with pytest.raises(NotRunnable, match=r"acme/m: backend 'replay' does not score windows"):
        installed_plugins().backends.get("replay").window_scorer(Spec(), 2)


def test_the_loader_knows_only_the_families_it_is_given(tmp_path: Path) -> None:
    """No registry fills itself: specs loaded with no families name none, and say so."""
    from medbench.specs import SpecError

    plugins = installed_plugins()
    bare = Plugins(Registry("task family"), plugins.datasets, plugins.backends)
    with pytest.raises(SpecError, match=r"clinicalqa/0\.toml: key `family`: unknown task family 'clinicalqa'; known: none"):
        load_specs(REPO / "specs", bare)


def test_a_text_family_whose_table_has_another_name_is_served_by_any_text_backend(tmp_path: Path) -> None:
    """The issue's AttributeError: the backend read ``task.choice``; the solver now hands it the task's cap."""
    import msgspec
    import pyarrow as pa

    from medbench.evaluation import Evaluation
    from medbench.outcomes import PromptItem
    from medbench.protocols import TextChoice
    from medbench.specs import BootstrapSpec, SpecBase, task_spec_type
    from pipelines.engine.solvers import solve_text_choice
    from medbench.layout import DataDir

    class QuizSettings(SpecBase):
        n: int

    class TextQuiz(Quiz):
        settings_type = QuizSettings

    plugins = installed_plugins()
    specs = load_specs(REPO / "specs", plugins)
    task = task_spec_type(TextQuiz)(slug="quiz", version=0, family="quiz", dataset="quiz", kind="choice", title="Q",
                                    description="", primary_metric="accuracy", preview=True, metrics=["accuracy"],
                                    bootstrap=BootstrapSpec(replicates=10, seed=1, unit="item"), quiz=QuizSettings(n=2))
    model = specs.model("medbench/random")  # the rule backend's seeded uniform choice
    ev = Evaluation(task, model, specs.datasets["clinicalqa"], "snap", "run", TextQuiz(), specs.backend_of(model))
    problem = TextChoice(prompts=[PromptItem("a", "?"), PromptItem("b", "?")], prompt_hash="h", max_new_tokens=4,
                         temperature=0.0, options=("X", "Y"),
                         parse=lambda outputs: pa.table({"instance_id": sorted(outputs),
                                                         "raw_output": [outputs[k] for k in sorted(outputs)]}))
    predicted = solve_text_choice(ev, problem, DataDir(tmp_path / "data"), lambda _: None)
    answers = predicted.table.column("raw_output").to_pylist()
    assert len(answers) == 2 and all(a.rpartition(" ")[2] in ("X", "Y") for a in answers)  # the task's options
    assert predicted.config["decoding"] == {"max_new_tokens": 4, "temperature": 0.0}
    tiny = specs.model("medbench/tiny-llama")
    own = tiny.settings.max_new_tokens
    lowered = specs.backend_of(tiny).max_new_tokens(tiny, 10_000)
    assert lowered == (10_000 if own is None else min(own, 10_000))
    assert msgspec.to_builtins(task)["quiz"] == {"n": 2}


def test_each_builtin_backend_declares_the_settings_type_its_specs_decode_into() -> None:
    from pipelines.backends.settings import MODEL_SETTINGS

    backends = installed_plugins().backends
    assert {name: backends.get(name).settings_type for name in MODEL_SETTINGS} == MODEL_SETTINGS
