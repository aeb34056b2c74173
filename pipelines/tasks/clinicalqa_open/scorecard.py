"""The judge's scorecard: its verdicts against reference grades (a physician's met / not met per
criterion of given answers), macro F1 and Cohen's kappa with intervals (``medbench.stats.rubric``).

Reference grades are JSONL rows ``{"answer_sha256", "instance_id", "criterion_id", "met"}``, in the
file the task spec names (``reference_grades``, relative to the specs folder). A grade applies to a
result where the result's answer to that item has that sha256: grades are of answers, not of
items, so the scorecard covers the answers a physician graded and no others. The judge's verdict is
its majority over its samples. A judge whose kappa is below the spec's ``min_judge_kappa`` fails
the check ``judge_scorecard`` (a warning on the run; the result publishes the scorecard).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict
from typing import Any

import msgspec
import numpy as np
import pyarrow as pa

from pipelines.engine.specs import specs_root
from medbench.stats.rubric import scorecard


class JudgeScorecard(msgspec.Struct, frozen=True):
    n_items: int
    n_criteria: int
    macro_f1: float
    macro_f1_low: float
    macro_f1_high: float
    kappa: float
    kappa_low: float
    kappa_high: float
    min_kappa: float
    passed: bool


def answer_sha256(answer: str) -> str:
    return hashlib.sha256(answer.encode("utf-8")).hexdigest()


def read_reference(path: str) -> dict[tuple[str, str, str], bool]:
    """(answer sha256, instance id, criterion id) -> met, from the spec's reference file ("" : none)."""
    if not path:
        return {}
    out = {}
    for line in (specs_root() / path).read_text(encoding="utf-8").splitlines():
        if line.strip():
            row: dict[str, Any] = json.loads(line)
            out[(row["answer_sha256"], str(row["instance_id"]), row["criterion_id"])] = bool(row["met"])
    return out


def judge_scorecard(predictions: pa.Table, reference: dict[tuple[str, str, str], bool], min_kappa: float,
                    replicates: int, seed: int) -> JudgeScorecard | None:
    """The scorecard on the graded answers of ``predictions``; None where none of them is graded."""
    judge, ref, item = [], [], []
    cols = predictions.select(["instance_id", "answer", "criterion_id", "met"]).to_pylist()
    for row in cols:
        sha = answer_sha256(row["answer"])
        votes: dict[str, list[bool]] = {}
        for c, m in zip(row["criterion_id"], row["met"]):
            votes.setdefault(c, []).append(m)
        for c, v in votes.items():
            key = (sha, row["instance_id"], c)
            if key in reference:
                judge.append(sum(v) * 2 > len(v))
                ref.append(reference[key])
                item.append(row["instance_id"])
    if not judge:
        return None
    card = scorecard(np.array(judge), np.array(ref), np.array(item), replicates, seed)
    return JudgeScorecard(**asdict(card), min_kappa=min_kappa, passed=bool(card.kappa >= min_kappa))
