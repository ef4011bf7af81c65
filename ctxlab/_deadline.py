"""A deadline for a whole model call, not per socket read: a server that trickles one byte a
second never trips a per-read timeout, so the openai client's ``timeout`` alone can hold a call
for minutes. :func:`deadline_client` builds the httpx client the openai client uses, with a
network backend whose every connect, read and write is cut at the call's deadline
(:func:`call_deadline` sets it around one call)."""
from __future__ import annotations

import time
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Iterator

import httpcore
import httpx

_DEADLINE: ContextVar[float | None] = ContextVar("ctxlab_call_deadline", default=None)


@contextmanager
def call_deadline(seconds: float) -> Iterator[None]:
    """Within the block, the network I/O of this thread ends at most ``seconds`` from now."""
    token = _DEADLINE.set(time.monotonic() + seconds)
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def _left(timeout: float | None, error: type[Exception]) -> float | None:
    deadline = _DEADLINE.get()
    if deadline is None:
        return timeout
    left = deadline - time.monotonic()
    if left <= 0:
        raise error("the call's deadline passed")
    return left if timeout is None else min(timeout, left)


class _Stream(httpcore.NetworkStream):
    def __init__(self, inner: httpcore.NetworkStream) -> None:
        self._inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, _left(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, _left(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(self, *args: Any, **kwargs: Any) -> httpcore.NetworkStream:
        return _Stream(self._inner.start_tls(*args, **kwargs))

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _Backend(httpcore.SyncBackend):
    def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                    socket_options: Any = None) -> httpcore.NetworkStream:
        return _Stream(super().connect_tcp(host, port, _left(timeout, httpcore.ConnectTimeout), local_address,
                                           socket_options))

    def connect_unix_socket(self, path: str, timeout: float | None = None,
                            socket_options: Any = None) -> httpcore.NetworkStream:
        return _Stream(super().connect_unix_socket(path, _left(timeout, httpcore.ConnectTimeout), socket_options))


def deadline_client(timeout: float) -> httpx.Client:
    """An httpx client whose network I/O honours :func:`call_deadline` (falls back to a plain
    client should httpx ever stop exposing its connection pool)."""
    client = httpx.Client(timeout=timeout, follow_redirects=True)
    pool = getattr(getattr(client, "_transport", None), "_pool", None)
    if pool is not None and hasattr(pool, "_network_backend"):
        pool._network_backend = _Backend()
    return client
