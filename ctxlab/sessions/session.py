"""``Session``: one conversation with an agent, its full history and its context record.

    s.add({"role": "user", "content": "..."})   # any OpenAI Chat message: user, assistant (tool_calls), tool
    s.context()                                 # the messages to send now (applies and records the strategy)
    s.history(), s.record(), s.compressions()   # the full history; the context record; the last applications

The strategy is applied where an agent applies it: at the start of a turn, i.e. by the first
``context()`` after a user message arrived (``force=True`` applies it anyway). Inside a turn,
``context()`` is the record's layout plus what arrived since. Every write locks the session row,
so two processes adding to one session never lose or reorder a message.
"""
from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Iterable, Mapping

from sqlalchemy import Connection, delete, select, update

from ..conversation import Conversation
from ..configs.lab_config import read_config
from ..formats.tools import parse_tools
from ..strategies import Budget
from ..tokens import TokenCount, TokenCounter, count_tokens
from . import context as ctx
from .db import SessionError
from .models import compressions, context_records, messages, profiles, sessions
from ..strategies.step import Compression, due
from .records import COUNTERS, ContextRecord, now, utc

if TYPE_CHECKING:
    from .store import SessionStore

HISTORY_LIMIT = 10  # compression history entries kept per session


class Session:
    """A handle on one stored session; it holds no state of its own, so any number of handles
    (in any number of processes) see the same session."""

    def __init__(self, store: "SessionStore", session_id: str) -> None:
        self.store, self.id = store, session_id
        with store.engine.begin() as conn:
            row = conn.execute(select(sessions, profiles.c.name.label("profile"))
                               .join(profiles, profiles.c.id == sessions.c.profile_id)
                               .where(sessions.c.id == session_id)).one()
        self.profile, self.model, self.title = row.profile, row.model, row.title
        self.system_prompt, self.tools = row.system_prompt, tuple(row.tools or ())

    def __repr__(self) -> str:
        return f"Session({self.id!r}, profile={self.profile!r})"

    # -- writing -------------------------------------------------------------------------
    def add(self, *bodies: Mapping[str, Any]) -> list[int]:
        """Append messages (OpenAI Chat dicts) to the history, in order, in one transaction;
        returns their ids (``seq``). A bad message raises naming it, and nothing is added."""
        if not bodies:
            return []
        with self.store.engine.begin() as conn:
            row = self.store._lock_session(conn, self.id)
            first = row.next_seq
            checked = [ctx.checked_body(b, f"message {first + k}") for k, b in enumerate(bodies)]
            t = now()
            conn.execute(messages.insert(), [{"session_id": self.id, "seq": first + k, "role": b["role"], "body": b,
                                              "created_at": t} for k, b in enumerate(checked)])
            conn.execute(update(sessions).where(sessions.c.id == self.id)
                         .values(next_seq=first + len(checked), updated_at=t))
        return list(range(first, first + len(checked)))

    def context(self, *, force: bool = False) -> list[dict[str, Any]]:
        """The messages to send to the model now: the system prompt, the running summary, the
        active messages, then what arrived since the last application. When something arrived, the
        strategy is applied first and the record updated: before every call (``apply_at`` every_call,
        the default), or at the start of a turn only (turn_start); ``force`` applies it now."""
        with self.store.engine.begin() as conn:
            self.store._lock_session(conn, self.id)
            rec = self._record_row(conn)
            bodies = self._bodies(conn)
            new = [s for s in bodies if s > rec.applied_through]
            if not new:
                return ctx.assemble(self.system_prompt, rec.layout, bodies, rec.applied_through)
            lab = read_config(rec.config)  # read once: where the strategy runs, and the strategy itself
            if force or due(lab.strategy.apply_at, any(bodies[s]["role"] == "user" for s in new)):
                rec = self._apply(conn, rec, bodies, lab)
            return ctx.assemble(self.system_prompt, rec.layout, bodies, rec.applied_through)

    def _apply(self, conn: Connection, rec: Any, bodies: dict[int, dict], lab: Any) -> Any:
        counter = TokenCounter(self.model)
        budget = Budget(**{**lab.budget_kwargs(), "tools_tokens": counter.tools(self._tool_defs())})
        done = ctx.apply(lab.strategy, budget, counter, self.system_prompt, rec.layout, rec.state or {}, bodies,
                         rec.applied_through)
        plan, t = done.plan, now()
        values = {"summary": done.summary, "state": done.state, "active_ids": done.active_ids, "layout": done.layout,
                  "applied_through": max(bodies), "updated_at": t, "times_applied": rec.times_applied + 1,
                  "times_triggered": rec.times_triggered + done.triggered,
                  "tokens_saved": rec.tokens_saved + plan.saved,
                  "messages_removed": rec.messages_removed + done.removed}
        conn.execute(update(context_records).where(context_records.c.session_id == self.id).values(**values))
        conn.execute(compressions.insert().values(
            session_id=self.id, applied_at=t, turn=sum(b["role"] == "user" for b in bodies.values()),
            strategy=plan.strategy, triggered=done.triggered, tokens_before=plan.tokens_before,
            tokens_after=plan.tokens_after, messages_before=len(plan.actions), messages_after=len(plan.messages),
            summarized=done.summarized, dropped=done.dropped, cleared=done.cleared))
        keep = (select(compressions.c.id).where(compressions.c.session_id == self.id)
                .order_by(compressions.c.id.desc()).limit(HISTORY_LIMIT))
        conn.execute(delete(compressions).where(compressions.c.session_id == self.id)
                     .where(compressions.c.id.not_in(keep.scalar_subquery())))
        return self._record_row(conn)

    def set_title(self, title: str) -> None:
        """Rename the session."""
        with self.store.engine.begin() as conn:
            conn.execute(update(sessions).where(sessions.c.id == self.id).values(title=title[:200]))
        self.title = title[:200]

    # -- reading -------------------------------------------------------------------------
    def history(self) -> list[dict[str, Any]]:
        """The full history, oldest first, as stored (a strategy never removes anything from it)."""
        with self.store.engine.begin() as conn:
            return list(self._bodies(conn).values())

    def record(self) -> ContextRecord:
        """The context record: strategy and config, running summary, active message ids, counters."""
        with self.store.engine.begin() as conn:
            r = self._record_row(conn)
        return ContextRecord(self.id, r.strategy, dict(r.config), r.summary, tuple(r.active_ids), r.applied_through,
                             utc(r.updated_at), dict(r.state or {}), tuple(r.layout),
                             **{k: getattr(r, k) for k in COUNTERS})

    def compressions(self) -> list[Compression]:
        """The last applications of the strategy (at most 10), oldest first."""
        with self.store.engine.begin() as conn:
            rows = conn.execute(select(compressions).where(compressions.c.session_id == self.id)
                                .order_by(compressions.c.id)).all()
        return [Compression(r.triggered, r.tokens_before, r.tokens_after, len(r.summarized) + len(r.dropped),
                            applied_at=utc(r.applied_at), turn=r.turn, strategy=r.strategy,
                            messages_before=r.messages_before, messages_after=r.messages_after,
                            summarized=tuple(r.summarized), dropped=tuple(r.dropped), cleared=tuple(r.cleared))
                for r in rows]

    def conversation(self) -> Conversation:
        """The whole session as a ctxlab Conversation: system prompt, full history, tools, model."""
        body = self.export()
        from ..formats import loads
        return loads(json.dumps(body))

    def export(self) -> dict[str, Any]:
        """The whole session as an OpenAI Chat request body (plus ``title``), what the Strategy
        Lab and ``ctxlab sessions export`` read."""
        system = [{"role": "system", "content": self.system_prompt}] if self.system_prompt else []
        out: dict[str, Any] = {"model": self.model, "messages": system + self.history()}
        if self.tools:
            out["tools"] = [dict(t) for t in self.tools]
        out["title"] = self.title or f"session {self.id[:8]} of {self.profile}"
        return out

    def count(self, bodies: Iterable[Mapping[str, Any]]) -> TokenCount:
        """Token counts of messages (e.g. ``context()``) with this session's model and tools."""
        conv = Conversation(tuple(ctx.to_message(b, f"message {i}") for i, b in enumerate(bodies)),
                            self._tool_defs(), self.model)
        return count_tokens(conv, model=self.model)

    def _tool_defs(self) -> tuple:
        return parse_tools(list(self.tools), "session.tools") if self.tools else ()

    def _record_row(self, conn: Connection) -> Any:
        return conn.execute(select(context_records).where(context_records.c.session_id == self.id)).one()

    def _bodies(self, conn: Connection) -> dict[int, dict[str, Any]]:
        rows = conn.execute(select(messages.c.seq, messages.c.body).where(messages.c.session_id == self.id)
                            .order_by(messages.c.seq))
        return {r.seq: r.body for r in rows}


__all__ = ["HISTORY_LIMIT", "Session", "SessionError"]
