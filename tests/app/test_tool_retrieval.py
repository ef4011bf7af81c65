"""The Tool Retrieval page in Streamlit's AppTest, against the engine itself: the tools it sends and
the tokens it saves are the engine's Selection for the same inputs, every control changes them as
the engine says, the index builds and rebuilds, the sweep chart shows the engine's recall@k, the
selected tools' tokens reach the Strategy Lab's budget, bad and hostile uploads stay harmless, and
an OpenAI key never leaves its password field.

Each test gets a fresh ctxlab data directory (CTXLAB_DATA_DIR), so indexes are built from scratch.
Most use the ``hash`` provider (instant); one uses the default local model."""
from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any, Iterator

import pytest
from streamlit.testing.v1 import AppTest

import ctxlab
from ctxlab.retrieval import (ToolCatalog, ToolIndex, conversation_query, evaluate, load_queries, query_from_conversation,
                          sweep)
from ctxlab.retrieval.select import DEFAULT_THRESHOLD

from ..conftest import ROOT, SAMPLES
from .helpers import APP_TIMEOUT, metric, set_widget
from ..openai_fake import FakeOpenAI

PAGE = str(ROOT / "pages" / "tool_retrieval.py")
CATALOG = SAMPLES / "tools_ecommerce.json"
QUERIES = SAMPLES / "tool_queries_ecommerce.jsonl"
CONVERSATION = SAMPLES / "ecommerce_refund.json"
QUERY = "The blender from order ORD-104233 arrived broken. I want my money back."
HASH_THRESHOLD = 0.2
DEFAULTS = {"top_k": 5, "threshold": HASH_THRESHOLD, "expand_categories": True, "always_include": (), "hybrid": True,
            "model": "gpt-4o"}
SWEEP_KS = (1, 2, 3, 5, 8, 10, 15, 20)
LABELS = {"similarity": "similarity", "expansion": "category expansion", "always": "always included",
          "fallback": "fallback (all tools)"}
SECRET = "sk-test-Zq8vXw3LmN0pRt5Yu2Kb9HgJ"


