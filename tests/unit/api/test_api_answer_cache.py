"""Repeats of answered requests skip the framework, and are byte for byte what the handler answers.

``create_app`` returns ``api.answer_cache.AnswerCache`` around the Litestar app; whether a request
reached the inner Litestar app is observed by counting calls of ``Litestar.__call__`` (the wrapper
passes a miss to it, a replay never). Everything the cache must not change is checked against the
framework's own answer: status, headers, body, reuses, 304s, HEAD, CORS, self-links, errors and a
new publish.
"""

from __future__ import annotations

import copy
import datetime as dt
import time
from pathlib import Path

import pytest
from litestar import Litestar
from litestar.testing import TestClient

from api.answer_cache import AnswerCache, replay_key
from api.app import create_app
from api.params import MAX_CACHED_PARAMETER_CHARS
from support.api_data import RUN_IDS, publish_fixture

RUN = RUN_IDS["medgemma-cqa0"]
LOOKUP = "/v1/lookup?model=medgemma-27b&task=clinicalqa@0"
BOARD = "/v1/leaderboard?task=clinicalqa@0"
REPEATABLE = [
    LOOKUP,
    "/v1/lookup?model=nobody&task=clinicalqa@0",  # not_evaluated is an answer too
    BOARD,
    "/v1/leaderboard?task=clinicalqa&limit=2",
    "/v1/results?task=clinicalqa@0",
    f"/v1/results/{RUN}",
]


