"""The replay backend: raw outputs produced elsewhere, scored exactly like our own.

Model authors who run their own models hand in a JSONL file of ``{"instance_id", "output"}``;
the outputs go into the same GenerationStore our backends write to, so the same parser and
metrics read them. A replay file that does not match the task's items exactly (a bad line, an id
twice, an unknown id, a missing id) is refused with an error that says where and how many: a
silently dropped or extra line would change the score without anyone noticing.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Callable, Collection, Sequence

from pipelines.engine.generations import Generation, GenerationStore
from pipelines.backends.accounting import chunks, pending_items
from pipelines.backends.base import PromptItem, Usage
from pipelines.engine.progress import Progress

MAX_REPORTED = 5
CHUNK = 500


class ReplayError(ValueError):
    """The replay file is malformed or does not match the task's items; the message says where."""


def read_replay(path: Path, expected_ids: Collection[str]) -> dict[str, str]:
    """instance_id -> raw output for every expected id; anything else in the file is an error."""
    path = Path(path)
    try:
        handle = path.open("r", encoding="utf-8")
    except OSError as exc:
        raise ReplayError(f"{path}: cannot read the replay file ({exc.strerror})") from None
    outputs: dict[str, str] = {}
    first_line: dict[str, int] = {}
    duplicates: list[str] = []
    with handle:
        try:
            for line_no, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                instance_id, output = _parse_line(path, line_no, line)
                if instance_id in first_line:
                    duplicates.append(f"{instance_id!r} (lines {first_line[instance_id]} and {line_no})")
                    continue
                first_line[instance_id] = line_no
                outputs[instance_id] = output
        except UnicodeDecodeError as exc:
            raise ReplayError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    expected = set(expected_ids)
    unknown = [iid for iid in outputs if iid not in expected]
    missing = [iid for iid in expected_ids if iid not in outputs]
    problems = []
    if duplicates:
        problems.append(_count("duplicate instance id", duplicates))
    if unknown:
        problems.append(_count("unknown instance id", [f"{iid!r} (line {first_line[iid]})" for iid in unknown]))
    if missing:
        problems.append(_count("missing instance id", [repr(iid) for iid in missing]))
    if problems:
        raise ReplayError(
            f"{path}: the replay file does not match the task's {len(expected)} items: " + "; ".join(problems)
        )
    return outputs


def _parse_line(path: Path, line_no: int, line: str) -> tuple[str, str]:
    where = f"{path} line {line_no}"
    try:
        record = json.loads(line)
    except json.JSONDecodeError as exc:
        raise ReplayError(f"{where}: not valid JSON ({exc.msg} at column {exc.colno})") from None
    except RecursionError:
        raise ReplayError(f"{where}: JSON nested too deeply (expected a flat object with instance_id and output)") from None
    except ValueError as exc:  # e.g. an integer of more than 4,300 digits
        raise ReplayError(f"{where}: not usable JSON ({str(exc).split(':')[0]})") from None
    if not isinstance(record, dict):
        raise ReplayError(f"{where}: expected a JSON object with instance_id and output, got {type(record).__name__}")
    for field in ("instance_id", "output"):
        if field not in record:
            raise ReplayError(f"{where}: field `{field}` is missing")
    instance_id, output = record["instance_id"], record["output"]
    if isinstance(instance_id, bool) or not isinstance(instance_id, (str, int)):
        raise ReplayError(f"{where}: field `instance_id` must be a string or an integer, got {instance_id!r}")
    if not isinstance(output, str):
        raise ReplayError(f"{where}: field `output` must be a string, got {type(output).__name__}")
    if isinstance(instance_id, int) and instance_id.bit_length() > 64:
        raise ReplayError(f"{where}: field `instance_id` is an integer of more than 64 bits; write ids as strings")
    for field, text in (("instance_id", str(instance_id)), ("output", output)):
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise ReplayError(f"{where}: field `{field}` holds a lone surrogate ({text[exc.start]!r} at "
                              f"character {exc.start}), which is not text") from None
    return str(instance_id), output


def _count(what: str, examples: list[str]) -> str:
    shown = ", ".join(examples[:MAX_REPORTED])
    more = ", ..." if len(examples) > MAX_REPORTED else ""
    return f"{len(examples)} {what}{'s' if len(examples) != 1 else ''} (e.g. {shown}{more})"


class ReplayGenerator:
    """A TextGenerator whose 'generation' is reading a replay file into the GenerationStore."""

    def __init__(self, path: Path):
        self.path = Path(path)

    def generate(self, items: Sequence[PromptItem], store: GenerationStore, log: Callable[[str], None]) -> Usage:
        start = time.monotonic()
        outputs = read_replay(self.path, [item.instance_id for item in items])
        todo = pending_items(items, store)
        log(f"replay: {len(outputs)} outputs in {self.path}, {len(todo)} not yet stored")
        progress = Progress("replay", len(todo), log)
        for chunk in chunks(todo, CHUNK):
            store.append(Generation(instance_id=item.instance_id, output=outputs[item.instance_id]) for item in chunk)
            progress.advance(len(chunk))
        return Usage(wall_seconds=time.monotonic() - start, hardware="replay (outputs produced elsewhere)")
