"""``SessionStore``: agent profiles and their sessions in a SQL database (SQLite or PostgreSQL).

    store = SessionStore("sqlite:///agents.db")      # or a PostgreSQL URL; no argument: the default file
    store.save_profile("support", model="gpt-4o", max_tokens=8000, system_prompt="...",
                       strategy="summarize", params={"trigger_messages": 20})
    s = store.start_session("support")                # copies the profile's config
    store.open_session(s.id)                          # resume, in another process or after a restart

Opening a store brings its schema to the newest revision (see ``ctxlab.sessions.db``). A profile's
token overflow config is a ctxlab config (the format the Strategy Lab exports), so a tuned config
can be pasted in as ``config=``. Changing a profile changes new sessions only;
``update_existing_sessions(name)`` gives its sessions the new config explicitly.
"""
from __future__ import annotations

import uuid
from typing import Any, Mapping, Sequence

from sqlalchemy import Connection, func, select, update

from ..configs.lab_config import make_config, read_config
from ..model_specs import resolve_model
from ..strategies import Budget, get_strategy
from .db import SessionError, default_url, make_engine, migrate, read_only_urls, redact
from .models import context_records, messages, profiles, sessions
from .records import COUNTERS, Profile, SessionInfo, now, strategy_label, utc
from .session import Session


def _overflow(model: str, max_tokens: int | None, reserve: float, strategy: str, params: Mapping[str, Any] | None,
              config: Mapping[str, Any] | None) -> dict[str, Any]:
    """The checked token overflow config: from a ctxlab ``config``, or built from the arguments."""
    if config is not None:
        read_config(config)  # raises naming the bad key
        return dict(config)
    resolve_model(model)
    built = get_strategy(strategy, **dict(params or {}))
    return make_config(built, Budget.for_model(model, reserve=reserve, max_tokens=max_tokens), model)


def _profile(row: Any) -> Profile:
    return Profile(row.name, row.model, row.system_prompt, dict(row.overflow), tuple(row.tools or ()),
                   utc(row.updated_at))


