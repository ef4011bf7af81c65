"""The one place ctxlab talks to a model: its configuration, retries, fallbacks and key hygiene.

Everything else in ctxlab works offline; this module is used only when the user points ctxlab at a
model. Any OpenAI-compatible chat-completions server works (OpenAI, vLLM, Ollama, LM Studio, a
proxy) through its base URL.

* :class:`LLMConfig` comes from the environment (``OPENAI_API_KEY``, ``OPENAI_BASE_URL``,
  ``CTXLAB_LLM_MODEL``) or from the app's settings panel. The key is held in a :class:`SecretKey`
  whose ``repr``/``str`` is ``***``; ``to_dict()`` and ``describe()`` never hold it.
* :class:`LLM` sends one chat completion with the openai client (explicit timeout, the client's own
  retries off) and retries here: what the client itself would retry among HTTP responses (408,
  409, 429, 5xx, and whatever the server marks ``x-should-retry: true``; never what it marks
  ``false``), with exponential backoff that honours the server's ``Retry-After`` (or
  ``retry-after-ms``), within ``max_attempts`` and ``max_wait`` seconds in all. A timeout, a
  refused connection, 401/403, another 4xx or a reply that is not a chat completion is not
  retried. Every failure is one :class:`LLMError` with one clear message that never holds the key
  (the provider's text is scrubbed of it).

  Why not the client's own retries (``max_retries``; openai 3.57 read and measured against
  tests/openai_fake.py in tests/llm/test_llm_retry_policy.py): it also retries timeouts and refused
  connections, so with ctxlab's whole-call deadline a hung server holds an interactive page for
  (retries + 1) x timeout instead of one timeout, and a local server that is not running costs
  backoff sleeps before "cannot connect"; it honours any ``Retry-After`` up to 120 s per retry with
  no cap on the total, where a page must give up at once and say how long the server asked; and
  it does not tell how many requests a call took (``ChatResult.attempts``, "gave up after N
  attempts"). Its status rules are right and are the ones used here.
* ``use_llm(llm)`` makes ``llm`` the model the LLM summarizer uses in this thread (a page sets it
  from its settings panel); otherwise :func:`active_llm` builds one from the environment.
"""
from __future__ import annotations

import email.utils
import hashlib
import logging
import math
import os
import re
import threading
import time
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Mapping, Sequence
from urllib.parse import urlsplit, urlunsplit

from .errors import CtxlabError
from .i18n import T
from .redact import KeyRedactor

log = logging.getLogger("ctxlab.llm")
log.addHandler(logging.NullHandler())  # a library: the application decides where warnings go

DEFAULT_MODEL = "gpt-4o-mini"
KEY_ENV, BASE_URL_ENV, MODEL_ENV = "OPENAI_API_KEY", "OPENAI_BASE_URL", "CTXLAB_LLM_MODEL"
SETUP_HINT = T("Set {key} (for OpenAI), or {base_url} for any OpenAI-compatible server such as "
              "http://127.0.0.1:11434/v1 (Ollama) or http://127.0.0.1:8000/v1 (vLLM), and {model} for the model "
              "name; in the app, use the model settings panel", key=KEY_ENV, base_url=BASE_URL_ENV, model=MODEL_ENV)
_NO_KEY = "ctxlab-no-key"  # local servers (Ollama, vLLM) accept any key; the client needs one
_KEYLIKE = re.compile(r"\b(?:sk|rk|pk)-[A-Za-z0-9_\-]{6,}")
_BEARER = re.compile(r"(Bearer\s+)\S+", re.IGNORECASE)


