"""The demo's simulated judge (``rule = "matching_judge"``): grades a rubric judge prompt by string
matching, then flips a seeded share of its verdicts, so repeated samples disagree as a sampled LLM
judge's do and the board shows the judge's uncertainty.

It reads prompts in the shape of the rubric judge template (``Answer:`` then the answer, ``Criteria:``
then one ``- <id>: <text>`` line per criterion, the content to look for after the text's last ": ").
A criterion is met when the answer contains that content; a ``reasoning`` criterion when the answer
holds at least three of the quoted explanation's words. Each verdict is flipped when
sha256(``seed:prompt id:prompt hash:criterion id``) falls below ``flip``; the prompt id carries
the judge sample and the prompt the answer, so each sample and each answer flips different
verdicts, reproducibly. Demo only: it is not a judge of
real answers, and its spec says so.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from typing import Callable, Sequence

from pipelines.backends.accounting import chunks, pending_items
from pipelines.backends.base import PromptItem, Usage
from pipelines.engine.generations import Generation, GenerationStore

_ANSWER = re.compile(r"Answer:\n(.*?)\n\nCriteria:\n(.*)\Z", re.S)
_CRITERION = re.compile(r"^- ([\w-]+): (.*)$")


def _draw(seed: int, prompt_id: str, prompt: str, criterion: str) -> float:
    answer = hashlib.sha256(prompt.encode()).hexdigest()[:16]  # another answer: other flips
    digest = hashlib.sha256(f"{seed}:{prompt_id}:{answer}:{criterion}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2.0 ** 64


def grade(prompt: str, prompt_id: str, seed: int, flip: float) -> str:
    """The judge's JSON reply to one prompt."""
    match = _ANSWER.search(prompt)
    if match is None:
        return "I cannot find the answer and the criteria in this prompt."
    answer, block = match.group(1), match.group(2)
    grades = []
    for line in block.splitlines():
        c = _CRITERION.match(line.strip())
        if c is None:
            continue
        cid, text = c.group(1), c.group(2)
        content = text.rsplit(": ", 1)[-1].strip()
        if cid == "reasoning":
            words = {w for w in re.split(r"[\s.,()]+", content) if len(w) >= 2}
            met = sum(w in answer for w in words) >= 3
        else:
            met = bool(content) and content in answer
        if _draw(seed, prompt_id, prompt, cid) < flip:
            met = not met
        grades.append({"id": cid, "met": met,
                       "justification": ("the answer contains it" if met else "the answer does not contain it")})
    return json.dumps({"grades": grades}, ensure_ascii=False)


class MatchingJudgeGenerator:
    """TextGenerator of the ``matching_judge`` rule."""

    def __init__(self, seed: int, flip: float):
        self.seed, self.flip = seed, flip

    def generate(self, items: Sequence[PromptItem], store: GenerationStore, log: Callable[[str], None]) -> Usage:
        start = time.monotonic()
        for chunk in chunks(pending_items(items, store), 1000):
            store.append(Generation(instance_id=i.instance_id, output=grade(i.prompt, i.instance_id, self.seed,
                                                                             self.flip))
                         for i in chunk)
        return Usage(wall_seconds=time.monotonic() - start)
