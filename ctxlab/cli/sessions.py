"""CLI of the live session store: ``ctxlab sessions list|show|export``.

``list`` prints the sessions (of ``--profile``), newest activity first; ``show ID`` the context
record, the compression history and the counters; ``export ID`` the whole session as an OpenAI
Chat request body (system prompt, full history, tools), which ``ctxlab apply`` and the Strategy
Lab read. ``--url`` names the store (default ``$CTXLAB_SESSIONS_URL``, else the SQLite file in the
ctxlab data directory).
"""
from __future__ import annotations

import argparse
import json

from .core import EXIT_OK, command
from ..errors import CtxlabError


def _sessions_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("action", choices=["list", "show", "export"], help="what to print")
    p.add_argument("session", nargs="?", help="the session id (show, export)")
    p.add_argument("--profile", help="list only this agent's sessions")
    p.add_argument("--url", help="the store's SQLAlchemy URL (default $CTXLAB_SESSIONS_URL or the data dir's file)")


@command("sessions", _sessions_args)
def _sessions(args: argparse.Namespace) -> int:
    """List live sessions, show one's context record and compression history, or export its history."""
    from ..sessions import SessionStore
    if args.action != "list" and not args.session:
        raise CtxlabError(f"`sessions {args.action}` needs a session id", where="SESSION",
                          hint="Find it with `ctxlab sessions list`")
    with SessionStore(args.url) as store:
        if args.action == "list":
            out = {"store_schema": store.schema_version,
                   "sessions": [i.to_dict() for i in store.sessions(args.profile)]}
        else:
            session = store.open_session(args.session)
            if args.action == "export":
                out = session.export()
            else:
                record = session.record().to_dict()
                record.pop("layout", None)
                out = {"id": session.id, "profile": session.profile, "model": session.model,
                       "messages": len(session.history()), "record": record,
                       "compressions": [c.to_dict() for c in session.compressions()]}
    print(json.dumps(out, indent=2, ensure_ascii=False))
    return EXIT_OK
