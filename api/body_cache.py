"""The bounded cache of one served version's encoded answers (and release views).

Kept apart from ``api.tables`` because its bound is a promise of its own: the server's memory for
kept answers does not grow with the board, whatever its size (docs/api.md, "Answers kept").
"""

from __future__ import annotations

from typing import Any

BODY_CACHE_BYTES = 256 * 2**20


class BodyCache:
    """Encoded responses of one version keyed by (route, parameters, base URL); bounded, cleared when full.

    Bounded in entries (``limit``) and in bytes (``max_bytes``), whatever the board's size: an
    encoded body weighs its length; any other value (a release's view, ``api.release_views``) the
    ``weight`` its caller estimates (docs/api.md, "Answers kept")."""
    __slots__ = ("_entries", "_limit", "_max_bytes", "_bytes")

    def __init__(self, limit: int, max_bytes: int = BODY_CACHE_BYTES):
        self._entries: dict[tuple, Any] = {}
        self._limit = limit
        self._max_bytes = max_bytes
        self._bytes = 0

    def get(self, key: tuple) -> Any:
        return self._entries.get(key)

    def put(self, key: tuple, value: Any, weight: int | None = None) -> Any:
        size = weight if weight is not None else len(getattr(value, "body", b""))
        if len(self._entries) >= self._limit or self._bytes + size > self._max_bytes:
            self._entries.clear()
            self._bytes = 0
        if size > self._max_bytes:
            return value  # larger than the whole cache: answered, not kept
        self._entries[key] = value
        self._bytes += size
        return value

    def __len__(self) -> int:
        return len(self._entries)


__all__ = ["BODY_CACHE_BYTES", "BodyCache"]
