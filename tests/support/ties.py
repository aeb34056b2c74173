"""A leaderboard row's ``tied_with_leader`` next to what /v1/compare says of it against the leader."""

from __future__ import annotations

from litestar.testing import TestClient


def ties_against_compare(client: TestClient, boards) -> list[tuple[bool, bool]]:
    """(tied_with_leader, /v1/compare interval holds 0) of every row but the leader of each board."""
    pairs = []
    for task, model_type in boards:
        q = "" if model_type is None else f"&model_type={model_type}"
        rows = client.get(f"/v1/leaderboard?task={task}{q}").json()["rows"]
        if not rows:
            continue
        leader = rows[0]
        assert leader["rank"] == 1 and leader["tied_with_leader"]
        for row in rows[1:]:
            c = client.get(f"/v1/compare?a={row['run_id']}&b={leader['run_id']}").json()
            pairs.append((row["tied_with_leader"], c["ci_low"] <= 0 <= c["ci_high"]))
    return pairs
