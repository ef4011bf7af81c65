"""The store's schema version and migration path: a store written by the first schema (0001, no
monitoring tables) opens after an upgrade with its sessions intact; a store from a newer ctxlab
is refused with a clear error; two stores opened at once on a new file migrate it once."""
from __future__ import annotations

import json
from datetime import datetime, timezone

import pytest
from sqlalchemy import text

from ctxlab.sessions import SCHEMA_VERSION, SessionError, SessionStore
from ctxlab.sessions.db import current_revision, make_engine, migrate, tables


def _write_first_release_store(url: str) -> None:
    """Rows as the 0001 schema holds them (written with plain SQL, as that release would have)."""
    engine = make_engine(url)
    assert migrate(engine, "0001") == "0001"
    assert "compressions" not in tables(engine)
    now = datetime(2026, 1, 5, tzinfo=timezone.utc)
    config = {"ctxlab_config": 1, "strategy": "summarize", "params": {"trigger_messages": 4, "keep_recent": 2},
              "model": "gpt-4o", "max_tokens": 50_000, "reserve": 0.15, "tools_tokens": 0}
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO profiles (id, name, model, system_prompt, overflow, tools, created_at, "
                          "updated_at) VALUES (1, 'support', 'gpt-4o', 'Be brief.', :c, '[]', :t, :t)"),
                     {"c": json.dumps(config), "t": now})
        conn.execute(text("INSERT INTO sessions (id, profile_id, title, model, system_prompt, tools, next_seq, "
                          "created_at, updated_at) VALUES ('old1', 1, 'before the upgrade', 'gpt-4o', 'Be brief.', "
                          "'[]', 6, :t, :t)"),
                     {"t": now})
        for seq in range(6):
            role = "user" if seq % 2 == 0 else "assistant"
            conn.execute(text("INSERT INTO messages (session_id, seq, role, body, created_at) "
                              "VALUES ('old1', :s, :r, :b, :t)"),
                         {"s": seq, "r": role, "t": now,
                          "b": json.dumps({"role": role, "content": f"turn {seq // 2} {role}"})})
        conn.execute(text("INSERT INTO context_records (session_id, strategy, config, summary, state, active_ids, "
                          "layout, applied_through, updated_at) "
                          "VALUES ('old1', 'summarize', :c, '', '{}', '[]', '[]', -1, :t)"),
                     {"c": json.dumps(config), "t": now})
    engine.dispose()


def test_a_first_release_store_opens_after_the_upgrade(tmp_path):
    url = f"sqlite:///{tmp_path / 'old.db'}"
    _write_first_release_store(url)
    with SessionStore(url) as store:
        assert store.schema_version == SCHEMA_VERSION == "0002"
        s = store.open_session("old1")
        assert s.title == "before the upgrade" and len(s.history()) == 6
        assert s.record().counters == {"times_applied": 0, "times_triggered": 0, "tokens_saved": 0,
                                       "messages_removed": 0}
        s.add({"role": "user", "content": "turn 3 user"})
        sent = s.context()
        assert sent[1]["content"].startswith("Summary of earlier conversation")
        assert s.compressions()[-1].summarized and s.record().times_applied == 1


def test_a_store_from_a_newer_ctxlab_is_refused(tmp_path):
    url = f"sqlite:///{tmp_path / 'new.db'}"
    SessionStore(url).close()
    engine = make_engine(url)
    with engine.begin() as conn:
        conn.execute(text("UPDATE alembic_version SET version_num = '0099'"))
    engine.dispose()
    with pytest.raises(SessionError, match="schema version 0099, newer than this ctxlab knows.*Upgrade ctxlab"):
        SessionStore(url)


def test_reopening_does_not_migrate_again(tmp_path):
    url = f"sqlite:///{tmp_path / 'a.db'}"
    with SessionStore(url) as store:
        store.save_profile("p")
    engine = make_engine(url)
    assert current_revision(engine) == SCHEMA_VERSION
    engine.dispose()
    with SessionStore(url) as store:
        assert [p.name for p in store.profiles()] == ["p"]
