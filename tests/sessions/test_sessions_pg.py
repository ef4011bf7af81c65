"""The session API against a real PostgreSQL server (a throwaway cluster on 127.0.0.1, see
tests/pg.py): the worked summary example, a profile change that leaves old sessions alone,
resume after closing the store, the scripted chat, and the migration from the first schema."""
from __future__ import annotations

import ctxlab
from ctxlab.sessions import SessionStore
from ctxlab.sessions.db import current_revision, make_engine
from ctxlab.sessions.responder import CannedTools, ScriptedResponder, run_turn

from ..conftest import SAMPLES
from ..pg import pg_cluster, pg_url  # noqa: F401  (fixtures)
from .test_sessions import chatter
from .test_sessions_migrations import _write_first_release_store


def test_summary_example_and_resume_on_postgresql(pg_url):  # noqa: F811
    with SessionStore(pg_url) as store:
        assert store.engine.dialect.name == "postgresql"
        store.save_profile("support", max_tokens=100_000, system_prompt="You are the support agent.",
                           strategy="summarize", params={"trigger_messages": 20, "keep_recent": 20})
        s = store.start_session("support", title="pg")
        s.add(*chatter(0, 25))
        s.context()
        assert s.record().active_ids == tuple(range(4, 25))
        s.add(*chatter(25, 30))
        sent = s.context()
        sid = s.id
    with SessionStore(pg_url) as again:
        s = again.open_session(sid)
        assert s.record().active_ids == tuple(range(10, 30))
        assert s.context() == sent and sent[1]["content"].startswith("Summary of earlier conversation (messages 0-9)")
        assert s.history() == chatter(0, 30)
        assert again.counters("support")["times_triggered"] == 2


def test_profile_change_and_update_existing_on_postgresql(pg_url):  # noqa: F811
    with SessionStore(pg_url) as store:
        store.save_profile("a", strategy="summarize", max_tokens=50_000)
        old = store.start_session("a")
        store.save_profile("a", strategy="tool_rounds", max_tokens=50_000)
        assert old.record().strategy == "summarize" and store.start_session("a").record().strategy == "tool_rounds"
        assert store.update_existing_sessions("a") == 2 and old.record().strategy == "tool_rounds"


def test_scripted_chat_on_postgresql(pg_url):  # noqa: F811
    conv = ctxlab.load(SAMPLES / "ecommerce_refund.json")
    data = ctxlab.export(conv, "openai").data
    with SessionStore(pg_url) as store:
        store.save_profile("shop", model="gpt-4", max_tokens=8_192, system_prompt=data["messages"][0]["content"],
                           strategy="summarize", tools=data["tools"])
        s = store.start_session("shop")
        script = ScriptedResponder(conv)
        while (text := script.next_user_message(s.history())) is not None:
            run_turn(s, text, script, CannedTools(conv))
        assert s.history() == data["messages"][1:]
        assert "KC-482193" in s.record().summary


def test_first_schema_store_upgrades_on_postgresql(pg_url):  # noqa: F811
    _write_first_release_store(pg_url)
    with SessionStore(pg_url) as store:
        s = store.open_session("old1")
        s.add({"role": "user", "content": "turn 3 user"})
        assert s.context()[1]["content"].startswith("Summary of earlier conversation")
    engine = make_engine(pg_url)
    assert current_revision(engine) == "0002"
    engine.dispose()
