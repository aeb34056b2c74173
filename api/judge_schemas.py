"""The bodies about the judges of rubric tasks that compare or flag results: two judges' agreement
on the same answers (``/v1/compare``'s ``judges``) and a leaderboard row whose judge failed its
scorecard (``/v1/leaderboard``'s ``judge_warnings``); docs/api.md, "Rubric tasks". Re-exported by
``api.schemas``."""

from __future__ import annotations

import msgspec


class CriterionAgreement(msgspec.Struct):
    """Two judges on one criterion id (``/v1/compare`` of two judges' results)."""

    criterion: str
    n: int  # graded answers both judges graded on this criterion
    agreement: float  # share of them with the same majority verdict
    kappa: float  # Cohen's kappa of the two judges' majority verdicts


class JudgesCompared(msgspec.Struct):
    """``/v1/compare`` of two results graded by different judges: their agreement on the same answers."""

    judge_a: str
    judge_b: str
    n_items: int  # shared items whose answer text is the same in both results
    n_grades: int  # (item, criterion) pairs both judges graded there
    agreement: float
    kappa: float
    criteria: list[CriterionAgreement]


class JudgeWarning(msgspec.Struct):
    """A row whose judge failed its scorecard: kappa with the reference grades below the task's threshold."""

    run_id: str
    model: str  # the answering model's slug
    judge: str  # the judge model's slug
    kappa: float  # the result's judge_kappa
    min_kappa: float  # the task spec's min_judge_kappa
    message: str
