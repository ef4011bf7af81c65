"""The ``llm`` summarizer: the ``summarize`` strategy's running summary written by a model.

Incremental, as the strategy is: the first fold sends :data:`SUMMARY_PROMPT` with the folded span;
each later fold sends :data:`MERGE_PROMPT` with the running summary and only the newly folded span,
and the reply becomes the new running summary. Both prompts are strategy parameters
(``summary_prompt``, ``merge_prompt``; empty = these defaults), so they show and are edited in the
app and travel in the exported config. Placeholders: ``{span}`` (the folded messages as text),
``{summary}`` (the running summary, merge prompt only) and ``{max_tokens}`` (the cap). They are
replaced literally, so other braces in a prompt are harmless.

The cap: ``max_tokens`` on the request, then the reply counted with ctxlab's counter; a longer
reply is cut by the strategy (least important lines first) and the record says so.

Every summary records who wrote it (``record``: summarizer, model, prompt and completion tokens,
latency, whether it came from the cache). Summaries are cached by (model, server, prompt
template, running summary, span text, cap): a replay step, a slider move or a sweep point that
folds the same span from the same summary does not call the model again. The cache is an
in-memory LRU, plus files under ``$CTXLAB_DATA_DIR/llm_summaries`` when ``CTXLAB_LLM_CACHE=disk``
(summaries only: a key never reaches the disk).

When the model cannot be called (no configuration, timeout, 401, 429 past the wait limit, 5xx,
a malformed reply) the span is summarized by the offline ``extractive`` summarizer instead, with a
warning naming the failure; after such a failure the same model is not called again for
``cooldown`` seconds, so a replay of 30 turns does not wait 30 times.
"""
from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from ...i18n import T, error_text
from ...conversation import Message
from ...llm import LLM, LLMError, active_llm, public_url
from .extractive import ExtractiveSummarizer, register_summarizer

SUMMARY_PROMPT = """You write the running summary of an earlier part of a conversation between a user, an AI assistant and the tools the assistant called. The assistant will continue the conversation with your summary in place of these messages, so keep what it needs: what the user asked for, decisions made, and every identifier, amount, date, status and error exactly as written (order numbers, ids, prices, codes). One fact or event per line, no preamble. At most {max_tokens} tokens.

Messages to summarize:
{span}"""

MERGE_PROMPT = """You keep the running summary of a conversation between a user, an AI assistant and the tools the assistant called. The assistant will continue with your summary in place of the summarized messages.

The running summary so far:
{summary}

Extend it with the newly summarized messages below: keep every line of the summary that still matters, add what the new messages add, and update facts that changed. Keep every identifier, amount, date, status and error exactly as written. Return the whole updated summary, one fact or event per line, no preamble, at most {max_tokens} tokens.

New messages:
{span}"""

PLACEHOLDERS = {"summary_prompt": ("{span}",), "merge_prompt": ("{span}", "{summary}")}
CACHE_ENV = "CTXLAB_LLM_CACHE"


def check_prompt(name: str, text: str) -> str | None:
    """None when ``text`` (a ``summary_prompt`` or ``merge_prompt``; empty = the default) holds the
    placeholders it needs, else what is missing."""
    missing = [p for p in PLACEHOLDERS[name] if text and p not in text]
    return f"{name} must contain {' and '.join(missing)}" if missing else None


def render_span(messages: Sequence[Message], *, message_chars: int = 6_000, total_chars: int = 60_000) -> str:
    """The folded messages as plain text, one block per message (``[user]``, ``[assistant]``,
    ``[assistant -> tool lookup_order]``, ``[tool result lookup_order]``); very long messages are cut
    (``message_chars`` each, ``total_chars`` in all) with a note of how much."""
    names = {c.id: c.name for m in messages for c in m.tool_calls}
    blocks, used = [], 0
    for m in messages:
        parts = []
        if m.role == "tool":
            label = f"tool result {names.get(m.tool_call_id or '', m.name or 'tool')}" + (" (error)" if m.is_error else "")
            parts.append((label, m.text))
        else:
            if m.text.strip() or not m.tool_calls:
                parts.append((m.role, m.text))
            parts.extend((f"assistant -> tool {c.name}", c.arguments) for c in m.tool_calls)
        for label, text in parts:
            room = min(message_chars, total_chars - used)
            if room <= 0:
                blocks.append("[... later messages cut: the span is too long]")
                return "\n".join(blocks)
            body = text if len(text) <= room else f"{text[:room]} [... {len(text) - room:,} characters cut]"
            blocks.append(f"[{label}] {body}")
            used += len(body)
    return "\n".join(blocks)