@pytest.fixture
def store(tmp_path, monkeypatch) -> Path:
    """A fresh data dir, no Chroma server, no OpenAI key or base URL from the environment."""
    monkeypatch.setenv("CTXLAB_DATA_DIR", str(tmp_path))
    for var in ("CTXLAB_CHROMA_HOST", "OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.chdir(ROOT)
    return tmp_path


def _open(provider: str | None = "hash", catalog: str | None = "sample", **state: Any) -> AppTest:
    """The page after its first run (the provider chosen through its widget key before that run;
    the sample catalog picked, as a user would, unless ``catalog`` is None: the page's default)."""
    at = AppTest.from_file(PAGE, default_timeout=APP_TIMEOUT)
    if provider:
        at.session_state["tr_provider"] = provider
    if catalog:
        state = {"tr_catalog": catalog, "tr_catalog_chosen": True, **state}
    if provider == "hash":  # the word-hash fake scores lower than the model the default threshold is tuned for
        state = {"tr_threshold": HASH_THRESHOLD, **state}
    for key, value in state.items():
        at.session_state[key] = value
    at.run()
    assert not at.exception, at.exception
    return at


@pytest.fixture
def app(store) -> AppTest:
    return _open()


def _engine(provider: str = "hash", catalog: ToolCatalog | None = None) -> ToolIndex:
    """The engine's own index of the same catalog in the same data dir."""
    index = ToolIndex(catalog or ToolCatalog.load(CATALOG), provider)
    index.build()
    return index


def _select(query: str = QUERY, provider: str = "hash", catalog: ToolCatalog | None = None, **changes: Any):
    return _engine(provider, catalog).select(query, **{**DEFAULTS, **changes})





def _sent(at: AppTest):
    """The table of the tools retrieval sends (AppTest does not expose a dataframe's key)."""
    return next(d.value for d in at.dataframe if "why" in d.value.columns)


def _catalog_table(at: AppTest):
    return next(d.value for d in at.dataframe if "description" in d.value.columns)


def _charts(at: AppTest) -> list[dict]:
    return [json.loads(c.proto.spec) for c in at.get("plotly_chart")]


def _bars(at: AppTest) -> dict:
    return next(c for c in _charts(at) if c["layout"].get("xaxis", {}).get("title", {}).get("text") == "cosine similarity")


def _status(at: AppTest) -> str:
    """The index status line, without Markdown escapes."""
    return next(c.value for c in at.caption if c.value.startswith("Index:")).replace("\\", "")


def _assert_shows(at: AppTest, sel) -> None:
    """The page shows exactly the engine's selection: tools, reasons, similarities, tokens."""
    table = _sent(at)
    assert list(table["name"]) == list(sel.names)
    assert list(table["why"]) == [LABELS[t.reason] for t in sel.tools]
    assert metric(at, "Tools sent") == f"{len(sel.tools)} of 42"
    assert metric(at, "Tool tokens, all") == f"{sel.tokens_all:,}"
    assert metric(at, "Tool tokens, selected") == f"{sel.tokens_selected:,}"
    assert metric(at, "Tokens saved") == f"{sel.tokens_all - sel.tokens_selected:,}"
    expected = {(t.name, t.reason): t.similarity for t in sel.tools
                if t.similarity is not None and t.reason != "fallback"}  # an unsure "send all" draws no bars
    if not expected:
        assert not [c for c in _charts(at) if c["layout"].get("xaxis", {}).get("title", {}).get("text")
                    == "cosine similarity"]
        return
    bars = _bars(at)
    shown = {(name, trace["name"]): x for trace in bars["data"] for name, x in zip(trace["y"], trace["x"])}
    assert shown.keys() == expected.keys()
    assert all(shown[k] == pytest.approx(v, abs=1e-6) for k, v in expected.items())


# ---------------------------------------------------------------- first screen


def test_first_screen_sends_what_the_local_model_selects(store, shared_tool_cache, monkeypatch):
    monkeypatch.setenv("CTXLAB_CACHE_DIR", str(shared_tool_cache))  # the sample's MiniLM index, built once per run
    at = _open(provider=None)  # the default: auto, which picks the local all-MiniLM-L6-v2 for an English catalog
    assert at.radio(key="tr_provider").value == "auto"
    sel = _select(provider="local", threshold=DEFAULT_THRESHOLD)
    assert 0 < len(sel.tools) < 42 and not sel.warnings and sel.confident
    _assert_shows(at, sel)
    assert sel.tokens_selected < sel.tokens_all
    assert [s["x0"] for s in _bars(at)["layout"]["shapes"]] == [DEFAULT_THRESHOLD]  # the threshold is drawn
    status = _status(at)
    assert "model all-MiniLM-L6-v2-onnx-int8, 42 tools stored (42 in the catalog)" in status and "built 20" in status
    assert list(_catalog_table(at)["name"]) == list(ToolCatalog.load(CATALOG).names)
    assert not at.warning and not at.error
    # the hash provider, picked by its widget key, gives its own index and its own selection
    at.slider(key="tr_threshold").set_value(HASH_THRESHOLD)
    at.radio(key="tr_provider").set_value("hash").run()
    assert "model hash-256" in _status(at)
    _assert_shows(at, _select())


def test_the_catalog_table_lists_every_tool_with_its_token_cost(app):
    catalog = ToolCatalog.load(CATALOG)
    table = _catalog_table(app)
    assert list(table["name"]) == list(catalog.names)
    assert list(table["category"]) == [t.category for t in catalog.tools]
    assert list(table["tokens"]) == [catalog.token_costs()[n] for n in catalog.names]
    assert set(table[table["sent"]]["name"]) == set(_select().names)
    _assert_shows(app, _select())


# ---------------------------------------------------------------- controls

CONTROLS = [  # (settings first, widget key, value, what the engine gets)
    ({"tr_threshold": 0.1, "tr_expand": False}, "tr_top_k", 2, {"top_k": 2}),
    ({"tr_expand": False}, "tr_threshold", 0.1, {"threshold": 0.1}),
    ({}, "tr_expand", False, {"expand_categories": False}),
    ({}, "tr_hybrid", False, {"hybrid": False}),
    ({}, "tr_always", ["get_customer", "enter_contest"], {"always_include": ("get_customer", "enter_contest")}),
]
ENGINE_NAMES = {"tr_threshold": "threshold", "tr_expand": "expand_categories", "tr_top_k": "top_k"}





@pytest.mark.parametrize("first, key, value, engine", CONTROLS, ids=[c[1] for c in CONTROLS])
def test_each_control_changes_the_selection_like_the_engine(app, first, key, value, engine):
    for k, v in first.items():
        set_widget(app, k, v)
    base = {ENGINE_NAMES[k]: v for k, v in first.items()}
    before = _select(**base)
    _assert_shows(app, before)
    set_widget(app, key, value)
    after = _select(**{**base, **engine})
    assert (after.names, after.tokens_selected) != (before.names, before.tokens_selected)  # the control matters
    _assert_shows(app, after)


def test_always_included_tools_are_marked(app):
    set_widget(app, "tr_always", ["get_customer"])
    table = _sent(app)
    assert table[table["name"] == "get_customer"]["why"].item() == "always included"
    assert any(t["name"] == "always" and t["y"] == ["get_customer"] for t in _bars(app)["data"])
    expanded = table[table["why"] == "category expansion"]
    assert len(expanded) and {t["name"] for t in _bars(app)["data"]} == {"similarity", "expansion", "always"}


@pytest.mark.parametrize("policy, sent", [("all", 42), ("none", 0)])
def test_a_threshold_no_tool_reaches_makes_the_page_unsure_and_sends_the_users_choice(app, policy, sent):
    set_widget(app, "tr_on_no_match", policy)
    set_widget(app, "tr_threshold", 0.9)
    sel = _select(threshold=0.9, on_no_match=policy)
    assert sel.fallback == "no_match" and len(sel.tools) == sent
    assert metric(app, "Tools sent") == f"{sent} of 42"
    if sent:
        assert list(_sent(app)["name"]) == list(sel.names)
    warning = app.warning[0].value.replace("\\", "")
    assert warning.startswith("Unsure: ") and sel.unsure_reason in warning and "your choice" in warning


def test_the_query_can_come_from_the_conversations_newest_user_message(app):
    conv = ctxlab.load(CONVERSATION)
    newest, earlier = conversation_query(conv)
    app.radio(key="tr_query_source").set_value("conversation").run()
    assert not app.exception, app.exception
    assert app.code[0].value == newest and newest.startswith("Ugh, what a shame")
    _assert_shows(app, _select(newest, context=earlier))
    # 16 words: more than the context rule's 12, so it is ranked alone, and the page says so
    assert any(c.value.replace("\\", "").startswith("Ranked alone: the newest message has 16 words")
               for c in app.caption)
    app.number_input(key="tr_prev_turns").set_value(1).run()
    both = query_from_conversation(conv, 1)
    assert app.code[0].value == both and "KC-482193" in both
    _assert_shows(app, _select(both))


def test_a_short_follow_up_is_ranked_with_the_earlier_user_message(app):
    messages = [{"role": "user", "content": "I want to return the blender from my last order and get a refund."},
                {"role": "assistant", "content": "Which order number?"},
                {"role": "user", "content": "ORD-104233, thanks"}]
    app.radio(key="source").set_value("paste").run()
    app.text_area(key="paste_text").input(json.dumps(messages)).run()
    app.button(key="use_paste").click().run()
    app.radio(key="tr_query_source").set_value("conversation").run()
    assert not app.exception, app.exception
    folded = _select("ORD-104233, thanks", context=[messages[0]["content"]])
    assert folded.context and app.code[0].value == "ORD-104233, thanks"
    _assert_shows(app, folded)
    assert any(c.value.replace("\\", "").startswith("Ranked with 1 earlier user message(s) folded in (weights 0.4)")
               for c in app.caption)
    app.checkbox(key="tr_context").uncheck().run()
    alone = _select("ORD-104233, thanks", context_rule="off")
    assert alone.names != folded.names
    _assert_shows(app, alone)


def test_free_text_query_changes_the_selection(app):
    app.text_input(key="tr_query").input("Which concerts are on next weekend, and are seats left?").run()
    sel = _select("Which concerts are on next weekend, and are seats left?")
    assert sel.names != _select().names
    _assert_shows(app, sel)


def test_an_empty_query_sends_every_tool_with_a_warning(app):
    app.text_input(key="tr_query").input("").run()
    assert metric(app, "Tools sent") == "42 of 42" and metric(app, "Tokens saved") == "0"
    assert "the query is empty" in app.warning[0].value
    assert len(_sent(app)) == 42


def test_the_catalog_defaults_to_the_conversations_own_tools_when_it_has_them(store):
    conv = ctxlab.load(CONVERSATION)
    at = _open(catalog=None)  # before: the 42-tool sample catalog, whatever the conversation
    assert at.radio(key="tr_catalog").value == "conversation"
    assert list(_catalog_table(at)["name"]) == [t.name for t in conv.tools]
    assert any(f"Retrieving from the conversation's own {len(conv.tools)} tools" in c.value.replace("\\", "")
               for c in at.caption)
    at.radio(key="tr_catalog").set_value("sample").run()  # the user's pick stays picked
    at.run()
    assert at.radio(key="tr_catalog").value == "sample" and len(_catalog_table(at)) == 42
    no_tools = _open(catalog=None, source="paste",
                     conversation_text=json.dumps({"messages": [{"role": "user", "content": "hi"}]}))
    assert no_tools.radio(key="tr_catalog").value == "sample"


def test_a_keyboard_mash_shows_the_unsure_warning_with_the_local_model(store, shared_tool_cache, monkeypatch):
    monkeypatch.setenv("CTXLAB_CACHE_DIR", str(shared_tool_cache))  # the sample's MiniLM index, built once per run
    at = _open(provider="local", tr_query="asdfgh qwerty", tr_on_no_match="none")
    sel = _select("asdfgh qwerty", provider="local", on_no_match="none", threshold=DEFAULT_THRESHOLD)
    assert not sel.confident and "floor" in sel.unsure_reason
    warning = at.warning[0].value.replace("\\", "")  # before: 11 tools, no warning
    assert warning.startswith("Unsure: ") and sel.unsure_reason in warning and "Sending no tools" in warning
    assert metric(at, "Tools sent") == "0 of 42"


def test_the_expansion_cap_is_a_control(app):
    set_widget(app, "tr_max_expansion", 0)
    sel = _select(max_expansion=0)
    assert "category expansion" not in set(_sent(app)["why"]) and sel.expansion_left_out > 0
    _assert_shows(app, sel)


def test_the_conversations_own_tools_can_be_the_catalog(app):
    conv = ctxlab.load(CONVERSATION)
    app.radio(key="tr_catalog").set_value("conversation").run()
    assert not app.exception, app.exception
    assert list(_catalog_table(app)["name"]) == [t.name for t in conv.tools]
    # the untyped query follows the conversation when the catalog is its own tools
    assert app.text_input(key="tr_query").value == query_from_conversation(conv, 0)
    sel = _select(query_from_conversation(conv, 0), catalog=ToolCatalog.from_tools(conv.tools, name="conversation-test"))
    assert list(_sent(app)["name"]) == list(sel.names)
    assert metric(app, "Tools sent") == f"{len(sel.tools)} of {len(conv.tools)}"
    assert metric(app, "Tool tokens, selected") == f"{sel.tokens_selected:,}"


# ---------------------------------------------------------------- index


def test_rebuild_restores_an_index_that_lost_tools(app):
    assert "42 tools stored" in _status(app)
    damaged = ToolIndex(ToolCatalog.load(CATALOG), "hash")
    damaged.collection.delete(ids=["get_order", "create_refund"])
    app.run()
    assert "40 tools stored" in _status(app)
    app.button(key="tr_rebuild").click().run()
    assert not app.exception, app.exception
    assert "42 tools stored" in _status(app)
    assert app.success[0].value.startswith("Rebuilt: embedded 42 tools")
    bar = app.get("progress")[0]
    assert bar.proto.value == 100 and "42/42" in bar.proto.text
    _assert_shows(app, _select())


# ---------------------------------------------------------------- sweep


def test_the_sweep_chart_appears_after_the_button_with_the_engines_recall(app):
    assert not [c for c in _charts(app) if c["layout"].get("xaxis", {}).get("title", {}).get("text") == "k"]
    app.button(key="tr_sweep").click().run()
    assert not app.exception, app.exception
    charts = {c["layout"]["xaxis"]["title"]["text"]: c for c in _charts(app)}
    index, queries = _engine(), load_queries(QUERIES)
    figures = evaluate(index, queries, ks=SWEEP_KS, hybrid=True)
    recall = charts["k"]["data"][0]
    assert recall["name"] == "recall@k" and recall["x"] == list(SWEEP_KS)
    assert recall["y"] == [figures[f"recall@{k}"] for k in SWEEP_KS]
    by_threshold = sweep(index, queries, ks=(5,), thresholds=(0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6),
                         expand_categories=True)
    assert charts["threshold"]["data"][0]["y"] == [r["tokens_selected_mean"] for r in by_threshold]
    assert "68 queries from tool_queries_ecommerce.jsonl" in " ".join(c.value for c in app.caption).replace("\\", "")


def test_an_uploaded_query_set_is_checked_by_the_engine(app):
    app.radio(key="tr_queries").set_value("upload").run()
    bad = b'{"query": "refund my order", "gold_tools": ["create_refund"]}\n{"query": "<b>x</b>", "gold_tools": []}\n'
    app.file_uploader(key="tr_queries_upload").set_value(("q.jsonl", bad, "application/jsonl")).run()
    app.button(key="tr_sweep").click().run()
    assert not app.exception, app.exception
    err = app.error[0].value
    assert "queries\\[1\\]" in err and "'gold\\_tools' must be a non\\-empty list" in err  # the engine's words, escaped
    good = b'{"query": "refund my order ORD-1", "gold_tools": ["create_refund"]}\n'
    app.file_uploader(key="tr_queries_upload").set_value(("q.jsonl", good, "application/jsonl")).run()
    app.button(key="tr_sweep").click().run()
    recall = next(c for c in _charts(app) if c["layout"]["xaxis"]["title"]["text"] == "k")["data"][0]["y"]
    expected = evaluate(_engine(), [{"query": "refund my order ORD-1", "gold_tools": ["create_refund"]}], ks=SWEEP_KS)
    assert recall == [expected[f"recall@{k}"] for k in SWEEP_KS]


# ---------------------------------------------------------------- budget


def _tool_bar(at: AppTest) -> int:
    """The Strategy Lab's "tool definitions" bar (before the strategy)."""
    bars = next(c for c in _charts(at) if any(t.get("name") == "tool definitions" for t in c["data"]))
    return next(t["x"][0] for t in bars["data"] if t["name"] == "tool definitions")


def _budget_notes(at: AppTest) -> list[str]:
    return [e.value.replace("\\", "") for e in (*at.caption, *at.warning) if "Tool definitions in the budget" in e.value]


def test_the_budget_checkbox_puts_the_selected_tools_into_the_strategy_labs_budget(store):
    conv = ctxlab.load(CONVERSATION)
    all_conv_tools = ctxlab.tokens.TokenCounter("gpt-4o").tools(conv.tools)
    own = ToolCatalog.from_tools(conv.tools, name="conversation-test")
    query = query_from_conversation(conv, 0)  # the own catalog's query follows the conversation
    sel = _select(query, catalog=own)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=APP_TIMEOUT)  # the whole app: both pages in one session
    at.session_state["tr_provider"] = "hash"
    at.session_state["tr_threshold"] = HASH_THRESHOLD
    at.run()
    assert at.title[0].value == "Strategy Lab" and _tool_bar(at) == all_conv_tools
    assert _budget_notes(at) == [f"Tool definitions in the budget: all the conversation's own 10 tools "
                                 f"({all_conv_tools:,} tokens)."]
    at.switch_page("pages/tool_retrieval.py").run()
    assert not at.exception, at.exception
    assert at.title[0].value == "Tool Retrieval" and at.radio(key="tr_catalog").value == "conversation"
    assert at.session_state["tool_tokens_override"] is None
    assert any("Catalog feeding the budget: the conversation's own 10 tools" in c.value.replace("\\", "")
               for c in at.caption if f"{sel.tokens_selected:,}" in c.value)
    at.checkbox(key="tool_use_selection").check().run()
    assert at.session_state["tool_tokens_override"] == sel.tokens_selected < all_conv_tools  # never more
    assert not at.warning
    at.switch_page("pages/strategy_lab.py").run()
    assert not at.exception, at.exception
    assert _tool_bar(at) == sel.tokens_selected  # both halves of the context in one bar
    assert "from the conversation's own 10 tools" in _budget_notes(at)[0] and not at.warning
    at.switch_page("pages/tool_retrieval.py").run()
    assert at.checkbox(key="tool_use_selection").value is True
    set_widget(at, "tr_expand", False)  # the override follows the selection
    assert at.session_state["tool_tokens_override"] == _select(query, catalog=own, expand_categories=False).tokens_selected
    at.checkbox(key="tool_use_selection").uncheck().run()
    assert at.session_state["tool_tokens_override"] is None
    at.switch_page("pages/strategy_lab.py").run()
    assert _tool_bar(at) == all_conv_tools


