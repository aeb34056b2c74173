"""Model specs that tests write into a scratch copy of ``specs/``: a replay model (``acme/replayer``)
and a model behind an OpenAI-compatible server (``acme/served``)."""

from __future__ import annotations

import shutil
from pathlib import Path

from support.paths import REPO

REPLAY_SPEC = """slug = "acme/replayer"
name = "Replayer"
type = "llm"
provider = "acme"
provider_model_id = "replayer"
revision = "1"
description = "Outputs produced elsewhere."
backend = "replay"
tasks = ["clinicalqa@0"]

[settings]
outputs = "{outputs}"

[price]
basis = "free"
"""

SERVED_SPEC = """slug = "acme/served"
name = "Served"
type = "llm"
provider = "acme"
provider_model_id = "served"
revision = "1"
description = "A served model."
backend = "openai"
tasks = ["clinicalqa@0"]

[settings]
base_url = "{base_url}"

[price]
basis = "free"
"""


def replay_spec(outputs: str) -> str:
    """The spec text with ``settings.outputs`` set to ``outputs`` (a path, relative to the spec or not)."""
    return REPLAY_SPEC.format(outputs=outputs)


def specs_with_served(root: Path, base_url: str) -> Path:
    """A copy of the repository's specs at ``root`` plus ``acme/served`` answering at ``base_url``."""
    shutil.copytree(REPO / "specs", root)
    (root / "models" / "acme").mkdir()
    (root / "models" / "acme" / "served.toml").write_text(SERVED_SPEC.format(base_url=base_url), encoding="utf-8")
    return root
