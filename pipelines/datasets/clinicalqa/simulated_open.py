"""The demo's simulated free-text panel for clinicalqa-open: replay answers to the demo ClinicalQA
questions without options, written, not computed (as ``simulated.py`` writes the choice panel).

Each answerer has a style (how it writes) and a chance of naming the gold answer's text (else a
distractor's), decided item by item and seeded, so a board of rubric scores differs between
answerers and in where they lose points: the hedger names a distractor beside the gold answer (it
loses the distractor's points), the shotgun lists every option (clipped to 0), the refuser mostly
declines. The files are committed next to their specs (``specs/models/medbench-sim-open/outputs/*.jsonl``)
because a replay model's revision is its file's sha256; a test regenerates them and compares bytes.
Rewrite them with ``python -m pipelines.datasets.clinicalqa.simulated_open``.
"""

from __future__ import annotations

import json
import random
import sys
from dataclasses import dataclass
from pathlib import Path

from pipelines.datasets.clinicalqa.dataset import DEMO_SEED
from pipelines.datasets.clinicalqa.demo import demo_clinicalqa_rows
from pipelines.datasets.clinicalqa.simulated import OUTPUTS_DIR as CHOICE_OUTPUTS
from pipelines.datasets.clinicalqa.simulated import Reply, replay_bytes

LETTERS = ("A", "B", "C", "D", "E")
OUTPUTS_DIR = CHOICE_OUTPUTS.parents[1] / "medbench-sim-open" / "outputs"


@dataclass(frozen=True)
class OpenProfile:
    name: str
    style: str
    right: float  # the chance of naming the gold answer's content


PANEL: tuple[OpenProfile, ...] = (
    OpenProfile("reasoned", "reasoned", 0.78),
    OpenProfile("concise", "concise", 0.72),
    OpenProfile("english", "english", 0.66),
    OpenProfile("hedging", "hedging", 0.74),
    OpenProfile("shotgun", "shotgun", 0.7),
    OpenProfile("refuser", "refuser", 0.7),
)


def _text(row: dict, letter: str) -> str:
    return row["options"][f"option_{letter}"].strip()


def write(style: str, row: dict, pick: str, other: str, rng: random.Random) -> str:
    """One answer in ``style`` naming option ``pick`` (``other``: a second, wrong option)."""
    named, second = _text(row, pick), _text(row, other)
    explanation = (row.get("explanation") or "").strip()
    if style == "reasoned":
        return f"임상 소견을 종합하면 {explanation} 따라서 가장 적절한 것은 {named}이다."
    if style == "concise":
        return f"{named}."
    if style == "english":
        return f"Putting the findings together, the best next step is {named}."
    if style == "hedging":
        return f"{named}을(를) 우선 고려하나, {second}도 가능하다."
    if style == "verbose":
        filler = rng.choice(["환자의 병력과 검사 소견을 차례로 검토한다.", "감별 진단을 먼저 정리한다.",
                             "활력 징후와 증상의 경과를 본다."])
        return f"{filler} 여러 가능성이 있으나 결론적으로 {named}이(가) 가장 타당하다. {explanation}"
    if style == "shotgun":
        return "가능한 답: " + ", ".join(_text(row, x) for x in LETTERS if _text(row, x)) + "."
    if style == "refuser":
        if rng.random() < 0.6:
            return "이 질문에는 의료적 판단이 필요하므로 담당 의사와 상의하시기 바랍니다."
        return f"{named}."
    raise ValueError(f"unknown style {style!r}")


def simulate(profile: OpenProfile, rows: list[dict], seed: int = DEMO_SEED) -> list[Reply]:
    rng = random.Random(f"medbench-sim-open:{seed}:{profile.name}")
    replies = []
    for row in rows:
        wrong = [x for x in LETTERS if x != row["answer"] and _text(row, x)]
        distractor = rng.choice(wrong)
        right = rng.random() < profile.right
        pick = row["answer"] if right else distractor
        other = distractor if right else row["answer"]
        output = write(profile.style, row, pick, other, rng)
        replies.append(Reply(str(row["question_id"]), output, None, row["answer"], row.get("category") or ""))
    return replies


REFERENCE = CHOICE_OUTPUTS.parents[2] / "references" / "clinicalqa-open" / "0.jsonl"
REFERENCE_ANSWERERS = ("concise", "hedging")  # whose answers a (simulated) physician graded
REFERENCE_ITEMS = 40


def reference_grades(rows: list[dict], seed: int = DEMO_SEED) -> bytes:
    """The demo's reference grades: for the first ``REFERENCE_ITEMS`` answers of each answerer of
    ``REFERENCE_ANSWERERS``, met per criterion of the v1 rule as a careful reader decides it (the
    gold's or a distractor's text named in the answer), keyed by the answer's sha256."""
    import hashlib

    lines = []
    for p in PANEL:
        if p.name not in REFERENCE_ANSWERERS:
            continue
        for row, reply in list(zip(rows, simulate(p, rows, seed)))[:REFERENCE_ITEMS]:
            sha = hashlib.sha256(reply.output.encode("utf-8")).hexdigest()
            for letter in LETTERS:
                text = _text(row, letter)
                if not text:
                    continue
                cid = "gold" if letter == row["answer"] else f"avoid-{letter}"
                lines.append(json.dumps({"answer_sha256": sha, "instance_id": reply.instance_id, "criterion_id": cid,
                                         "met": text in reply.output}, ensure_ascii=False))
    return ("\n".join(lines) + "\n").encode("utf-8")


def write_panel(folder: Path = OUTPUTS_DIR, seed: int = DEMO_SEED) -> list[Path]:
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    rows = demo_clinicalqa_rows(seed)
    paths = []
    for p in PANEL:
        path = folder / f"{p.name}.jsonl"
        path.write_bytes(replay_bytes(simulate(p, rows, seed)))
        paths.append(path)
    if folder == OUTPUTS_DIR:
        REFERENCE.parent.mkdir(parents=True, exist_ok=True)
        REFERENCE.write_bytes(reference_grades(rows, seed))
        paths.append(REFERENCE)
    return paths


__all__ = ["PANEL", "OpenProfile", "simulate", "write", "write_panel"]

if __name__ == "__main__":  # python -m pipelines.datasets.clinicalqa.simulated_open [FOLDER]
    for written in write_panel(Path(sys.argv[1]) if len(sys.argv) > 1 else OUTPUTS_DIR):
        print(written)
