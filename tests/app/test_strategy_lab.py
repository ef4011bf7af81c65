"""The Strategy Lab in Streamlit's AppTest: the first screen explains itself and matches the
engine's own plan; every strategy control re-plans; filters, pins, the broken-pair warning of the
LangChain baseline, the replay slider and the exports do what a user expects; pasted HTML stays text."""
from __future__ import annotations

import json

import pytest
import yaml
from streamlit.testing.v1 import AppTest

import ctxlab
from ctxlab.replay import replay
from ctxlab.configs.lab_config import read_config
from ctxlab.strategies import STRATEGIES, Budget, apply_strategy, get_strategy, make_view, prepare
from ctxlab.tokens import TokenCounter

from ..conftest import ROOT, SAMPLES
from .helpers import column_config, metric, open_page, open_page_without_conversation, set_widget

PAGE = str(ROOT / "pages" / "strategy_lab.py")
SAMPLE = SAMPLES / "ecommerce_refund.json"
LIMIT, RESERVE, MODEL = 16_000, 0.15, "gpt-4o"








def _plan(name="tool_rounds", /, conv=None, limit=LIMIT, pins=(), documented=False, **params):
    """The engine's own plan for what the page shows by default (sidebar model, limit and reserve;
    the parameters scaled to that budget unless ``documented``, then ``params``)."""
    conv = conv or ctxlab.load(SAMPLE)
    view, budget = prepare(conv, MODEL, context_limit=limit, reserve=RESERVE, pins=pins)
    base = {} if documented else STRATEGIES[name].scaled_defaults(budget)
    return get_strategy(name, **{**base, **params}).apply(view, budget)


def _assert_metrics_match(at: AppTest, plan) -> None:
    assert metric(at, "Tokens before") == f"{plan.tokens_before:,}"
    assert metric(at, "Tokens after") == f"{plan.tokens_after:,}"
    assert metric(at, "Messages removed") == f"{plan.removed:,}"
    assert metric(at, "Saved") == f"{plan.saved / plan.tokens_before:.0%}"


def _table(at: AppTest):
    """The message timeline table (AppTest does not expose a dataframe's key)."""
    return next(d.value for d in at.dataframe if "reason" in d.value.columns)


def _turn_table(at: AppTest):
    """The table of the context the model saw at the chosen replay turn."""
    return next(d.value for d in at.dataframe if "reason" not in d.value.columns and "content" in d.value.columns)


def _paste(at: AppTest, messages: list[dict]) -> None:
    at.radio(key="source").set_value("paste").run()
    at.text_area(key="paste_text").input(json.dumps(messages)).run()
    at.button(key="use_paste").click().run()
    assert not at.exception, at.exception


def _tab(at: AppTest, label: str) -> None:
    at.session_state["lab_tab"] = label
    at.run()
    assert not at.exception, at.exception


# ---------------------------------------------------------------- first screen


def test_first_screen_explains_the_default_sample_under_tool_rounds(app):
    plan = _plan()
    assert app.selectbox(key="lab_strategy").value == "tool_rounds"
    sentence = app.markdown[0].value
    assert sentence.startswith("You are looking at the sample ecommerce")
    assert "Newest tool rounds" in sentence and f"{plan.tokens_after:,} tokens" in sentence
    assert sentence.count(". ") == 0 and sentence.endswith(".")  # one sentence
    _assert_metrics_match(app, plan)
    assert metric(app, "Facts retained") == f"{plan.retention:.0%}"
    assert "passes the OpenAI and Anthropic rules" in app.success[0].value
    assert not app.error and not app.warning
    assert len(app.get("plotly_chart")) == 2  # token bars before/after, and the message timeline
    table = _table(app)
    assert len(table) == len(plan.actions)
    assert list(table["reason"]) == list(plan.reasons)


def test_without_a_conversation_the_page_says_what_to_do(monkeypatch):
    at = open_page_without_conversation("strategy_lab.py", monkeypatch)
    assert not at.exception
    assert "Pick a sample" in at.info[0].value
    assert not at.metric


# ---------------------------------------------------------------- controls