def test_a_bigger_catalog_in_the_budget_says_it_raises_the_total(store):
    conv = ctxlab.load(CONVERSATION)
    all_conv_tools = ctxlab.tokens.TokenCounter("gpt-4o").tools(conv.tools)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=APP_TIMEOUT)
    at.session_state["tr_provider"] = "hash"
    at.session_state["tr_threshold"] = HASH_THRESHOLD
    at.run()
    at.switch_page("pages/tool_retrieval.py").run()
    at.radio(key="tr_catalog").set_value("sample").run()
    at.checkbox(key="tool_use_selection").check().run()
    sel = _select()
    assert sel.tokens_selected > all_conv_tools  # the case: 13,661 -> 15,390 on the Lab's total
    warning = at.warning[0].value.replace("\\", "")
    assert f"from {all_conv_tools:,} tokens (the conversation's own 10 tools) to {sel.tokens_selected:,}" in warning
    assert "sample catalog tools_ecommerce.json, 42 tools" in warning
    at.switch_page("pages/strategy_lab.py").run()
    assert _tool_bar(at) == sel.tokens_selected
    note = _budget_notes(at)[0]
    assert "sample catalog tools_ecommerce.json, 42 tools" in note and "not the conversation's" in note
    assert any(note == w.value.replace("\\", "") for w in at.warning)  # a warning, not a quiet caption
    at.session_state["source"] = "paste"
    at.session_state["conversation_text"] = json.dumps({"messages": [{"role": "user", "content": "hi"}],
                                                        "tools": json.loads(CONVERSATION.read_text())["tools"][:2]})
    at.run()  # another conversation: the old selection no longer counts
    assert "made for another conversation" in _budget_notes(at)[0]


