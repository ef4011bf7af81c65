"""Every error ctxlab raises on bad input: one class per problem, each message saying what,
where (message index or JSON path) and what to do. The CLI prints ``str(error)`` as one line;
the app shows it with ``st.error``."""
from __future__ import annotations

import re
from typing import Any

#: longest echo of an input value in an error or note (the rest is summarized by its length)
SHOWN_CHARS = 40
_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,39}")


def shown(value: Any, limit: int = SHOWN_CHARS) -> str:
    """An input value as it may appear in one line of an error or a note: ``repr`` (so control
    characters and lone surrogates are escaped), cut to ``limit`` characters with the full length
    said, so a 100,000-character role never becomes a 100,000-character error line."""
    if isinstance(value, str) and len(value) > limit:
        return f"{value[:limit]!r}... ({len(value):,} characters)"
    text = repr(value)
    return text if len(text) <= limit + 2 else f"{text[:limit]}... ({type(value).__name__})"


def shown_keys(keys, limit: int = 6) -> str:
    """Field names for one line: each capped, at most ``limit`` of them, the rest counted."""
    keys = [str(k) for k in keys]
    text = ", ".join(k if _PLAIN_KEY.fullmatch(k) else shown(k, 20) for k in keys[:limit])
    return text + (f" and {len(keys) - limit} more" if len(keys) > limit else "")


def path_key(key: str | int) -> str:
    """One step of a JSON path: ``[3]``, ``.name``, or ``["odd key"]`` (escaped and cut) for a key
    that is not a plain name."""
    if isinstance(key, int):
        return f"[{key}]"
    if _PLAIN_KEY.fullmatch(key):
        return f".{key}"
    return f"[{shown(key, 20)}]"


def one_line(text: str) -> str:
    """Text safe for one line of stderr: no line breaks, no control characters, no lone
    surrogates (they are written as escapes)."""
    text = re.sub(r"[\x00-\x1f\x7f\x85\u2028\u2029]", lambda m: repr(m.group())[1:-1], text)
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


class CtxlabError(Exception):
    """Base of all input problems ctxlab reports. ``where`` is a JSON path or message index."""

    def __init__(self, problem: str, *, where: str | None = None, hint: str | None = None):
        self.problem = problem
        self.where = where
        self.hint = hint
        text = problem if where is None else f"{where}: {problem}"
        if hint:
            text = f"{text}. {hint}"
        super().__init__(text)


class NotJSONError(CtxlabError):
    """The text is not JSON (nor JSONL)."""


class InputTooLargeError(CtxlabError):
    """The input is over the configured size limit."""


class NestingTooDeepError(CtxlabError):
    """The JSON nests deeper than the configured limit."""


class ShapeError(CtxlabError):
    """The JSON is valid but not a conversation or tool list of any known shape."""


class UnknownFormatError(CtxlabError):
    """A format name that is not registered."""


class UnknownRoleError(CtxlabError):
    """A message role (or LangChain type) that no provider uses."""


class EmptyMessageError(CtxlabError):
    """A message with neither content nor tool calls."""


class ToolArgumentsError(CtxlabError):
    """Tool-call arguments that are not a JSON object."""


class DuplicateToolCallIdError(CtxlabError):
    """Two tool calls in one conversation share an id."""


class UnknownModelError(CtxlabError):
    """A model name ctxlab cannot map to an encoding."""


class UnknownEncodingError(CtxlabError):
    """An encoding name that is not available offline."""


class ExportError(CtxlabError):
    """The conversation cannot be written in the target format without changing it."""


__all__ = ["SHOWN_CHARS", "CtxlabError", "DuplicateToolCallIdError", "EmptyMessageError", "ExportError",
           "InputTooLargeError", "NestingTooDeepError", "NotJSONError", "one_line", "path_key", "ShapeError",
           "shown", "shown_keys", "ToolArgumentsError", "UnknownEncodingError", "UnknownFormatError",
           "UnknownModelError", "UnknownRoleError"]