CONTROLS = [  # (sidebar limit, strategy, controls set first, parameter, value typed, what the engine gets)
    (6000, "sliding_window", {}, "max_tokens", "1500", 1500),
    (6000, "sliding_window", {}, "buffer_ratio", 0.8, 0.8),
    (6000, "turn_safe", {}, "last_n", 6, 6),
    (30000, "summarize", {}, "trigger_messages", 30, 30),
    (100000, "summarize", {"trigger_messages": 20}, "keep_recent", 3, 3),
    (100000, "summarize", {"trigger_messages": 20, "keep_recent": 10}, "target_ratio", 0.05, 0.05),
    (100000, "summarize", {"trigger_messages": 100, "keep_recent": 3}, "trigger_ratio", 0.1, 0.1),
    (6000, "summarize", {}, "max_summary_tokens", 60, 60),
    (6000, "tool_rounds", {}, "keep_rounds", 3, 3),
    (16000, "key_messages", {}, "recent", 4, 4),
    (16000, "key_messages", {"recent": 6}, "key_tools", "get_order, issue_refund", ("get_order", "issue_refund")),
    (16000, "key_messages", {"recent": 6}, "max_key", 0, 0),
    (6000, "clear_tool_results", {}, "trigger_tokens", 50_000, 50_000),
    (6000, "clear_tool_results", {"trigger_tokens": 0}, "keep", 1, 1),
    (6000, "clear_tool_results", {"trigger_tokens": 0}, "clear_at_least", 100000, 100000),
    (6000, "clear_tool_results", {"trigger_tokens": 0}, "exclude_tools", "get_order", ("get_order",)),
    (6000, "clear_tool_results", {"trigger_tokens": 0}, "clear_tool_inputs", True, True),
    (6000, "middle_out", {}, "preserve_start", 0, 0),
    (6000, "middle_out", {}, "preserve_end", 3, 3),
    (30000, "middle_out", {}, "target_ratio", 0.1, 0.1),
    (6000, "oldest_first", {}, "min_messages", 18, 18),
    (6000, "oldest_first", {}, "role_weight", 10.0, 10.0),
    (6000, "oldest_first", {}, "age_weight", 0.0, 0.0),
    (6000, "oldest_first", {}, "size_weight", 5.0, 5.0),
    (6000, "hybrid", {}, "recent_turns", 1, 1),
    (6000, "langchain_trim", {}, "start_on", "none", "none"),
    (6000, "langchain_trim", {}, "end_on", "human", "human"),
    (6000, "langchain_trim", {}, "include_system", False, False),
    (6000, "langchain_trim", {}, "allow_partial", True, True),
    (6000, "langchain_trim", {}, "max_tokens", "1000", 1000),
    (6000, "langchain_trim", {"start_on": "none", "include_system": False}, "strategy", "first", "first"),
]
# summarize.summarizer is not here: "extractive" is the only summarizer registered offline.


def _assert_table_matches(at: AppTest, plan) -> None:
    table = _table(at)
    originals = table[table["role"] != "summary"]
    assert list(originals["reason"]) == list(plan.reasons)


@pytest.mark.parametrize("limit, strategy, first, param, value, engine_value", CONTROLS,
                         ids=[f"{c[1]}.{c[3]}" for c in CONTROLS])
def test_each_control_replans_like_the_engine(app, limit, strategy, first, param, value, engine_value):
    app.sidebar.number_input(key="max_tokens").set_value(limit).run()
    app.selectbox(key="lab_strategy").set_value(strategy).run()
    for key, v in first.items():
        set_widget(app, f"lab_{strategy}_{key}", v)
    default = _plan(strategy, limit=limit, **first)
    _assert_metrics_match(app, default)
    set_widget(app, f"lab_{strategy}_{param}", value)
    changed = _plan(strategy, limit=limit, **first, **{param: engine_value})
    assert (changed.tokens_after, changed.reasons) != (default.tokens_after, default.reasons)  # the control matters
    _assert_metrics_match(app, changed)
    _assert_table_matches(app, changed)


def test_keep_rounds_changes_tokens_after_at_once(app):
    before = metric(app, "Tokens after")
    app.number_input(key="lab_tool_rounds_keep_rounds").set_value(4).run()
    after = metric(app, "Tokens after")
    assert after != before and after == f"{_plan(keep_rounds=4).tokens_after:,}"
    assert "kept" in " ".join(_table(app)["action"])


def test_the_sidebar_budget_and_model_replan(app):
    app.sidebar.number_input(key="max_tokens").set_value(3000).run()
    app.selectbox(key="lab_strategy").set_value("sliding_window").run()
    _assert_metrics_match(app, _plan("sliding_window", limit=3000))
    app.sidebar.selectbox(key="model").set_value("gpt-4").run()
    conv = ctxlab.load(SAMPLE)
    plan = apply_strategy(conv, "sliding_window", model="gpt-4", context_limit=3000, reserve=RESERVE)
    _assert_metrics_match(app, plan)  # gpt-4's tokenizer, the limit the user typed


