"""The shared parts of the failure-mode detectors: the Finding and Mitigation records, the
inputs every detector reads (``Inputs``), and the detector registry.

A detector is a function ``(inputs) -> list[Finding]`` registered under a failure mode with
:func:`detector`. ``ctxlab.diagnostics.diagnose`` runs the registered detectors of the modes asked
for, in registration order; a plugin registers its own the same way the built-ins do.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Callable, Mapping, Sequence

from ..conversation import Conversation, ToolDef
from ..errors import CtxlabError
from ..findings import MODE_NAMES, SEVERITIES, Finding  # noqa: F401  (SEVERITIES: ctxlab.diagnostics names it)

MITIGATION_KINDS: tuple[str, ...] = ("strategy", "tool_retrieval", "quarantine", "prune")


class DiagnosticsError(CtxlabError):
    """A bad argument to the diagnostics: an unknown mode, a mitigation that cannot be applied."""


@dataclass(frozen=True)
class Mitigation:
    """A fix that can be applied as it is (``ctxlab.diagnostics.apply_mitigation``).

    ``kind`` is ``strategy`` (``strategy`` and ``params`` for ``ctxlab.strategies.apply_strategy``),
    ``tool_retrieval`` (send the top ``k`` tools for the query, ``ctxlab.retrieval.ToolIndex.select``),
    ``quarantine`` (one sub-agent context per independent task, ``split_into_subagents``) or
    ``prune`` (drop ``messages``, each with its whole tool round). ``label`` is one line for a button.
    """

    kind: str
    label: str
    strategy: str | None = None
    params: Mapping[str, Any] = field(default_factory=dict)
    k: int | None = None
    messages: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if self.kind not in MITIGATION_KINDS:
            raise DiagnosticsError(f"unknown mitigation kind {self.kind!r}", where="mitigation.kind",
                                   hint=f"Known kinds: {', '.join(MITIGATION_KINDS)}")

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (only the fields that apply to the kind)."""
        out: dict[str, Any] = {"kind": self.kind, "label": self.label}
        if self.strategy is not None:
            out.update(strategy=self.strategy, params=dict(self.params))
        if self.k is not None:
            out["k"] = self.k
        if self.messages:
            out["messages"] = list(self.messages)
        return out


@dataclass
class Inputs:
    """What detectors read: the conversation, the tool catalog offered with it (``tools``, the
    conversation's own when None), the current query (the newest user message when None), the
    model (the conversation's, else gpt-4o) and the embedding provider name for tool meaning."""

    conv: Conversation
    tools: tuple[ToolDef, ...] | None = None
    query: str | None = None
    model: str | None = None
    provider: Any = "local"

    @cached_property
    def catalog(self) -> tuple[ToolDef, ...]:
        """The tools offered: the catalog passed in, else the conversation's."""
        return tuple(self.tools) if self.tools is not None else tuple(self.conv.tools)

    @cached_property
    def model_name(self) -> str:
        """The model the context is measured for."""
        return self.model or self.conv.model or "gpt-4o"

    @cached_property
    def current_query(self) -> str:
        """The query tools are judged against: the one passed in, else the newest user message."""
        if self.query is not None:
            return self.query
        users = [m.text for m in self.conv.messages if m.role == "user" and m.text.strip()]
        return users[-1] if users else ""

    @cached_property
    def counter(self):
        """A token counter for the model."""
        from ..tokens import TokenCounter
        return TokenCounter(self.model_name)

    @cached_property
    def message_tokens(self) -> tuple[int, ...]:
        """Tokens of each message, framing included."""
        return tuple(self.counter.message(m) for m in self.conv.messages)

    @cached_property
    def tool_tokens(self) -> int:
        """Tokens of the tool definitions offered."""
        return self.counter.tools(self.catalog) if self.catalog else 0

    @cached_property
    def observations(self):
        """The tool calls, results and entity records of the conversation (one pass)."""
        from .observations import observe
        return observe(self.conv)

    @cached_property
    def embedder(self):
        """The embedding provider (built once)."""
        from ..retrieval.embeddings import get_provider
        return get_provider(self.provider) if isinstance(self.provider, str) else self.provider


Detector = Callable[[Inputs], list[Finding]]
DETECTORS: dict[str, list[tuple[str, Detector]]] = {mode: [] for mode in MODE_NAMES}
"""Failure mode -> its detectors (name, function), in the order they run."""


def detector(mode: str, name: str) -> Callable[[Detector], Detector]:
    """Register a detector function under a failure mode (the built-ins use this too)."""
    if mode not in MODE_NAMES:
        raise DiagnosticsError(f"unknown failure mode {mode!r}", where="mode", hint=f"Known modes: {', '.join(MODE_NAMES)}")

    def wrap(fn: Detector) -> Detector:
        DETECTORS[mode] = [(n, f) for n, f in DETECTORS[mode] if n != name] + [(name, fn)]
        return fn
    return wrap


def check_modes(modes: Sequence[str] | str | None) -> tuple[str, ...]:
    """The modes asked for (all when None); an unknown name lists the known ones."""
    if modes is None:
        return MODE_NAMES
    modes = (modes,) if isinstance(modes, str) else tuple(modes)
    unknown = [m for m in modes if m not in MODE_NAMES]
    if unknown:
        raise DiagnosticsError(f"unknown failure mode {unknown[0]!r}", where="modes",
                               hint=f"Known modes: {', '.join(MODE_NAMES)}")
    return modes


def plural(n: int, word: str, many: str | None = None) -> str:
    """``1 call``, ``3 calls``."""
    return f"{n:,} {word if n == 1 else (many or word + 's')}"


def diagnose(conv: Conversation, tools: Sequence[ToolDef] | None = None, query: str | None = None,
             model: str | None = None, modes: Sequence[str] | str | None = None, provider: Any = "local"
             ) -> list[Finding]:
    """Run the detectors of ``modes`` (all by default) on ``conv``.

    ``tools``: the catalog offered (default: the conversation's tools); ``query``: the current
    request (default: the newest user message); ``model``: for token counts and window (default:
    the conversation's, else gpt-4o); ``provider``: embedding provider name or object for the
    confusion detectors (``local`` offline MiniLM; ``hash`` in tests that do not need meaning).
    Findings come in mode order, then by first message.
    """
    inputs = Inputs(conv, tuple(tools) if tools is not None else None, query, model, provider)
    out: list[Finding] = []
    for mode in check_modes(modes):
        found: list[Finding] = []
        for _, fn in DETECTORS[mode]:
            found.extend(fn(inputs))
        out.extend(sorted(found, key=lambda f: (f.messages[:1] or (-1,), f.code)))
    return out


def summarize_findings(findings: Sequence[Finding]) -> dict[str, int]:
    """Findings per mode (every mode listed, zero included)."""
    return {mode: sum(f.mode == mode for f in findings) for mode in MODE_NAMES}