class SecretKey:
    """An API key that never shows itself: ``repr``, ``str`` and f-strings give ``***``; JSON
    refuses it. ``reveal()`` is the one way to the text (used only to build the HTTP client)."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        """The key itself: pass it to the HTTP client and nowhere else."""
        return self._value

    def fingerprint(self) -> str:
        """A short hash, to tell two keys apart without showing either."""
        return hashlib.sha256(self._value.encode()).hexdigest()[:8]

    def __repr__(self) -> str:
        return "SecretKey(***)"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SecretKey) and other._value == self._value

    def __hash__(self) -> int:
        return hash(("SecretKey", self._value))

    def __bool__(self) -> bool:
        return bool(self._value)


def public_url(url: str | None) -> str | None:
    """``url`` without user name, password, query or fragment (what may be shown or written)."""
    if not url:
        return None
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = host + (f":{parts.port}" if parts.port else "")
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


class LLMError(CtxlabError):
    """A model call that failed: ``kind`` is one of ``not_configured``, ``timeout``, ``connection``,
    ``auth``, ``rate_limit``, ``server``, ``bad_request``, ``bad_reply``, ``error``; ``attempts``
    how many requests were sent; ``status`` the HTTP status when there was one."""

    def __init__(self, problem: str, *, kind: str, attempts: int = 0, status: int | None = None,
                 where: str | None = None, hint: str | None = None) -> None:
        super().__init__(problem, where=where, hint=hint)
        self.kind, self.attempts, self.status = kind, attempts, status


class LLMNotConfiguredError(LLMError):
    """Neither a key nor a base URL: ctxlab stays offline."""


@dataclass(frozen=True)
class LLMConfig:
    """Where and how to call a model. ``api_key`` may be given as text; it is kept as a
    :class:`SecretKey`. ``timeout``: seconds per request; ``max_attempts``: requests per call at
    most (retries on 429 and 5xx); ``max_wait``: seconds of backoff per call at most; ``backoff``:
    the first wait when the server names none (doubled each retry)."""

    model: str = DEFAULT_MODEL
    base_url: str | None = None
    api_key: SecretKey | None = field(default=None, repr=False, compare=False)
    timeout: float = 30.0
    max_attempts: int = 4
    max_wait: float = 30.0
    backoff: float = 1.0
    temperature: float = 0.0

    def __post_init__(self) -> None:
        key = self.api_key
        if isinstance(key, str):
            object.__setattr__(self, "api_key", SecretKey(key.strip()) if key.strip() else None)
        elif key is not None and not isinstance(key, SecretKey):
            raise LLMError("the API key must be text", kind="not_configured", where="api_key")
        object.__setattr__(self, "base_url", (self.base_url or "").strip() or None)
        object.__setattr__(self, "model", (self.model or "").strip() or DEFAULT_MODEL)
        for name, lo in (("timeout", 0.01), ("max_attempts", 1), ("max_wait", 0.0), ("backoff", 0.0)):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or isinstance(value, bool) or not lo <= value < math.inf:
                raise LLMError(f"{name} must be a number of at least {lo:g}, got {value!r}", kind="not_configured",
                               where=f"llm.{name}")
        if self.base_url and urlsplit(self.base_url).scheme not in ("http", "https"):
            raise LLMError(f"the base URL must start with http:// or https://, got {public_url(self.base_url)!r}",
                           kind="not_configured", where="OPENAI_BASE_URL", hint="For example http://127.0.0.1:11434/v1")

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: Any) -> "LLMConfig":
        """The configuration the environment gives; ``overrides`` (not None) win."""
        env = os.environ if env is None else env
        values: dict[str, Any] = {"model": env.get(MODEL_ENV) or DEFAULT_MODEL, "base_url": env.get(BASE_URL_ENV),
                                  "api_key": env.get(KEY_ENV)}
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)

    @property
    def configured(self) -> bool:
        """True when there is a key or a base URL: something to call."""
        return bool(self.api_key) or bool(self.base_url)

    @property
    def host(self) -> str:
        """The server's host and port (``api.openai.com`` by default), never credentials."""
        parts = urlsplit(self.base_url or "https://api.openai.com/v1")
        return (parts.hostname or "?") + (f":{parts.port}" if parts.port else "")

    def fingerprint(self) -> str:
        """Tells configurations apart (the key by its hash), for caches; shows nothing secret."""
        key = self.api_key.fingerprint() if self.api_key else "-"
        return f"{self.model}|{public_url(self.base_url) or 'openai'}|{key}"

    def describe(self) -> str:
        """One line for a page or a log: model, server, whether a key is set."""
        key = "a key set" if self.api_key else "no key"
        return f"{self.model} at {public_url(self.base_url) or 'https://api.openai.com/v1'} ({key})"

    def to_dict(self) -> dict[str, Any]:
        """What may be shown or exported: no key, no credentials in the URL."""
        return {"model": self.model, "base_url": public_url(self.base_url), "has_key": bool(self.api_key),
                "timeout": self.timeout, "max_attempts": self.max_attempts, "max_wait": self.max_wait}

    def __repr__(self) -> str:
        return (f"LLMConfig(model={self.model!r}, base_url={public_url(self.base_url)!r}, "
                f"api_key={'***' if self.api_key else None}, timeout={self.timeout:g})")

    @property
    def redactor(self) -> KeyRedactor:
        """The filter that hides this key and the base URL's credentials in any form (see
        :mod:`ctxlab.redact`); built once per configuration."""
        found = self.__dict__.get("_redactor")
        if found is None:
            parts = urlsplit(self.base_url) if self.base_url else None
            secrets = [self.api_key.reveal() if self.api_key else None]
            if parts is not None:
                secrets += [s for s in (parts.password, parts.username) if s and len(s) >= 4]
            found = KeyRedactor(secrets)
            object.__setattr__(self, "_redactor", found)
        return found

    def redact(self, text: str) -> str:
        """``text`` with this key and the base URL's credentials hidden, in any letter case,
        base64 or hex, whole or in runs of 10 or more characters, white space between them
        ignored: every text that comes back from the model passes here before it is kept."""
        return self.redactor(text)

    def scrub(self, text: str) -> str:
        """An error text: :meth:`redact`, plus anything shaped like a key or a bearer token hidden."""
        return _BEARER.sub(r"\1***", _KEYLIKE.sub("sk-***", self.redact(text)))


