"""What a replay costs over the conversation's life, provider prompt cache included.

Every assistant message of the original conversation is one model call. Its prompt is what the
call-by-call replay sent (what the strategy left at its last application plus the messages that
arrived since); its output is the original assistant message. Each call's prompt is compared with
the previous call's (message by message, after the tool definitions, which come first: the replay
records the shared prefix), and the provider's published cache rule says how much of it the cache
serves. A strategy that rewrites the start of the prompt at every call pays for it here:

* ``openai`` (automatic): a prompt prefix of at least 1,024 tokens shared with a recent request is
  served from the cache, in 128-token steps; writing the cache costs nothing extra.
* ``anthropic`` (explicit ``cache_control``): one breakpoint is assumed at the end of every prompt.
  A call reads the cache when the previous prompt (at least ``cache_min_tokens``: 1,024 on Sonnet
  and Opus, 2,048 on Haiku) is a prefix of its own; the rest up to its own end is written at the
  cache-write price. Editing or dropping anything before the breakpoint invalidates it.

The cache is assumed warm between calls (the providers keep it at least 5 minutes). Prices come
from the ``genai-prices`` package's bundled data (``ctxlab.prices_genai``: every model it knows,
its data date in the table's sources), then ``prices.json`` beside this module (hand-checked,
dated, with its source; its entries win), then a file of the same shape, or an override; a model
without a price gets token figures and ``cost = None``, never a guessed price.
"""
from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping, Sequence

from .conversation import Conversation, Message
from .errors import CtxlabError
from .model_specs import resolve_model
from .tokens import TokenCounter

PRICES_FILE = Path(__file__).with_name("prices.json")
CACHE_RULES = ("openai", "anthropic", "none")
OPENAI_MIN, OPENAI_STEP = 1024, 128
ANTHROPIC_MIN = 1024


class PriceError(CtxlabError):
    """A price table or override that cannot be read."""


@dataclass(frozen=True)
class Price:
    """A model's prices in USD per million tokens and its cache rule. ``cache_write`` None means
    writes are billed as plain input (OpenAI)."""

    model: str
    input: float
    output: float
    cached_input: float | None = None
    cache_write: float | None = None
    cache: str = "none"
    cache_min_tokens: int = OPENAI_MIN
    source: str = ""

    def cost(self, uncached: int, cached: int, written: int, output: int) -> float:
        """USD for one call's token split."""
        read = self.cached_input if self.cached_input is not None else self.input
        write = self.cache_write if self.cache_write is not None else self.input
        return (uncached * self.input + cached * read + written * write + output * self.output) / 1e6


def _price(model: str, row: Mapping[str, Any], where: str, source: str = "") -> Price:
    if not isinstance(row, Mapping):
        raise PriceError("a price entry must be an object", where=where)
    unknown = sorted(set(row) - {"provider", "input", "output", "cached_input", "cache_write", "cache",
                                 "cache_min_tokens"})
    if unknown:
        raise PriceError(f"unknown field {unknown[0]!r}", where=where,
                         hint="Fields: input, cached_input, cache_write, output, provider, cache_min_tokens")
    for key in ("input", "output"):
        if not isinstance(row.get(key), (int, float)) or isinstance(row.get(key), bool) or not row[key] >= 0 \
                or not math.isfinite(row[key]):
            raise PriceError(f"{key} must be a price in USD per million tokens (a finite number >= 0)", where=f"{where}.{key}")
    for key in ("cached_input", "cache_write"):
        v = row.get(key)
        if v is not None and (not isinstance(v, (int, float)) or isinstance(v, bool) or not v >= 0 or not math.isfinite(v)):
            raise PriceError(f"{key} must be a finite number >= 0 or absent", where=f"{where}.{key}")
    provider = str(row.get("provider", "")).lower()
    cache = str(row.get("cache", provider if provider in CACHE_RULES else "none")).lower()
    if cache not in CACHE_RULES:
        raise PriceError(f"unknown cache rule {cache!r}", where=f"{where}.cache", hint=f"Use one of {', '.join(CACHE_RULES)}")
    minimum = row.get("cache_min_tokens", ANTHROPIC_MIN if cache == "anthropic" else OPENAI_MIN)
    if not isinstance(minimum, int) or minimum < 0:
        raise PriceError("cache_min_tokens must be a whole number >= 0", where=f"{where}.cache_min_tokens")
    return Price(model, float(row["input"]), float(row["output"]), row.get("cached_input"), row.get("cache_write"),
                 cache, minimum, source)


