"""The session engine on SQLite: the design's worked examples through the public API, the context
layout (system prompt, summary, active messages), a profile change that leaves old sessions alone,
resume after closing the store, every strategy live, the compression history and counters, and
bad input."""
from __future__ import annotations

import json

import pytest

import ctxlab
from ctxlab.sessions import HISTORY_LIMIT, SessionError, SessionStore, default_url
from ctxlab.strategies import STRATEGIES
from ctxlab.validate import validate

from ..conftest import SAMPLES

SAMPLE = SAMPLES / "ecommerce_refund.json"


@pytest.fixture
def store(tmp_path):
    s = SessionStore(f"sqlite:///{tmp_path / 'agents.db'}")
    yield s
    s.close()


def chatter(start: int, stop: int) -> list[dict]:
    """Messages ``start..stop-1`` of a plain chat: user on even positions, assistant on odd ones."""
    return [{"role": "user" if i % 2 == 0 else "assistant",
             "content": f"Message {i}: question about order KC-{1000 + i} and its delivery window."}
            for i in range(start, stop)]


def sample_messages() -> tuple[str, list[dict], list[dict]]:
    data = ctxlab.export(ctxlab.load(SAMPLE), "openai").data
    return data["messages"][0]["content"], data["messages"][1:], data["tools"]


def test_summary_worked_example_25_then_5_more(store):
    """The design's example: a summary strategy with a trigger of 20 messages. The design counts
    25 messages -> "the oldest 5 summarized, 20 active". ctxlab's summarize strategy folds whole
    turns (a user message and the replies to it) and counts the system prompt in the trigger, so
    after 25 chat messages it folds the oldest 2 turns = 4 messages (folding a 5th would cut turn
    3 in half) and keeps 21 active. After 5 more (30), the summary is merged (it covers messages
    0-9, old and new lines) and exactly 20 stay active, as in the design."""
    store.save_profile("support", model="gpt-4o", max_tokens=100_000, system_prompt="You are the support agent.",
                       strategy="summarize", params={"trigger_messages": 20, "keep_recent": 20})
    s = store.start_session("support")
    s.add(*chatter(0, 25))
    sent = s.context()
    rec = s.record()
    assert rec.active_ids == tuple(range(4, 25))
    assert sent[0] == {"role": "system", "content": "You are the support agent."}
    assert sent[1]["role"] == "system"
    assert sent[1]["content"].startswith("Summary of earlier conversation (messages 0-3)")
    assert "KC-1000" in rec.summary and "KC-1003" in rec.summary and "KC-1004" not in rec.summary
    assert sent[2:] == chatter(4, 25)
    first = rec.summary

    s.add(*chatter(25, 30))
    sent = s.context()
    rec = s.record()
    assert rec.active_ids == tuple(range(10, 30)) and len(rec.active_ids) == 20
    assert sent[1]["content"].startswith("Summary of earlier conversation (messages 0-9)")
    assert "KC-1009" in rec.summary and rec.summary != first
    assert sum(m["role"] == "system" for m in sent) == 2  # one merged summary, not two
    assert s.history() == chatter(0, 30)  # the full history is never touched
    assert [c.summarized for c in s.compressions()] == [(0, 1, 2, 3), (4, 5, 6, 7, 8, 9)]


def test_sliding_window_of_8000_with_10_percent_keeps_about_7200(store):
    """The design's sliding window: 8,000 tokens with a 10% margin keeps about 7,200 tokens (the
    newest whole turns that fit; a turn is never cut, so a little under 7,200)."""
    store.save_profile("window", model="gpt-4o", max_tokens=8_000, reserve=0.0, system_prompt="Be helpful.",
                       strategy="sliding_window", params={"buffer_ratio": 0.1})
    s = store.start_session("window")
    long = [{**m, "content": m["content"] + " Details: " + "the parcel, the carrier and the refund. " * 12}
            for m in chatter(0, 121)]
    s.add(*long)
    sent = s.context()
    kept = s.count(sent).total
    assert 6_900 <= kept <= 7_200
    assert s.count([{"role": "system", "content": "Be helpful."}, *long]).total > 15_000  # the window really cut
    assert sent[0]["content"] == "Be helpful." and sent[-1] == long[-1]
    n = len(sent) - 1
    assert sent[1:] == long[-n:]  # the newest messages, in order
    assert s.count([sent[0], *long[-n - 2:]]).total > 7_200  # one more turn would not fit


