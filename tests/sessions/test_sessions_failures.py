"""Session store failures: a damaged, foreign, read-only or full store, and a
message holding NaN, each give one SessionError that names the store and says what to do; the CLI
prints one line, never an internal error; a read-only store can still be listed."""
from __future__ import annotations

import sqlite3

import pytest
from sqlalchemy import event

from ctxlab.cli import main
from ctxlab.sessions import SessionError, SessionStore


def _url(path) -> str:
    return f"sqlite:///{path}"


def test_a_damaged_file_is_named_with_what_to_do(tmp_path, capsys):
    bad = tmp_path / "sessions.db"
    bad.write_bytes(b"this is not a database, it is text " * 40)
    with pytest.raises(SessionError, match="is damaged or is not a SQLite database") as e:
        SessionStore(_url(bad))
    assert str(bad) in str(e.value) and "Move the file aside" in str(e.value)
    assert main(["sessions", "list", "--url", _url(bad)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "internal error" not in err and "damaged" in err


def test_a_foreign_database_is_named(tmp_path, capsys):
    path = tmp_path / "other.db"
    con = sqlite3.connect(path)
    con.execute("create table profiles (x)")
    con.commit()
    con.close()
    assert main(["sessions", "list", "--url", _url(path)]) == 2
    err = capsys.readouterr().err
    assert "does not hold ctxlab's tables" in err and "internal error" not in err


def test_a_read_only_store_is_listed_and_a_write_is_one_clear_error(tmp_path, capsys, monkeypatch):
    path = tmp_path / "sessions.db"
    (tmp_path / "cwd").mkdir()
    monkeypatch.chdir(tmp_path / "cwd")  # a SQLite URI once made a directory named "file:" here
    with SessionStore(_url(path)) as store:
        store.save_profile("support", strategy="none")
        store.start_session("support")
    read_only = f"sqlite:///file:{path}?mode=ro&uri=true"  # what a chmod 444 file gives a non-root user
    assert main(["sessions", "list", "--url", read_only]) == 0
    assert '"profile": "support"' in capsys.readouterr().out
    with SessionStore(read_only) as store:
        with pytest.raises(SessionError, match="cannot be written") as e:
            store.save_profile("other")
    assert "writable" in e.value.hint
    assert list((tmp_path / "cwd").iterdir()) == []


def test_a_full_disk_while_chatting_is_one_clear_error_and_nothing_half_written(tmp_path):
    path = tmp_path / "sessions.db"
    with SessionStore(_url(path)) as store:
        store.save_profile("support", strategy="none")
        session = store.start_session("support")
        session.add({"role": "user", "content": "hello"})

        @event.listens_for(store.engine, "connect")
        def _full(dbapi_conn, _record):  # the file may not grow: SQLite reports "database or disk is full"
            pages = dbapi_conn.execute("PRAGMA page_count").fetchone()[0]
            dbapi_conn.execute(f"PRAGMA max_page_count = {pages}")

        store.engine.dispose()
        with pytest.raises(SessionError, match="is on a full disk") as e:
            session.add({"role": "assistant", "content": "x" * 200_000})
        assert "Free some disk space" in str(e.value)
        event.remove(store.engine, "connect", _full)
        store.engine.dispose()
        assert [m["content"] for m in session.history()] == ["hello"]


def test_nan_in_a_message_is_refused_before_the_database(tmp_path):
    with SessionStore(_url(tmp_path / "s.db")) as store:
        store.save_profile("support", strategy="none")
        session = store.start_session("support")
        for value in (float("nan"), float("inf")):
            with pytest.raises(SessionError, match="not finite"):
                session.add({"role": "user", "content": "hi", "metadata": {"score": value}})
        assert session.history() == []


from ..pg import pg_cluster, pg_url  # noqa: E402,F401  (fixtures)


def test_postgresql_nan_and_a_foreign_database_are_clear_errors(pg_url, capsys):  # noqa: F811
    with SessionStore(pg_url) as store:
        store.save_profile("support", strategy="none")
        session = store.start_session("support")
        with pytest.raises(SessionError, match="not finite"):  # was a raw DataError from the server
            session.add({"role": "user", "content": "hi", "metadata": {"score": float("nan")}})
        with store.engine.begin() as conn:  # someone drops a table by hand
            conn.exec_driver_sql("DROP TABLE compressions")
        with pytest.raises(SessionError) as e:
            session.add({"role": "user", "content": "hi"})
            session.context()
        assert "does not hold ctxlab's tables" in str(e.value) and "internal" not in str(e.value)
