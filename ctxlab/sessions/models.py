"""The session store's tables (SQLAlchemy Core, 2.x): what a production agent keeps per session.

``profiles``        an agent: name, model, system prompt, tools, and its token overflow config
                    (a ctxlab config: strategy and parameters, context limit, reserve)
``sessions``        one conversation with an agent: what it copied from the profile when it started,
                    and ``next_seq``, the sequence number the next message gets (the row every
                    writer locks, so two processes never give two messages the same place)
``messages``        the full history, one row per message (``seq`` 0, 1, 2, ... per session);
                    a strategy never deletes or changes one
``context_records`` per session: the strategy and config in force, the running summary, the
                    strategy's carried state, the ids (``seq``) of the active messages and the
                    exact layout sent (inserted summaries, cleared results), the monitoring counters
``compressions``    the last applications per session (when, tokens and messages before and after,
                    what was summarized, dropped or cleared)

The migrations in ``ctxlab/sessions/migrations`` create the same tables; these definitions are
what the code reads and writes with.
"""
from __future__ import annotations

from sqlalchemy import (JSON, Boolean, Column, DateTime, ForeignKey, Integer, MetaData, String, Table, Text,
                        UniqueConstraint)

metadata = MetaData()

profiles = Table(
    "profiles", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("name", String(200), nullable=False, unique=True),
    Column("model", String(100), nullable=False),
    Column("system_prompt", Text, nullable=False, default=""),
    Column("overflow", JSON, nullable=False),
    Column("tools", JSON, nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("updated_at", DateTime(timezone=True), nullable=False),
)

sessions = Table(
    "sessions", metadata,
    Column("id", String(32), primary_key=True),
    Column("profile_id", Integer, ForeignKey("profiles.id", ondelete="RESTRICT"), nullable=False, index=True),
    Column("title", String(200), nullable=False, default=""),
    Column("model", String(100), nullable=False),
    Column("system_prompt", Text, nullable=False, default=""),
    Column("tools", JSON, nullable=False),
    Column("next_seq", Integer, nullable=False, default=0),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("updated_at", DateTime(timezone=True), nullable=False),
)

messages = Table(
    "messages", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("session_id", String(32), ForeignKey("sessions.id", ondelete="CASCADE"), nullable=False, index=True),
    Column("seq", Integer, nullable=False),
    Column("role", String(20), nullable=False),
    Column("body", JSON, nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
    UniqueConstraint("session_id", "seq", name="uq_messages_session_seq"),
)

context_records = Table(
    "context_records", metadata,
    Column("session_id", String(32), ForeignKey("sessions.id", ondelete="CASCADE"), primary_key=True),
    Column("strategy", String(300), nullable=False),
    Column("config", JSON, nullable=False),
    Column("summary", Text, nullable=False, default=""),
    Column("state", JSON, nullable=False),
    Column("active_ids", JSON, nullable=False),
    Column("layout", JSON, nullable=False),
    Column("applied_through", Integer, nullable=False, default=-1),
    Column("updated_at", DateTime(timezone=True), nullable=False),
    # added by revision 0002
    Column("times_applied", Integer, nullable=False, default=0),
    Column("times_triggered", Integer, nullable=False, default=0),
    Column("tokens_saved", Integer, nullable=False, default=0),
    Column("messages_removed", Integer, nullable=False, default=0),
)

compressions = Table(  # added by revision 0002
    "compressions", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("session_id", String(32), ForeignKey("sessions.id", ondelete="CASCADE"), nullable=False, index=True),
    Column("applied_at", DateTime(timezone=True), nullable=False),
    Column("turn", Integer, nullable=False),
    Column("strategy", String(300), nullable=False),
    Column("triggered", Boolean, nullable=False),
    Column("tokens_before", Integer, nullable=False),
    Column("tokens_after", Integer, nullable=False),
    Column("messages_before", Integer, nullable=False),
    Column("messages_after", Integer, nullable=False),
    Column("summarized", JSON, nullable=False),
    Column("dropped", JSON, nullable=False),
    Column("cleared", JSON, nullable=False),
)