def test_at_turn_start_the_strategy_runs_at_the_start_of_a_turn_not_inside_it(store):
    """apply_at=turn_start: inside a turn (tool calls and results arriving) the context grows as is;
    the next user message applies the strategy again."""
    system, history, _ = sample_messages()
    store.save_profile("shop", model="gpt-4", max_tokens=8_192, system_prompt=system, strategy="summarize",
                       params={"apply_at": "turn_start"})
    s = store.start_session("shop")
    s.add(history[0])
    s.context()
    for m in history[1:14]:  # the first turn's tool rounds and answer
        s.add(m)
        assert s.context()[1:] == s.history()  # nothing removed inside the turn
    assert s.record().times_applied == 1
    s.add(history[14])  # the second user message
    sent = s.context()
    rec = s.record()
    assert rec.times_applied == 2 and rec.times_triggered == 1
    assert rec.active_ids == (14,) and sent[1]["content"].startswith("Summary of earlier conversation")
    assert "KC-482193" in rec.summary


def test_before_every_call_the_strategy_acts_inside_the_turn(store):
    """apply_at=every_call (the default): every context() with new messages applies the strategy,
    so a long first turn is summarized before it ends, keeping the user's request."""
    system, history, _ = sample_messages()
    store.save_profile("shop", model="gpt-4", max_tokens=8_192, system_prompt=system, strategy="summarize")
    s = store.start_session("shop")
    sizes = []
    for m in history[:14]:  # the first turn: the request, its tool rounds and the answer
        s.add(m)
        sent = s.context()
        sizes.append(s.count(sent).total)
        assert sent[0]["content"] == system and any(x.get("content") == history[0]["content"] for x in sent)
    rec = s.record()
    assert rec.times_applied == 14 and rec.times_triggered >= 1
    assert max(sizes) <= 8_192 * 0.85 < s.count([{"role": "system", "content": system}, *history[:14]]).total


def test_profile_change_affects_new_sessions_only_until_update_existing(store):
    store.save_profile("a", strategy="summarize", params={"trigger_messages": 20}, max_tokens=50_000)
    old = store.start_session("a")
    store.save_profile("a", strategy="sliding_window", max_tokens=50_000)
    new = store.start_session("a")
    assert old.record().strategy == "summarize" and old.record().config["params"]["trigger_messages"] == 20
    assert new.record().strategy == "sliding_window"
    old.add(*chatter(0, 25))
    old.context()
    assert old.compressions()[-1].strategy == "summarize"
    assert store.update_existing_sessions("a") == 2
    assert old.record().strategy == "sliding_window"
    assert old.record().summary  # the summary made so far stays
    old.add(*chatter(25, 27))
    old.context()
    assert old.compressions()[-1].strategy == "sliding_window"


def test_resume_after_closing_the_store(tmp_path):
    url = f"sqlite:///{tmp_path / 'agents.db'}"
    with SessionStore(url) as first:
        first.save_profile("support", strategy="summarize", params={"trigger_messages": 6, "keep_recent": 4},
                           max_tokens=50_000, system_prompt="Be brief.")
        s = first.start_session("support", title="refund")
        s.add(*chatter(0, 9))
        before = s.context()
        sid, record = s.id, s.record()
    with SessionStore(url) as second:
        again = second.open_session(sid)
        assert (again.title, again.profile) == ("refund", "support")
        assert again.context() == before
        assert again.record().summary == record.summary and again.record().active_ids == record.active_ids
        again.add(*chatter(9, 11))
        assert again.context()[1]["content"].startswith("Summary of earlier conversation")
        assert len(again.history()) == 11
        assert [i.id for i in second.sessions()] == [sid]