class SessionStore:
    """Profiles and sessions in the database at ``url`` (default: ``default_url()``)."""

    def __init__(self, url: str | None = None) -> None:
        self.url = url or default_url()
        self.engine = make_engine(self.url)
        try:
            self.schema_version = migrate(self.engine)
        except SessionError as e:  # a store in a read-only folder: still listed and shown (writes fail clearly)
            self.schema_version = self._open_read_only(e)

    def _open_read_only(self, error: SessionError) -> str:
        """Reopen a SQLite store that cannot be written as read-only (see ``read_only_urls``)."""
        if "cannot be written" not in error.problem:
            raise error
        for url in read_only_urls(self.url):
            self.engine.dispose()
            self.engine = make_engine(url)
            try:
                return migrate(self.engine)
            except SessionError:
                continue
        raise error

    def __repr__(self) -> str:
        return f"SessionStore({redact(self.url)!r})"

    def close(self) -> None:
        """Release the database connections."""
        self.engine.dispose()

    def __enter__(self) -> "SessionStore":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- profiles ------------------------------------------------------------------------
    def save_profile(self, name: str, *, model: str = "gpt-4o", max_tokens: int | None = None, reserve: float = 0.15,
                     system_prompt: str = "", strategy: str = "none", params: Mapping[str, Any] | None = None,
                     tools: Sequence[Mapping[str, Any]] = (), config: Mapping[str, Any] | None = None) -> Profile:
        """Create or replace the profile ``name``. The token overflow config is ``strategy`` with
        ``params`` against ``max_tokens`` (default: the model's window) less ``reserve``, or a
        ctxlab ``config`` as the Strategy Lab exports it. Existing sessions keep their config."""
        name = (name or "").strip()
        if not name or len(name) > 200:
            raise SessionError("a profile needs a name of 1 to 200 characters", where="profile.name")
        overflow = _overflow(model, max_tokens, reserve, strategy, params, config)
        if config is not None and config.get("model"):
            model = str(config["model"])
        values = {"model": model, "system_prompt": system_prompt or "", "overflow": overflow,
                  "tools": [dict(t) for t in tools], "updated_at": now()}
        with self.engine.begin() as conn:
            found = conn.execute(select(profiles.c.id).where(profiles.c.name == name)).scalar()
            if found is None:
                conn.execute(profiles.insert().values(name=name, created_at=values["updated_at"], **values))
            else:
                conn.execute(update(profiles).where(profiles.c.id == found).values(**values))
        return self.profile(name)

    def profile(self, name: str) -> Profile:
        """The profile ``name``; an unknown name lists the known ones."""
        with self.engine.begin() as conn:
            row = conn.execute(select(profiles).where(profiles.c.name == name)).first()
            if row is None:
                known = conn.execute(select(profiles.c.name).order_by(profiles.c.name)).scalars().all()
        if row is None:
            raise SessionError(f"no profile named {name!r}", where="profile",
                               hint=f"Known profiles: {', '.join(known)}" if known else "Create one with save_profile")
        return _profile(row)

    def profiles(self) -> list[Profile]:
        """Every profile, by name."""
        with self.engine.begin() as conn:
            return [_profile(r) for r in conn.execute(select(profiles).order_by(profiles.c.name))]

    # -- sessions ------------------------------------------------------------------------
    def start_session(self, profile: str, *, title: str = "") -> Session:
        """A new session of ``profile``: it copies the profile's model, system prompt, tools and
        token overflow config, and keeps them when the profile changes later."""
        p = self.profile(profile)
        sid, t = uuid.uuid4().hex, now()
        with self.engine.begin() as conn:
            pid = conn.execute(select(profiles.c.id).where(profiles.c.name == profile)).scalar_one()
            conn.execute(sessions.insert().values(id=sid, profile_id=pid, title=title[:200], model=p.model,
                                                  system_prompt=p.system_prompt, tools=list(p.tools), next_seq=0,
                                                  created_at=t, updated_at=t))
            conn.execute(context_records.insert().values(
                session_id=sid, strategy=strategy_label(p.overflow), config=dict(p.overflow), summary="", state={},
                active_ids=[], layout=[], applied_through=-1, updated_at=t, **dict.fromkeys(COUNTERS, 0)))
        return Session(self, sid)

    def open_session(self, session_id: str) -> Session:
        """The session ``session_id`` (in another process, or after a restart)."""
        with self.engine.begin() as conn:
            found = conn.execute(select(sessions.c.id).where(sessions.c.id == str(session_id))).scalar()
        if found is None:
            raise SessionError(f"no session with id {session_id!r}", where="session",
                               hint="List the sessions with store.sessions() or `ctxlab sessions list`")
        return Session(self, found)

    def sessions(self, profile: str | None = None) -> list[SessionInfo]:
        """Sessions, newest activity first (of one profile when ``profile`` is given)."""
        count = (select(messages.c.session_id, func.count().label("n")).group_by(messages.c.session_id).subquery())
        q = (select(sessions, profiles.c.name.label("profile"), context_records.c.strategy, count.c.n)
             .join(profiles, profiles.c.id == sessions.c.profile_id)
             .join(context_records, context_records.c.session_id == sessions.c.id)
             .outerjoin(count, count.c.session_id == sessions.c.id)
             .order_by(sessions.c.updated_at.desc(), sessions.c.id))
        if profile is not None:
            q = q.where(profiles.c.name == profile)
        with self.engine.begin() as conn:
            return [SessionInfo(r.id, r.profile, r.title, int(r.n or 0), utc(r.created_at), utc(r.updated_at),
                                r.strategy)
                    for r in conn.execute(q)]

    def update_existing_sessions(self, profile: str) -> int:
        """Give every session of ``profile`` the profile's current token overflow config (the
        explicit action; the summary and history stay). Returns how many sessions changed."""
        p = self.profile(profile)
        with self.engine.begin() as conn:
            pid = conn.execute(select(profiles.c.id).where(profiles.c.name == profile)).scalar_one()
            ids = select(sessions.c.id).where(sessions.c.profile_id == pid)
            result = conn.execute(update(context_records).where(context_records.c.session_id.in_(ids))
                                  .values(strategy=strategy_label(p.overflow), config=dict(p.overflow),
                                          updated_at=now()))
            return int(result.rowcount or 0)

    def counters(self, profile: str | None = None) -> dict[str, int]:
        """Monitoring counters summed over the sessions (of ``profile``, or all), plus ``sessions``."""
        cols = [func.coalesce(func.sum(getattr(context_records.c, k)), 0) for k in COUNTERS]
        q = select(func.count(), *cols).select_from(context_records.join(sessions).join(profiles))
        if profile is not None:
            q = q.where(profiles.c.name == profile)
        with self.engine.begin() as conn:
            row = conn.execute(q).one()
        return {"sessions": int(row[0]), **{k: int(v) for k, v in zip(COUNTERS, row[1:])}}

    # -- used by Session -------------------------------------------------------------------
    def _lock_session(self, conn: Connection, session_id: str) -> Any:
        """The session row, locked until the transaction ends (FOR UPDATE on PostgreSQL; on
        SQLite every transaction already holds the write lock: BEGIN IMMEDIATE)."""
        row = conn.execute(select(sessions).where(sessions.c.id == session_id).with_for_update()).first()
        if row is None:
            raise SessionError(f"session {session_id!r} no longer exists", where="session")
        return row


__all__ = ["SessionStore", "now"]