# ---------------------------------------------------------------- a strategy that does nothing

IDLE_BY_DEFAULT = {"turn_safe": "last_n", "key_messages": "recent", "clear_tool_results": "trigger_tokens"}


def _scaled(name: str, limit: int = LIMIT) -> dict:
    conv = ctxlab.load(SAMPLE)
    return STRATEGIES[name].scaled_defaults(prepare(conv, MODEL, context_limit=limit, reserve=RESERVE)[1])


@pytest.mark.parametrize("name, param", IDLE_BY_DEFAULT.items())
def test_defaults_scaled_to_the_budget_come_first_and_make_the_strategy_act(app, name, param):
    app.selectbox(key="lab_strategy").set_value(name).run()
    assert app.radio(key="lab_defaults").value == "scaled"
    assert _widget_value(app, f"lab_{name}_{param}") == _scaled(name)[param]
    plan = _plan(name)
    assert plan.idle is None and plan.tokens_after < plan.tokens_before
    _assert_metrics_match(app, plan)
    assert not any("did not act" in i.value for i in app.info)


@pytest.mark.parametrize("name, param", IDLE_BY_DEFAULT.items())
def test_with_the_documented_defaults_the_page_says_the_strategy_did_not_act_and_why(app, name, param):
    app.selectbox(key="lab_strategy").set_value(name).run()
    app.radio(key="lab_defaults").set_value("documented").run()
    documented = {s["name"]: s["default"] for s in STRATEGIES[name].schema()}
    assert _widget_value(app, f"lab_{name}_{param}") == documented[param]  # 100 messages, 50, 100,000 tokens
    plan = _plan(name, documented=True)
    assert plan.idle
    # First thing under the numbers: it did nothing, and why, in the strategy's own terms.
    first = app.info[0].value.replace("\\", "")
    assert first.startswith(f"The strategy did not act: {plan.idle.rstrip('.')}") and param in first
    assert "scaled to this budget" in first
    assert "it did not act, so it sends" in app.markdown[0].value
    assert not app.success  # no green "passes the rules" box for a strategy that did nothing
    app.radio(key="lab_defaults").set_value("scaled").run()
    assert _widget_value(app, f"lab_{name}_{param}") == _scaled(name)[param]
    assert not any("did not act" in i.value for i in app.info)


def test_a_new_limit_rescales_untouched_values_and_keeps_the_ones_the_user_set(app):
    app.selectbox(key="lab_strategy").set_value("turn_safe").run()
    app.sidebar.number_input(key="max_tokens").set_value(60_000).run()
    assert _widget_value(app, "lab_turn_safe_last_n") == _scaled("turn_safe", 60_000)["last_n"]
    set_widget(app, "lab_turn_safe_last_n", 9)
    app.sidebar.number_input(key="max_tokens").set_value(6_000).run()
    assert _widget_value(app, "lab_turn_safe_last_n") == 9
    _assert_metrics_match(app, _plan("turn_safe", limit=6_000, last_n=9))


def _widget_value(at: AppTest, key: str):
    for kind in ("slider", "number_input", "text_input", "selectbox", "checkbox"):
        found = [w for w in getattr(at, kind) if w.key == key]
        if found:
            return found[0].value
    raise AssertionError(f"no widget {key}")


def test_an_invalid_parameter_combination_shows_the_engines_error(app):
    app.selectbox(key="lab_strategy").set_value("langchain_trim").run()
    app.selectbox(key="lab_langchain_trim_strategy").set_value("first").run()
    assert not app.exception
    assert "start_on and include_system only with strategy='last'" in app.error[0].value.replace("\\", "")
    assert not app.metric


# ---------------------------------------------------------------- timeline, filters, pins


def test_filters_by_action_and_role(app):
    plan = _plan()
    app.multiselect(key="lab_filter_actions").set_value(["drop"]).run()
    table = _table(app)
    assert len(table) == plan.count("drop") > 0
    assert set(table["action"]) == {"dropped"}
    app.multiselect(key="lab_filter_roles").set_value(["tool"]).run()
    table = _table(app)
    roles = [m.role for m in ctxlab.load(SAMPLE).messages]
    expected = [i for i, (a, r) in enumerate(zip(plan.actions, roles)) if a == "drop" and r == "tool"]
    assert list(table["#"]) == [f"{i:,}" for i in expected]
    app.multiselect(key="lab_filter_actions").set_value([]).run()
    assert set(_table(app)["role"]) == {"tool"}


