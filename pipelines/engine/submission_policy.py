"""The maintainers' rules for submissions: quotas, rate limits, resource limits, and the endpoints
an ``openai`` submission may name. One TOML file, decoded strictly like every spec:

- ``specs/submissions.toml`` (the checkout's; ``$MEDBENCH_SPECS`` moves it with the other specs),
- then ``<data dir>/submissions.toml`` when present: the data directory's own additions, which win
  key by key (``medbench demo`` adds its loopback endpoint there; a deployment adds its endpoints and
  per-owner quotas without editing the checkout).

An endpoint is the only way a submission reaches a network service: a submission names it
(``endpoint = "<name>"``) and never gives a URL; the URL and the variable holding the key are the
maintainers'.

Each owner also has a sandbox budget (``sandbox_seconds_per_30_days``): every official run counts
against it, failed ones included, and past it official submissions are refused (``quota_exceeded``).
"""

from __future__ import annotations

import datetime as dt
import time
from pathlib import Path
from typing import Literal

import msgspec

from medbench.canonical import StrictStruct
from medbench.specs import PriceSpec, SpecError, query_or_fragment
from pipelines.engine.spec_decoding import explain_validation_error, parse_bounded
from pipelines.engine.specs import specs_root
from medbench.layout import DataDir
from medbench.submissions import SubmissionRefused, SubmissionStore

FILE_NAME = "submissions.toml"


class Endpoint(StrictStruct):
    """An OpenAI-compatible server the maintainers run or pay for."""

    base_url: str | None = None
    base_url_env: str | None = None  # the variable that holds the URL (e.g. a port chosen at start-up)
    api_key_env: str | None = None  # the variable that holds its key; the key itself is never written
    models: list[str] = []  # the model names a submission may ask this endpoint for; empty: any
    price: PriceSpec = PriceSpec(basis="free")
    description: str = ""


class Limits(StrictStruct):
    """What one submission may ask for, and how often."""

    quota_per_week: int = 10  # accepted submissions per owner in any 7 days (failed and rejected are free)
    rate_limit: int = 30  # POSTs per token per window
    rate_window_s: int = 60
    max_new_tokens: int = 8192
    max_batch_size: int = 64
    max_chunk_size: int = 1024
    max_concurrency: int = 16
    max_tensor_parallel_size: int = 8
    max_pipeline_parallel_size: int = 1
    max_model_len: int = 32768
    max_gpu_memory_utilization: float = 0.95
    max_memory_gib: float = 160.0
    max_wall_minutes: float = 24 * 60
    pools: tuple[Literal["cpu", "gpu"], ...] = ("cpu", "gpu")
    gpu_price_key: str = "nvidia-h200"  # the price table's device-hours key for Hub models on the GPU pool
    cpu_price_key: str = "cpu"
    # sandbox time per owner in any 30 days (official runs, failed ones included): docs/official-tier.md
    sandbox_seconds_per_30_days: int = 10 * 3600


class Owner(StrictStruct):
    quota_per_week: int | None = None  # overrides limits.quota_per_week
    auto_approve: bool = False  # accepted submissions go straight to the queue
    sandbox_seconds_per_30_days: int | None = None  # overrides limits.sandbox_seconds_per_30_days


class SubmissionPolicy(StrictStruct):
    limits: Limits = Limits()
    owners: dict[str, Owner] = {}
    endpoints: dict[str, Endpoint] = {}

    def quota_for(self, owner: str) -> int:
        override = self.owners.get(owner, Owner()).quota_per_week
        return self.limits.quota_per_week if override is None else override

    def auto_approves(self, owner: str) -> bool:
        return self.owners.get(owner, Owner()).auto_approve

    def sandbox_budget_for(self, owner: str) -> int:
        override = self.owners.get(owner, Owner()).sandbox_seconds_per_30_days
        return self.limits.sandbox_seconds_per_30_days if override is None else override


SANDBOX_WINDOW_S = 30 * 24 * 3600


def check_sandbox_budget(store: SubmissionStore, policy: SubmissionPolicy, owner: str,
                         now: float | None = None) -> None:
    """``quota_exceeded`` (429, SubmissionRefused) when the owner's official runs of the last 30 days
    held the sandbox for its whole budget, naming the date it is free again."""
    now = time.time() if now is None else now
    budget = policy.sandbox_budget_for(owner)
    runs = sorted(store.sandbox_runs(owner, now - SANDBOX_WINDOW_S, now))
    used = sum(end - start for start, end in runs)
    if used < budget:
        return
    left = used
    for start, end in runs:  # the oldest runs leave the window first
        left -= end - start
        if left < budget:
            reset = start + SANDBOX_WINDOW_S
            break
    else:
        reset = now
    when = dt.datetime.fromtimestamp(reset, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    raise SubmissionRefused("", f"{owner} has used {used:.0f} of its {budget} sandbox-seconds of the last 30 days "
                            f"(official runs, failed ones included); official submissions are refused until {when}",
                            status=429, code="quota_exceeded")


def _merge(base: dict, extra: dict) -> dict:
    out = dict(base)
    for key, value in extra.items():
        out[key] = _merge(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def policy_files(specs: Path | str | None = None, data: DataDir | None = None) -> list[Path]:
    files = [specs_root(specs) / FILE_NAME, (data or DataDir()).root / FILE_NAME]
    return [f for f in files if f.exists()]


def load_policy(specs: Path | str | None = None, data: DataDir | None = None) -> SubmissionPolicy:
    """The checkout's policy with the data directory's additions; defaults when neither file exists."""
    merged: dict = {}
    files = policy_files(specs, data)
    parsed = [(path, parse_bounded(path)) for path in files]
    for _, obj in parsed:
        merged = _merge(merged, obj)
    try:
        policy = msgspec.convert(merged, SubmissionPolicy, strict=True, str_keys=True)
    except msgspec.ValidationError as exc:
        raise SpecError(f"{' + '.join(map(str, files))}: {explain_validation_error(exc)}") from None
    for name, endpoint in policy.endpoints.items():
        if endpoint.base_url and (extra := query_or_fragment(endpoint.base_url)) is not None:
            # the file that set it last is the one to edit
            path = next(p for p, obj in reversed(parsed)
                        if isinstance(obj.get("endpoints", {}).get(name), dict) and "base_url" in obj["endpoints"][name])
            raise SpecError(f"{path}: key `endpoints.{name}.base_url`: the URL has {extra}; "
                            "requests go to {base_url}/chat/completions, so give the server's path only")
    return policy