def fill(template: str, *, span: str, summary: str = "", max_tokens: int) -> str:
    """The prompt sent: placeholders replaced literally (no str.format, so other braces stay)."""
    return (template.replace("{max_tokens}", str(max_tokens)).replace("{summary}", summary)
            .replace("{span}", span))


@dataclass(frozen=True)
class SummaryResult:
    """What a summarizer returns to the strategy: the text, a record of who wrote it, and a
    warning when the model could not be used (the text then comes from the fallback)."""

    text: str
    record: dict[str, Any]
    warning: str | None = None


class SummaryCache:
    """Summaries by key: an in-memory LRU of ``max_items``, plus JSON files under ``directory``
    when given (summaries and their records only). Thread-safe."""

    def __init__(self, max_items: int = 1024, directory: str | Path | None = None) -> None:
        self.max_items = max_items
        self.directory = Path(directory) if directory else None
        self._items: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = self.misses = 0

    @classmethod
    def from_env(cls) -> "SummaryCache":
        """Memory only, unless ``CTXLAB_LLM_CACHE=disk`` (then also ``$CTXLAB_DATA_DIR/llm_summaries``)."""
        if os.environ.get(CACHE_ENV, "").strip().lower() != "disk":
            return cls()
        base = os.environ.get("CTXLAB_DATA_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "ctxlab")
        return cls(directory=Path(base) / "llm_summaries")

    @staticmethod
    def key(*parts: str | int) -> str:
        """A hash of the parts (model, server, prompt template, running summary, span, cap)."""
        return hashlib.sha256(json.dumps([str(p) for p in parts]).encode()).hexdigest()

    def get(self, key: str) -> dict[str, Any] | None:
        """The cached entry (``text`` and ``record``), or None."""
        with self._lock:
            entry = self._items.get(key)
            if entry is not None:
                self._items.move_to_end(key)
        if entry is None and self.directory is not None:
            path = self.directory / f"{key}.json"
            try:
                entry = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                entry = None
            if entry is not None and not isinstance(entry.get("text"), str):
                entry = None
            if entry is not None:
                self._remember(key, entry)
        with self._lock:
            self.hits += entry is not None
            self.misses += entry is None
        return entry

    def put(self, key: str, text: str, record: dict[str, Any]) -> None:
        """Remember a summary (and write it to the directory, when there is one)."""
        entry = {"text": text, "record": record}
        self._remember(key, entry)
        if self.directory is not None:
            try:
                self.directory.mkdir(parents=True, exist_ok=True)
                tmp = self.directory / f".{key}.tmp"
                tmp.write_text(json.dumps(entry, ensure_ascii=False), encoding="utf-8")
                tmp.replace(self.directory / f"{key}.json")
            except OSError:
                pass  # a cache that cannot write is only slower

    def _remember(self, key: str, entry: dict[str, Any]) -> None:
        with self._lock:
            self._items[key] = entry
            self._items.move_to_end(key)
            while len(self._items) > self.max_items:
                self._items.popitem(last=False)

    def clear(self) -> None:
        """Forget everything in memory (files stay)."""
        with self._lock:
            self._items.clear()
            self.hits = self.misses = 0


@dataclass
class LLMSummarizer:
    """Summaries written by a model (``llm``: this one; None = :func:`ctxlab.llm.active_llm`),
    cached, with the extractive summarizer as the fallback."""

    llm: LLM | None = None
    cache: SummaryCache = field(default_factory=SummaryCache.from_env)
    fallback: ExtractiveSummarizer = field(default_factory=ExtractiveSummarizer)
    cooldown: float = 60.0
    clock: Callable[[], float] = time.monotonic
    _failed: dict[str, tuple[float, str]] = field(default_factory=dict, repr=False)

    def summarize(self, messages: Sequence[Message], previous: str | None) -> str:
        """The plain summarizer protocol: default prompts, a 400-token cap, no counter check."""
        return self.summarize_span(messages, previous).text

    def summarize_span(self, messages: Sequence[Message], previous: str | None, *, summary_prompt: str = "",
                       merge_prompt: str = "", max_tokens: int = 400,
                       count: Callable[[str], int] | None = None) -> SummaryResult:
        """Summarize ``messages`` (first prompt) or merge them into ``previous`` (merge prompt)."""
        llm = self.llm or active_llm()
        cfg = llm.config
        merging = bool(previous and previous.strip())
        template = (merge_prompt or MERGE_PROMPT) if merging else (summary_prompt or SUMMARY_PROMPT)
        span = render_span(messages)
        key = SummaryCache.key(cfg.model, public_url(cfg.base_url) or "openai", template,
                               (previous or "") if merging else "", span, max_tokens)
        cached = self.cache.get(key)
        if cached is not None:  # redacted again: a disk entry may predate the filter (see ctxlab.redact)
            return SummaryResult(cfg.redact(cached["text"]), {**cached.get("record", {}), "cache_hit": True})
        down = self._failed.get(cfg.fingerprint())
        if down is not None and self.clock() - down[0] < self.cooldown:
            return self._fall_back(messages, previous, T("{error} (not retried yet: it failed moments ago)", error=down[1]))
        prompt = fill(template, span=span, summary=previous or "", max_tokens=max_tokens)
        try:
            reply = llm.chat([{"role": "user", "content": prompt}], max_tokens=max_tokens)
        except LLMError as e:
            self._failed[cfg.fingerprint()] = (self.clock(), error_text(e))
            return self._fall_back(messages, previous, error_text(e))
        self._failed.pop(cfg.fingerprint(), None)
        text = reply.text.strip()
        record = {"summarizer": "llm", "model": reply.model, "call": "merge" if merging else "first",
                  "prompt_tokens": reply.prompt_tokens, "completion_tokens": reply.completion_tokens,
                  "latency_ms": round(reply.latency_ms, 1), "attempts": reply.attempts, "cache_hit": False}
        warning = None
        measured = count(text) if count is not None else None
        if measured is not None:
            record["summary_tokens"] = measured
        if (measured is not None and measured > max_tokens) or reply.finish_reason == "length":
            record["over_cap"] = True
            warning = (T("the model's summary reached the {max_tokens:,}-token cap (max_summary_tokens): "
                         "{measured:,} tokens, cut to fit", max_tokens=max_tokens, measured=measured)
                       if measured and measured > max_tokens else
                       T("the model's summary reached the {max_tokens:,}-token cap (max_summary_tokens); "
                         "it may end mid-sentence", max_tokens=max_tokens))
        if not text:
            return self._fall_back(messages, previous, T("model {model} returned an empty summary", model=reply.model))
        self.cache.put(key, text, record)
        return SummaryResult(text, record, warning)

    def _fall_back(self, messages: Sequence[Message], previous: str | None, why: str) -> SummaryResult:
        """The offline summary, with a warning that says why and that nothing else changed."""
        text = self.fallback.summarize(messages, previous)
        return SummaryResult(text, {"summarizer": "extractive (fallback)", "error": why},
                             T("LLM summary unavailable, used the offline extractive summary instead: {why}", why=why))


DEFAULT_LLM_SUMMARIZER = LLMSummarizer()
"""The summarizer registered as ``llm`` (its cache is shared by every plan, replay and sweep point
of this process)."""
register_summarizer("llm", DEFAULT_LLM_SUMMARIZER)

__all__ = ["DEFAULT_LLM_SUMMARIZER", "LLMSummarizer", "MERGE_PROMPT", "SUMMARY_PROMPT", "SummaryCache",
           "SummaryResult", "check_prompt", "fill", "render_span"]