@dataclass(frozen=True)
class PriceTable:
    """Prices by model name; ``get`` resolves like the model table (exact, then longest prefix)."""

    prices: Mapping[str, Price]
    sources: Mapping[str, Any]

    def get(self, model: str | None) -> Price | None:
        """The price of ``model`` (None when the table has none: never a guess)."""
        key = (model or "").strip().lower()
        if key in self.prices:  # provider/model, as genai-prices names third-party hosts
            return self.prices[key]
        key = key.split("/", 1)[1] if "/" in key else key
        if key in self.prices:
            return self.prices[key]
        found = [m for m in self.prices if key.startswith(m + "-") or key.startswith(m + ":") or key.startswith(m + "@")]
        return self.prices[max(found, key=len)] if found else None

    def with_price(self, price: Price) -> "PriceTable":
        """A copy with ``price`` set for its model."""
        return PriceTable({**self.prices, price.model.lower(): price}, self.sources)

    def to_dict(self) -> dict[str, Any]:
        """The table in the shape of ``prices.json``."""
        return {"sources": dict(self.sources), "models": {
            m: {k: v for k, v in asdict(p).items() if k not in ("model", "source") and v is not None}
            for m, p in self.prices.items()}}


def parse_prices(data: Mapping[str, Any], where: str = "prices") -> PriceTable:
    """A PriceTable from ``{"sources": {...}, "models": {name: {input, cached_input, cache_write,
    output, provider}}}`` (the shape of ``prices.json``)."""
    if not isinstance(data, Mapping) or not isinstance(data.get("models"), Mapping):
        raise PriceError('a price table needs a "models" object', where=where,
                         hint='e.g. {"models": {"gpt-4o": {"provider": "openai", "input": 2.5, "cached_input": 1.25, "output": 10}}}')
    sources = data.get("sources") or {}
    out = {}
    for name, row in data["models"].items():
        provider = str(row.get("provider", "")) if isinstance(row, Mapping) else ""
        src = sources.get(provider, {}) if isinstance(sources, Mapping) else {}
        label = f"{src.get('url', '')} (read {src.get('read', '?')})" if isinstance(src, Mapping) and src else where
        out[name.lower()] = _price(name, row, f"{where}.models.{name}", label)
    return PriceTable(out, dict(sources) if isinstance(sources, Mapping) else {})


@lru_cache(maxsize=1)
def genai_prices_table() -> PriceTable:
    """Every token-priced model of the ``genai-prices`` package's bundled data (empty without it)."""
    from .prices_genai import rows
    data, info = rows()
    if not data:
        return PriceTable({}, {})
    label = f"genai-prices {info['version']} (data to {info['read']})"
    out = {}
    for name, row in data.items():
        clean = {k: v for k, v in row.items() if not k.startswith("_")}
        clean["provider"] = "" if clean["cache"] == "none" else clean["cache"]
        src = label + (", base tier of a tiered price" if row["_tiered"] else "")
        out[name] = _price(name, clean, f"genai-prices.{name}", src)
    return PriceTable(out, {"genai-prices": info})


def _bundled() -> PriceTable:
    """genai-prices' table with ``prices.json`` on top (hand-checked entries win)."""
    own = parse_prices(json.loads(PRICES_FILE.read_text()), "prices.json")
    genai = genai_prices_table()
    return PriceTable({**genai.prices, **own.prices}, {**genai.sources, **own.sources})


