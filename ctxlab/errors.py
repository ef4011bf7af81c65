"""Every error ctxlab raises on bad input: one class per problem, each message saying what,
where (message index or JSON path) and what to do. The CLI prints ``str(error)`` as one line;
the app shows it with ``st.error``."""
from __future__ import annotations


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
