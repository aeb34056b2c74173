"""The clinicalqa-open rubric, derived mechanically from a ClinicalQA item's own fields.

Rule ``v1`` (the task spec's ``[rubric] rule``; a changed rule is a new rule name and so a new
task spec hash and new run ids):

- ``gold`` (+``gold_points``, tag ``answer``): the answer names the gold option's content (its
  text, in any wording).
- ``avoid-X`` for every distractor X (``distractor_points``, negative, tag ``distractor``): the
  answer recommends that distractor's content as the answer.
- ``reasoning`` (+``reasoning_points``, tag ``reasoning``), only where the item has an explanation:
  the answer's reasoning agrees with the reference explanation (quoted, cut to ``explanation_chars``).

Why this rule: the gold option's text is the only fact every item has that a free-text answer
must contain, so it carries most of the points, and an answer that names it scores high even
without reasoning. A distractor's text is the item writer's own list of plausible wrong answers,
so recommending one is the clearest mechanical sign of a wrong answer; its negative points make a
shotgun answer (naming every option) score 0 after the clip instead of collecting the gold's
points. The explanation, where there is one, rewards the reasoning a physician wrote, and is worth
less than the answer itself because matching it needs the judge's reading, not a string.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Mapping

import msgspec

RULES = ("v1",)


class Criterion(msgspec.Struct, frozen=True):
    id: str
    text: str
    points: float
    tags: list[str]


def derive_criteria(row: Mapping[str, Any], settings: Any) -> list[Criterion]:
    """The criteria of one snapshot row under the settings' rule (``settings.rule``)."""
    if settings.rule not in RULES:
        raise ValueError(f"unknown rubric rule {settings.rule!r}: known rules are {', '.join(RULES)}")
    options = {k.removeprefix("option_"): (v or "").strip() for k, v in row["options"].items()}
    gold = row["answer"]
    if gold not in options:
        raise ValueError(f"item {row['question_id']}: its answer {gold!r} is not one of its options")
    criteria = [Criterion("gold", f"The answer names this as the answer: {options[gold]}", settings.gold_points,
                          ["answer"])]
    for letter in sorted(options):
        if letter != gold and options[letter]:
            criteria.append(Criterion(f"avoid-{letter}", f"The answer recommends this as the answer: {options[letter]}",
                                      settings.distractor_points, ["distractor"]))
    explanation = (row.get("explanation") or "").strip()
    if explanation and settings.reasoning_points:
        quoted = explanation[: settings.explanation_chars]
        criteria.append(Criterion("reasoning", f"The reasoning agrees with this reference explanation: {quoted}",
                                  settings.reasoning_points, ["reasoning"]))
    return criteria


def rubric_sha256(criteria: list[Criterion]) -> str:
    """sha256 of the criteria (ids, texts, points, tags) in order: the item's truth for pairing."""
    payload = json.dumps([msgspec.to_builtins(c) for c in criteria], ensure_ascii=False, sort_keys=True)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()
