"""Alembic's environment for the session store: always online, on the connection that
``ctxlab.sessions.migrate`` hands over in ``config.attributes["connection"]``."""
from __future__ import annotations

from alembic import context
from sqlalchemy import text

from ctxlab.sessions.models import metadata

connection = context.config.attributes["connection"]
context.configure(connection=connection, target_metadata=metadata, render_as_batch=True)
with context.begin_transaction():
    if connection.dialect.name == "postgresql":  # two processes opening a new store migrate one at a time
        connection.execute(text("SELECT pg_advisory_xact_lock(7301452)"))
    context.run_migrations()