def test_inserted_summaries_show_where_they_go_and_open(app):
    app.selectbox(key="lab_strategy").set_value("summarize").run()
    set_widget(app, "lab_summarize_keep_recent", 3)
    table = _table(app)
    summaries = table[table["role"] == "summary"]
    assert len(summaries) == 1
    at_row = summaries.index[0]
    # after the messages it stands for, before the first message kept as is: where the model reads it
    assert table["action"][at_row - 1] == "summarized" and table["action"][at_row + 1] == "kept"
    app.multiselect(key="lab_filter_actions").set_value(["insert"]).run()
    assert list(_table(app)["role"]) == ["summary"]
    app.selectbox(key="lab_open").set_value("summary 1").run()
    assert any(c.value.startswith("Summary of earlier conversation") for c in app.code)


def test_opening_a_message_shows_its_full_content(app):
    conv = ctxlab.load(SAMPLE)
    app.selectbox(key="lab_open").set_value(3).run()
    assert app.code[0].value == conv.messages[3].text  # the whole tool result, not the table's preview
    assert "dropped" in app.text[0].value or "drop" in app.text[0].value
    app.selectbox(key="lab_open").set_value(2).run()
    assert any(j.value and "find_customer" in str(j.value) for j in app.json)


def test_pinning_keeps_a_message_the_strategy_would_drop(app):
    assert _plan().actions[3] == "drop"
    app.multiselect(key="pins").set_value([3]).run()
    pinned = _plan(pins=[3])
    assert pinned.actions[3] == "keep"
    table = _table(app)
    assert table["action"][3] == "kept" and "pinned" in table["reason"][3]
    _assert_metrics_match(app, pinned)


def test_a_strategy_that_ignores_pins_says_so(app):
    app.selectbox(key="lab_strategy").set_value("sliding_window").run()
    app.multiselect(key="pins").set_value([3]).run()
    assert _plan("sliding_window", pins=[3]).actions[3] == "drop"
    assert any("#3 not kept as is" in c.value and "does not honour pins" in c.value for c in app.caption)
    app.selectbox(key="lab_strategy").set_value("tool_rounds").run()
    assert not any("does not honour pins" in c.value for c in app.caption)


def test_the_pin_button_on_an_opened_message_pins_it(app):
    app.selectbox(key="lab_open").set_value(3).run()
    app.button(key="lab_pin_toggle").click().run()
    assert app.multiselect(key="pins").value == [3]
    assert _table(app)["action"][3] == "kept"
    app.button(key="lab_pin_toggle").click().run()
    assert app.multiselect(key="pins").value == []
    assert _table(app)["action"][3] == "dropped"


# ---------------------------------------------------------------- validity


def test_the_langchain_baseline_breaking_a_pair_is_shown_as_a_warning(app):
    app.sidebar.number_input(key="max_tokens").set_value(2000).run()
    app.selectbox(key="lab_strategy").set_value("langchain_trim").run()
    app.selectbox(key="lab_langchain_trim_start_on").set_value("none").run()
    plan = _plan("langchain_trim", limit=2000, start_on="none")
    assert plan.stats["finding_codes"] == ["orphan_tool_result"]
    warnings = [w.value.replace("\\", "") for w in app.warning]
    assert any("OpenAI would reject the result, orphan_tool_result" in w for w in warnings)
    assert any("Anthropic would reject the result, orphan_tool_result" in w for w in warnings)
    assert any("returned a history the providers reject" in w for w in warnings)
    assert not app.success
    app.selectbox(key="lab_strategy").set_value("tool_rounds").run()  # ctxlab's own strategy, same budget
    assert not any("orphan_tool_result" in w.value for w in app.warning)
    assert not _plan("tool_rounds", limit=2000).fits
    # Valid but over budget: said so first, and no green "all good" box under it.
    assert "The result does not fit" in app.warning[0].value and not app.success
    assert any("follows the OpenAI and Anthropic tool-call rules, but it does not fit the budget" in
               c.value.replace("\\", "") for c in app.caption)
    app.sidebar.number_input(key="max_tokens").set_value(3000).run()
    assert _plan("tool_rounds", limit=3000).fits
    assert "passes the OpenAI and Anthropic rules" in app.success[0].value
    over = _measures(limit=3000).replay.calls_over_limit  # the plan for the next call fits; earlier calls did not
    assert [w.value.startswith("On the call-by-call replay") for w in app.warning] == ([True] if over else [])


