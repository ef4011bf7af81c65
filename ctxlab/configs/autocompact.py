"""A tuned compaction threshold as the coding agents' auto-compact settings.

* Claude Code: the environment variables ``CLAUDE_AUTOCOMPACT_PCT_OVERRIDE`` (the percentage of
  the window at which auto-compact fires, 1-100) and ``CLAUDE_CODE_AUTO_COMPACT_WINDOW`` (the
  window, in tokens, the percentage applies to; capped at the model's window), set in the shell or
  in the ``env`` block of ``~/.claude/settings.json``. Sources: Claude Code's settings docs
  (code.claude.com/docs/en/settings, environment variables); issue anthropics/claude-code#31806 (the
  override only lowers the threshold: it is capped at Claude Code's default, about the window less
  an output reserve and a 13,000-token buffer); #63186 (the settings.json ``env`` block was reported
  not to reach the threshold in one version, while a shell ``export`` did). There is no setting for
  what the summary keeps.
* Codex CLI: ``model_auto_compact_token_limit`` (tokens) and ``model_context_window`` in
  ``~/.codex/config.toml`` (Codex's configuration reference and sample config,
  developers.openai.com/codex/config-sample). Codex keeps the user messages beside its summary
  (openai/codex#45296, #6692), as ``server_compaction`` with ``keep_user_messages=True`` does.

``NativeExport.python`` holds the file's text (a shell snippet, a TOML fragment) with the notes as
``#`` comments; ``file_name`` names the download.
"""
from __future__ import annotations

import json

from ..i18n import T
from .compaction import kept_notes, trigger_note, tuned_trigger
from .lab_config import LabConfig
from .native import NativeExport, common_notes, notes_block, target

CLAUDE_BUFFER = 13_000
CLAUDE_OUTPUT_RESERVE = 20_000


def _claude_code(lab: LabConfig) -> NativeExport:
    t = tuned_trigger(lab)
    window = lab.max_tokens
    pct = min(max(t.inputs * 100 // window, 1), 100)
    env = {"CLAUDE_AUTOCOMPACT_PCT_OVERRIDE": str(pct), "CLAUDE_CODE_AUTO_COMPACT_WINDOW": str(window)}
    fires = window * pct // 100
    default = window - CLAUDE_BUFFER - CLAUDE_OUTPUT_RESERVE
    notes = [*common_notes(lab, budget_used=lab.strategy.name == "summarize"),
             trigger_note(t, lab, T("Claude Code")),
             T("the percentage is a whole number: {pct}% of the {window:,}-token window (max_tokens) fires at "
             "{fires:,} tokens, not exactly {inputs:,}", pct=pct, window=window, fires=fires, inputs=t.inputs),
             T("Claude Code's own system prompt, tool definitions and memory files count too: the config's "
             "tools_tokens are the lab's tools, not Claude Code's")]
    if fires > default:
        notes.append(T("above Claude Code's default threshold (about {default:,} here: the window less up to "
                     "{reserve:,} for the summary and a {buffer:,}-token buffer): the override "
                     "only lowers the threshold (anthropics/claude-code#31806), so it compacts at its default", default=default, reserve=CLAUDE_OUTPUT_RESERVE, buffer=CLAUDE_BUFFER))
    notes += [*kept_notes(lab, T("Claude Code's auto-compact"), keeps_users=False),
              T("settings.json: the env block below is the documented place, but one version was reported to ignore "
              "it for the threshold (anthropics/claude-code#63186); the shell export always applies")]
    text = (notes_block(notes) + "".join(f"export {k}={v}\n" for k, v in env.items())
            + "\n# or, in ~/.claude/settings.json:\n"
            + "".join(f"#   {ln}\n" for ln in json.dumps({"env": env}, indent=2).splitlines()))
    return NativeExport("claude_code", lab.strategy.name, {"env": env}, text, tuple(notes),
                        file_name="claude_code_autocompact.sh")


def _codex(lab: LabConfig) -> NativeExport:
    t = tuned_trigger(lab)
    settings = {"model_auto_compact_token_limit": t.inputs, "model_context_window": lab.max_tokens}
    notes = [*common_notes(lab, budget_used=lab.strategy.name == "summarize"),
             trigger_note(t, lab, "Codex"),
             T("model_context_window {max_tokens:,}: the config's max_tokens; leave it out to use the window Codex "
             "knows for the model", max_tokens=lab.max_tokens),
             T("Codex's own instructions and tool definitions count too: the config's tools_tokens are the lab's tools"),
             *kept_notes(lab, T("Codex's auto-compact"), keeps_users=True)]
    text = notes_block(notes) + "".join(f"{k} = {v}\n" for k, v in settings.items())
    return NativeExport("codex", lab.strategy.name, settings, text, tuple(notes), file_name="codex_config.toml")


target("claude_code", {"summarize": _claude_code, "server_compaction": _claude_code},
       hint=T("Claude Code's only compaction setting is its auto-compact threshold: export summarize or "
            "server_compaction."))
target("codex", {"summarize": _codex, "server_compaction": _codex},
       hint=T("Codex's only compaction setting is model_auto_compact_token_limit: export summarize or server_compaction."))

__all__ = ["CLAUDE_BUFFER", "CLAUDE_OUTPUT_RESERVE"]
