"""Synthetic ClinicalQA rows for the demo and the tests, in exactly the Hugging Face schema.

The demo must run the real loader, prompt, parser and scoring end to end without the real data
(which the repository never contains), so this writes a JSONL file that the real loader reads
like the downloaded dataset: 1,045 Korean five-option items, one per line, with the dataset's
fields. The items are made from clinical vignette templates (specialty, complaint, age and sex,
onset, exam findings, a question and its answer with plausible distractors); they are plausible,
not authoritative, and every row says so in ``source``. The templates are in ``vignettes.py``. The file is a pure function of the seed
(byte-identical across runs and machines), and the correct letters are balanced across A-E.

Its file name is shared on purpose: every plug-in package names its parts alike
(docs/adding-a-task.md, "The pieces"), so one reads the next.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

from pipelines.datasets.clinicalqa.vignettes import VIGNETTES, Vignette

LETTERS: tuple[str, ...] = ("A", "B", "C", "D", "E")  # the answer letters of the real dataset

DEMO_SOURCE = "medbench-demo (synthetic)"


_PLACES = ("응급실", "외래", "병원")


def _vitals(kind: str, rng: random.Random) -> str:
    ranges = {
        "stable": ((110, 138), (68, 86), (64, 88), (14, 18), (36.3, 37.1)),
        "febrile": ((100, 132), (60, 82), (96, 118), (18, 24), (38.2, 39.6)),
        "tachy": ((96, 140), (58, 90), (104, 128), (20, 28), (36.4, 37.4)),
        "shock": ((74, 92), (40, 58), (118, 136), (22, 30), (35.9, 36.8)),
        "brady": ((100, 130), (60, 80), (42, 56), (14, 18), (36.2, 36.9)),
        "irregular": ((118, 152), (70, 94), (110, 146), (16, 22), (36.3, 37.0)),
        "hypertensive": ((158, 196), (92, 118), (70, 96), (14, 20), (36.4, 37.2)),
    }[kind]
    (sl, sh), (dl, dh), (hl, hh), (rl, rh), (tl, th) = ranges
    temp = round(rng.uniform(tl, th), 1)
    return (
        f"혈압 {rng.randint(sl, sh)}/{rng.randint(dl, dh)} mmHg, 맥박 {rng.randint(hl, hh)}회/분, "
        f"호흡수 {rng.randint(rl, rh)}회/분, 체온 {temp:.1f}°C"
    )


def _person(v: Vignette, rng: random.Random) -> tuple[int, str]:
    age = rng.randint(*v.ages)
    male = rng.choice(v.sexes) == "M" if v.sexes == "MF" else v.sexes == "M"
    if v.child:
        return age, "남아" if male else "여아"
    return age, "남자" if male else "여자"


def _item(question_id: int, letter: str, rng: random.Random) -> dict:
    v = rng.choice(VIGNETTES)
    ask = rng.choice(v.asks)
    age, who = _person(v, rng)
    onset = rng.choice(v.onsets)
    place = "응급실" if onset.endswith(("분", "시간")) else rng.choice(_PLACES)
    if "{onset}" in v.presentation:
        story = v.presentation.format(onset=onset)
    else:
        story = f"{onset} 전부터 {v.presentation}"
    question = f"{age}세 {who}가 {story} {place}에 왔다. {ask.stem}"
    if rng.random() < 0.28:
        exam = ""
    else:
        findings = rng.sample(v.findings, k=min(len(v.findings), rng.randint(1, 2)))
        exam = ", ".join([_vitals(v.vitals, rng), *findings])
    wrong = rng.sample(ask.distractors, k=4)
    position = LETTERS.index(letter)
    texts = wrong[:position] + [ask.answer] + wrong[position:]
    return {
        "question_id": question_id,
        "chief_complaint": v.complaint,
        "purpose": ask.purpose,
        "question": question,
        "exam": exam,
        "options": {f"option_{x}": t for x, t in zip(LETTERS, texts)},
        "answer": letter,
        "explanation": f"정답은 {letter}({ask.answer})이다. medbench 합성 데모 문항으로, 실제 데이터가 아니다.",
        "source": DEMO_SOURCE,
        "category": v.category,
    }


def demo_clinicalqa_rows(seed: int = 11, n: int = 1045) -> list[dict]:
    """The demo rows in file order; question ids are 1..n."""
    rng = random.Random(seed)
    letters = [LETTERS[i % len(LETTERS)] for i in range(n)]
    rng.shuffle(letters)
    return [_item(i + 1, letter, rng) for i, letter in enumerate(letters)]


def write_demo_clinicalqa(path: Path, seed: int = 11, n: int = 1045) -> None:
    """Write ``n`` synthetic items as JSONL in the schema of ``snuh/ClinicalQA`` (split train)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps(row, ensure_ascii=False) for row in demo_clinicalqa_rows(seed, n)]
    path.write_bytes(("\n".join(lines) + "\n").encode("utf-8"))