ORPHAN_INPUT = [  # a pasted conversation whose tool result (#3) answers no call
    {"role": "system", "content": "You help."}, {"role": "user", "content": "Where is order KC-1?"},
    {"role": "assistant", "content": "Let me look."},
    {"role": "tool", "tool_call_id": "call_9", "content": "status: shipped, carrier UPS, eta Friday. " * 60},
    {"role": "assistant", "content": "It shipped."}, {"role": "user", "content": "And KC-2?"},
    {"role": "assistant", "content": "Checking."}]


def _texts(elements) -> list[str]:
    return [e.value.replace("\\", "") for e in elements]


def test_an_invalid_pasted_input_is_reported_and_never_called_valid(app):
    """the page accepted a tool result answering no call and said the result passed."""
    _paste(app, ORPHAN_INPUT)
    app.selectbox(key="lab_strategy").set_value("none").run()
    warnings = _texts(app.warning)
    assert any("The input itself breaks the rules: OpenAI and Anthropic would reject it as it is" in w
               and "orphan_tool_result at message #3" in w for w in warnings), warnings
    assert any("still in the result" in w for w in warnings)
    assert not app.success


def test_a_strategy_that_happens_to_drop_the_broken_message_says_it_repaired_it_by_chance(app):
    _paste(app, ORPHAN_INPUT)
    app.sidebar.number_input(key="max_tokens").set_value(400).run()
    app.selectbox(key="lab_strategy").set_value("sliding_window").run()
    plan = _plan("sliding_window", conv=ctxlab.loads(json.dumps(ORPHAN_INPUT)), limit=400)
    assert plan.actions[3] == "drop" and plan.fits
    assert any("input itself breaks the rules" in w for w in _texts(app.warning))
    assert any("happened to repair 1 of them (orphan_tool_result at #3)" in i for i in _texts(app.info))
    assert not app.success  # a result that is valid only by chance is not "all good"


def test_the_action_column_shows_words_on_badges_wide_enough_for_them(app):
    """"droppec" (a 75-pixel column) and emoji that show as empty boxes."""
    table = next(d for d in app.dataframe if "reason" in d.value.columns)
    config = column_config(table)["action"]
    assert config["type_config"]["type"] == "multiselect"  # a coloured badge per word
    options = {o["value"]: o.get("color") for o in config["type_config"]["options"]}
    assert set(options) >= {"kept", "dropped", "summarized", "cleared", "truncated", "inserted summary"}
    assert len(set(options.values())) == len(options)  # one colour per action
    assert config["width"] >= 8 * len("inserted summary") + 30
    assert all(v.isascii() for v in table.value["action"])


def test_facts_lost_are_listed(app):
    conv = ctxlab.load(SAMPLES / "sql_agent.json")
    app.selectbox(key="sample_name").set_value("sql_agent.json").run()
    app.selectbox(key="lab_strategy").set_value("summarize").run()
    plan = _plan("summarize", conv=conv)
    assert plan.facts_lost
    assert metric(app, "Facts retained") == f"{plan.retention:.0%}"
    expander = next(e for e in app.expander if e.label.startswith("Facts lost"))
    assert [t.value for t in expander.text] == list(plan.facts_lost)


# ---------------------------------------------------------------- replay


def test_replay_slider_shows_the_prompt_of_each_model_call(app):
    conv = ctxlab.load(SAMPLE)
    counter = TokenCounter(MODEL)
    budget = Budget.for_model(MODEL, max_tokens=LIMIT, reserve=RESERVE, tools_tokens=counter.tools(conv.tools))
    strategy = get_strategy("tool_rounds", **STRATEGIES["tool_rounds"].scaled_defaults(budget))
    expected = replay(make_view(conv, counter=counter), strategy, budget)
    assert not [s for s in app.slider if s.key == "lab_call"]  # not computed until asked for
    _tab(app, "Replay call by call")
    assert app.get("plotly_chart")  # the heatmap is drawn
    calls = len(expected.calls)
    assert app.slider(key="lab_call").value == calls - 1
    assert metric(app, "Calls over the limit") == f"{expected.calls_over_limit:,} of {calls:,}"
    for c in range(calls):
        app.slider(key="lab_call").set_value(c).run()
        assert metric(app, "Prompt before the strategy") == f"{expected.calls[c].tokens_before:,}"
        assert metric(app, "Prompt sent") == f"{expected.calls[c].tokens_after:,}"
        context = _turn_table(app)
        assert len(context) == len(expected.context_at(c))
        # a summary has no input message: its number is blank, never "None"
        assert list(context["#"]) == ["" if o is None else f"{o:,}" for o in expected.origins_at(c)]


