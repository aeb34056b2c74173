"""The demo's simulated LLM panel: replay outputs for the demo ClinicalQA items, written, not computed.

Why: a demo board of one random baseline and one random-weight model never shows what a real
board shows (ranks that differ, a tie group, parse rates that differ, per-category strengths).
A simulated model here is a replay model (``specs/models/medbench-sim/*.toml``, backend
``replay``) whose outputs file is generated from the demo items by this module: each model has an
accuracy profile by category (``Profile``) that decides, item by item and seeded, whether it
answers right, and a writing style (``simulated_styles``) that decides how the reply reads. Two
models (``reasoning-ko`` and its ``twin`` ``markdown-ko``) are right on exactly the same items in
different wording, so they tie exactly, on every bootstrap replicate too. No model is run:
generating the whole panel takes well under a second.

The files are committed next to their specs (``specs/models/medbench-sim/outputs/``), because a
replay model's revision is its outputs file's sha256 (``pipelines.engine.replay_pin``) and must be
known when the specs load; they are a pure function of the demo items and the seeds here, and a
test regenerates them and compares bytes. After changing the demo items or this module, rewrite
them with ``python -m pipelines.datasets.clinicalqa.simulated``. Their specs set
``demo_only = true``: the outputs answer the generated demo items, so on real data the partitions
are skipped with that reason (``pipelines.backends.registry.not_runnable_reason``).
"""

from __future__ import annotations

import json
import random
import sys
from dataclasses import dataclass, field
from pathlib import Path

from pipelines.datasets.clinicalqa.dataset import DEMO_SEED
from pipelines.datasets.clinicalqa.demo import demo_clinicalqa_rows
from pipelines.datasets.clinicalqa.simulated_styles import LETTERS, NEEDS, STYLES

OUTPUTS_DIR = Path(__file__).resolve().parents[3] / "specs" / "models" / "medbench-sim" / "outputs"


@dataclass(frozen=True)
class Profile:
    """``base``: the chance of a right answer; ``by_category``: what a category adds to it;
    ``hedge``: the share of items the model does not commit on (unparsable, so wrong);
    ``twin``: answer right on exactly the items where that model is (an exact tie)."""

    name: str
    style: str
    base: float
    by_category: dict[str, float] = field(default_factory=dict)
    hedge: float = 0.0
    twin: str = ""


PANEL: tuple[Profile, ...] = (
    Profile("reasoning-ko", "reasoning_ko", 0.76,
            {"Cardiology": 0.14, "Neurology": 0.1, "Dermatology": -0.3, "Pediatrics": -0.12, "Psychiatry": -0.08}),
    Profile("markdown-ko", "markdown_ko", 0.76, twin="reasoning-ko"),
    Profile("english", "english", 0.7,
            {"Infectious Disease": 0.15, "Pulmonology": 0.12, "Obstetrics and Gynecology": -0.25, "Psychiatry": -0.2}),
    Profile("json", "json", 0.66,
            {"Endocrinology": 0.2, "Nephrology": 0.15, "Emergency Medicine": -0.22, "Cardiology": -0.1}),
    Profile("self-correcting", "self_correcting", 0.6,
            {"Gastroenterology": 0.15, "Hematology": 0.12, "Neurology": -0.18}),
    Profile("terse", "terse", 0.55,
            {"Gastroenterology": 0.18, "Urology": 0.15, "Cardiology": -0.2, "Rheumatology": -0.15}),
    Profile("hedging", "hedging", 0.68,
            {"Pediatrics": 0.12, "General Surgery": 0.1, "Infectious Disease": -0.15}, hedge=0.2),
    Profile("small-ko", "small_ko", 0.36,
            {"Psychiatry": 0.24, "Dermatology": 0.2, "Neurology": -0.18}),
)


def _rng(profile: str, purpose: str, seed: int) -> random.Random:
    return random.Random(f"medbench-sim:{seed}:{profile}:{purpose}")  # str seeds are stable across runs


def correctness(profile: Profile, rows: list[dict], seed: int = DEMO_SEED) -> list[bool]:
    """Item by item, whether the model answers right (before any hedge)."""
    rng = _rng(profile.name, "correct", seed)
    out = []
    for row in rows:
        p = min(0.98, max(0.05, profile.base + profile.by_category.get(row["category"], 0.0)))
        out.append(rng.random() < p)
    return out


@dataclass(frozen=True)
class Reply:
    instance_id: str
    output: str
    intended: str | None  # the letter a correct parser reads; None for a hedge or a refusal
    label: str
    category: str


def simulate(profile: Profile, rows: list[dict], seed: int = DEMO_SEED) -> list[Reply]:
    """The model's reply to every row, in row order."""
    source = next(p for p in PANEL if p.name == profile.twin) if profile.twin else profile
    right = correctness(source, rows, seed)
    wrong_rng, hedge_rng, text_rng = (_rng(source.name, "wrong", seed), _rng(profile.name, "hedge", seed),
                                      _rng(profile.name, "text", seed))
    write = STYLES[profile.style]
    replies = []
    for row, ok in zip(rows, right):
        wrong = wrong_rng.choice([x for x in LETTERS if x != row["answer"]])  # drawn always: twins stay aligned
        letter: str | None = row["answer"] if ok else wrong
        if profile.hedge and hedge_rng.random() < profile.hedge:
            letter = None
        output, intended = write(row, letter, text_rng)
        replies.append(Reply(str(row["question_id"]), output, intended, row["answer"], row["category"]))
    return replies


def panel_replies(seed: int = DEMO_SEED, rows: list[dict] | None = None) -> dict[str, list[Reply]]:
    """Every simulated model's replies to the demo items (model name -> replies in item order)."""
    rows = demo_clinicalqa_rows(seed) if rows is None else rows
    return {p.name: simulate(p, rows, seed) for p in PANEL}


def replay_bytes(replies: list[Reply]) -> bytes:
    """The replay file (``pipelines.backends.replay``): one ``{"instance_id", "output"}`` per line."""
    lines = [json.dumps({"instance_id": r.instance_id, "output": r.output}, ensure_ascii=False) for r in replies]
    return ("\n".join(lines) + "\n").encode("utf-8")


def write_panel(folder: Path = OUTPUTS_DIR, seed: int = DEMO_SEED) -> list[Path]:
    """Write ``<folder>/<name>.jsonl`` for every simulated model; returns the paths."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, replies in panel_replies(seed).items():
        path = folder / f"{name}.jsonl"
        path.write_bytes(replay_bytes(replies))
        paths.append(path)
    return paths


__all__ = ["NEEDS", "PANEL", "Profile", "Reply", "correctness", "panel_replies", "replay_bytes", "simulate",
           "write_panel"]

if __name__ == "__main__":  # python -m pipelines.datasets.clinicalqa.simulated [FOLDER]
    for written in write_panel(Path(sys.argv[1]) if len(sys.argv) > 1 else OUTPUTS_DIR):
        print(written)