class FrameworkCalls:
    """HTTP requests that reached the Litestar app inside the ``AnswerCache``."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        original = Litestar.__call__

        async def counting(app, scope, receive, send):  # type: ignore[no-untyped-def]
            if scope["type"] == "http":
                self.count += 1
            await original(app, scope, receive, send)

        monkeypatch.setattr(Litestar, "__call__", counting)


@pytest.fixture
def framework(monkeypatch: pytest.MonkeyPatch) -> FrameworkCalls:
    return FrameworkCalls(monkeypatch)


def comparable(headers) -> list[tuple[str, str]]:  # type: ignore[no-untyped-def]
    return sorted((k, v) for k, v in headers.multi_items() if k not in ("date", "server"))


@pytest.mark.parametrize("path", REPEATABLE)
def test_a_repeat_skips_the_framework_and_is_identical(shared_data: tuple[Path, str], framework: FrameworkCalls, path: str) -> None:
    app = create_app(shared_data[0])
    assert isinstance(app, AnswerCache) and isinstance(app.app, Litestar)
    with TestClient(app) as c:
        first = c.get(path)
        assert first.status_code == 200 and framework.count == 1
        again = c.get(path)
        assert framework.count == 1  # answered by the wrapper: the inner Litestar app was not called
        assert again.status_code == 200
        assert again.content == first.content
        assert comparable(again.headers) == comparable(first.headers)
        head = c.head(path)
        assert framework.count == 1
        assert head.status_code == 200 and head.content == b""
        assert comparable(head.headers) == comparable(first.headers)  # content-length included


def test_a_first_head_is_kept_for_a_later_get(shared_data: tuple[Path, str], framework: FrameworkCalls) -> None:
    with TestClient(create_app(shared_data[0])) as c:
        head = c.head(BOARD)
        get = c.get(BOARD)
        assert framework.count == 1
        assert get.json()["rows"] and int(head.headers["content-length"]) == len(get.content)


def test_replayed_lookups_count_reuses_as_the_handler_does(own_data: tuple[Path, str], framework: FrameworkCalls) -> None:
    with TestClient(create_app(own_data[0])) as c:
        for _ in range(3):
            assert c.get(LOOKUP).json()["status"] == "evaluated"
        c.head(LOOKUP)
        c.get("/v1/lookup?model=nobody&task=clinicalqa@0")
        c.get("/v1/lookup?model=nobody&task=clinicalqa@0")
        tag = c.get(LOOKUP).headers["etag"]
        assert c.get(LOOKUP, headers={"If-None-Match": tag}).status_code == 304
        assert framework.count == 2  # one evaluated and one not_evaluated lookup went through Litestar
        assert c.get("/v1/stats").json()["reuses"] == 5  # 3 GETs, the GET for the tag and the 304; not HEAD


def test_a_first_head_of_a_lookup_counts_no_reuse(own_data: tuple[Path, str], framework: FrameworkCalls) -> None:
    # the wrapper asks the app a GET to keep a first HEAD, except on the lookup, whose GET counts a reuse
    with TestClient(create_app(own_data[0])) as c:
        head = c.head(LOOKUP)
        assert head.status_code == 200 and head.content == b""
        assert c.get("/v1/stats").json()["reuses"] == 0
        get = c.get(LOOKUP)
        assert int(head.headers["content-length"]) == len(get.content) and head.headers["etag"] == get.headers["etag"]
        c.get(LOOKUP)
        assert framework.count == 3  # the HEAD, /v1/stats and the first GET (kept); the repeat was replayed
        assert c.get("/v1/stats").json()["reuses"] == 2


def test_if_none_match_on_a_repeat_is_a_bodiless_304(shared_data: tuple[Path, str], framework: FrameworkCalls) -> None:
    with TestClient(create_app(shared_data[0])) as c:
        first = c.get(BOARD)
        revalidated = c.get(BOARD, headers={"If-None-Match": f'"other", {first.headers["etag"]}'})
        stale = c.get(BOARD, headers={"If-None-Match": '"other"'})
        assert framework.count == 1
        assert revalidated.status_code == 304 and revalidated.content == b""
        assert revalidated.headers["etag"] == first.headers["etag"]
        assert revalidated.headers["x-medbench-warehouse"] == first.headers["x-medbench-warehouse"]
        assert stale.status_code == 200 and stale.content == first.content


def test_errors_are_never_kept(shared_data: tuple[Path, str], framework: FrameworkCalls) -> None:
    with TestClient(create_app(shared_data[0])) as c:
        for path in ("/v1/lookup?model=medgemma-27b&task=nope@0", "/v1/results/0123456789ab", "/v1/leaderboard?task=clinicalqa@0&limit=0"):
            codes = [c.get(path).status_code for _ in range(2)]
            assert codes[0] == codes[1] and codes[0] in (400, 404)
        assert framework.count == 6


def test_cross_origin_requests_are_replayed_with_the_frameworks_cors_headers(shared_data: tuple[Path, str], framework: FrameworkCalls) -> None:
    with TestClient(create_app(shared_data[0])) as c:
        full = c.get(BOARD, headers={"Origin": "https://example.org"})  # a miss: Litestar's CORS middleware answers
        crossing = [c.get(BOARD, headers={"Origin": "https://example.org"}) for _ in range(2)]
        assert framework.count == 1
        assert all(comparable(r.headers) == comparable(full.headers) and r.content == full.content for r in crossing)
        assert full.headers["access-control-allow-origin"] == "*"
        plain = c.get(BOARD)
        assert plain.content == full.content and framework.count == 1
        assert not [k for k in plain.headers if k.startswith("access-control-") or k == "vary"]  # none without Origin


def test_self_links_follow_the_host_they_were_asked_on(shared_data: tuple[Path, str], framework: FrameworkCalls) -> None:
    with TestClient(create_app(shared_data[0])) as c:
        for host in ("a.example", "b.example:8080", "a.example"):
            url = c.get(LOOKUP, headers={"Host": host}).json()["result"]["url"]
            assert url == f"http://{host}/r/{RUN}"  # the result page
        assert framework.count == 2


def test_parameters_too_long_to_keep_go_through_the_framework(shared_data: tuple[Path, str], framework: FrameworkCalls) -> None:
    path = f"/v1/lookup?model={'m' * MAX_CACHED_PARAMETER_CHARS}&task=clinicalqa@0"
    with TestClient(create_app(shared_data[0])) as c:
        assert [c.get(path).json()["status"] for _ in range(2)] == ["not_evaluated"] * 2
        assert framework.count == 2


def test_a_publish_drops_the_kept_answers(own_data: tuple[Path, str], framework: FrameworkCalls) -> None:
    root, v1 = own_data
    with TestClient(create_app(root)) as c:
        assert len(c.get(BOARD).json()["rows"]) == 3
        v2 = publish_fixture(root, with_late_run=True, now=dt.datetime(2026, 10, 30, 12, tzinfo=dt.timezone.utc))
        deadline = time.monotonic() + 10  # the swap itself happens within the 0.25 s poll interval
        while (board := c.get(BOARD)).headers["x-medbench-warehouse"] == v1 and time.monotonic() < deadline:
            assert len(board.json()["rows"]) == 3
            time.sleep(0.05)
        assert board.headers["x-medbench-warehouse"] == v2 and len(board.json()["rows"]) == 4
        calls = framework.count
        assert c.get(BOARD).content == board.content and framework.count == calls


def scope(method: str = "GET", headers: list[tuple[bytes, bytes]] | None = None, query: bytes = b"task=x") -> dict:
    return {"type": "http", "method": method, "path": "/v1/leaderboard", "query_string": query,
            "headers": headers if headers is not None else [(b"host", b"h.example")], "scheme": "http", "root_path": ""}


def test_the_key_names_everything_the_answer_depends_on() -> None:
    key = replay_key(scope())
    assert key is not None
    assert replay_key(scope()) == key
    assert replay_key(scope(method="HEAD")) == key  # HEAD and GET share an entry: respond() drops the body
    assert replay_key(scope(query=b"task=y")) != key
    assert replay_key(scope(headers=[(b"host", b"other.example")])) != key
    assert replay_key({**scope(), "scheme": "https"}) != key
    assert replay_key({**scope(), "root_path": "/medbench"}) != key
    assert replay_key(scope(headers=[(b"host", b"h.example"), (b"origin", b"https://example.org")])) == key  # headers only


def test_the_key_holds_the_origin_the_links_are_built_from() -> None:
    # links use the server's address for a Host too long or odd to be one (api.responses.request_origin): so does the key
    fallback = replay_key(scope(headers=[]))
    assert replay_key(scope(headers=[(b"host", b"h" * 300)])) == fallback
    assert replay_key(scope(headers=[(b"host", b"a b")])) == fallback
    # with MEDBENCH_PUBLIC_URL the links ignore Host, and so does the key: one entry for every Host
    public = replay_key(scope(), public_url="https://medbench.example")
    assert public == replay_key(scope(headers=[(b"host", b"other.example")]), public_url="https://medbench.example")
    assert public != replay_key(scope())


@pytest.mark.parametrize("request_scope", [
    scope(method="POST"), scope(method="OPTIONS"),
    scope(query=b"q=" + b"x" * MAX_CACHED_PARAMETER_CHARS),
    {"type": "lifespan"}, {"type": "websocket", "path": "/", "headers": []},
], ids=["post", "options", "long-query", "lifespan", "websocket"])
def test_requests_that_are_never_kept(request_scope: dict) -> None:
    before = copy.deepcopy(request_scope)
    assert replay_key(request_scope) is None
    assert request_scope == before  # nothing is left in the scope for handlers: they know nothing of replay


@pytest.mark.parametrize(("headers", "target", "refused"), [
    ([(b"host", b"h.example")], None, False),
    ([(b"host", b"h.example"), (b"host", b"evil.example")], None, True),
    ([(b"host", b"h.example"), (b"host", b"h.example")], None, True),
    ([(b"host", b"H.example:80")], b"http://h.example:80/v1/x", False),  # hosts compare case-insensitively
    ([(b"host", b"h.example")], b"http://evil.example/v1/x", True),
    ([(b"host", b"h.example")], b"http://user@evil.example/v1/x?y=1", True),
    ([], b"http://h.example/v1/x", True),
], ids=["one", "two", "twice-the-same", "absolute-agrees", "absolute-other", "absolute-userinfo", "absolute-no-host"])
def test_a_request_must_name_one_host(headers: list[tuple[bytes, bytes]], target: bytes | None, refused: bool) -> None:
    from api.responses import TARGET_SCOPE_KEY, host_conflict

    kept = {**scope(headers=headers), **({TARGET_SCOPE_KEY: target} if target else {})}  # httptools, via api.server
    h11 = {**scope(headers=headers), **({"raw_path": target} if target else {})}  # h11 leaves the target in raw_path
    for request_scope in (kept, h11):
        problem = host_conflict(request_scope)
        assert (problem is not None) == refused, problem
        assert problem is None or "Host" in problem
