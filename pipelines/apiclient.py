"""The medbench API as seen by the CLI: GET a route, get JSON or a typed failure with its exit code.

Client commands (``medbench lookup``, ``leaderboard``, ``eval``'s look-up step, ...) all speak to
the server through this one class, so they agree on what each failure means for the shell
(CONTRACT.md): 1 not found (404, or a lookup answered ``not_evaluated``), 2 usage error (400
``invalid_parameter``), 3 server unreachable (no connection, a timeout, a 5xx, or an answer that is
not the medbench API). It imports httpx only, never Dagster: a look-up must stay instant.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from warehouse.files import atomic_path

API_URL_ENV = "MEDBENCH_API_URL"
DEFAULT_API_URL = "http://127.0.0.1:8000"
CHUNK = 1 << 16


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
        self._http = httpx.Client(base_url=self.base_url, timeout=timeout, transport=transport,
                                  headers={"user-agent": "medbench-cli"})

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> ApiClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- JSON routes ---------------------------------------------------------------------------

    def get(self, path: str, **params: Any) -> dict[str, Any]:
        """GET a /v1 route; the decoded JSON body of a 200, else the matching ``ClientError``."""
        try:
            response = self._http.get(path, params={k: v for k, v in params.items() if v is not None})
        except httpx.HTTPError as exc:
            raise Unreachable(f"cannot reach the medbench API at {self.base_url}: {exc}") from None
        return self._decode(response)

    def _decode(self, response: httpx.Response) -> dict[str, Any]:
        try:
            body = response.json()
        except ValueError:
            raise Unreachable(f"{self.base_url} answered {response.status_code} with something that is not the "
                              "medbench API (not JSON)") from None
        if response.status_code == 200:
            return body
        error = body if isinstance(body, dict) and "error" in body else None
        code = error["error"] if error else "http_error"
        message = f"{code}: {error['message']}" if error else f"HTTP {response.status_code}"
        if response.status_code == 404:
            raise NotFound(message, error)
        if response.status_code == 400:
            raise UsageError(message, error)
        raise Unreachable(f"{self.base_url} answered {response.status_code}: {message}", error)

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
                        self._decode(response)
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
