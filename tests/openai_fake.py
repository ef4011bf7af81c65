"""A real HTTP server on 127.0.0.1 that speaks enough of the OpenAI API for ctxlab's tests.

Not a mock: the openai client talks to it over a socket, with its own request building, retries,
timeouts and error classes. It answers ``POST /v1/embeddings`` out of the box (floats, or base64
as the client asks by default) with deterministic vectors; other endpoints (chat completions, ...)
are added with :meth:`FakeOpenAI.route`. Every request is recorded, and the server can be told to
fail the next requests with an HTTP status::

    with FakeOpenAI() as api:
        client = OpenAI(api_key="sk-test", base_url=api.base_url)
        ...
        api.requests[-1].json        # what the client sent
        api.fail_next(401)           # the next request gets an OpenAI-style 401 error
"""
from __future__ import annotations

import base64
import hashlib
import json
import struct
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

Handler = Callable[[dict[str, Any]], dict[str, Any]]

_ERROR_TYPES = {400: "invalid_request_error", 401: "invalid_request_error", 403: "permission_denied",
                404: "invalid_request_error", 429: "rate_limit_exceeded", 500: "server_error",
                503: "server_error"}


def fake_vector(text: str, dimensions: int = 8) -> list[float]:
    """The deterministic, deliberately not normalised vector the server returns for ``text``."""
    out: list[float] = []
    counter = 0
    while len(out) < dimensions:
        digest = hashlib.sha256(f"{counter}:{text}".encode()).digest()
        out.extend((byte - 127.5) / 10.0 for byte in digest)
        counter += 1
    return out[:dimensions]


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the server received it."""

    method: str
    path: str
    headers: dict[str, str]
    json: Any

    @property
    def bearer(self) -> str | None:
        """The token of an ``Authorization: Bearer ...`` header, if any."""
        auth = self.headers.get("authorization", "")
        return auth[len("Bearer "):] if auth.startswith("Bearer ") else None


class FakeOpenAI:
    """An OpenAI-compatible server in a background thread, on a free port of 127.0.0.1."""

    def __init__(self, dimensions: int = 8, reverse_order: bool = False) -> None:
        """``dimensions``: length of the embedding vectors; ``reverse_order``: list embeddings
        last input first (each still carries its ``index``), as the API allows."""
        self.dimensions = dimensions
        self.reverse_order = reverse_order
        self.requests: list[RecordedRequest] = []
        self._routes: dict[str, Handler] = {"/v1/embeddings": self._embeddings}
        self._failures: list[int] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> "FakeOpenAI":
        """Bind a free port and serve in a daemon thread."""
        fake = self

        class _RequestHandler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                fake._handle(self)

            def do_GET(self) -> None:  # noqa: N802
                fake._handle(self)

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet in tests
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _RequestHandler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="fake-openai", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and free the port."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> "FakeOpenAI":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1``, what ``OpenAI(base_url=...)`` expects."""
        if self._server is None:
            raise RuntimeError("the fake OpenAI server is not running")
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    # -- behaviour ---------------------------------------------------------------------------
    def route(self, path: str, handler: Handler) -> None:
        """Answer ``path`` (e.g. ``/v1/chat/completions``) with ``handler(request_json)``."""
        self._routes[path] = handler

    def fail_next(self, status: int, times: int = 1) -> None:
        """Answer the next ``times`` requests with an OpenAI-style error of HTTP ``status``."""
        with self._lock:
            self._failures.extend([status] * times)

    # -- internals ---------------------------------------------------------------------------
    def _handle(self, req: BaseHTTPRequestHandler) -> None:
        length = int(req.headers.get("Content-Length") or 0)
        raw = req.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        record = RecordedRequest(req.command, req.path.split("?")[0],
                                 {k.lower(): v for k, v in req.headers.items()}, body)
        with self._lock:
            self.requests.append(record)
            status = self._failures.pop(0) if self._failures else None
        if status is not None:
            self._send(req, status, self._error_body(status, record))
            return
        handler = self._routes.get(record.path)
        if handler is None:
            self._send(req, 404, {"error": {"message": f"Unknown endpoint {record.path}", "type": "invalid_request_error",
                                            "param": None, "code": "unknown_url"}})
            return
        self._send(req, 200, handler(body if isinstance(body, dict) else {}))

    def _error_body(self, status: int, record: RecordedRequest) -> dict[str, Any]:
        if status == 401:  # like the real API, quote the key back (in full here: the worst case)
            message = f"Incorrect API key provided: {record.bearer}. You can find your API key at the dashboard."
            code = "invalid_api_key"
        else:
            message, code = f"The server had an error while processing your request (fake {status}).", None
        return {"error": {"message": message, "type": _ERROR_TYPES.get(status, "server_error"), "param": None, "code": code}}

    @staticmethod
    def _send(req: BaseHTTPRequestHandler, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        req.send_response(status)
        req.send_header("Content-Type", "application/json")
        req.send_header("Content-Length", str(len(data)))
        req.end_headers()
        req.wfile.write(data)

    def _embeddings(self, body: dict[str, Any]) -> dict[str, Any]:
        inputs = body.get("input", [])
        inputs = [inputs] if isinstance(inputs, str) else list(inputs)
        as_base64 = body.get("encoding_format") == "base64"
        data = []
        for i, text in enumerate(inputs):
            vec = fake_vector(str(text), self.dimensions)
            value: Any = base64.b64encode(struct.pack(f"<{len(vec)}f", *vec)).decode() if as_base64 else vec
            data.append({"object": "embedding", "index": i, "embedding": value})
        if self.reverse_order:
            data.reverse()
        tokens = sum(len(str(t).split()) for t in inputs)
        return {"object": "list", "data": data, "model": body.get("model", "text-embedding-3-small"),
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}
