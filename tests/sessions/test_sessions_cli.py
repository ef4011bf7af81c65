"""``ctxlab sessions list|show|export`` on a store written through the API; the export reads back
as the session's full conversation; a missing id or session is exit 2 with one line."""
from __future__ import annotations

import json

import ctxlab
from ctxlab.cli import main
from ctxlab.sessions import SessionStore

from .test_sessions import chatter


def test_list_show_export(tmp_path, capsys):
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    with SessionStore(url) as store:
        store.save_profile("support", strategy="summarize", params={"trigger_messages": 6, "keep_recent": 4},
                           max_tokens=50_000, system_prompt="Be brief.")
        s = store.start_session("support", title="refund")
        s.add(*chatter(0, 9))
        s.context()
        sid = s.id
    assert main(["sessions", "list", "--url", url]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [(i["id"], i["title"], i["messages"], i["strategy"]) for i in listed["sessions"]] == [
        (sid, "refund", 9, "summarize")]
    assert main(["sessions", "show", sid, "--url", url]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["record"]["summary"] and shown["record"]["times_triggered"] == 1
    assert shown["compressions"][0]["summarized"] and shown["compressions"][0]["tokens_saved"] is not None
    assert main(["sessions", "export", sid, "--url", url]) == 0
    conv = ctxlab.loads(capsys.readouterr().out)
    assert len(conv) == 10 and conv.messages[0].text == "Be brief."  # system prompt + the full history


def test_bad_use_is_one_line(tmp_path, capsys):
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    assert main(["sessions", "show", "--url", url]) == 2
    assert "needs a session id" in capsys.readouterr().err
    assert main(["sessions", "export", "nope", "--url", url]) == 2
    err = capsys.readouterr().err
    assert "no session with id 'nope'" in err and "Traceback" not in err
