"""Answer, then judge: the self-solving problem of a rubric task (``medbench.protocols.Problem``).

1. The evaluation's model answers each item's prompt through its backend's text generator; the
   answers are stored under a generation key (model, settings, prompt hash, decoding, snapshot),
   as every text task's are.
2. The judge (a model spec named by the task spec, any text backend: openai, vllm, transformers,
   replay) grades each answer ``judge_samples`` times. One judge call grades all of one answer's
   criteria at once (a batch) and replies in JSON, one verdict and a one-line justification per
   criterion. The judge's replies are stored under a key of their own: the judge's slug, revision,
   backend settings, the judge prompt's sha256, its decoding and the answers' key.

Why two stores: a new judge or judge prompt finds the answers already stored and calls only the
judge (regrading pays for the judging alone), and a rerun with the same judge calls nothing.
Usage keeps the two apart (``usage.answering``, ``usage.judging``); the totals are their sums.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from dataclasses import asdict, dataclass
from collections.abc import Mapping
from typing import Any, Callable

import msgspec
import pyarrow as pa

from medbench.canonical import spec_builtins
from medbench.outcomes import Log, Predicted, PromptItem, Sampling, Usage, combined_usage
from pipelines.engine.generations import GenerationStore, generation_key

UNGRADED = "(the judge gave no verdict for this criterion)"
SAMPLE_SEP = "#judge-"


def judge_prompt_sha256(template: str) -> str:
    return hashlib.sha256(template.encode("utf-8")).hexdigest()


def criteria_block(criteria: list[dict[str, Any]]) -> str:
    return "\n".join(f"- {c['id']}: {c['text']}" for c in criteria)


def judge_prompt(template: str, prompt: str, answer: str, criteria: list[dict[str, Any]]) -> str:
    return template.format(prompt=prompt, answer=answer, criteria=criteria_block(criteria))


_OBJECT = re.compile(r"\{.*\}", re.S)


def parse_verdicts(reply: str, criteria: list[dict[str, Any]]) -> tuple[list[tuple[bool, str]], bool]:
    """(met, justification) per criterion, in the criteria's order, from a judge reply of the form
    ``{"grades": [{"id", "met", "justification"}]}``; and whether the reply was read. A criterion the
    reply does not grade counts as not met, with the justification saying so."""
    found: dict[str, tuple[bool, str]] = {}
    ok = False
    match = _OBJECT.search(reply or "")
    if match:
        try:
            data = json.loads(match.group(0))
            grades = data.get("grades") if isinstance(data, dict) else None
            if isinstance(grades, list):
                ok = True
                for g in grades:
                    if isinstance(g, dict) and isinstance(g.get("id"), str) and isinstance(g.get("met"), bool):
                        line = str(g.get("justification") or "").strip().splitlines()
                        found[g["id"]] = (g["met"], line[0][:300] if line else "")
        except json.JSONDecodeError:
            ok = False
    return [found.get(c["id"], (False, UNGRADED)) for c in criteria], ok


def sampling_kwargs(temperature: float) -> dict[str, Any]:
    """``text_generator``'s ``sampling`` argument for a spec's temperature: absent at 0 (greedy, the
    call every backend takes), else the temperature with per-prompt seeds (``Sampling``), so each of a
    judge's samples draws on its own."""
    return {"sampling": Sampling(temperature=temperature)} if temperature > 0 else {}


@dataclass(frozen=True)
class Judge:
    """The judge as the result records it (``judge``) and what runs it."""

    model: str
    revision: str
    prompt_sha256: str
    samples: int
    temperature: float
    max_new_tokens: int
    backend: str
    backend_settings: dict[str, Any]
    generator: Callable[[], Any]  # () -> a TextGenerator

    def record(self) -> dict[str, Any]:
        return {"model": self.model, "revision": self.revision, "prompt_sha256": self.prompt_sha256,
                "samples": self.samples, "temperature": self.temperature, "max_new_tokens": self.max_new_tokens,
                "backend": self.backend}


def _usage_dict(u: Usage) -> dict[str, Any]:
    return asdict(u)