# ---------------------------------------------------------------- bad and hostile input


def _upload(at: AppTest, data: bytes, name: str = "tools.json") -> None:
    at.radio(key="tr_catalog").set_value("upload").run()
    at.file_uploader(key="tr_catalog_upload").set_value((name, data, "application/json")).run()
    assert not at.exception, at.exception


def test_a_bad_upload_shows_the_engines_error(app):
    app.radio(key="tr_catalog").set_value("upload").run()
    assert "Upload a JSON tool list" in app.info[0].value
    _upload(app, b'[{"type": "function", "function": {"description": "no name"}}]')
    assert "a tool has no name" in app.error[0].value and "function.name" in app.error[0].value.replace("\\", "")
    assert not app.metric
    _upload(app, b'{"tools": [1, 2')
    assert "not JSON" in app.error[0].value or "JSON" in app.error[0].value
    assert not app.metric


EVIL = "<img src=x onerror=alert(1)><script>alert(2)</script> [click](http://evil.example)"


def _evil_tools() -> list[dict]:
    return [{"name": "lookup_order", "description": f"Look up an order. {EVIL}",
             "input_schema": {"type": "object", "properties": {"order_id": {"type": "string"}}}},
            {"name": "<b>bold</b>", "description": "Refund an order to the card it was paid with.",
             "input_schema": {"type": "object", "properties": {}}}]


