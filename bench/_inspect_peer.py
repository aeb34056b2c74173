"""bench/vs_inspect's peer: the same stored answers graded by Inspect AI with a model-graded scorer.

An Inspect task whose dataset holds one sample per stored answer, whose solver puts the stored answer
in as the model's output (no model is asked to answer: as in medbench's regrading, only the judging
is paid), and whose scorer asks the judge through Inspect's OpenAI-compatible provider
(``openai-api/<service>/<model>`` with ``base_url``, inspect.aisi.org.uk/providers.html) with the
judge prompt medbench renders (the task spec's ``judge_prompt_template``), at temperature 0. The
scorer reads the judge's JSON reply itself (not with medbench's parser) and keeps each criterion's
verdict in the score's metadata, so the two sides are compared criterion by criterion.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

INSTALL_HINT = "Inspect AI is not installed: pip install -e '.[test]' (it pins inspect-ai and openai)"
SERVICE = "loopback"  # Inspect's openai-api service prefix; its key variable is LOOPBACK_API_KEY
_OBJECT = re.compile(r"\{.*\}", re.S)


def read_grades(reply: str) -> dict[str, bool]:
    """criterion id -> met, from a reply ``{"grades": [{"id", "met", "justification"}]}``."""
    match = _OBJECT.search(reply or "")
    if not match:
        return {}
    try:
        data = json.loads(match.group(0))
    except json.JSONDecodeError:
        return {}
    grades = data.get("grades") if isinstance(data, dict) else None
    return {g["id"]: g["met"] for g in grades or [] if isinstance(g, dict) and isinstance(g.get("met"), bool)}


def inspect_grades(answers: list[dict[str, Any]], template: str, base_url: str, judge_model: str,
                   max_tokens: int, concurrency: int, log_dir: Path) -> dict[str, dict[str, bool]]:
    """Grade ``answers`` (rows: id, prompt, answer, criteria) with Inspect; id -> criterion id -> met."""
    from inspect_ai import Task
    from inspect_ai import eval as inspect_eval
    from inspect_ai.dataset import MemoryDataset, Sample
    from inspect_ai.model import GenerateConfig, ModelOutput, get_model
    from inspect_ai.scorer import Score, Target, mean, scorer
    from inspect_ai.solver import Generate, TaskState, solver

    @solver
    def stored_answer():
        async def solve(state: TaskState, generate: Generate) -> TaskState:
            state.output = ModelOutput.from_content(model="stored", content=state.metadata["answer"])
            return state

        return solve

    @scorer(metrics=[mean()])
    def rubric_judge():
        judge = get_model(f"openai-api/{SERVICE}/{judge_model}", base_url=base_url, api_key="loopback",
                          config=GenerateConfig(temperature=0.0, max_tokens=max_tokens,
                                                max_connections=concurrency))

        async def score(state: TaskState, target: Target) -> Score:
            criteria = state.metadata["criteria"]
            block = "\n".join(f"- {c['id']}: {c['text']}" for c in criteria)
            prompt = template.format(prompt=state.metadata["prompt"], answer=state.output.completion, criteria=block)
            reply = (await judge.generate(prompt)).completion
            grades = read_grades(reply)
            met = {c["id"]: bool(grades.get(c["id"], False)) for c in criteria}
            return Score(value=sum(met.values()) / max(len(met), 1), metadata={"met": met})

        return score

    samples = [Sample(id=a["id"], input=a["prompt"], metadata={"prompt": a["prompt"], "answer": a["answer"],
                                                                  "criteria": a["criteria"]}) for a in answers]
    task = Task(dataset=MemoryDataset(samples), solver=stored_answer(), scorer=rubric_judge())
    logs = inspect_eval(task, model="mockllm/model", display="none", log_dir=str(log_dir), log_level="warning",
                        max_samples=concurrency, max_connections=concurrency, fail_on_error=True)
    log = logs[0]
    if log.status != "success" or log.samples is None:
        raise RuntimeError(f"Inspect's eval ended {log.status}: {log.error}")
    return {str(s.id): dict(s.scores["rubric_judge"].metadata["met"]) for s in log.samples}