def load_prices(path: str | Path | None = None) -> PriceTable:
    """The bundled table (genai-prices' data, ``prices.json`` on top), or with a JSON file of the
    same shape over it (its models replace the bundled ones of the same name; the others stay)."""
    bundled = _bundled()
    if path is None:
        return bundled
    p = Path(path)
    try:
        data = json.loads(p.read_text())
    except FileNotFoundError:
        raise PriceError(f"no such price file: {p}", where="--prices") from None
    except ValueError as e:
        raise PriceError(f"not JSON ({e})", where=str(p)) from None
    extra = parse_prices(data, str(p))
    return PriceTable({**bundled.prices, **extra.prices}, {**bundled.sources, **extra.sources})


def parse_price_override(text: str, model: str | None) -> Price:
    """``input=2.5,cached=1.25,output=10[,write=3.75]`` (USD per million tokens) for ``model``;
    the cache rule follows the model's provider (OpenAI or Anthropic; none for others)."""
    names = {"input": "input", "cached": "cached_input", "cached_input": "cached_input", "write": "cache_write",
             "cache_write": "cache_write", "output": "output", "min": "cache_min_tokens"}
    row: dict[str, Any] = {}
    for part in (p.strip() for p in text.split(",") if p.strip()):
        key, sep, raw = part.partition("=")
        if not sep or key.strip() not in names:
            raise PriceError(f"bad price part {part!r}", where="--price",
                             hint="Use input=2.5,cached=1.25,output=10 (optionally write=3.125 and min=1024)")
        try:
            row[names[key.strip()]] = int(raw) if names[key.strip()] == "cache_min_tokens" else float(raw)
        except ValueError:
            raise PriceError(f"{key.strip()} must be a number, got {raw!r}", where="--price") from None
    spec = resolve_model(model)
    row["provider"] = spec.provider.lower()
    if row["provider"] == "deepseek":  # DeepSeek caches prompt prefixes automatically, like OpenAI
        row["cache"] = "openai"
    return _price(spec.name if model is None else model, row, "--price", "override")


@dataclass(frozen=True, slots=True)
class CallCost:
    """One model call (the assistant message ``message``) at ``turn``: prompt tokens sent, served
    by the cache, written to it, billed uncached; output tokens; USD (None without a price)."""

    turn: int
    message: int
    prompt_tokens: int
    cached_tokens: int
    cache_write_tokens: int
    uncached_tokens: int
    output_tokens: int
    cost_usd: float | None
    read_back: bool = False
    """A modelled call that reads an offloaded result back (``strategies.offload``), not a call of the trace."""


