"""Named OpenAI-compatible endpoints: ``settings.endpoint = "<name>"`` resolved from the maintainers'
configuration when a model runs.

Why a name and not a URL: a submitted model (``POST /v1/submissions``) may only name an endpoint
the maintainers configured (``[endpoints.<name>]`` in ``specs/submissions.toml`` and the data
directory's ``submissions.toml``, ``pipelines.engine.submission_policy``); its URL and the variable
holding its key are the maintainers' and are read here, never from the spec. The spec's hash holds
the name only, so moving the endpoint (the demo's loopback server gets a new port at every start)
keeps every result of the model current. A name that looks like a URL or a path is refused here
too, whatever a validator upstream did.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from medbench.layout import DataDir

NAME_RE = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9._-]{0,62}[A-Za-z0-9])?$")


class EndpointError(ValueError):
    """The named endpoint cannot be resolved; the message says why and what to configure."""


@dataclass(frozen=True)
class Address:
    """Where a named endpoint is reached: its URL (None when its variable is unset) and key variable."""

    name: str
    base_url: str | None
    api_key_env: str | None
    where: str  # what a maintainer reads when base_url is None


def check_name(name: str) -> None:
    if not NAME_RE.fullmatch(name):
        raise EndpointError(f"{name!r} is not an endpoint name: name an endpoint the maintainers "
                            "configured ([endpoints.<name>] in submissions.toml), never a URL or a path")


def resolve_endpoint(name: str, data: DataDir | None = None) -> Address:
    """The configured endpoint ``name`` (the checkout's policy with the data directory's additions)."""
    from medbench.specs import SpecError
    from pipelines.engine.submission_policy import load_policy

    try:
        check_name(name)
    except EndpointError as exc:
        raise EndpointError(f"settings.endpoint: {exc}") from None
    try:
        endpoints = load_policy(data=data or DataDir()).endpoints
    except SpecError as exc:
        raise EndpointError(f"settings.endpoint {name!r}: the endpoints configuration is invalid: {exc}") from None
    endpoint = endpoints.get(name)
    if endpoint is None:
        known = ", ".join(sorted(endpoints)) or "none"
        raise EndpointError(f"settings.endpoint: no endpoint {name!r} is configured here (configured: {known}); "
                            "maintainers add it as [endpoints.<name>] in <data dir>/submissions.toml")
    if endpoint.base_url:
        return Address(name, endpoint.base_url, endpoint.api_key_env, "")
    env = endpoint.base_url_env
    url = (os.environ.get(env) or None) if env else None
    where = f"endpoint {name!r}: environment variable {env} is unset" if env else \
        f"endpoint {name!r} sets neither base_url nor base_url_env"
    return Address(name, url, endpoint.api_key_env, where)
