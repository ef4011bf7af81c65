"""Engines, URLs and migrations of the session store.

``default_url()`` is ``$CTXLAB_SESSIONS_URL`` when set (a team's PostgreSQL, say), else a SQLite
file ``sessions.db`` in the ctxlab data directory (``$CTXLAB_DATA_DIR``, default
``~/.cache/ctxlab``). ``make_engine(url)`` configures SQLite so that every transaction starts with
``BEGIN IMMEDIATE`` (writers queue instead of failing half way) and waits up to 30 s for a lock.
``migrate(engine)`` brings the schema to the newest revision with the Alembic scripts shipped in
``ctxlab/sessions/migrations``; a store written by a newer ctxlab is refused with a clear error.
"""
from __future__ import annotations

import os
from pathlib import Path

from sqlalchemy import create_engine, event, inspect
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.exc import ArgumentError, NoSuchModuleError, OperationalError

from ..errors import CtxlabError

URL_ENV, DATA_DIR_ENV = "CTXLAB_SESSIONS_URL", "CTXLAB_DATA_DIR"
MIGRATIONS = Path(__file__).resolve().parent / "migrations"
SQLITE_LOCK_TIMEOUT = 30.0


class SessionError(CtxlabError):
    """A session store problem: a bad URL, an unknown profile or session, a bad message."""


def data_dir() -> Path:
    """The ctxlab data directory: ``$CTXLAB_DATA_DIR``, else ``~/.cache/ctxlab``."""
    return Path(os.environ.get(DATA_DIR_ENV) or Path.home() / ".cache" / "ctxlab")


def default_url() -> str:
    """``$CTXLAB_SESSIONS_URL``, else ``sqlite:///<data dir>/sessions.db``."""
    return os.environ.get(URL_ENV) or f"sqlite:///{data_dir() / 'sessions.db'}"


def redact(url: str) -> str:
    """The URL with any password hidden, for messages."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return "<unparseable URL>"


def _sqlite_setup(engine: Engine, path: str | None) -> None:
    @event.listens_for(engine, "connect")
    def _connect(dbapi_conn, _record) -> None:  # the driver must not open transactions by itself
        dbapi_conn.isolation_level = None
        cur = dbapi_conn.cursor()
        cur.execute("PRAGMA foreign_keys=ON")
        if path:
            cur.execute("PRAGMA journal_mode=WAL")
        cur.close()

    @event.listens_for(engine, "begin")
    def _begin(conn) -> None:  # take the write lock up front: no deadlock between two upgrading readers
        conn.exec_driver_sql("BEGIN IMMEDIATE")


def make_engine(url: str) -> Engine:
    """An engine for ``url``; a SQLite file's directory is created. Errors name the URL (password hidden)."""
    try:
        parsed = make_url(url)
    except ArgumentError:
        raise SessionError(f"not a database URL: {redact(url)}", where="url",
                           hint="Use sqlite:///path/to/file.db or postgresql+psycopg://user@host:port/db") from None
    if parsed.drivername == "postgresql":  # psycopg 3 is what requirements.txt installs
        parsed = parsed.set(drivername="postgresql+psycopg")
    try:
        if parsed.get_backend_name() == "sqlite":
            path = parsed.database if parsed.database not in (None, "", ":memory:") else None
            if path:
                Path(path).expanduser().parent.mkdir(parents=True, exist_ok=True)
            engine = create_engine(parsed, connect_args={"timeout": SQLITE_LOCK_TIMEOUT})
            _sqlite_setup(engine, path)
            return engine
        return create_engine(parsed, pool_pre_ping=True)
    except (NoSuchModuleError, ImportError) as e:
        raise SessionError(f"no driver for {parsed.drivername} ({e})", where="url",
                           hint="Install the driver, e.g. psycopg[binary] for PostgreSQL") from None


def _alembic_config(connection):
    from alembic.config import Config
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    cfg.attributes["connection"] = connection
    return cfg


def head_revision() -> str:
    """The newest schema revision this ctxlab knows (the schema version it writes)."""
    from alembic.script import ScriptDirectory
    return ScriptDirectory(str(MIGRATIONS)).get_current_head()


def current_revision(engine: Engine) -> str | None:
    """The schema revision of the store, or None for an empty database."""
    from alembic.runtime.migration import MigrationContext
    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def migrate(engine: Engine, revision: str = "head") -> str:
    """Upgrade the store to ``revision`` (default: the newest); returns the revision now in force.
    A store at a revision this ctxlab does not know (written by a newer one) is an error."""
    from alembic import command
    from alembic.script import ScriptDirectory
    from alembic.util import CommandError
    script = ScriptDirectory(str(MIGRATIONS))
    try:
        now = current_revision(engine)
    except OperationalError as e:
        raise SessionError(f"cannot open the session store {redact(str(engine.url))}: {e.orig}", where="url",
                           hint="Check that the server runs and the URL, user and database are right") from None
    if now is not None and now not in {s.revision for s in script.walk_revisions()}:
        raise SessionError(f"the session store has schema version {now}, newer than this ctxlab knows "
                           f"({script.get_current_head()})", where=redact(str(engine.url)),
                           hint="Upgrade ctxlab to open it")
    target = script.get_current_head() if revision == "head" else revision
    if now == target:
        return now
    with engine.connect() as conn:
        try:
            command.upgrade(_alembic_config(conn), revision)
        except CommandError as e:
            raise SessionError(f"cannot migrate the session store: {e}", where=redact(str(engine.url))) from None
        conn.commit()
    return current_revision(engine)


def tables(engine: Engine) -> list[str]:
    """The table names in the store (for checks and the CLI)."""
    return sorted(inspect(engine).get_table_names())