def test_the_replay_tab_compares_both_places_the_strategy_can_run(app):
    _tab(app, "Replay call by call")
    table = next(d.value for d in app.dataframe if "runs" in d.value.columns)
    assert list(table["runs"]) == ["before every model call", "when a user message arrives"]
    every = _measures()
    start = _measures(apply_at="turn_start")
    assert list(table["needed facts served"]) == [every.needed_recall, start.needed_recall]
    assert list(table["times it ran"]) == [every.replay.applications, start.replay.applications]
    assert start.replay.applications == 2 < every.replay.applications  # two user turns, ten calls


# ---------------------------------------------------------------- needed facts and cost


def _measures(name="tool_rounds", model=MODEL, prices=None, limit=LIMIT, **params):
    """The engine's replay measures for what the page shows by default (parameters scaled to the budget)."""
    from ctxlab.measure import measure
    conv = ctxlab.load(SAMPLE)
    budget = Budget(limit, RESERVE, TokenCounter(model).tools(conv.tools))
    strategy = get_strategy(name, **{**STRATEGIES[name].scaled_defaults(budget), **params})
    return measure(conv, strategy, budget, model=model, price=prices)


def test_needed_facts_served_sits_beside_facts_retained_with_its_misses(app):
    from ctxlab.fidelity import KINDS, RECOVERIES
    m = _measures()
    assert m.fidelity.misses  # tool_rounds at this budget loses facts an earlier turn needed
    assert metric(app, "Needed facts served") == f"{m.needed_recall:.0%}"
    assert metric(app, "Facts retained") == "100%"  # the final plan still holds them: only the replay tells
    expander = next(e for e in app.expander if e.label == f"Needed facts missed ({len(m.fidelity.misses)})")
    table = expander.dataframe[0].value
    assert list(table.columns) == ["fact", "kind", "recovery", "came from message", "needed by message", "call",
                                   "turn"]
    assert [tuple(r) for r in table.itertuples(index=False)] == [
        (x.fact, KINDS[x.kind], RECOVERIES[x.recovery], x.source, x.needed_by, x.call, x.turn)
        for x in m.fidelity.misses]
    assert any("re-fetch" in c.value for c in expander.caption)  # how many re-fetches the cost assumes
    app.selectbox(key="lab_strategy").set_value("sliding_window").run()
    assert metric(app, "Needed facts served") == f"{_measures('sliding_window').needed_recall:.0%}"


def test_the_replay_tab_shows_cost_totals_against_keeping_everything_and_tokens_per_turn(app):
    m = _measures()
    _tab(app, "Replay call by call")
    assert metric(app, "Input tokens, all calls") == f"{m.cost.input_tokens:,}"
    assert metric(app, "Cached share") == f"{m.cost.cached_share:.0%}"
    assert metric(app, "Cost") == f"${m.cost.cost_usd:.4f}"
    assert metric(app, "Cost of none") == f"${m.cost_none.cost_usd:.4f}"
    sentence = next(x.value for x in app.markdown if "Cost over the conversation" in x.value).replace("\\", "")
    assert "less than keeping everything" in sentence
    spec = next(json.loads(c.proto.spec) for c in app.get("plotly_chart") if "cache write" in c.proto.spec)  # not the heatmap
    names = [t.get("name") for t in spec["data"]]
    assert names == ["cached", "cache write", "uncached", "none: prompt tokens"]
    rows = m.cost.per_turn()
    assert spec["data"][0]["y"] == [r["cached_tokens"] for r in rows]


def test_prices_can_be_overridden_in_memory_and_change_the_cost(app):
    from ctxlab.pricing import parse_price_override
    _tab(app, "Replay call by call")
    app.checkbox(key="price_custom").check().run()
    for key, value in (("price_input", 10.0), ("price_cached", 0.5), ("price_output", 20.0)):
        app.number_input(key=key).set_value(value).run()
    m = _measures(prices=parse_price_override("input=10,cached=0.5,output=20", MODEL))
    assert metric(app, "Cost") == f"${m.cost.cost_usd:.4f}"
    assert any(e.label == "Prices (your override)" for e in app.expander)


