"""A real HTTP server on 127.0.0.1 that speaks enough of the OpenAI API for ctxlab's tests.

Not a mock: the openai client talks to it over a socket, with its own request building, retries,
timeouts and error classes. It answers ``POST /v1/embeddings`` out of the box (floats, or base64
as the client asks by default) with deterministic vectors, and ``POST /v1/chat/completions`` with
scripted replies (:meth:`FakeOpenAI.reply`, else :attr:`FakeOpenAI.default_reply`) and OpenAI-shaped
usage (``prompt_tokens_details.cached_tokens`` when ``report_cached`` is set); other endpoints are
added with :meth:`FakeOpenAI.route`. Every request is recorded, and the server can be told to fail
the next requests: an HTTP status (with ``Retry-After``), a hang longer than the client's timeout,
or a reply that is not JSON::

    with FakeOpenAI() as api:
        client = OpenAI(api_key="sk-test", base_url=api.base_url)
        ...
        api.requests[-1].json        # what the client sent
        api.fail_next(401)           # the next request gets an OpenAI-style 401 error
        api.fail_next(429, retry_after=0.2)   # ... a 429 that asks to retry after 0.2 s
        api.hang_next(5.0)           # the next request waits 5 s before answering
        api.malformed_next()         # the next request gets a 200 whose body is not JSON
        api.reply("first", "second") # the next chat completions answer these texts, in order
"""
from __future__ import annotations

import base64
import hashlib
import json
import struct
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

Handler = Callable[[dict[str, Any]], dict[str, Any]]
ReplyFn = Callable[[dict[str, Any]], str]

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
class Fault:
    """What the server does instead of answering one request: ``status`` (an OpenAI-style error of
    that HTTP status, with a ``Retry-After`` header when ``retry_after`` is set), ``delay`` (seconds
    to wait before answering normally) or ``malformed`` (a 200 whose body is not JSON)."""

    status: int | None = None
    retry_after: float | None = None
    delay: float = 0.0
    malformed: bool = False
    message: str | None = None
    trickle: float = 0.0
    truncated: bool = False
    headers: tuple[tuple[str, str], ...] = ()