@dataclass(frozen=True)
class ChatResult:
    """One chat completion: the reply text, the usage the server reported (``cached_tokens`` is
    None when it reports none), the wall-clock latency of the successful request, and how many
    requests the call took (1 = no retry)."""

    text: str
    model: str
    prompt_tokens: int | None
    completion_tokens: int | None
    cached_tokens: int | None
    latency_ms: float
    attempts: int
    finish_reason: str | None = None
    tool_calls: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready fields."""
        return {"text": self.text, "model": self.model, "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens, "cached_tokens": self.cached_tokens,
                "latency_ms": round(self.latency_ms, 1), "attempts": self.attempts,
                "finish_reason": self.finish_reason, "tool_calls": list(self.tool_calls)}


def _retry_after(headers: Any) -> float | None:
    """Seconds the server asks to wait (``retry-after-ms``, then ``Retry-After`` in seconds or as
    an HTTP date), or None."""
    if headers is None:
        return None
    try:
        ms = headers.get("retry-after-ms")
        if ms is not None:
            return max(0.0, float(ms) / 1000)
        value = headers.get("retry-after")
        if value is None:
            return None
        try:
            return max(0.0, float(value))
        except ValueError:
            when = email.utils.parsedate_to_datetime(value)
            return max(0.0, when.timestamp() - time.time())
    except (TypeError, ValueError, OverflowError):
        return None


class LLM:
    """A model to call. ``chat(messages)`` returns a :class:`ChatResult` or raises one
    :class:`LLMError`. ``sleep`` is how it waits between attempts (tests pass a recorder).
    ``requests_sent`` counts HTTP requests over the object's life."""

    def __init__(self, config: LLMConfig | None = None, *, sleep: Callable[[float], None] = time.sleep) -> None:
        self.config = config if config is not None else LLMConfig.from_env()
        self._sleep = sleep
        self._client: Any = None
        self._lock = threading.Lock()
        self.requests_sent = 0

    def __repr__(self) -> str:
        return f"LLM({self.config!r})"

    @property
    def model(self) -> str:
        """The model name sent with every request."""
        return self.config.model

    def _get_client(self) -> Any:
        with self._lock:
            if self._client is None:
                cfg = self.config
                if not cfg.configured:
                    raise LLMNotConfiguredError(T("no model is configured"), kind="not_configured", hint=SETUP_HINT)
                from openai import OpenAI
                from ._deadline import deadline_client
                key = cfg.api_key.reveal() if cfg.api_key else _NO_KEY
                self._client = OpenAI(api_key=key, base_url=cfg.base_url, timeout=cfg.timeout, max_retries=0,
                                      http_client=deadline_client(cfg.timeout))
            return self._client

    def chat(self, messages: Sequence[Mapping[str, Any]], *, max_tokens: int | None = None,
             tools: Sequence[Mapping[str, Any]] | None = None) -> ChatResult:
        """One chat completion for ``messages`` (OpenAI chat format), retried on 429 and 5xx."""
        client = self._get_client()
        cfg, waited, attempt = self.config, 0.0, 0
        kwargs: dict[str, Any] = {"model": cfg.model, "messages": list(messages), "temperature": cfg.temperature}
        if max_tokens is not None:
            kwargs["max_tokens"] = int(max_tokens)
        if tools:  # sent so the prompt is what the agent's would be; the model is asked to answer in text
            kwargs["tools"], kwargs["tool_choice"] = list(tools), "none"
        while True:
            attempt += 1
            self.requests_sent += 1
            start = time.perf_counter()
            try:
                from ._deadline import call_deadline
                with call_deadline(cfg.timeout):  # the whole request, not each read (a trickling server)
                    raw = client.chat.completions.create(**kwargs)
                return self._result(raw, (time.perf_counter() - start) * 1000, attempt)
            except LLMError:
                raise
            except Exception as e:  # the client's errors, classified into one LLMError
                error, wait = self._classify(e, attempt)
            if wait is None or attempt >= cfg.max_attempts:
                raise self._final(error, attempt, wait is not None)
            if waited + wait > cfg.max_wait:
                raise self._final(error, attempt, True, asked=wait)
            log.warning("model call to %s failed (%s, attempt %d of %d); retrying in %.2f s",
                        cfg.host, error.kind, attempt, cfg.max_attempts, wait)
            self._sleep(wait)
            waited += wait

    def _final(self, error: LLMError, attempts: int, retryable: bool, asked: float | None = None) -> LLMError:
        """The error to raise after the last attempt, saying how many were made."""
        cfg = self.config
        problem = error.problem
        if retryable and asked is not None:
            problem += (f"; the server asked to wait {asked:.1f} s more, beyond ctxlab's {cfg.max_wait:g} s "
                        f"limit of waiting per call")
        if retryable:
            problem += f" (gave up after {attempts} attempt{'s' * (attempts != 1)})"
        log.warning("model call to %s failed: %s", cfg.host, problem)
        return LLMError(problem, kind=error.kind, attempts=attempts, status=error.status, where=error.where,
                        hint=error.hint)

    def _classify(self, e: Exception, attempt: int) -> tuple[LLMError, float | None]:
        """The error to report, and how long to wait before retrying (None: do not retry)."""
        import openai
        cfg = self.config
        where = f"model {cfg.model} at {cfg.host}"
        status = getattr(e, "status_code", None)
        detail = cfg.scrub(_provider_message(e))
        if isinstance(e, openai.APITimeoutError):
            return LLMError(f"no complete reply within {cfg.timeout:g} s (the limit is for the whole call)",
                            kind="timeout", where=where,
                            hint="Check that the server is up and not overloaded, or raise the timeout"), None
        if isinstance(e, openai.APIConnectionError) and _truncated(e):
            return _bad_reply(where, "the server closed the connection before the reply was complete"), None
        if isinstance(e, openai.APIConnectionError):
            return LLMError(f"cannot connect to the server ({type(e).__name__})", kind="connection", where=where,
                            hint="Check the base URL (OPENAI_BASE_URL) and that the server is running"), None
        should_retry = _should_retry_header(e)
        if isinstance(status, int) and should_retry is not None and status not in (401, 403):
            return self._by_header(e, status, detail, where, attempt, should_retry)
        if status in (401, 403):
            return LLMError(f"the server rejected the API key (HTTP {status}: {detail})", kind="auth", status=status,
                            where=where, hint=f"Check {KEY_ENV} or the key in the settings panel"), None
        if status == 429:
            return LLMError(f"rate limited (HTTP 429: {detail})", kind="rate_limit", status=status, where=where,
                            hint="Wait a minute, or lower the request rate"), self._wait(e, attempt)
        if status in _TRANSIENT_4XX:
            return LLMError(f"the server asked to try again (HTTP {status}: {detail})", kind="server", status=status,
                            where=where, hint="Try again later"), self._wait(e, attempt)
        if isinstance(status, int) and status >= 500:
            return LLMError(f"the server failed (HTTP {status}: {detail})", kind="server", status=status,
                            where=where, hint="Try again later"), self._wait(e, attempt)
        if isinstance(status, int):
            return LLMError(f"the server refused the request (HTTP {status}: {detail})", kind="bad_request",
                            status=status, where=where,
                            hint=f"Check the model name ({MODEL_ENV}) and that the base URL ends in /v1"), None
        if isinstance(e, (ValueError, TypeError, AttributeError, KeyError)):  # JSON or shape the client could not read
            return _bad_reply(where, f"{type(e).__name__}: {detail}"), None
        return LLMError(f"the call failed ({type(e).__name__}: {detail})", kind="error", where=where), None

    def _wait(self, e: Exception, attempt: int) -> float:
        """The wait before the next attempt: the server's Retry-After, else the doubling backoff."""
        wait = _retry_after(getattr(e, "response", None) and e.response.headers)
        return self.config.backoff * 2 ** (attempt - 1) if wait is None else wait

    def _by_header(self, e: Exception, status: int, detail: str, where: str, attempt: int,
                   retry: bool) -> tuple[LLMError, float | None]:
        """A response the server marked ``x-should-retry``: retried when true, never when false."""
        kind = "rate_limit" if status == 429 else "server" if status >= 500 or retry else "bad_request"
        said = "asked to retry" if retry else "said not to retry"
        error = LLMError(f"the server failed and {said} (HTTP {status}: {detail})", kind=kind, status=status,
                         where=where, hint="Try again later" if retry else
                         f"A retry will not help: check the request and the model name ({MODEL_ENV})")
        return error, (self._wait(e, attempt) if retry else None)

    def _result(self, raw: Any, latency_ms: float, attempts: int) -> ChatResult:
        """The reply as a ChatResult; a reply with no text or no choices is a bad reply."""
        where = f"model {self.config.model} at {self.config.host}"
        choices = getattr(raw, "choices", None)
        if not isinstance(choices, list) or not choices:
            raise _bad_reply(where, "it has no choices", attempts)
        message = getattr(choices[0], "message", None)
        text = getattr(message, "content", None)
        calls = tuple(str(getattr(getattr(c, "function", None), "name", "?")) for c in
                      (getattr(message, "tool_calls", None) or ()))
        if not isinstance(text, str) and not calls:
            raise _bad_reply(where, "its first choice has no text content", attempts)
        usage = getattr(raw, "usage", None)
        details = getattr(usage, "prompt_tokens_details", None)
        cached = getattr(details, "cached_tokens", None) if details is not None else None
        log.info("model call to %s (%s): %.0f ms, %s attempt(s)", self.config.host, self.config.model, latency_ms,
                 attempts)
        redact = self.config.redact  # every text of the reply, before anyone stores or shows it
        finish = getattr(choices[0], "finish_reason", None)
        return ChatResult(text=redact(text) if isinstance(text, str) else "",
                          model=redact(str(getattr(raw, "model", None) or self.config.model)),
                          prompt_tokens=_int_or_none(getattr(usage, "prompt_tokens", None)),
                          completion_tokens=_int_or_none(getattr(usage, "completion_tokens", None)),
                          cached_tokens=_int_or_none(cached), latency_ms=latency_ms, attempts=attempts,
                          finish_reason=redact(finish) if isinstance(finish, str) else None,
                          tool_calls=tuple(redact(c) for c in calls))


