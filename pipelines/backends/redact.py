"""What of a model's settings may be published: no credentials, no tokens, no local paths.

Why: results publish ``config.backend_settings`` (JSON, site, warehouse), and the model spec is
published whole. A ``base_url`` with ``user:password@`` or ``?token=...`` was published verbatim,
and a replay file's absolute path told the world a maintainer's home folder. Here URL userinfo and
secret-looking query parameters become ``[redacted]``, and a replay ``outputs`` path becomes its
file name plus the file's sha256 (what a reader needs to check they hold the same outputs).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

REDACTED = "[redacted]"
SECRET_PARAM = re.compile(
    r"(^|[-_.])(token|key|apikey|secret|password|passwd|passphrase|pwd|signature|sig|auth|authorization|"
    r"credential|credentials|session|cookie|bearer|jwt|code)($|[-_.])|^x-amz-", re.I)
"""A secret-looking parameter or key name: ``token``, ``api_key``, ``access_token``, ``X-Amz-Signature``,
... as a whole ``_``/``-``-separated word (so ``max_new_tokens`` and ``tokenizer`` are not)."""


def has_userinfo(url: str) -> bool:
    """Whether ``url`` carries ``user[:password]@`` before its host."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return False
    return "@" in parts.netloc


def redact_url(url: str) -> str:
    """``url`` with its userinfo and every secret-looking query parameter's value replaced.

    A URL that cannot be parsed is replaced whole: better nothing than a leaked token."""
    try:
        parts = urlsplit(url)
        host, port = parts.hostname or "", parts.port
    except ValueError:
        return REDACTED
    netloc = parts.netloc
    if "@" in netloc:
        netloc = f"{REDACTED}@{host}" + (f":{port}" if port else "")
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        query = urlencode([(k, REDACTED if SECRET_PARAM.search(k) else v) for k, v in pairs], safe="[]")
    fragment = REDACTED if parts.fragment else ""
    return urlunsplit((parts.scheme, netloc, parts.path, query, fragment))


def _redact_value(key: str, value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _redact_value(k, v) for k, v in value.items()}
    if isinstance(value, list):
        return [_redact_value(key, v) for v in value]
    if isinstance(value, str):
        if "://" in value:
            return redact_url(value)
        if SECRET_PARAM.search(key) and not key.endswith("_env"):  # `api_key_env` names a variable
            return REDACTED
    return value


def redact_settings(shown: dict[str, Any], settings: Any = None) -> dict[str, Any]:
    """Published settings: URLs redacted everywhere (``extra_body`` included), a replay file named
    by file name and sha256."""
    out = {k: _redact_value(k, v) for k, v in shown.items()}
    resolved = getattr(settings, "resolved", None)
    if "outputs" in out and resolved is not None:
        from pipelines.engine.replay_pin import file_sha256

        path = Path(resolved or str(out["outputs"])).expanduser()
        out["outputs"] = path.name
        out["outputs_sha256"] = file_sha256(path)
    return out
