"""Parsing the request parameters that name things: ``task`` (``slug`` or ``slug@version``).

Parameters are only ever compared with keys of in-memory indexes (never put into SQL or paths), so
parsing is about giving a clear ``invalid_parameter`` for malformed input rather than about safety.
"""

from __future__ import annotations

import re

from api.errors import invalid_parameter

_VERSION_RE = re.compile(r"[0-9]{1,9}")


def parse_task_ref(text: str, name: str = "task") -> tuple[str, int | None]:
    """``"clinicalqa@0"`` -> ``("clinicalqa", 0)``; ``"clinicalqa"`` -> ``("clinicalqa", None)`` (latest)."""
    text = text.strip()
    slug, at, version = text.partition("@")
    if not slug:
        raise invalid_parameter(f"{name} must name a task, as in clinicalqa or clinicalqa@0")
    if at:
        if not _VERSION_RE.fullmatch(version):
            raise invalid_parameter(f"{name} {text!r}: the version after '@' must be a whole number, as in clinicalqa@0")
        return slug, int(version)
    return slug, None


def require(value: str | None, name: str) -> str:
    """Treat an empty parameter (``?model=``) like a missing one."""
    if value is None or not value.strip():
        raise invalid_parameter(f"missing query parameter {name!r}")
    return value.strip()
