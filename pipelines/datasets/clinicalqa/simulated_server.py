"""A loopback OpenAI-compatible chat server that answers as one of the demo's simulated LLMs.

Why: on a machine without the Hub or an API key, a newcomer can still submit a model end to end
(``POST /v1/submissions`` with ``backend = "openai"``, ``endpoint = "demo-sim"``): ``medbench demo``
starts this server on 127.0.0.1 (an ephemeral port) and configures it as the demo data directory's
endpoint ``demo-sim``; it stops with the demo. Each request's prompt is matched to the demo item it
renders (its question, exam findings and option texts all appear in the prompt) and answered with
that item's reply by the simulated model (``simulated.simulate``: the same replies as the replay
files of ``specs/models/medbench-sim/``). The request's ``model`` picks the simulated model by name
(``english``, ``terse``, ...; anything else: ``english``). The model ``judge`` grades a rubric judge
prompt (clinicalqa-open's) as the demo's simulated judge does (``pipelines.backends.matching_judge``),
without flips: one request carries no judge sample, so this judge is the deterministic one (the e2e
test's, and a submitter's real-backend judge in the demo). A prompt that renders no demo item is
answered 404 with an OpenAI-style error: this server knows nothing else.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from pipelines.datasets.clinicalqa.demo import demo_clinicalqa_rows
from pipelines.datasets.clinicalqa.simulated import PANEL, simulate

DEFAULT_MODEL = "english"
JUDGE_MODEL = "judge"
MAX_BODY = 1 << 20


def _fingerprint(row: dict) -> list[str]:
    """The texts of an item that every rendering of it holds."""
    texts = [row["question"], *row["options"].values()]
    return texts + ([row["exam"]] if row.get("exam") else [])


class SimulatedAnswers:
    """prompt -> the simulated model's reply to the demo item the prompt renders."""

    def __init__(self) -> None:
        self.rows = demo_clinicalqa_rows()
        self._replies: dict[str, dict[str, str]] = {}
        self._lock = threading.Lock()

    def models(self) -> list[str]:
        return [p.name for p in PANEL] + [JUDGE_MODEL]

    def _of(self, model: str) -> dict[str, str]:
        name = model if model in [p.name for p in PANEL] else DEFAULT_MODEL
        with self._lock:
            if name not in self._replies:
                profile = next(p for p in PANEL if p.name == name)
                self._replies[name] = {r.instance_id: r.output for r in simulate(profile, self.rows)}
            return self._replies[name]

    def answer(self, model: str, prompt: str) -> str | None:
        """The reply, or None when the prompt renders no demo item."""
        if model == JUDGE_MODEL:
            from pipelines.backends.matching_judge import grade

            reply = grade(prompt, "endpoint", 0, 0.0)
            return reply if reply.startswith("{") else None
        matches = [row for row in self.rows if all(text in prompt for text in _fingerprint(row))]
        if not matches:
            return None
        best = max(matches, key=lambda row: sum(len(t) for t in _fingerprint(row)))  # the most specific item
        return self._of(model)[str(best["question_id"])]


class _Server(ThreadingHTTPServer):
    """A listen backlog for a client's whole connection pool: with the default 5, a burst of 16 connects
    was reset and the clients' retries, not the server, set the pace (bench/vs_inspect)."""

    request_queue_size = 256


class SimulatedChatServer:
    """``with SimulatedChatServer() as server: server.base_url`` (``http://127.0.0.1:<port>/v1``)."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0):
        self.answers = SimulatedAnswers()
        self._server = _Server((host, port), _handler(self.answers))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True, name="demo-sim-endpoint")

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def start(self) -> SimulatedChatServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> SimulatedChatServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def _handler(answers: SimulatedAnswers) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as a served model's endpoint: every reply has a length

        def log_message(self, *args) -> None:  # quiet: the demo's console is the API's
            pass

        def _send(self, status: int, body: dict) -> None:
            data = json.dumps(body, ensure_ascii=False).encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _error(self, status: int, message: str) -> None:
            self.close_connection = True  # a body left unread must not be read as the next request
            self._send(status, {"error": {"message": message, "type": "invalid_request_error"}})

        def do_GET(self) -> None:
            if self.path.rstrip("/") != "/v1/models":
                return self._error(404, f"no route {self.path}")
            self._send(200, {"object": "list", "data": [{"id": m, "object": "model"} for m in answers.models()]})

        def do_POST(self) -> None:
            if self.path.rstrip("/") != "/v1/chat/completions":
                return self._error(404, f"no route {self.path}")
            length = int(self.headers.get("Content-Length") or 0)
            if not 0 < length <= MAX_BODY:
                return self._error(400, "send a JSON body of at most 1 MiB")
            try:
                body = json.loads(self.rfile.read(length))
                model = str(body.get("model") or DEFAULT_MODEL)
                prompt = "\n".join(str(m.get("content", "")) for m in body["messages"] if m.get("role") == "user")
            except (ValueError, KeyError, TypeError, AttributeError):
                return self._error(400, "expected a chat completion request: {model, messages: [{role, content}]}")
            output = answers.answer(model, prompt)
            if output is None:
                return self._error(404, "this demo endpoint answers the demo ClinicalQA items only; the prompt "
                                        "renders none of them")
            self._send(200, {
                "id": "demo-sim", "object": "chat.completion", "model": model,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": output}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": len(prompt), "completion_tokens": len(output),
                          "total_tokens": len(prompt) + len(output)},
            })

    return Handler
