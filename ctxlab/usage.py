"""Reported vs modelled: what each call of a production trace was billed beside what ctxlab counts.

A production trace (see ``ctxlab.formats.otel``, ``langfuse``, ``langsmith``) carries, on the
assistant message each model call produced, the ``Usage`` the provider reported. ``compare_usage``
replays the trace as it was sent (strategy ``none``: every call's prompt is every message before
it, with the tool definitions) and puts, per call, the billed prompt tokens beside ctxlab's count
and the billed cached tokens beside the prompt-cache model's (``ctxlab.pricing``), with the
differences. This checks the counter and the cache model on real traffic.

A compaction summary found in the trace (Claude Code's ``/compact``) replaced the history for the
model: calls after it are counted from the summary on, and the cache model starts again there.
Otherwise the comparison is only as good as the trace: a call whose prompt the agent trimmed
itself (the reader notes it) was billed for less than the history ctxlab counts; a trace that
logs no system prompt or no tool definitions is counted without them.
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any, Sequence

from .conversation import UNLOGGED, Conversation, Usage


@dataclass(frozen=True, slots=True)
class CallUsage:
    """One call: its number and the assistant message it produced, the usage it reported, the
    prompt tokens ctxlab counts for the prompt it sent, and the cached / written tokens the
    prompt-cache model gives that prompt."""

    call: int
    index: int
    reported: Usage
    counted: int
    modelled_cached: int
    modelled_written: int
    prefix: int = 0
    factor: float = 1.0
    counted_prefix: int = 0
    fitted: bool = False

    @property
    def prompt_difference(self) -> int:
        """Billed minus counted prompt tokens (positive: ctxlab counts fewer than were billed)."""
        return self.reported.prompt_tokens - self.counted

    @property
    def estimated(self) -> int:
        """The prompt as ctxlab estimates it: the unlogged prefix for this call plus what the file
        holds, counted and scaled by the tokenizer factor where the counter only estimates the
        model's tokenizer. ``counted_prefix`` is the part of ``counted`` that is the prefix segment."""
        return self.prefix + round(self.factor * (self.counted - self.counted_prefix))

    @property
    def estimate_error(self) -> float | None:
        """(estimated - billed) / billed: the per-call check against the bill."""
        billed = self.reported.prompt_tokens
        return (self.estimated - billed) / billed if billed else None

    @property
    def cached_difference(self) -> int | None:
        """Billed minus modelled cached tokens (None when the call reported no cached figure)."""
        cached = self.reported.cached_tokens
        return None if cached is None else cached - self.modelled_cached

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"call": self.call, "index": self.index, "reported_prompt_tokens": self.reported.prompt_tokens,
                "counted_prompt_tokens": self.counted, "prompt_difference": self.prompt_difference,
                "reported_cached_tokens": self.reported.cached_tokens, "modelled_cached_tokens": self.modelled_cached,
                "cached_difference": self.cached_difference,
                "reported_cache_write_tokens": self.reported.cache_write_tokens,
                "modelled_cache_write_tokens": self.modelled_written,
                "reported_output_tokens": self.reported.output_tokens, "reported_model": self.reported.model,
                "unlogged_prefix_tokens": self.prefix, "prefix_inferred_here": self.fitted,
                "estimated_prompt_tokens": self.estimated,
                "estimate_error": None if self.estimate_error is None else round(self.estimate_error, 4)}


@dataclass(frozen=True)
class UsageComparison:
    """Every call of a trace that reported usage, compared (``calls``), out of ``total_calls``;
    ``model`` counted and priced them, ``exact`` when its tokenizer is the provider's."""

    model: str
    exact: bool
    calls: tuple[CallUsage, ...]
    total_calls: int

    def _sum(self, name: str) -> int:
        return sum(getattr(c, name) for c in self.calls)

    @property
    def reported_prompt_tokens(self) -> int:
        """Billed prompt tokens over the compared calls."""
        return sum(c.reported.prompt_tokens for c in self.calls)

    @property
    def counted_prompt_tokens(self) -> int:
        """ctxlab's count of the same prompts."""
        return self._sum("counted")

    @property
    def prompt_difference(self) -> int:
        """Billed minus counted, over the compared calls."""
        return self.reported_prompt_tokens - self.counted_prompt_tokens

    @property
    def prompt_ratio(self) -> float | None:
        """Billed / counted (what a calibration factor would be), None without a count."""
        return self.reported_prompt_tokens / self.counted_prompt_tokens if self.counted_prompt_tokens else None

    def _cached_calls(self) -> list[CallUsage]:
        return [c for c in self.calls if c.reported.cached_tokens is not None]

    @property
    def reported_cached_tokens(self) -> int | None:
        """Billed cached tokens over the calls that report them (None when none does)."""
        calls = self._cached_calls()
        return sum(c.reported.cached_tokens or 0 for c in calls) if calls else None

    @property
    def modelled_cached_tokens(self) -> int:
        """The cache model's cached tokens over the same calls."""
        return sum(c.modelled_cached for c in self._cached_calls())

    def to_dict(self, *, per_call: bool = True) -> dict[str, Any]:
        """JSON-ready totals (and the calls, unless ``per_call`` is false)."""
        cached = self.reported_cached_tokens
        out: dict[str, Any] = {
            "model": self.model, "exact_tokenizer": self.exact, "calls_compared": len(self.calls),
            "calls_total": self.total_calls, "reported_prompt_tokens": self.reported_prompt_tokens,
            "counted_prompt_tokens": self.counted_prompt_tokens, "prompt_difference": self.prompt_difference,
            "prompt_ratio": None if self.prompt_ratio is None else round(self.prompt_ratio, 4),
            "reported_cached_tokens": cached, "modelled_cached_tokens": self.modelled_cached_tokens,
            "cached_difference": None if cached is None else cached - self.modelled_cached_tokens,
            "unlogged_prefix_tokens": self.calls[0].prefix if self.calls else 0,
            "tokenizer_factor": round(self.calls[0].factor, 4) if self.calls else 1.0,
            "estimate_error_per_call": self.error_summary()}
        if per_call:
            out["calls"] = [c.to_dict() for c in self.calls]
        return out


    def error_summary(self) -> dict[str, Any] | None:
        """The per-call check against the bill: the largest and median absolute estimate error and
        the calls within 1% and 5%."""
        errors = sorted(abs(c.estimate_error) for c in self.calls if c.estimate_error is not None)
        if not errors:
            return None
        return {"calls": len(errors), "max_abs": round(errors[-1], 4),
                "median_abs": round(statistics.median(errors), 4),
                "within_1pct": sum(e <= 0.01 for e in errors), "within_5pct": sum(e <= 0.05 for e in errors)}


