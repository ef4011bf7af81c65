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
import sqlite3
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


def _sqlite_setup(engine: Engine, path: str | None, url: str) -> None:
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
        raw = conn.connection.dbapi_connection
        try:
            raw.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as e:
            if "readonly" not in str(e).lower() and "read-only" not in str(e).lower():
                raise store_failure(url, e) from None
            raw.execute("BEGIN")  # a read-only store can still be read; a write then fails with a clear error


#: (words in the driver's message, what is wrong, what to do) for the failures users meet
_FAILURES = (
    (("file is not a database", "malformed", "not a database"),
     "is damaged or is not a SQLite database",
     "Move the file aside (ctxlab then starts a new store there) or point CTXLAB_SESSIONS_URL at another store"),
    (("readonly database", "read-only", "unable to open database file", "permission denied", "readonly"),
     "cannot be written (read-only file or directory, or no permission)",
     "Make the file and its directory writable, or set CTXLAB_DATA_DIR or CTXLAB_SESSIONS_URL to a writable place"),
    (("disk is full", "no space left", "disk full", "could not extend file"),
     "is on a full disk",
     "Free some disk space (nothing was written; try again after)"),
    (("no such table", "no such column", "does not exist", "undefinedtable", "undefinedcolumn", "already exists"),
     "does not hold ctxlab's tables (a foreign database, or one changed by hand)",
     "Point CTXLAB_SESSIONS_URL at a ctxlab session store, or at an empty database"),
    (("is not json", "invalid input syntax for type json"),
     "refused a value that is not JSON (NaN or Infinity)",
     "Write such a number as a string"),
)


def store_failure(url: str, error: BaseException) -> SessionError:
    """One clear error for a database failure: which store, what is wrong, what to do."""
    orig = getattr(error, "orig", None) or error
    text = str(orig).strip().splitlines()[0] if str(orig).strip() else type(orig).__name__
    low = f"{type(orig).__name__} {text}".lower()
    for words, what, hint in _FAILURES:
        if any(w in low for w in words):
            return SessionError(f"the session store {what} ({shown_reason(text)})", where=redact(url), hint=hint)
    return SessionError(f"the session store failed ({type(orig).__name__}: {shown_reason(text)})", where=redact(url),
                        hint="Check that the database is reachable and writable, then try again")


def shown_reason(text: str) -> str:
    return text if len(text) <= 160 else text[:150] + "..."


def _translate_errors(engine: Engine, url: str) -> None:
    """Every DBAPI error raised through ``engine`` becomes one :class:`SessionError`."""
    @event.listens_for(engine, "handle_error")
    def _handle(context) -> SessionError | None:
        if isinstance(context.original_exception, (KeyboardInterrupt, SystemExit)):
            return None
        return store_failure(url, context.original_exception)


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
            if path and parsed.query.get("uri") in ("true", "1") and path.startswith("file:"):
                path = path[len("file:"):].split("?")[0] or None  # a SQLite URI names the file after file:
            if path:
                try:
                    Path(path).expanduser().parent.mkdir(parents=True, exist_ok=True)
                except OSError as e:
                    raise store_failure(url, e) from None
            engine = create_engine(parsed, connect_args={"timeout": SQLITE_LOCK_TIMEOUT})
            _sqlite_setup(engine, path, url)
            _translate_errors(engine, url)
            return engine
        engine = create_engine(parsed, pool_pre_ping=True)
        _translate_errors(engine, url)
        return engine
    except (NoSuchModuleError, ImportError) as e:
        raise SessionError(f"no driver for {parsed.drivername} ({e})", where="url",
                           hint="Install the driver, e.g. psycopg[binary] for PostgreSQL") from None


def read_only_urls(url: str) -> list[str]:
    """URLs that read a SQLite store file without writing beside it, for a store in a read-only
    folder (a WAL-mode file needs its ``-wal`` and ``-shm`` files, which such a folder cannot hold):
    read-only, then, when no ``-wal`` file holds changes not yet in the file, immutable (SQLite
    then needs no ``-shm``). Empty for any other store."""
    try:
        parsed = make_url(url)
    except ArgumentError:
        return []
    path = parsed.database
    if parsed.get_backend_name() != "sqlite" or not path or path == ":memory:" or parsed.query:
        return []
    file = Path(path).expanduser().resolve()
    if not file.is_file():
        return []
    base = f"sqlite:///file:{file.as_posix()}?mode=ro"
    urls = [f"{base}&uri=true"]
    if not Path(f"{file}-wal").exists():
        urls.append(f"{base}&immutable=1&uri=true")
    return urls


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
    except SessionError as e:
        if "failed (" in e.problem:  # not a failure users meet by name: most often the server cannot be reached
            raise SessionError(f"cannot open the session store {redact(str(engine.url))}: {e.problem}",
                               where="url", hint="Check that the server runs and the URL, user and database are "
                                                 "right") from None
        raise
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