def _assert_no_rendered_html(at: AppTest) -> None:
    for block in (*at.markdown, *at.caption, *at.warning, *at.error, *at.info, *at.sidebar.markdown):
        assert "<script>" not in block.value and "<img" not in block.value and "](http" not in block.value
        assert "<b>" not in block.value


def test_uploaded_tool_descriptions_with_html_are_shown_as_text(app):
    _upload(app, json.dumps(_evil_tools()).encode(), "anthropic_tools.json")
    app.text_input(key="tr_query").input("refund an order").run()
    table = _catalog_table(app)
    assert list(table["name"]) == ["lookup_order", "<b>bold</b>"]
    assert EVIL in table["description"][0]  # verbatim in a data grid, which renders text only
    assert "<b>bold</b>" in list(_sent(app)["name"])
    assert "&lt;b&gt;bold&lt;/b&gt;" in {y for t in _bars(app)["data"] for y in t["y"]}  # plotly shows it as text
    _assert_no_rendered_html(app)


def test_pasted_conversation_tools_with_html_are_shown_as_text(app):
    messages = {"messages": [{"role": "user", "content": "where is my order?"}], "tools": [
        {"type": "function", "function": {"name": t["name"], "description": t["description"],
                                          "parameters": t["input_schema"]}} for t in _evil_tools()]}
    app.radio(key="source").set_value("paste").run()
    app.text_area(key="paste_text").input(json.dumps(messages)).run()
    app.button(key="use_paste").click().run()
    app.radio(key="tr_catalog").set_value("conversation").run()
    assert not app.exception, app.exception
    assert EVIL in _catalog_table(app)["description"][0]
    _assert_no_rendered_html(app)


