"""The typed HTTP client of the medbench API: GET a route, get its Struct or a failure with its exit code.

Client commands (``medbench lookup``, ``leaderboard``, ``eval``'s look-up step, ...) all speak to
the server through this one class, so they agree on what each failure means for the shell
(docs/cli.md, "The client"): 1 not found (404, or a lookup answered ``not_evaluated``), 2 usage error (400
``invalid_parameter``), 3 server unreachable (no connection, a timeout, a 5xx, or an answer that is
not the medbench API).

It lives in ``api`` because it decodes with the very ``api.schemas`` Structs the server encodes
with: a body that does not match its route's Struct is "not the medbench API" (exit 3), caught
here rather than as a ``KeyError`` deep in a command. The typed methods (``lookup``, ``result``,
...) are derived from the table of read questions (``api.questions``: one per question naming a
``client`` method, with its parameters and body Struct) and return Structs; ``get`` returns plain JSON (checked against the route's Struct when it has
one) for callers that print or pass the body on. It imports httpx, msgspec and ``api.schemas``
only, never Dagster or the server's tables: a look-up must stay instant.

Its file name is shared on purpose: the service's own module of that name (the pipeline's serves
another side).
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any, TypeVar
from urllib.parse import quote

import httpx
import msgspec

from api import schemas
from api.questions import ReadQuestion, registered, text
from medbench.files import atomic_path

API_URL_ENV = "MEDBENCH_API_URL"
DEFAULT_API_URL = "http://127.0.0.1:8000"
CHUNK = 1 << 16

T = TypeVar("T")

# The Struct of each route's 200 body: the read questions' (api.questions), then the routes declared by hand.
OTHER_SCHEMAS: dict[str, type] = {"/healthz": schemas.Health}
_PATH_PARAM_RE = re.compile(r"{(\w+)}")


def _route_re(path: str) -> re.Pattern[str]:
    return re.compile("".join(re.escape(part) if i % 2 == 0 else "[^/]+"
                              for i, part in enumerate(_PATH_PARAM_RE.split(path))) + "$")


def schema_of(path: str) -> type | None:
    """The Struct a 200 answer of ``path`` decodes into, or None for a route without one."""
    if path in OTHER_SCHEMAS:
        return OTHER_SCHEMAS[path]
    for question in registered():
        if question.route and _route_re(question.path).match(path):
            return question.body
    return None


def request_of(question: ReadQuestion, args: Any) -> tuple[str, dict[str, Any]]:
    """The GET asking ``question`` with ``args`` (its parameter Struct, or any object with those
    attributes): the path with its path parameters filled in, and the query parameters by wire name."""
    path = question.path
    query: dict[str, Any] = {}
    for param in question.params:
        value = getattr(args, param.attr, None)
        if param.in_path:
            path = path.replace("{" + param.name + "}", quote(str(value), safe="@"))
        else:
            query[param.name] = value
    return path, query


def _client_method(question: ReadQuestion) -> Callable[..., Any]:
    """``ApiClient.<question.client>``: the question's parameters in declared order (path parameters and
    required ones first, the rest by keyword, None = the server's default), answered as its body Struct."""
    names = [p.attr for p in question.params]

    def method(self: ApiClient, *given: Any, **named: Any) -> Any:
        if len(given) > len(names):
            raise TypeError(f"{question.client}() takes at most {len(names)} arguments")
        values = dict(zip(names, given)) | named
        unknown = set(values) - set(names)
        if unknown:
            raise TypeError(f"{question.client}() got unknown arguments {sorted(unknown)}")
        path, query = request_of(question, SimpleNamespace(**values))
        return self.fetch(path, question.body, **query)

    method.__name__ = question.client or question.name
    method.__doc__ = f"GET {question.path}: {text(question.summary) or question.name}"
    return method


def default_api_url() -> str:
    return os.environ.get(API_URL_ENV) or DEFAULT_API_URL


class ClientError(Exception):
    """A failure with the exit code the CLI should return; ``body`` is the server's error JSON, if any."""

    exit_code = 1

    def __init__(self, message: str, body: dict[str, Any] | None = None):
        super().__init__(message)
        self.message = message
        self.body = body