_TRANSIENT_4XX = (408, 409)  # request timeout, lock timeout: retried, as the openai client does


def _should_retry_header(e: Exception) -> bool | None:
    """The server's ``x-should-retry`` verdict on a failed response (True, False, or None when it gives none)."""
    response = getattr(e, "response", None)
    value = response.headers.get("x-should-retry") if response is not None else None
    return {"true": True, "false": False}.get(value) if isinstance(value, str) else None


def _truncated(e: BaseException) -> bool:
    """Whether a connection error is a reply cut short (the server connected, then closed early)."""
    import httpx
    cause: BaseException | None = e
    while cause is not None:
        if isinstance(cause, httpx.RemoteProtocolError) or "incomplete" in str(cause).lower():
            return True
        cause = cause.__cause__ or cause.__context__
    return False


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _bad_reply(where: str, why: str, attempts: int = 0) -> LLMError:
    return LLMError(f"the reply is not an OpenAI chat completion ({why})", kind="bad_reply", where=where,
                    attempts=attempts, hint="Check that the base URL points at an OpenAI-compatible /v1 endpoint")


def _provider_message(e: Exception) -> str:
    """The provider's own error message (its JSON ``error.message`` when there is one), short."""
    body = getattr(e, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and isinstance(inner.get("message"), str):
            return inner["message"][:300]
    return str(e)[:300]


_ACTIVE: ContextVar["LLM | None"] = ContextVar("ctxlab_active_llm", default=None)
_ENV_LLM: dict[str, LLM] = {}
_ENV_LOCK = threading.Lock()


@contextmanager
def use_llm(llm: "LLM | LLMConfig | None") -> Iterator["LLM | None"]:
    """Within the block (this thread or task only), the LLM summarizer and the other model paths
    that are given no model use ``llm``; ``None`` means the environment's."""
    if isinstance(llm, LLMConfig):
        llm = LLM(llm)
    token = _ACTIVE.set(llm)
    try:
        yield llm
    finally:
        _ACTIVE.reset(token)


def active_llm() -> LLM:
    """The model set by :func:`use_llm`, else one built from the environment (reused while the
    environment says the same)."""
    llm = _ACTIVE.get()
    if llm is not None:
        return llm
    config = LLMConfig.from_env()
    with _ENV_LOCK:
        found = _ENV_LLM.get(config.fingerprint())
        if found is None:
            found = _ENV_LLM[config.fingerprint()] = LLM(config)
        return found


def require_configured(llm: "LLM | None" = None) -> LLM:
    """``llm`` (or the active one) when it has a key or a base URL; else one clear error saying
    how to configure a model."""
    llm = llm or active_llm()
    if not llm.config.configured:
        raise LLMNotConfiguredError(T("no model is configured"), kind="not_configured", hint=SETUP_HINT)
    return llm


__all__ = ["ChatResult", "DEFAULT_MODEL", "LLM", "LLMConfig", "LLMError", "LLMNotConfiguredError", "SETUP_HINT",
           "SecretKey", "active_llm", "public_url", "require_configured", "use_llm"]
