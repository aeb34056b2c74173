"""A scripted OpenAI-compatible chat-completions server on 127.0.0.1, for backend tests and benchmarks.

Each request is answered by a ``script(instance_id, attempt)`` function returning a Reply, so a
test says exactly which failures (429, 503, stalls, 401) come before success. The server records
every request (instance id, Authorization header, JSON body) for the test to inspect. The instance
id travels in the prompt as ``[id=...]`` so the server needs no other channel.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ID_PATTERN = re.compile(r"\[id=([^\]]+)\]")


@dataclass
class Reply:
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: dict | str | None = None  # None: a normal completion for the instance
    delay_s: float = 0.0  # wait this long before answering (a stall when > the client's timeout)


@dataclass
class Request:
    instance_id: str
    authorization: str | None
    body: dict


def completion(instance_id: str) -> dict:
    return {
        "id": f"cmpl-{instance_id}",
        "object": "chat.completion",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": f"풀이 생략.\n정답: A ({instance_id})"},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 11, "completion_tokens": 5, "total_tokens": 16},
    }


class LoopbackChatServer:
    def __init__(self, script: Callable[[str, int], Reply] | None = None):
        self.script = script or (lambda instance_id, attempt: Reply())
        self.requests: list[Request] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def attempts(self, instance_id: str) -> int:
        with self._lock:
            return sum(1 for r in self.requests if r.instance_id == instance_id)

    def __enter__(self) -> LoopbackChatServer:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _handler_class(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:  # keep test output clean
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length))
                match = ID_PATTERN.search(body["messages"][0]["content"])
                instance_id = match.group(1) if match else ""
                with server._lock:
                    server.requests.append(Request(instance_id, self.headers.get("Authorization"), body))
                    attempt = sum(1 for r in server.requests if r.instance_id == instance_id) - 1
                reply = server.script(instance_id, attempt)
                if reply.delay_s:
                    time.sleep(reply.delay_s)
                payload = reply.body if reply.body is not None else completion(instance_id)
                raw = (payload if isinstance(payload, str) else json.dumps(payload)).encode()
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(raw)))
                    for key, value in reply.headers.items():
                        self.send_header(key, value)
                    self.end_headers()
                    self.wfile.write(raw)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up on a stalled request

        return Handler
