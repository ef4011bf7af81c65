"""The Agents and Chat pages on a damaged session store, and Chat when the disk fills while a
message is sent: one clear error naming the store, never a traceback."""
from __future__ import annotations

import pytest
from sqlalchemy import event

from ctxlab.sessions import SessionStore

from .helpers import open_page


@pytest.mark.parametrize("page", ["agents.py", "chat.py"])
def test_a_damaged_store_is_one_error_on_the_page(page, data_dir, monkeypatch):
    (data_dir / "sessions.db").write_bytes(b"not a database " * 100)
    at = open_page(page, monkeypatch)
    assert not at.exception
    errors = " ".join(e.value for e in at.error).replace("\\", "")  # shown markdown-escaped
    assert "damaged or is not a SQLite database" in errors and "sessions.db" in errors, errors


def test_a_full_disk_while_chatting_is_one_error(data_dir, monkeypatch):
    at = open_page("chat.py", monkeypatch)
    at.button(key="chat_make_sample").click().run()
    at.button(key="chat_new").click().run()
    assert not at.exception and not at.error
    store = _cached_store(data_dir)

    @event.listens_for(store.engine, "connect")
    def _full(dbapi_conn, _record):
        pages = dbapi_conn.execute("PRAGMA page_count").fetchone()[0]
        dbapi_conn.execute(f"PRAGMA max_page_count = {pages}")

    store.engine.dispose()
    at.chat_input(key="chat_input").set_value("x " * 150_000).run()
    assert not at.exception, at.exception
    assert any("is on a full disk" in e.value.replace("\\", "") for e in at.error), [e.value for e in at.error]


def _cached_store(data_dir) -> SessionStore:
    """The SessionStore the page opened on ``data_dir`` (held by its st.cache_resource)."""
    import gc
    return next(o for o in gc.get_objects() if isinstance(o, SessionStore) and str(data_dir) in o.url)