SMALL = {"turn_safe": {"last_n": 6}, "key_messages": {"recent": 6}, "clear_tool_results": {"trigger_tokens": 4_000},
         "recent_events": {"max_events": 6}, "amortized_forgetting": {"max_size": 6}, "llm_attention": {"max_size": 6},
         "server_compaction": {"trigger_tokens": 4_000}, "offload": {"min_tokens": 1_000}}
"""Parameters that give the strategies whose defaults are sized for long windows work on the sample."""


@pytest.mark.parametrize("name", list(STRATEGIES))
def test_every_strategy_runs_live_and_keeps_the_full_history(store, name):
    """Every registered strategy, turn by turn over the sample, with a small window so each has
    work: the history stays whole, the record's active ids are history ids in order, and a
    non-baseline strategy's context passes the OpenAI rules."""
    system, history, tools = sample_messages()
    params = SMALL.get(name, {})
    store.save_profile(name, model="gpt-4o", max_tokens=8_000, system_prompt=system, strategy=name, tools=tools,
                       params=params)
    s = store.start_session(name)
    s.add(*history[:14])
    s.context()
    s.add(*history[14:], {"role": "user", "content": "Thanks! Is the store credit usable on tickets?"})
    sent = s.context()
    assert s.history()[:len(history)] == history
    rec = s.record()
    assert list(rec.active_ids) == sorted(rec.active_ids) and set(rec.active_ids) <= set(range(len(history) + 1))
    assert sent[-1]["content"].startswith("Thanks! Is the store credit")
    if name not in ("none", "langchain_trim"):
        conv = ctxlab.loads(json.dumps(sent))
        assert not [f for f in validate(conv, "openai") if f.severity == "error"]
    if name != "none":
        assert s.count(sent).total < s.count([{"role": "system", "content": system}, *s.history()]).total


def test_cleared_results_are_sent_as_placeholders_and_survive_a_restart(tmp_path):
    system, history, _ = sample_messages()
    url = f"sqlite:///{tmp_path / 'a.db'}"
    with SessionStore(url) as st:
        st.save_profile("c", system_prompt=system, strategy="clear_tool_results",
                        params={"trigger_tokens": 1_000, "keep": 1}, max_tokens=100_000)
        s = st.start_session("c")
        s.add(*history, {"role": "user", "content": "And the tracking number again?"})
        sent = s.context()
        cleared = s.compressions()[-1].cleared
        assert cleared and all(history[i]["role"] == "tool" for i in cleared)
        sid = s.id
    with SessionStore(url) as st:
        s = st.open_session(sid)
        assert s.context() == sent
        assert s.history()[cleared[0]] == history[cleared[0]]  # the stored message is the original
        assert sent[cleared[0] + 1]["content"] != history[cleared[0]]["content"]


def test_compression_history_keeps_the_last_10_and_counters_add_up(store):
    store.save_profile("w", strategy="sliding_window", params={"max_tokens": 120, "buffer_ratio": 0.0},
                       max_tokens=50_000)
    s = store.start_session("w")
    for k in range(13):
        s.add(*chatter(2 * k, 2 * k + 2))
        s.context()
    history = s.compressions()
    rec = s.record()
    assert len(history) == HISTORY_LIMIT and [h.turn for h in history] == list(range(4, 14))
    assert rec.times_applied == 13
    assert rec.tokens_saved >= sum(h.tokens_saved for h in history) > 0
    assert rec.messages_removed == len(s.history()) - len(rec.active_ids) > 0  # each dropped once, never back
    assert store.counters("w") == {"sessions": 1, **rec.counters}


def test_bad_message_is_named_and_nothing_is_added(store):
    store.save_profile("p")
    s = store.start_session("p")
    s.add({"role": "user", "content": "hi"})
    with pytest.raises(SessionError, match=r"message 2.*tool_call_id"):
        s.add({"role": "assistant", "content": "ok"}, {"role": "tool", "content": "result"})
    with pytest.raises(SessionError, match=r"message 1 \(\$\.role\): unknown role 'robot'"):
        s.add({"role": "robot", "content": "beep"})
    with pytest.raises(SessionError, match="message 1: a message must be an OpenAI Chat message dict"):
        s.add("hello")
    assert s.history() == [{"role": "user", "content": "hi"}]