def chat_prompt_text(body: dict[str, Any]) -> str:
    """Every message's text content of a chat request, joined by newlines (what a reply function reads)."""
    out = []
    for m in body.get("messages", []):
        content = m.get("content")
        if isinstance(content, str):
            out.append(content)
        elif isinstance(content, list):
            out.extend(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return "\n".join(out)


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
        self._routes: dict[str, Handler] = {"/v1/embeddings": self._embeddings,
                                            "/v1/chat/completions": self._chat}
        self._faults: list[Fault] = []
        self._replies: list[str | ReplyFn] = []
        self.default_reply: str | ReplyFn = "fake reply"
        self.report_cached: int | None = None
        self.completion_tokens: int | None = None
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

    def fail_next(self, status: int, times: int = 1, retry_after: float | None = None,
                  message: str | None = None, headers: dict[str, str] | None = None) -> None:
        """Answer the next ``times`` requests with an OpenAI-style error of HTTP ``status``
        (with a ``Retry-After: retry_after`` header when given; ``message``: the error's text
        instead of the usual one; ``headers``: more response headers, e.g. ``x-should-retry``)."""
        fault = Fault(status=status, retry_after=retry_after, message=message, headers=tuple((headers or {}).items()))
        with self._lock:
            self._faults.extend([fault] * times)

    def hang_next(self, seconds: float, times: int = 1) -> None:
        """Wait ``seconds`` before answering each of the next ``times`` requests (a client with a
        shorter timeout gives up first)."""
        with self._lock:
            self._faults.extend([Fault(delay=seconds)] * times)

    def malformed_next(self, times: int = 1) -> None:
        """Answer the next ``times`` requests with HTTP 200 and a body that is not JSON."""
        with self._lock:
            self._faults.extend([Fault(malformed=True)] * times)

    def trickle_next(self, interval: float, times: int = 1) -> None:
        """Answer the next ``times`` requests one byte every ``interval`` seconds (each read gets
        a byte in time; the whole reply takes minutes)."""
        with self._lock:
            self._faults.extend([Fault(trickle=interval)] * times)

    def truncate_next(self, times: int = 1) -> None:
        """Answer the next ``times`` requests with a 200 whose body stops half way (the
        Content-Length promises more), then close the connection."""
        with self._lock:
            self._faults.extend([Fault(truncated=True)] * times)

    def reply(self, *replies: str | ReplyFn) -> None:
        """Queue chat-completion replies: a text, or a function of the request JSON returning one."""
        with self._lock:
            self._replies.extend(replies)

    def chat_requests(self) -> list[RecordedRequest]:
        """The chat-completion requests received so far, in order."""
        return [r for r in self.requests if r.path == "/v1/chat/completions"]

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
            fault = self._faults.pop(0) if self._faults else None
        if fault is not None and fault.delay:
            time.sleep(fault.delay)
        if fault is not None and (fault.trickle or fault.truncated):
            self._send_slowly(req, self._chat(body if isinstance(body, dict) else {}), fault)
            return
        if fault is not None and fault.malformed:
            self._send_raw(req, 200, b'{"id": "chatcmpl-x", "choices": [ this is not JSON')
            return
        if fault is not None and fault.status is not None:
            headers = {} if fault.retry_after is None else {"Retry-After": f"{fault.retry_after:g}"}
            headers.update(fault.headers)
            body = self._error_body(fault.status, record)
            if fault.message is not None:
                body["error"]["message"] = fault.message
            self._send(req, fault.status, body, headers)
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
        elif status == 429:
            message, code = "Rate limit reached for requests (fake). Please try again later.", "rate_limit_exceeded"
        else:
            message, code = f"The server had an error while processing your request (fake {status}).", None
        return {"error": {"message": message, "type": _ERROR_TYPES.get(status, "server_error"), "param": None, "code": code}}

    @classmethod
    def _send(cls, req: BaseHTTPRequestHandler, status: int, payload: dict[str, Any],
              headers: dict[str, str] | None = None) -> None:
        cls._send_raw(req, status, json.dumps(payload).encode(), headers)

    @staticmethod
    def _send_raw(req: BaseHTTPRequestHandler, status: int, data: bytes, headers: dict[str, str] | None = None) -> None:
        try:
            req.send_response(status)
            req.send_header("Content-Type", "application/json")
            req.send_header("Content-Length", str(len(data)))
            for k, v in (headers or {}).items():
                req.send_header(k, v)
            req.end_headers()
            req.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (its timeout): nothing to send to
            pass

    @staticmethod
    def _send_slowly(req: BaseHTTPRequestHandler, payload: dict[str, Any], fault: Fault) -> None:
        data = json.dumps(payload).encode()
        try:
            req.send_response(200)
            req.send_header("Content-Type", "application/json")
            req.send_header("Content-Length", str(len(data)))
            req.end_headers()
            req.wfile.flush()
            if fault.truncated:
                req.wfile.write(data[:len(data) // 2])
                req.wfile.flush()
                req.close_connection = True
                return
            for k in range(len(data)):
                req.wfile.write(data[k:k + 1])
                req.wfile.flush()
                time.sleep(fault.trickle)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _chat(self, body: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            scripted = self._replies.pop(0) if self._replies else self.default_reply
        text = scripted(body) if callable(scripted) else scripted
        prompt = len(chat_prompt_text(body).split()) + 3 * len(body.get("messages", []))  # a stand-in count
        completion = self.completion_tokens if self.completion_tokens is not None else len(text.split())
        usage: dict[str, Any] = {"prompt_tokens": prompt, "completion_tokens": completion,
                                 "total_tokens": prompt + completion}
        if self.report_cached is not None:
            usage["prompt_tokens_details"] = {"cached_tokens": min(self.report_cached, prompt)}
        return {"id": f"chatcmpl-fake{len(self.requests)}", "object": "chat.completion", "created": 0,
                "model": body.get("model", "fake-model"),
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": text}}],
                "usage": usage}

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
