"""What the session API hands out: profiles, context records, session summaries (a compression
history entry is ``ctxlab.strategies.step.Compression``). Plain frozen dataclasses, JSON-ready with ``to_dict``."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from typing import Any, Mapping

COUNTERS = ("times_applied", "times_triggered", "tokens_saved", "messages_removed")


def utc(value: datetime | None) -> datetime | None:
    """A stored time as an aware UTC datetime (SQLite gives back naive ones)."""
    if value is not None and value.tzinfo is None:
        return value.replace(tzinfo=timezone.utc)
    return value


def now() -> datetime:
    """The current time in UTC (what every row records)."""
    return datetime.now(timezone.utc)


def _plain(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


@dataclass(frozen=True)
class Profile:
    """An agent: its model, system prompt, tools (OpenAI tool dicts) and token overflow config
    (a ctxlab config: ``strategy`` and ``params`` or ``pipeline``, ``max_tokens``, ``reserve``)."""

    name: str
    model: str
    system_prompt: str
    overflow: Mapping[str, Any]
    tools: tuple[Mapping[str, Any], ...] = ()
    updated_at: datetime | None = None

    @property
    def strategy(self) -> str:
        """The strategy's name (``a >> b`` for a pipeline)."""
        return strategy_label(self.overflow)

    @property
    def params(self) -> dict[str, Any]:
        """The strategy's parameters (a pipeline's steps for a pipeline)."""
        return dict(self.overflow.get("params") or {"pipeline": self.overflow.get("pipeline")})

    @property
    def max_tokens(self) -> int | None:
        """The context limit the strategy plans against."""
        return self.overflow.get("max_tokens")

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return _plain(asdict(self))


def strategy_label(config: Mapping[str, Any]) -> str:
    """``summarize``, or ``tool_rounds >> sliding_window`` for a pipeline config."""
    if config.get("pipeline"):
        return " >> ".join(str(s.get("strategy")) for s in config["pipeline"])
    return str(config.get("strategy", "none"))


@dataclass(frozen=True)
class ContextRecord:
    """A session's context record: the strategy and config it runs with, the running summary,
    the ids (history ``seq``) of the active messages, when it was last updated, and the
    monitoring counters."""

    session_id: str
    strategy: str
    config: Mapping[str, Any]
    summary: str
    active_ids: tuple[int, ...]
    applied_through: int
    updated_at: datetime | None
    state: Mapping[str, Any] = field(default_factory=dict)
    layout: tuple[Mapping[str, Any], ...] = ()
    times_applied: int = 0
    times_triggered: int = 0
    tokens_saved: int = 0
    messages_removed: int = 0

    @property
    def counters(self) -> dict[str, int]:
        """times_applied, times_triggered, tokens_saved, messages_removed."""
        return {k: getattr(self, k) for k in COUNTERS}

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return _plain(asdict(self))


@dataclass(frozen=True)
class SessionInfo:
    """A line of the session list: id, agent, title, message count, when created and last updated."""

    id: str
    profile: str
    title: str
    messages: int
    created_at: datetime
    updated_at: datetime
    strategy: str

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return _plain(asdict(self))
