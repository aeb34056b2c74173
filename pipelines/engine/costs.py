"""Cost of a run in USD from its usage and the dated price table in ``specs/prices.toml``."""

from __future__ import annotations

from medbench.outcomes import Usage
from pipelines.engine.specs import ModelSpec, PriceTable


class PriceError(KeyError):
    pass


def cost_usd(model: ModelSpec, usage: Usage, prices: PriceTable) -> float:
    basis = model.price.basis
    if basis == "free":
        return 0.0
    if basis == "device_hours":
        if model.price.key not in prices.device_hours:
            raise PriceError(f"{model.slug}: price key {model.price.key!r} not in [device_hours] of specs/prices.toml")
        return round(usage.device_seconds * prices.device_hours[model.price.key] / 3600.0, 6)
    if model.price.key not in prices.tokens:
        raise PriceError(f"{model.slug}: price key {model.price.key!r} not in [tokens] of specs/prices.toml")
    table = prices.tokens[model.price.key]  # USD per million tokens
    prompt = (usage.prompt_tokens or 0) * table.get("prompt", 0.0)
    completion = (usage.completion_tokens or 0) * table.get("completion", 0.0)
    return round((prompt + completion) / 1e6, 6)
