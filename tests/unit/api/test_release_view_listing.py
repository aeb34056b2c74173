"""A release view's result listing is sorted on first use (api.release_views.SortedOnFirstUse): a cold
``?release=`` leaderboard never pays for sorting the whole release, and a listing reads the same order
the eager sort gave."""

from __future__ import annotations

from api.release_views import SortedOnFirstUse


def test_the_listing_sorts_once_when_first_read_and_gives_the_sorted_order() -> None:
    calls = []

    def key(item):
        calls.append(item)
        return item

    items = [3, 1, 2]
    listing = SortedOnFirstUse(items, key)
    assert len(listing) == 3 and calls == []  # built, counted, never sorted
    assert list(listing) == [1, 2, 3] and listing[0] == 1 and listing[-1] == 3 and listing[1:] == (2, 3)
    assert len(calls) == 3  # one sort, whatever was read after it