def has_usage(conv: Conversation | Sequence[Any]) -> bool:
    """Whether any message of a conversation carries reported usage."""
    messages = conv.messages if isinstance(conv, Conversation) else conv
    return any(m.usage is not None for m in messages)


def _epochs(conv: Conversation) -> list[tuple[int, Conversation]]:
    """The conversation as the model saw it between compactions: (offset, part). A compaction
    summary read from a trace (Claude Code's ``/compact``, Codex's ``compacted``) replaced every
    message before it, so each part is the leading system messages plus the messages from one
    summary to the next; ``offset`` maps a part's index back (original = offset + index)."""
    from .formats._trace import is_compaction
    marks = [i for i, m in enumerate(conv.messages) if is_compaction(m)]
    if not marks:
        return [(0, conv)]
    head = 0
    while head < len(conv.messages) and conv.messages[head].role == "system":
        head += 1
    bounds = [0] + marks + [len(conv.messages)]
    parts = [(0, conv.with_messages(conv.messages[:marks[0]]))]
    for a, b in zip(marks, bounds[2:]):
        parts.append((a - head, conv.with_messages(conv.messages[:head] + conv.messages[a:b])))
    return parts


def compare_usage(conv: Conversation, *, model: str | None = None, price: Any = None,
                  budget: Any = None) -> UsageComparison:
    """Billed vs counted prompt tokens and billed vs modelled cached tokens, per call, for a
    conversation read from a trace with usage. ``price`` (a Price or PriceTable, default the
    bundled table) gives the cache rule; ``budget`` the tool tokens (default: the conversation's
    tools counted for ``model``). After a compaction summary the prompt counted is the one the
    model saw (the summary and what followed it) and the cache model starts again."""
    from .pricing import replay_cost
    from .replay import replay
    from .strategies import prepare
    from .tokens import TokenCounter
    model = model or conv.model or "gpt-4o"
    if budget is None:
        budget = prepare(conv, model)[1]
    head = conv.messages[0].extra.get(UNLOGGED) if conv.messages else None
    prefix, factor = (int(head["tokens"]), float(head.get("factor", 1.0))) if isinstance(head, dict) else (0, 1.0)
    rows, total = [], 0
    for offset, part in _epochs(conv):
        if not any(m.role == "assistant" for m in part.messages):
            continue
        r = replay(part, "none", budget, model=model)
        cost = {c.message: c for c in replay_cost(r, part, model=model, price=price).calls}
        for call in r.calls:
            if call.reported is None or call.pending or call.index not in cost:
                continue
            cc = cost[call.index]
            rows.append(CallUsage(total + call.number, call.index + offset, call.reported, call.tokens_after,
                                  cc.cached_tokens, cc.cache_write_tokens, prefix, factor, prefix))
        total += sum(not c.pending for c in r.calls)
    return UsageComparison(model, TokenCounter(model).spec.exact, tuple(rows), total)


def compare_total(conv: Conversation, *, model: str | None = None) -> dict[str, Any] | None:
    """A run's billed totals (``metadata["billed_total"]``: SWE-agent's ``model_stats``) beside
    the prompts ctxlab counts for the calls the file holds, as sent. None without totals."""
    billed = conv.metadata.get("billed_total")
    if not isinstance(billed, dict) or not isinstance(billed.get("prompt_tokens"), int):
        return None
    from .replay import replay
    from .strategies import prepare
    model = model or conv.model or "gpt-4o"
    calls = [c for c in replay(conv, "none", prepare(conv, model)[1], model=model).calls if not c.pending]
    counted = sum(c.tokens_after for c in calls)
    return {"billed_prompt_tokens": billed["prompt_tokens"], "billed_calls": billed.get("calls"),
            "counted_prompt_tokens": counted, "counted_calls": len(calls),
            "prompt_difference": billed["prompt_tokens"] - counted,
            "prompt_ratio": round(billed["prompt_tokens"] / counted, 4) if counted else None}


__all__ = ["CallUsage", "UsageComparison", "compare_total", "compare_usage", "has_usage"]
