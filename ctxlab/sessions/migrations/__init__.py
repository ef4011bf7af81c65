"""Alembic migrations of the session store, shipped inside the package (``ctxlab.sessions.migrate``
runs them; no alembic.ini is needed)."""
