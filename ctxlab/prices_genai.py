"""Prices from the ``genai-prices`` package (pydantic/genai-prices, MIT), read from its bundled data.

The package ships its price table as Python data and fetches updates only when asked
(``UpdatePrices``, never used here): nothing goes to the network. Every model of every provider
becomes a ``pricing.Price`` under ``provider/model`` (e.g. ``groq/qwen/qwen3-32b``); the models of
the labs that sell their own models (``FIRST_PARTY``) also under their bare id (``deepseek-chat``,
``claude-sonnet-4-5``, ``kimi-k2``). Prices are the ones in effect today (the package's dated
prices); a tiered price is taken at its base tier and said so in the source.

Cache rules (``pricing.CACHE_RULES``): Anthropic's explicit rule for Anthropic; OpenAI's automatic
prefix rule for OpenAI and for the other first-party APIs that cache prefixes automatically and
bill hits at a cache-read price (DeepSeek, Moonshot, Zhipu, Z.ai, xAI, Google); ``none`` where the
data gives no cache-read price.

``DATA_DATE`` is the newest dated price change in effect in the bundled data: the package has no
release date of its own in its files, so this is the best "prices as of" it can show.
"""
from __future__ import annotations

from datetime import UTC, date, datetime
from functools import lru_cache
from importlib.metadata import PackageNotFoundError, version
from typing import Any

FIRST_PARTY = {"openai": "openai", "anthropic": "anthropic", "deepseek": "openai", "moonshotai": "openai",
               "zhipuai": "openai", "zai": "openai", "x-ai": "openai", "google": "openai", "mistral": "none",
               "cohere": "none", "minimax": "openai"}
"""Provider id -> cache rule, for providers whose models are also listed under their bare id."""
URL = "https://github.com/pydantic/genai-prices"


def _number(value: Any) -> tuple[float | None, bool]:
    """(USD per million tokens, whether it was tiered) from a Decimal, TieredPrices or None."""
    if value is None:
        return None, False
    base = getattr(value, "base", None)
    if base is not None:
        return float(base), True
    return float(value), False


def package_version() -> str | None:
    """The installed genai-prices version (None when it is not installed)."""
    try:
        return version("genai-prices")
    except PackageNotFoundError:
        return None


@lru_cache(maxsize=1)
def rows(today: date | None = None) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    """(model key -> price row in the shape of ``prices.json``, source info), from the bundled data.
    Empty when the package is not installed."""
    ver = package_version()
    if ver is None:
        return {}, {}
    from genai_prices import types
    from genai_prices.data_snapshot import get_snapshot
    now = datetime.combine(today, datetime.min.time(), tzinfo=UTC) if today else datetime.now(tz=UTC)
    out: dict[str, dict[str, Any]] = {}
    newest = date.min
    for provider in get_snapshot().providers:
        for m in provider.models:
            if isinstance(m.prices, list):
                for c in m.prices:
                    d = getattr(c.constraint, "start_date", None)
                    if isinstance(c.constraint, types.StartDateConstraint) and d <= now.date():
                        newest = max(newest, d)
            row = _row(provider.id, m.id, m.get_prices(now))
            if row is None:
                continue
            out[f"{provider.id}/{m.id}".lower()] = row
            if provider.id in FIRST_PARTY:
                out.setdefault(m.id.lower(), row)
    info = {"url": URL, "version": ver, "read": newest.isoformat() if newest > date.min else "?",
            "note": "bundled data of the genai-prices package; read field: newest dated price change in it"}
    return out, info


def _row(provider_id: str, model_id: str, price: Any) -> dict[str, Any] | None:
    fields = price.__dict__
    inp, t1 = _number(fields.get("input_mtok"))
    out, t2 = _number(fields.get("output_mtok"))
    if inp is None or out is None:
        return None  # not a token-priced text model (images, audio, per-request)
    read, t3 = _number(fields.get("cache_read_mtok"))
    write, t4 = _number(fields.get("cache_write_mtok"))
    rule = FIRST_PARTY.get(provider_id, "openai" if read is not None else "none")
    if read is None and rule == "openai":
        rule = "none"
    row: dict[str, Any] = {"provider": "genai-prices", "input": inp, "output": out, "cache": rule}
    if read is not None:
        row["cached_input"] = read
    if write is not None and rule == "anthropic":
        row["cache_write"] = write
    if rule == "anthropic":
        row["cache_min_tokens"] = 2048 if "haiku" in model_id else 1024
    row["_tiered"] = t1 or t2 or t3 or t4
    return row


__all__ = ["FIRST_PARTY", "URL", "package_version", "rows"]
