"""Raw model outputs, checkpointed as they come, under their generation key.

A generation key names what decides a model's raw text (model, revision, prompt hash, decoding,
snapshot) and nothing about parsing or scoring, so a parser change re-scores stored outputs
without calling the model. The store is an append-only JSONL file: each line is flushed and
fsynced in chunks, a torn last line (a kill mid-write) is ignored on reading, and a rerun skips
every instance already present, so a crash loses at most the chunk in flight.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Iterable

import msgspec


class Generation(msgspec.Struct, frozen=True):
    instance_id: str
    output: str
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


_decoder = msgspec.json.Decoder(Generation)
_encoder = msgspec.json.Encoder()


def generation_key(fields: dict) -> str:
    """sha256 (first 16 hex) of the canonical JSON of what decides the raw outputs."""
    return hashlib.sha256(msgspec.json.encode(fields, order="sorted")).hexdigest()[:16]


class GenerationStore:
    def __init__(self, path: Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)

    def load(self) -> dict[str, Generation]:
        """Every complete line; a torn final line from a killed writer is dropped."""
        out: dict[str, Generation] = {}
        if not self.path.exists():
            return out
        with self.path.open("rb") as fh:
            for raw in fh:
                if not raw.endswith(b"\n"):
                    break  # torn write at the end of the file
                gen = _decoder.decode(raw)
                out.setdefault(gen.instance_id, gen)
        self._truncate_torn_tail()
        return out

    def _truncate_torn_tail(self) -> None:
        data_len = self.path.stat().st_size
        if data_len == 0:
            return
        with self.path.open("rb+") as fh:
            fh.seek(0)
            content = fh.read()
            end = content.rfind(b"\n") + 1
            if end != data_len:
                fh.truncate(end)

    def append(self, generations: Iterable[Generation]) -> None:
        """Append one chunk durably (flush + fsync before returning)."""
        payload = b"".join(_encoder.encode(g) + b"\n" for g in generations)
        if not payload:
            return
        with self.path.open("ab") as fh:
            fh.write(payload)
            fh.flush()
            os.fsync(fh.fileno())