def test_a_model_without_a_price_says_so_rather_than_guess(app):
    app.number_input(key="max_tokens").set_value(LIMIT).run()
    app.selectbox(key="model").set_value("llama").run()
    _tab(app, "Replay call by call")
    assert metric(app, "Cost") == "no price"
    assert any("No price for model llama" in i.value for i in app.info)
    assert metric(app, "Input tokens, all calls") == f"{_measures(model='llama').cost.input_tokens:,}"


def test_a_long_conversation_is_measured_when_the_replay_tab_is_open(app):
    app.radio(key="source").set_value("generate").run()
    app.number_input(key="gen_turns").set_value(60).run()
    app.button(key="gen_go").click().run()
    assert not app.exception, app.exception
    assert metric(app, "Messages removed")  # the generated conversation is in use
    assert metric(app, "Needed facts served") == "pending"
    _tab(app, "Replay call by call")
    assert metric(app, "Needed facts served").endswith("%")


def test_a_very_long_conversation_is_measured_on_a_button_press_in_the_replay_tab(app):
    app.radio(key="source").set_value("generate").run()
    app.number_input(key="gen_turns").set_value(170).run()  # 1,021 messages: over the replay tab's automatic size
    app.button(key="gen_go").click().run()
    _tab(app, "Replay call by call")
    assert metric(app, "Needed facts served") == "pending"
    assert not [m for m in app.metric if m.label == "Cost"]
    app.button(key="lab_measure").click().run()
    assert not app.exception, app.exception
    assert metric(app, "Needed facts served").endswith("%") and metric(app, "Cost").startswith("$")
    _tab(app, "Message timeline")  # measured once: the figure stays while nothing changes
    assert metric(app, "Needed facts served").endswith("%")


# ---------------------------------------------------------------- export


def test_export_downloads_the_plans_messages_config_and_snippet(app, downloads):
    app.number_input(key="lab_tool_rounds_keep_rounds").set_value(2).run()
    _tab(app, "Export")
    conv = ctxlab.load(SAMPLE)
    plan = _plan(keep_rounds=2)
    assert json.loads(downloads["context_openai.json"]) == ctxlab.export(conv.with_messages(plan.messages), "openai").data
    anthropic = json.loads(downloads["context_anthropic.json"])
    assert anthropic["system"] and len(anthropic["messages"]) >= 2
    lc = ctxlab.loads(downloads["context_langchain.json"], format="langchain")
    assert [m.role for m in lc.messages] == [m.role for m in plan.messages]
    for name, load in (("strategy.json", json.loads), ("strategy.yaml", yaml.safe_load)):
        lab = read_config(load(downloads[name]))
        strategy, budget_kwargs, model = lab.strategy, lab.budget_kwargs(), lab.model
        assert strategy == get_strategy("tool_rounds", keep_rounds=2)
        assert Budget(**budget_kwargs) == plan.budget and model == MODEL
    snippet = downloads["manage_context.py"].decode()
    assert "def manage_context(messages: list[dict]) -> list[dict]" in snippet
    assert "def context_node(state: MessagesState) -> dict" in snippet
    assert "get_strategy('tool_rounds', keep_rounds=2)" in snippet
    assert any(c.language == "python" and c.value == snippet.rstrip() for c in app.code)  # shown too


def test_export_that_a_format_cannot_carry_is_an_error_not_a_crash(app, downloads):
    _paste(app, [{"role": "user", "content": "Book me a flight"},
                 {"role": "assistant", "content": "Which day?"},
                 {"role": "system", "content": "Be brief."},
                 {"role": "user", "content": "Friday"}])
    app.selectbox(key="lab_strategy").set_value("none").run()
    _tab(app, "Export")
    assert "system message after the conversation started" in app.error[0].value
    assert "context_openai.json" in downloads and "context_langchain.json" in downloads
    assert "context_anthropic.json" not in downloads


def test_what_an_export_cannot_carry_is_noted_and_escaped(app, downloads):
    _paste(app, [{"role": "user", "content": "hi", "name": "<b>alice</b>"},
                 {"role": "assistant", "content": "Hello, how can I help?"}])
    _tab(app, "Export")
    notes = [c.value for c in app.caption if "has no place in Anthropic" in c.value]
    assert len(notes) == 1 and "\\<b\\>alice" in notes[0]  # Markdown-escaped: no tag
    assert "name" not in json.loads(downloads["context_anthropic.json"])["messages"][0]