@dataclass(frozen=True)
class AnswerAndJudge:
    """The rubric problem: ``items`` rows with instance_id, prompt, criteria (list of dicts)."""

    items: list[dict[str, Any]]
    prompt_hash: str
    max_new_tokens: int
    temperature: float
    judge_for: Callable[[Any], Judge]  # the data directory -> the judge (its spec, backend and generator)
    judge_template: str
    table: Callable[[dict[str, str], dict[str, list[tuple[bool, str]]], Judge], pa.Table]
    config: dict[str, Any]

    def solve(self, ev: Any, data: Any, log: Log) -> Predicted:
        started = time.monotonic()
        decoding = {"max_new_tokens": ev.backend.max_new_tokens(ev.model, self.max_new_tokens),
                    "temperature": self.temperature}
        key = generation_key({
            "model": ev.model.slug, "revision": ev.model.revision, "backend": ev.model.backend,
            "settings": spec_builtins(ev.model.settings), "prompt_hash": self.prompt_hash, "decoding": decoding,
            "snapshot": ev.snapshot_id,
        })
        store = GenerationStore(data.generations(key))
        prompts = [PromptItem(r["instance_id"], r["prompt"]) for r in self.items]
        have = store.load()
        if len(have) >= len(prompts) and all(p.instance_id in have for p in prompts):
            log(f"{ev.partition_key}: all {len(prompts)} answers stored under generation {key}; "
                "the answering model is not called")
            answering = Usage(wall_seconds=0.0)
        else:
            generator = ev.backend.text_generator(ev.model, data, max_new_tokens=decoding["max_new_tokens"],
                                                  options=(), **sampling_kwargs(self.temperature))
            answering = generator.generate(prompts, store, log)
        answers = {iid: g.output for iid, g in store.load().items()}
        judged = self.judge_answers(ev, data, answers, key, log)
        usage = combined_usage(answering, Usage(**judged.usage["judging"]), wall_seconds=time.monotonic() - started)
        config = {"decoding": decoding, "prompt_hash": self.prompt_hash, **self.config,  # the order results had
                  "backend": ev.model.backend, "backend_settings": ev.backend.published(ev.model.settings),
                  **judged.config}
        return Predicted(table=judged.table, usage=usage, config=config, generation_key=key)

    def judge_answers(self, ev: Any, data: Any, answers: Mapping[str, str], answers_key: str,
                      log: Log) -> Predicted:
        """The task's judge over ``answers`` (the model's stored ones, or an official package's): the
        predictions, the judging's usage (``usage.judging``) and the judge's config."""
        judge = self.judge_for(data)
        verdicts, judging, unread, jkey = self.grade(judge, dict(answers), answers_key, data, log)
        config = {**self.config, "bootstrap": msgspec.to_builtins(ev.task.bootstrap), "judge": judge.record(),
                  "judge_generation_key": jkey, "judge_replies_unread": unread}
        return Predicted(table=self.table(dict(answers), verdicts, judge), usage={"judging": _usage_dict(judging)},
                         config=config)

    def grade(self, j: Judge, answers: dict[str, str], answers_key: str, data: Any,
              log: Log) -> tuple[dict[str, list[list[tuple[bool, str]]]], Usage, int, str]:
        """Every answer judged ``samples`` times, each call grading all its criteria; replies stored."""
        jkey = generation_key({"judge": j.model, "revision": j.revision, "backend": j.backend,
                               "settings": j.backend_settings, "prompt_sha256": j.prompt_sha256,
                               "decoding": {"max_new_tokens": j.max_new_tokens, "temperature": j.temperature},
                               "answers": answers_key})
        store = GenerationStore(data.generations(jkey))
        prompts = [PromptItem(f"{r['instance_id']}{SAMPLE_SEP}{s}",
                              judge_prompt(self.judge_template, r["prompt"], answers[r["instance_id"]], r["criteria"]))
                   for r in self.items for s in range(j.samples)]
        have = store.load()
        missing = [p for p in prompts if p.instance_id not in have]
        if missing and j.samples > 1 and j.temperature <= 0 and j.backend in ("openai", "vllm", "transformers"):
            log(f"judge {j.model}: {j.samples} samples at temperature 0 decode greedily and repeat one verdict; "
                "set the task's judge_temperature above 0 for the samples to measure the judge's uncertainty")
        usage = j.generator().generate(missing, store, log) if missing else Usage(wall_seconds=0.0)
        replies = {iid: g.output for iid, g in store.load().items()}
        verdicts: dict[str, list[list[tuple[bool, str]]]] = {}
        unread = 0
        for r in self.items:
            per_sample = []
            for s in range(j.samples):
                got, ok = parse_verdicts(replies.get(f"{r['instance_id']}{SAMPLE_SEP}{s}", ""), r["criteria"])
                unread += not ok
                per_sample.append(got)
            verdicts[r["instance_id"]] = per_sample
        log(f"judge {j.model}: {len(prompts)} calls ({len(missing)} new), {unread} replies unread")
        return verdicts, usage, unread, jkey