# ---------------------------------------------------------------- OpenAI key and provider failures


def _values(at: AppTest) -> Iterator[str]:
    """The text of every element on the page (protos), except the password field itself."""
    def walk(node: Any) -> Iterator[Any]:
        yield node
        for child in getattr(node, "children", {}).values():
            yield from walk(child)
    for node in walk(at._tree):
        if getattr(node, "key", None) == "tr_openai_key" or not hasattr(node, "proto"):
            continue
        yield str(node.proto)


def _assert_secret_hidden(at: AppTest, secret: str, widget_may_hold: bool) -> None:
    assert not [v for v in _values(at) if secret in v]
    state = at.session_state.to_dict()
    assert state  # the page's state is there to be searched
    holders = [k for k, v in state.items() if secret in repr(v)]
    assert holders == (["tr_openai_key"] if widget_may_hold else [])


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_openai_needs_a_key_and_a_typed_key_is_never_shown(app, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", f"http://127.0.0.1:{_closed_port()}/v1")
    assert app.radio(key="tr_provider").options == ["auto (by the catalog's language: MiniLM for English, a "
                                                    "multilingual model for Chinese)",
                                                    "local (all-MiniLM-L6-v2, offline)",
                                                    "use (USE multilingual, offline; Chinese, mixed)",
                                                    "multilingual (multilingual-e5-small, offline; Chinese, slower)",
                                                    "hash (word-hash fake, instant)"]
    app.text_input(key="tr_openai_key").input(SECRET).run()
    assert "openai (text-embedding-3-small)" in app.radio(key="tr_provider").options
    app.radio(key="tr_provider").set_value("openai").run()
    assert not app.exception, app.exception
    # a cold index: the engine's fallback, every tool, with its warning
    assert metric(app, "Tools sent") == "42 of 42"
    assert "the tool index is empty" in app.warning[0].value
    app.button(key="tr_rebuild").click().run()  # the server is unreachable: the engine's error, shown escaped
    assert not app.exception, app.exception
    assert "the embeddings request failed" in app.error[0].value and "APIConnectionError" in app.error[0].value
    assert metric(app, "Tools sent") == "42 of 42"
    _assert_secret_hidden(app, SECRET, widget_may_hold=True)
    _assert_no_rendered_html(app)


def test_openai_through_a_server_and_a_failing_query_falls_back_to_all_tools(app, monkeypatch):
    with FakeOpenAI(dimensions=8) as api:
        monkeypatch.setenv("OPENAI_BASE_URL", api.base_url)
        app.text_input(key="tr_openai_key").input(SECRET).run()
        app.radio(key="tr_provider").set_value("openai").run()
        app.button(key="tr_rebuild").click().run()
        assert not app.exception, app.exception
        assert "model openai:text-embedding-3-small, 42 tools stored" in _status(app)
        assert not app.warning and int(metric(app, "Tools sent").split()[0]) < 42
        assert api.requests and all(r.bearer == SECRET for r in api.requests)  # the typed key is what was sent
        api.fail_next(401)  # the real API quotes the key back in this error
        app.text_input(key="tr_query").input("cancel my ticket for the concert").run()
        assert not app.exception, app.exception
        assert metric(app, "Tools sent") == "42 of 42"
        warning = app.warning[0].value
        assert "tool retrieval failed" in warning and "sending all 42 tools" in warning
        _assert_secret_hidden(app, SECRET, widget_may_hold=True)


def test_a_key_from_the_environment_is_used_and_never_shown(store, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.setenv("OPENAI_BASE_URL", f"http://127.0.0.1:{_closed_port()}/v1")
    at = _open()
    assert at.text_input(key="tr_openai_key").value == ""
    at.radio(key="tr_provider").set_value("openai").run()
    at.button(key="tr_rebuild").click().run()
    assert not at.exception, at.exception
    assert "the embeddings request failed" in at.error[0].value
    _assert_secret_hidden(at, SECRET, widget_may_hold=False)


def test_the_follow_up_controls_and_captions_in_chinese(monkeypatch, store):
    """The conversation query's fold checkbox and its caption speak Chinese on the Chinese page
    (the default Chinese sample conversation; the hash provider, instant)."""
    from ctxlab import i18n
    from ctxlab.pricing import load_prices
    from .english_left import english_left, report
    import re
    # select.py's unsure reason, English for now (another part translates engine text); harmless once it is not
    unsure = re.compile(r"no tool reached the threshold [\d.]+ \(best score [\d.]+\)")
    at = AppTest.from_file(PAGE, default_timeout=APP_TIMEOUT)
    at.query_params["lang"] = "zh"
    at.session_state["tr_provider"] = "hash"
    at.run()
    try:
        i18n.use("zh")  # AppTest formats the radio's options in this thread
        at.radio(key="tr_query_source").set_value("conversation").run()
        assert not at.exception, at.exception
        assert at.checkbox(key="tr_context").label == "结合之前的消息理解简短消息"
        assert any(c.value.startswith(("排序时并入了", "单独排序")) for c in at.caption)
        left = english_left(at, allow=("auto", "local", "use", "multilingual", "hash", "openai"),
                            engine_text={load_prices().get("gpt-4o").source, unsure})
        assert not left, report(left)
    finally:
        i18n.use("en")


REFUND_ZH = "我要退货退款，订单号 YJ20261108-4471。"
RETURN_OR_REFUND = {"issue_refund", "create_return_request"}


def test_chinese_on_the_chinese_sample_picks_the_multilingual_model_and_finds_the_refund_tool_first(store):
    """in 中文 on zh_support_agent.json the page embedded with the English MiniLM, so a refund request
    came back "unsure" with all 40 tools. The default provider (auto) now picks by the catalog's language."""
    from ctxlab import i18n
    at = AppTest.from_file(PAGE, default_timeout=APP_TIMEOUT)
    at.query_params["lang"] = "zh"
    at.run()
    try:
        assert not at.exception, at.exception
        assert at.session_state["sample_name"] == "zh_support_agent.json"
        assert at.radio(key="tr_provider").value == "auto" and at.radio(key="tr_catalog").value == "conversation"
        i18n.use("zh")
        at.text_input(key="tr_query").input(REFUND_ZH).run()
        assert not at.exception, at.exception
        status = next(c.value for c in at.caption if c.value.startswith("索引")).replace("\\", "")
        assert "multilingual-e5" in status, status
        assert at.slider(key="tr_threshold").value == 0.83  # e5's tuned threshold, not MiniLM's 0.26
        sent = _sent(at)
        assert sent["name"][0] in RETURN_OR_REFUND and len(sent) < 40, list(sent["name"])
        assert not [w for w in at.warning if "没有" in w.value and "40" in w.value]  # not "unsure: all 40 tools"
    finally:
        i18n.use("en")


def test_switching_to_chinese_switches_the_sample_catalog_and_the_example_query(store):
    """switching to 中文 kept the English sample conversation and the English example query."""
    from ctxlab import i18n
    at = _open(provider="hash", catalog="sample")
    assert at.session_state["sample_name"] == "ecommerce_refund.json" and at.text_input(key="tr_query").value == QUERY
    try:
        at.button_group(key="lang").set_value("zh").run()  # the sidebar's 语言 switch, its callback included
        assert not at.exception, at.exception  # (the widgets were drawn in English: the thread speaks it this run)
        i18n.use("zh")
        assert at.session_state["sample_name"] == "zh_support_agent.json"
        assert at.text_input(key="tr_query").value == REFUND_ZH
        assert len(_catalog_table(at)) == 40  # the Chinese shop's catalog
    finally:
        i18n.use("en")