@dataclass(frozen=True)
class CostReport:
    """The calls of a replay with their cache split and cost, per call, per turn, and in total."""

    strategy: str
    model: str
    price: Price | None
    calls: tuple[CallCost, ...]
    refetch_calls: tuple[CallCost, ...] = ()
    """Modelled re-fetches of lost facts (``REFETCH_MODEL``): beside the calls, not in ``cost_usd``; in ``total_cost_usd``."""

    def _sum(self, field: str) -> int:
        return sum(getattr(c, field) for c in self.calls)

    @property
    def input_tokens(self) -> int:
        """Prompt tokens over all calls."""
        return self._sum("prompt_tokens")

    @property
    def cached_tokens(self) -> int:
        """Prompt tokens the cache served."""
        return self._sum("cached_tokens")

    @property
    def output_tokens(self) -> int:
        """Output tokens over all calls."""
        return self._sum("output_tokens")

    @property
    def read_backs(self) -> int:
        """Modelled read-back calls among the calls."""
        return sum(1 for c in self.calls if c.read_back)

    @property
    def refetches(self) -> int:
        """Modelled re-fetch calls (a tool call run again for a fact the prompt lost)."""
        return len(self.refetch_calls)

    @property
    def refetch_tokens(self) -> int:
        """Prompt tokens of the modelled re-fetch calls."""
        return sum(c.prompt_tokens for c in self.refetch_calls)

    @property
    def refetch_cost_usd(self) -> float | None:
        """USD of the modelled re-fetch calls (None without a price)."""
        return None if self.price is None else sum(c.cost_usd or 0.0 for c in self.refetch_calls)

    @property
    def total_cost_usd(self) -> float | None:
        """``cost_usd`` plus the modelled re-fetches: what the strategy costs once lost facts are fetched again."""
        return None if self.price is None else self.cost_usd + self.refetch_cost_usd

    @property
    def cached_share(self) -> float:
        """Share of prompt tokens the cache served (0 for no prompt)."""
        return self.cached_tokens / self.input_tokens if self.input_tokens else 0.0

    @property
    def cost_usd(self) -> float | None:
        """USD over all calls (None when the model has no price)."""
        return None if self.price is None else sum(c.cost_usd or 0.0 for c in self.calls)

    def per_turn(self) -> list[dict[str, Any]]:
        """One row per turn: calls, prompt, cached, written, uncached and output tokens, USD."""
        rows: dict[int, dict[str, Any]] = {}
        for c in self.calls:
            r = rows.setdefault(c.turn, {"turn": c.turn, "calls": 0, "prompt_tokens": 0, "cached_tokens": 0,
                                         "cache_write_tokens": 0, "uncached_tokens": 0, "output_tokens": 0,
                                         "cost_usd": None if self.price is None else 0.0})
            r["calls"] += 1
            for k in ("prompt_tokens", "cached_tokens", "cache_write_tokens", "uncached_tokens", "output_tokens"):
                r[k] += getattr(c, k)
            if self.price is not None:
                r["cost_usd"] += c.cost_usd or 0.0
        return [rows[t] for t in sorted(rows)]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready totals, the price used (or why none) and the rows per turn."""
        return {"strategy": self.strategy, "model": self.model,
                "price": None if self.price is None else asdict(self.price),
                "no_price": None if self.price else f"no price for model {self.model!r}: pass --price or --prices",
                "input_tokens": self.input_tokens, "cached_tokens": self.cached_tokens,
                "cached_share": self.cached_share, "output_tokens": self.output_tokens, "cost_usd": self.cost_usd,
                **({"read_back_calls_model": self.read_backs, "read_back_model": READ_BACK_MODEL}
                   if self.read_backs else {}),
                "refetch_calls_model": self.refetches, "refetch_input_tokens": self.refetch_tokens,
                "refetch_cost_usd": self.refetch_cost_usd, "total_cost_usd": self.total_cost_usd,
                **({"refetch_model": REFETCH_MODEL} if self.refetches else {}),
                "turns": self.per_turn()}


def _cached(rule: str, minimum: int, has_prev: bool, prev_len: int, shared: int, extends: bool,
            total: int) -> tuple[int, int]:
    """(cached, written) tokens of a prompt of ``total`` tokens (tool definitions and messages) whose
    first ``shared`` tokens equal the previous prompt's (of ``prev_len`` tokens; ``extends`` when
    all of the previous prompt is a prefix of this one)."""
    if rule == "none":
        return 0, 0
    if rule == "openai":
        return (shared // OPENAI_STEP * OPENAI_STEP if has_prev and shared >= max(minimum, OPENAI_MIN) else 0), 0
    read = prev_len if has_prev and extends and prev_len >= minimum else 0
    return read, (total - read if total >= minimum else 0)


READ_BACK_OUTPUT_TOKENS = 30
"""Output tokens of a modelled read-back call: the tool call that reads the file (path, offset, limit)."""
READ_BACK_MODEL = ("one more call per read-back: the prompt of the call that needed the fact (read from the cache "
                   "as the previous prompt) plus the whole offloaded result, uncached, and "
                   f"{READ_BACK_OUTPUT_TOKENS} output tokens; what was read is not kept in later prompts (a later call "
                   "that needs it reads it again), and the needs of one call from one result make one read")

REFETCH_MODEL = ("a model, not a bill: each needed fact the prompt lost that came from a tool result which running "
                 "the same call again would still return is fetched again by one more call, priced as a read-back ("
                 + READ_BACK_MODEL + "); the needs of one call from one result make one re-fetch; a fact from the "
                 "user or from a result that changed since cannot be fetched again and counts as unrecoverable; a "
                 "value the agent typed first itself (a timeout) costs nothing: it types it again")


def _read_back_cost(rb: Any, chosen: Price | None, rule: str, minimum: int) -> CallCost:
    """The modelled call of one ``strategies.offload.ReadBack`` (see ``READ_BACK_MODEL``)."""
    prompt = rb.prompt_tokens + rb.read_tokens
    cached, _ = _cached(rule, minimum, True, rb.prompt_tokens, rb.prompt_tokens, True, prompt)
    uncached = prompt - cached
    out = READ_BACK_OUTPUT_TOKENS
    return CallCost(rb.turn, rb.index, prompt, cached, 0, uncached, out,
                    chosen.cost(uncached, cached, 0, out) if chosen else None, True)


def replay_cost(replay: Any, source: Conversation | Sequence[Message], *, model: str | None = None,
                price: Price | PriceTable | None = None, read_backs: Sequence[Any] = (),
                refetches: Sequence[Any] = ()) -> CostReport:
    """Cost every call of ``replay`` (a ``ctxlab.replay.Replay`` of ``source``) under the model's
    price and cache rule. ``price`` may be a Price, a PriceTable (looked up by model), or None for
    the bundled table. The pending call (a trace that does not end with an assistant message) has
    no output yet and is not billed. ``read_backs`` (``Fidelity.read_backs`` of the same replay) add
    one modelled call each, before the call that needed them (see ``READ_BACK_MODEL``); ``refetches``
    (``Fidelity.refetches``) are priced the same way and kept apart (``CostReport.refetch_calls``,
    ``REFETCH_MODEL``), so ``cost_usd`` stays what the replayed calls cost."""
    messages = source.messages if isinstance(source, Conversation) else tuple(source)
    model = model or (source.model if isinstance(source, Conversation) else None) or "gpt-4o"
    table = price if isinstance(price, PriceTable) else None
    chosen = price if isinstance(price, Price) else (table or load_prices()).get(model)
    counter = TokenCounter(model)
    head, tail = replay.budget.tools_tokens, replay.budget.reply_priming
    rule, minimum = (chosen.cache, chosen.cache_min_tokens) if chosen else ("none", OPENAI_MIN)
    calls: list[CallCost] = []
    has_prev, prev_len = False, 0
    reads: dict[int, list[Any]] = {}
    for rb in read_backs:
        reads.setdefault(rb.call, []).append(rb)
    for call in replay.calls:
        calls += [_read_back_cost(rb, chosen, rule, minimum) for rb in reads.get(call.number, ())]
        if call.pending:
            continue
        total = call.tokens_after - tail  # tool definitions and messages
        shared_tools = head if call.tools is None else call.tools.prefix_tokens  # tools sent per call: their own
        cached, written = _cached(rule, minimum, has_prev, prev_len, shared_tools + call.shared_tokens,
                                  call.extends_previous, total)
        prompt = call.tokens_after
        uncached = prompt - cached - written
        out = counter.message(messages[call.index])
        calls.append(CallCost(call.turn, call.index, prompt, cached, written, uncached, out,
                              chosen.cost(uncached, cached, written, out) if chosen else None))
        has_prev, prev_len = True, total
    return CostReport(replay.strategy, model, chosen, tuple(calls),
                      tuple(_read_back_cost(rb, chosen, rule, minimum) for rb in refetches))


__all__ = ["CACHE_RULES", "CallCost", "CostReport", "Price", "PriceError", "PriceTable", "load_prices",
           "parse_price_override", "parse_prices", "READ_BACK_MODEL", "REFETCH_MODEL", "replay_cost"]
