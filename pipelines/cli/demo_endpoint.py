"""The demo's configured endpoint ``demo-sim``: a loopback OpenAI-compatible server answering as a
simulated LLM (``pipelines.datasets.clinicalqa.simulated_server``), started by ``medbench demo`` and
stopped with it.

Its address changes at every start (an ephemeral port), so the demo data directory's
``submissions.toml`` gets the block ``[endpoints.demo-sim]`` rewritten with it (between two marker
comments; anything else in the file is the maintainers' and is kept). Submitted specs name the
endpoint, not its URL (``pipelines.backends.endpoints``), so a demo restarted tomorrow still serves
yesterday's submissions, and a run started while the demo is stopped fails, saying it could not connect.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager

from medbench.layout import DataDir

ENDPOINT = "demo-sim"
BEGIN = "# -- medbench demo: the loopback endpoint (rewritten at every `medbench demo`) --"
END = "# -- end of medbench demo --"
_BLOCK_RE = re.compile(re.escape(BEGIN) + r".*?" + re.escape(END) + r"\n?", re.S)


def endpoint_block(base_url: str) -> str:
    return (f"{BEGIN}\n[endpoints.{ENDPOINT}]\nbase_url = {json.dumps(base_url)}\n"
            'description = "medbench demo: a loopback server answering as a simulated LLM (model = english, '
            'terse, hedging, ...)"\n'
            f"{END}\n")


def configure(data: DataDir, base_url: str) -> None:
    """Write (or rewrite) the demo endpoint's block in ``<data>/submissions.toml``, atomically."""
    from pipelines.engine.submission_policy import FILE_NAME

    path = data.root / FILE_NAME
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    text = _BLOCK_RE.sub("", text)
    text = (text.rstrip("\n") + "\n\n" if text.strip() else "") + endpoint_block(base_url)
    data.root.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{FILE_NAME}.{os.getpid()}.tmp")
    partial.write_text(text, encoding="utf-8")
    os.replace(partial, path)


@contextmanager
def demo_endpoint(data: DataDir) -> Iterator[str]:
    """Start the simulated server, configure it as ``demo-sim``, yield its URL; stop it on exit."""
    from pipelines.datasets.clinicalqa.simulated_server import SimulatedChatServer

    with SimulatedChatServer() as server:
        configure(data, server.base_url)
        yield server.base_url
