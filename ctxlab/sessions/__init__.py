"""Live sessions: where a context strategy runs in production.

An agent profile has a token overflow config (a strategy and its parameters, a context limit);
each session keeps its full history and a context record (the strategy and config it started
with, the running summary, the ids of the active messages); at every user message the strategy
runs and the messages sent to the model are built from the record: system prompt, summary,
active messages. SQLite by default, any SQLAlchemy URL (PostgreSQL) for a team.

    from ctxlab.sessions import SessionStore
    store = SessionStore("sqlite:///agents.db")
    store.save_profile("support", model="gpt-4o", max_tokens=8000, system_prompt="...",
                       strategy="summarize", params={"trigger_messages": 20})
    s = store.start_session("support")
    s.add({"role": "user", "content": "..."})
    s.context()                  # the messages to send now
    store.open_session(s.id)     # resume after a restart
"""
from .db import SessionError, data_dir, default_url, head_revision
from ..strategies.step import Compression
from .records import COUNTERS, ContextRecord, Profile, SessionInfo
from .session import HISTORY_LIMIT, Session
from .store import SessionStore

SCHEMA_VERSION = head_revision()
"""The schema revision this ctxlab writes (Alembic revision id)."""

__all__ = ["COUNTERS", "Compression", "ContextRecord", "HISTORY_LIMIT", "Profile", "SCHEMA_VERSION", "Session",
           "SessionError", "SessionInfo", "SessionStore", "data_dir", "default_url", "head_revision"]