class NotFound(ClientError):
    exit_code = 1


class UsageError(ClientError):
    exit_code = 2


class Unreachable(ClientError):
    exit_code = 3


class ApiClient:
    def __init__(self, base_url: str | None = None, timeout: float = 30.0, transport: httpx.BaseTransport | None = None):
        self.base_url = (base_url or default_api_url()).rstrip("/")
        self.last_version: str | None = None  # X-Medbench-Warehouse of the last answer
        self._http = httpx.Client(base_url=self.base_url, timeout=timeout, transport=transport,
                                  headers={"user-agent": "medbench-cli"})

    def close(self) -> None:
        self._http.close()

    def cannot_reach(self, exc: BaseException) -> str:
        """The one line for no connection: which address was tried and how to name the right one (a demo
        or server on another port prints its ``export MEDBENCH_API_URL=...`` line, docs/cli.md)."""
        return (f"cannot reach the medbench API at {self.base_url} ({exc}); name the server with --api-url URL "
                f"or {API_URL_ENV}=URL (`medbench demo` and `medbench serve` print the export line)")

    def __enter__(self) -> ApiClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- typed routes ---------------------------------------------------------------------------

    def __getattr__(self, name: str) -> Any:
        """The typed method of each read question that names one (``lookup``, ``leaderboard``, ``result``...)."""
        for question in registered():
            if question.client == name:
                return _client_method(question).__get__(self, ApiClient)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    # -- submissions (docs/submitting.md) -------------------------------------------------------------

    def submission(self, submission_id: str) -> schemas.Submission:
        return self.fetch(f"/v1/submissions/{submission_id}", schemas.Submission)

    def submissions(self, owner: str | None = None, state: str | None = None, limit: int | None = None,
                    offset: int | None = None) -> schemas.SubmissionPage:
        return self.fetch("/v1/submissions", schemas.SubmissionPage, owner=owner, state=state, limit=limit,
                          offset=offset)

    def submit(self, body: dict[str, Any], token: str) -> schemas.Submission | schemas.AlreadyEvaluated:
        """POST a submission with a bearer token: the new (201) or open duplicate (200) submission, or
        ``already_evaluated``. A refusal raises: 422/400 UsageError, 404 NotFound, others ClientError."""
        try:
            response = self._http.post("/v1/submissions", content=msgspec.json.encode(body),
                                       headers={"authorization": f"Bearer {token}", "content-type": "application/json"})
        except httpx.HTTPError as exc:
            raise Unreachable(self.cannot_reach(exc)) from None
        if response.status_code in (200, 201):
            decoded = msgspec.json.decode(response.content)
            kind = schemas.AlreadyEvaluated if decoded.get("status") == "already_evaluated" else schemas.Submission
            return msgspec.convert(decoded, kind)
        raise self._refusal(response)

    def upload_package(self, submission_id: str, wheel: Path, token: str) -> schemas.Submission:
        """PUT an official submission's wheel (streamed from disk); the submission, now awaiting approval."""
        try:
            with open(wheel, "rb") as body:
                response = self._http.put(f"/v1/submissions/{submission_id}/package", content=body,
                                          headers={"authorization": f"Bearer {token}",
                                                   "content-type": "application/octet-stream",
                                                   "content-length": str(wheel.stat().st_size)})
        except httpx.HTTPError as exc:
            raise Unreachable(self.cannot_reach(exc)) from None
        if response.status_code == 200:
            return msgspec.json.decode(response.content, type=schemas.Submission)
        raise self._refusal(response)

    def _refusal(self, response: httpx.Response) -> Exception:
        """A write route's refusal as the exception the CLI maps to its exit code."""
        try:
            error = msgspec.json.decode(response.content, type=schemas.Error)
        except (msgspec.DecodeError, msgspec.ValidationError):
            raise Unreachable(f"{self.base_url} answered {response.status_code} with something that is not the "
                              "medbench API") from None
        message = f"{error.error}: {error.message}"
        body = msgspec.to_builtins(error)
        if response.status_code in (400, 422):
            return UsageError(message, body)
        return ClientError(message, body)

    def text(self, path: str) -> str:
        """A page of the website as text (``/llms.txt``, ``/agents``)."""
        response = self._get(path, {})
        if response.status_code != 200:
            self._decode(response, None)
            raise NotFound(f"{path} answered {response.status_code}")
        return response.text

    # -- any route ------------------------------------------------------------------------------

    def fetch(self, path: str, schema: type[T], **params: Any) -> T:
        """GET a route and decode its 200 body into ``schema``, else raise the matching ``ClientError``."""
        return self._decode(self._get(path, params), schema)

    def get(self, path: str, **params: Any) -> Any:
        """GET a route; its 200 body as plain JSON (checked against the route's Struct where it has one)."""
        response = self._get(path, params)
        schema = schema_of(path)
        if schema is None:
            return self._decode(response, None)
        return msgspec.to_builtins(self._decode(response, schema))

    def _get(self, path: str, params: dict[str, Any]) -> httpx.Response:
        try:
            response = self._http.get(path, params={k: v for k, v in params.items() if v is not None})
        except httpx.HTTPError as exc:
            raise Unreachable(self.cannot_reach(exc)) from None
        self.last_version = response.headers.get("x-medbench-warehouse")
        return response

    def _decode(self, response: httpx.Response, schema: type | None) -> Any:
        if response.status_code == 200:
            try:
                return msgspec.json.decode(response.content) if schema is None else msgspec.json.decode(
                    response.content, type=schema)
            except msgspec.ValidationError as exc:
                raise Unreachable(f"{self.base_url} answered 200 with a body that is not the medbench API's "
                                  f"{schema.__name__ if schema else 'JSON'}: {exc}") from None
            except msgspec.DecodeError:
                raise Unreachable(f"{self.base_url} answered 200 with something that is not the "
                                  "medbench API (not JSON)") from None
        try:
            body = msgspec.json.decode(response.content)
        except msgspec.DecodeError:
            raise Unreachable(f"{self.base_url} answered {response.status_code} with something that is not the "
                              "medbench API (not JSON)") from None
        try:
            error = msgspec.convert(body, schemas.Error)
        except msgspec.ValidationError:
            error = None
        body = body if error is not None else None
        message = f"{error.error}: {error.message}" if error else f"HTTP {response.status_code}"
        if response.status_code == 404:
            raise NotFound(message, body)
        if response.status_code == 400:
            raise UsageError(message, body)
        raise Unreachable(f"{self.base_url} answered {response.status_code}: {message}", body)

    # -- files ------------------------------------------------------------------------------------

    def download(self, path: str, dest: Path, expected_sha256: str,
                 progress: Callable[[int | None], Callable[[int], None]] | None = None) -> tuple[int, str]:
        """Stream ``path`` to ``dest`` (written atomically) and check its sha256; returns (bytes, sha256).

        ``progress(total)`` may return a callback receiving the size of each chunk (a progress bar).
        A checksum mismatch leaves no file behind and raises ``NotFound`` (exit 1: the published file
        was not obtained).
        """
        digest = hashlib.sha256()
        size = 0
        with atomic_path(Path(dest), suffix=".part") as tmp:  # removed again on any failure below
            try:
                with self._http.stream("GET", path) as response:
                    if response.status_code != 200:
                        response.read()
                        self._decode(response, None)
                    total = int(response.headers["content-length"]) if "content-length" in response.headers else None
                    advance = progress(total) if progress else None
                    with open(tmp, "wb") as fh:
                        for chunk in response.iter_bytes(CHUNK):
                            fh.write(chunk)
                            digest.update(chunk)
                            size += len(chunk)
                            if advance:
                                advance(len(chunk))
            except httpx.HTTPError as exc:
                raise Unreachable(f"download from {self.base_url}{path} failed: {exc}") from None
            sha = digest.hexdigest()
            if sha != expected_sha256:
                raise NotFound(f"the downloaded file's sha256 is {sha}, not the published {expected_sha256}; nothing "
                               "was written")
        return size, sha
