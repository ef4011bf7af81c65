"""Prices from the genai-prices package: every model it knows, its data date shown,
the hand-checked prices.json and the per-session override on top, nothing fetched."""
from __future__ import annotations

import json
import subprocess
import sys
from datetime import date

import pytest

from ctxlab.pricing import PriceError, genai_prices_table, load_prices, parse_price_override

pytest.importorskip("genai_prices")


def test_deepseek_models_are_priced_with_a_cache_hit_price_and_a_dated_source():
    table = load_prices()
    for model in ("deepseek-chat", "deepseek-reasoner", "deepseek-v4-flash", "deepseek-v4-pro-2026-05-01"):
        p = table.get(model)
        assert p is not None, model
        assert p.cached_input is not None and p.cached_input < p.input / 2, model
        assert p.cache == "openai" and p.source.startswith("genai-prices 0.2.3 (data to 20"), model
    info = table.sources["genai-prices"]
    assert info["version"] == "0.2.3" and date.fromisoformat(info["read"]) <= date.today()


def test_models_of_other_hosts_resolve_by_provider_slash_model_and_unknown_names_get_no_price():
    table = load_prices()
    assert table.get("groq/qwen/qwen3-32b").input > 0
    assert table.get("glm-4.6").cached_input is not None  # Zhipu, first party
    # genai-prices 0.2.3 has no Alibaba Cloud provider: qwen-plus has no first-party price, and
    # ctxlab says so instead of borrowing a third-party host's
    assert table.get("qwen-plus") is None


def test_the_hand_checked_table_wins_and_agrees_where_both_have_a_model():
    table, genai = load_prices(), genai_prices_table()
    assert "developers.openai.com" in table.get("gpt-4o").source
    for model in ("gpt-4o", "gpt-4.1-mini", "claude-sonnet-4-5", "claude-haiku-4-5"):
        mine, theirs = table.get(model), genai.prices[model]
        assert (mine.input, mine.cached_input, mine.output) == (theirs.input, theirs.cached_input, theirs.output)
    assert genai.prices["claude-haiku-4-5"].cache_min_tokens == 2048


def test_a_price_file_and_the_session_override_still_win(tmp_path):
    path = tmp_path / "p.json"
    path.write_text(json.dumps({"models": {"deepseek-chat": {"provider": "openai", "input": 9, "output": 9}}}))
    assert load_prices(path).get("deepseek-chat").input == 9
    over = parse_price_override("input=0.28,cached=0.028,output=0.42", "deepseek-chat")
    assert (over.input, over.cached_input, over.cache) == (0.28, 0.028, "openai")
    with pytest.raises(PriceError):
        parse_price_override("input=abc", "deepseek-chat")


def test_loading_the_table_opens_no_network_connection():
    code = ("import socket\n"
            "def refuse(*a, **k):\n    raise OSError('network used')\n"
            "socket.socket.connect = refuse\nsocket.create_connection = refuse\n"
            "from ctxlab.pricing import load_prices\n"
            "print(load_prices().get('deepseek-chat').input)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert float(out.stdout) > 0
