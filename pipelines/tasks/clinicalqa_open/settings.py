"""The ``[rubric]`` table of a clinicalqa-open task version: items, answer prompt and decoding, the
rubric rule and its points, the judge (a model slug), its prompt, samples and decoding, and the
scorecard threshold (docs/adding-a-task.md, "The rubric kind and clinicalqa-open").

Its file name is shared on purpose: every plug-in package names its parts alike
(docs/adding-a-task.md, "The pieces"), so one reads the next.
"""

from __future__ import annotations

from medbench.specs import SpecBase


class RubricSettings(SpecBase):
    n_items: int
    max_new_tokens: int
    temperature: float
    prompt_template: str
    exam_template: str
    rule: str                       # the rubric derivation rule (rubric_rule.RULES)
    gold_points: float
    distractor_points: float        # zero or negative: recommending a distractor loses points
    reasoning_points: float
    explanation_chars: int
    judge: str                      # the judge's model slug: its results make the leaderboard
    judge_prompt_template: str      # {prompt}, {answer}, {criteria}
    judge_samples: int = 3
    judge_temperature: float = 0.0
    judge_max_new_tokens: int = 1024
    min_judge_kappa: float = 0.6    # the scorecard's threshold (where reference grades exist)
    demo_judge: str = ""            # the judge on the generated demo data (a simulated one), if another
    # physicians' met / not met per criterion of given answers (JSONL, relative to the specs folder):
    # the judge's scorecard, where a result's answers are among them (scorecard.py); "": none
    reference_grades: str = ""
