"""The ``[choice]`` table of a clinicalqa task version: item count, options, parser, decoding, prompt.

Its file name is shared on purpose: every plug-in package names its parts alike
(docs/adding-a-task.md, "The pieces"), so one reads the next.
"""

from __future__ import annotations

from medbench.specs import SpecBase


class ChoiceSettings(SpecBase):
    n_items: int
    options: list[str]
    parser: str
    max_new_tokens: int
    temperature: float
    prompt_template: str
    exam_template: str