def test_unknown_names_list_what_exists(store):
    store.save_profile("support")
    with pytest.raises(SessionError, match="no profile named 'sales'.*Known profiles: support"):
        store.start_session("sales")
    with pytest.raises(SessionError, match="no session with id 'nope'"):
        store.open_session("nope")
    with pytest.raises(ctxlab.CtxlabError, match="unknown strategy 'summarise'"):
        store.save_profile("x", strategy="summarise")
    with pytest.raises(ctxlab.CtxlabError, match="trigger_messages"):
        store.save_profile("x", strategy="summarize", params={"trigger_messages": 0})


def test_profile_takes_a_strategy_lab_config(store):
    from ctxlab.configs.lab_config import make_config
    from ctxlab.strategies import Budget, get_strategy
    config = make_config(get_strategy("tool_rounds", keep_rounds=2) >> get_strategy("sliding_window"),
                             Budget(16_000, 0.2), "gpt-4o-mini")
    p = store.save_profile("lab", config=config)
    assert (p.strategy, p.model, p.max_tokens) == ("tool_rounds >> sliding_window", "gpt-4o-mini", 16_000)
    assert store.start_session("lab").record().config == config


def test_default_store_is_a_file_in_the_data_directory(tmp_path, monkeypatch):
    monkeypatch.delenv("CTXLAB_SESSIONS_URL", raising=False)
    monkeypatch.setenv("CTXLAB_DATA_DIR", str(tmp_path / "data"))
    assert default_url() == f"sqlite:///{tmp_path / 'data' / 'sessions.db'}"
    with SessionStore() as st:
        st.save_profile("p")
    assert (tmp_path / "data" / "sessions.db").is_file()


def test_a_bad_url_is_one_clear_error_without_the_password():
    with pytest.raises(SessionError, match="not a database URL"):
        SessionStore("agents.db")
    with pytest.raises(SessionError, match="cannot open the session store") as e:
        SessionStore("postgresql://bob:hunter2@127.0.0.1:1/agents")
    assert "hunter2" not in str(e.value)


@pytest.mark.parametrize("works_on", ["full_history", "kept_history"])
def test_a_live_session_sends_what_the_replay_sends_in_either_history_mode(store, works_on):
    """clear_tool_results applied before every call in a live session: the prompt of each call is the
    replay's (full_history: recomputed from the whole history, as Anthropic does; kept_history: from what it left)."""
    from ctxlab.conversation import Conversation
    from ctxlab.replay import replay
    from ctxlab.strategies import Budget, get_strategy
    system, history_msgs, _ = sample_messages()
    params = {"trigger_tokens": 1500, "keep": 1, "works_on": works_on}
    store.save_profile("p", model="gpt-4o", max_tokens=100_000, reserve=0.0, system_prompt=system,
                       strategy="clear_tool_results", params=params)
    s = store.start_session("p")
    conv = ctxlab.loads(json.dumps({"messages": [{"role": "system", "content": system}, *history_msgs]}))
    r = replay(conv, get_strategy("clear_tool_results", **params), Budget(100_000, 0.0), model="gpt-4o")
    points = [c.index for c in r.calls]
    sent_at = {}
    for k, m in enumerate(history_msgs, start=1):
        s.add(m)
        if k + 1 in points:  # the next message is the model's: a call
            sent_at[k + 1] = s.context()
    compared = 0
    for c in r.calls:
        if c.index in sent_at:
            ours = [m.get("content") for m in sent_at[c.index]]
            theirs = [ctxlab.export(Conversation((m,)), "openai").data["messages"][0].get("content")
                      for m in r.context_at(c.number)]
            assert ours == theirs, (works_on, c.number)
            compared += 1
    assert compared >= 5 and r.times_triggered >= 2
