"""Raw model outputs, checkpointed as they come, under their generation key.

A generation key names what decides a model's raw text (model, revision, prompt hash, decoding,
snapshot) and nothing about parsing or scoring, so a parser change re-scores stored outputs
without calling the model. The store is an append-only JSONL file: each line is flushed and
fsynced in chunks, a torn last line (a kill mid-write) is ignored on reading, and a rerun skips
every instance already present, so a crash loses at most the chunk in flight.

Each instance is generated once: appending an id the file already holds is an error
(``DuplicateGeneration``: two writers of one store, which the partition lock prevents, or a backend
bug), and a file that holds an id twice (written before this check) keeps the first and warns.
"""

from __future__ import annotations

import hashlib
import logging
import os
from pathlib import Path
from typing import Iterable

import msgspec


class Generation(msgspec.Struct, frozen=True):
    instance_id: str
    output: str
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


log = logging.getLogger(__name__)


class DuplicateGeneration(ValueError):
    """An instance id would be stored twice in one generation store."""


_decoder = msgspec.json.Decoder(Generation)
_encoder = msgspec.json.Encoder()


def generation_key(fields: dict) -> str:
    """sha256 (first 16 hex) of the canonical JSON of what decides the raw outputs."""
    return hashlib.sha256(msgspec.json.encode(fields, order="sorted")).hexdigest()[:16]


class GenerationStore:
    def __init__(self, path: Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._ids: set[str] | None = None  # ids on file, read on the first append

    def load(self) -> dict[str, Generation]:
        """Every complete line; a torn final line from a killed writer is dropped."""
        out: dict[str, Generation] = {}
        if not self.path.exists():
            return out
        duplicates = 0
        with self.path.open("rb") as fh:
            for raw in fh:
                if not raw.endswith(b"\n"):
                    break  # torn write at the end of the file
                gen = _decoder.decode(raw)
                if gen.instance_id in out:
                    duplicates += 1
                    continue
                out[gen.instance_id] = gen
        if duplicates:
            log.warning("%s holds %d instance ids more than once; the first output of each is kept",
                        self.path, duplicates)
        self._truncate_torn_tail()
        self._ids = set(out)
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
        """Append one chunk durably (flush + fsync before returning); an id already stored is an error."""
        chunk = list(generations)
        if not chunk:
            return
        stored = self._ids if self._ids is not None else set(self.load())
        seen: set[str] = set()
        again: list[str] = []
        for g in chunk:
            if g.instance_id in stored or g.instance_id in seen:
                again.append(g.instance_id)
            seen.add(g.instance_id)
        if again:
            raise DuplicateGeneration(f"{self.path}: {len(again)} instance ids already stored (e.g. {again[0]!r}); "
                                      "each instance is generated once")
        payload = b"".join(_encoder.encode(g) + b"\n" for g in chunk)
        with self.path.open("ab") as fh:
            fh.write(payload)
            fh.flush()
            os.fsync(fh.fileno())
        stored.update(seen)
        self._ids = stored