# ---------------------------------------------------------------- safety


def test_pasted_html_is_shown_as_text_not_markup(app):
    evil = "<img src=x onerror=alert(1)><script>alert(2)</script>"
    _paste(app, [{"role": "system", "content": "You help."}, {"role": "user", "content": evil},
                 {"role": "assistant", "content": f"You said {evil}"}, {"role": "user", "content": evil}])
    assert metric(app, "Tokens before")
    assert evil in list(_table(app)["content"])  # verbatim in a data grid, which renders text only
    app.selectbox(key="lab_open").set_value(1).run()
    assert app.code[0].value == evil
    _tab(app, "Replay call by call")
    assert any(evil in v for v in _turn_table(app)["content"])
    for block in (*app.markdown, *app.caption, *app.warning, *app.error, *app.info, *app.success):
        assert "<script>" not in block.value and "onerror=" not in block.value


@pytest.fixture
def app(monkeypatch) -> AppTest:
    return open_page("strategy_lab.py", monkeypatch)


def test_the_export_tab_offers_the_native_forms_too(app, downloads):
    app.selectbox(key="lab_strategy").set_value("clear_tool_results").run()
    _tab(app, "Export")
    assert not app.exception
    anthropic = json.loads(downloads["anthropic.json"])
    assert anthropic["strategy"] == "clear_tool_results" and "not_carried" in anthropic
    assert b"ClearToolUsesEdit" in downloads["langchain_context.py"]
    assert any(c.value.replace("\\", "").startswith("openai_agents: ") for c in app.caption)  # no native form: said


def test_a_result_over_budget_is_said_once(app):
    app.selectbox(key="lab_strategy").set_value("none").run()
    app.sidebar.number_input(key="max_tokens").set_value(8_000).run()
    over = [w.value for w in app.warning if "13,661" in w.value.replace("\\", "")]
    assert len(over) == 1, over


def test_the_replay_tab_says_where_the_prompt_cache_broke_and_why(app):
    """Observation masking before every call rewrites earlier results: the Replay tab counts the calls
    where the prompt stopped extending the previous one, and the chosen call says at which message and why."""
    from ctxlab.cache_breaks import cache_breaks
    conv = ctxlab.load(SAMPLE)
    budget = Budget(LIMIT, RESERVE, TokenCounter(MODEL).tools(conv.tools))
    strategy = get_strategy("observation_masking", **STRATEGIES["observation_masking"].scaled_defaults(budget))
    expected = cache_breaks(replay(conv, strategy, budget, model=MODEL), conv, model=MODEL)
    assert expected, "masking the sample's results breaks the cache"
    app.selectbox(key="lab_strategy").set_value("observation_masking").run()
    _tab(app, "Replay call by call")
    captions = [c.value.replace("\\", "") for c in app.caption]
    summary = next(c for c in captions if c.startswith("Prompt cache: the strategy changed"))
    assert f"at {len(expected):,} calls (cleared {len(expected):,})" in summary
    first = expected[0]
    app.slider(key="lab_call").set_value(first.call).run()
    captions = [c.value.replace("\\", "") for c in app.caption]
    assert any(f"at message #{first.origin} (cleared at this call): {first.tokens_lost:,} tokens" in c for c in captions)


def test_the_replay_heatmap_marks_the_calls_whose_prompt_broke_the_cache(app):
    from ctxlab.cache_breaks import cache_breaks
    conv = ctxlab.load(SAMPLE)
    budget = Budget(LIMIT, RESERVE, TokenCounter(MODEL).tools(conv.tools))
    strategy = get_strategy("observation_masking", **STRATEGIES["observation_masking"].scaled_defaults(budget))
    expected = cache_breaks(replay(conv, strategy, budget, model=MODEL), conv, model=MODEL)
    app.selectbox(key="lab_strategy").set_value("observation_masking").run()
    _tab(app, "Replay call by call")
    specs = [json.loads(c.proto.spec) for c in app.get("plotly_chart")]
    heat = next(s for s in specs if any(t.get("type") == "heatmap" for t in s["data"]))
    marks = [t for t in heat["data"] if t.get("name") == "prompt cache broke"]
    assert len(marks) == 1 and marks[0]["y"] == [b.call for b in expected]
