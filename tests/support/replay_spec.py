"""The ``acme/replayer`` replay model spec that the replay-identity tests write into scratch specs."""

from __future__ import annotations

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


def replay_spec(outputs: str) -> str:
    """The spec text with ``settings.outputs`` set to ``outputs`` (a path, relative to the spec or not)."""
    return REPLAY_SPEC.format(outputs=outputs)
