"""The Strategy Lab's Export tab offers the compaction settings: a TOML file for Codex, a shell
snippet for Claude Code, each under its own file name (not ``*_context.py``)."""
from __future__ import annotations

import json
import tomllib

from .helpers import open_page


def test_summarize_exports_to_the_compaction_targets_in_their_own_files(monkeypatch, downloads):
    app = open_page("strategy_lab.py", monkeypatch)
    app.selectbox(key="lab_strategy").set_value("server_compaction").run()
    app.session_state["lab_tab"] = "Export"
    app.run()
    assert not app.exception, app.exception
    codex = tomllib.loads(downloads["codex_config.toml"].decode())
    assert codex["model_auto_compact_token_limit"] > 0
    assert b"export CLAUDE_AUTOCOMPACT_PCT_OVERRIDE=" in downloads["claude_code_autocompact.sh"]
    anthropic = json.loads(downloads["anthropic.json"])
    assert anthropic["context_management"]["edits"][0]["type"] == "compact_20260112" and anthropic["not_carried"]
    assert "codex_context.py" not in downloads and "adk.json" in downloads
