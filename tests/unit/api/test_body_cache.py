"""The kept answers of a served version are bounded in bytes as well as in entries (docs/api.md)."""

from __future__ import annotations

from api.body_cache import BodyCache
from api.responses import prepare


def test_bytes_bound_the_cache_whatever_the_entries() -> None:
    cache = BodyCache(limit=1000, max_bytes=10_000)
    bodies = [prepare({"rows": "x" * 3000, "n": i}) for i in range(4)]
    for i, body in enumerate(bodies[:3]):
        assert cache.put(("a", i), body) is body
    assert len(cache) == 3
    cache.put(("a", 3), bodies[3])  # a fourth would pass 10,000 bytes: the kept ones go first
    assert len(cache) == 1 and cache.get(("a", 3)) is bodies[3] and cache.get(("a", 0)) is None


def test_weighted_values_and_one_too_large_for_the_cache() -> None:
    cache = BodyCache(limit=1000, max_bytes=10_000)
    view = object()
    assert cache.put(("release-view", "r"), view, weight=9_000) is view
    assert cache.get(("release-view", "r")) is view
    huge = prepare({"rows": "y" * 20_000})
    assert cache.put(("b",), huge) is huge and cache.get(("b",)) is None and len(cache) == 0


def test_entries_still_bound_it() -> None:
    cache = BodyCache(limit=2)
    for i in range(3):
        cache.put(("c", i), prepare({"i": i}))
    assert len(cache) == 1
