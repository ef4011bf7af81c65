"""``summarize`` and ``server_compaction`` as Anthropic's server-side compaction, ``compact_20260112``.

The request carries ``context_management={"edits": [{"type": "compact_20260112", ...}]}`` and the
beta ``compact-2026-01-12``. Fields, from Anthropic's API reference (``BetaCompact20260112Edit``)
and its compaction guide (platform.claude.com/docs/en/build-with-claude/compaction, read 2026-11):
``trigger`` (``{"type": "input_tokens", "value": N}``; default 150,000, at least 50,000),
``instructions`` (added to the summary prompt), ``pause_after_compaction`` (return the compaction
block before continuing). Past the trigger the API writes a compaction block and drops every message
block before it on later requests. Supported on Claude Opus 4.6 and 4.7 and Sonnet 4.6.

``clear_tool_results >> summarize`` (or ``>> server_compaction``) exports both edits, the
``clear_tool_uses_20250919`` edit first, with both betas. ``clear_thinking_20251015`` (``keep``:
``{"type": "thinking_turns", "value": N}`` or ``"all"``; it must come first in ``edits``) is not
emitted: no ctxlab strategy decides about thinking blocks, and the note says how to add it.
"""
from __future__ import annotations

from typing import Any

from ..i18n import T
from .anthropic import BETA as EDITING_BETA
from .anthropic import clear_tool_uses_edit
from .compaction import kept_notes, trigger_note, tuned_trigger
from .lab_config import LabConfig
from .native import NativeExport, common_notes, extend, literal, notes_block, pretty

BETA = "compact-2026-01-12"
EDIT_TYPE = "compact_20260112"
MINIMUM_TRIGGER = 50_000
SUPPORTED = ("claude-opus-4-6", "claude-opus-4-7", "claude-sonnet-4-6", "claude-mythos")
THINKING_NOTE = (T("clear_thinking_20251015: not exported (no ctxlab strategy decides about thinking blocks); with "
                 "extended thinking on, put {\"type\": \"clear_thinking_20251015\", \"keep\": {\"type\": "
                 "\"thinking_turns\", \"value\": 1}} first in edits to drop older turns' thinking (ctxlab's reasoning "
                 "check requires only the turn in progress), or keep \"all\" to keep the prompt cache"))


def compact_edit(lab: LabConfig, step: Any) -> tuple[dict[str, Any], list[str]]:
    """The ``compact_20260112`` edit for a summarize / server_compaction step, and its notes."""
    single = LabConfig(step, lab.model, lab.max_tokens, lab.reserve, lab.tools_tokens, lab.pins, lab.tools)
    t = tuned_trigger(single)
    value = max(t.inputs, MINIMUM_TRIGGER)
    edit: dict[str, Any] = {"type": EDIT_TYPE, "trigger": {"type": "input_tokens", "value": value},
                            "pause_after_compaction": False}
    notes = [trigger_note(t, lab, "Anthropic")]
    if value != t.inputs:
        notes.append(T("trigger raised to {minimum:,} input tokens, Anthropic's minimum: the tuned {inputs:,} "
                     "is below it, so compaction fires later than in the replay", minimum=MINIMUM_TRIGGER, inputs=t.inputs))
    instructions = getattr(step, "instructions", "")
    if instructions:
        edit["instructions"] = instructions
    notes += kept_notes(single, T("Anthropic's compaction"), keeps_users=False)
    notes.append(T("pause_after_compaction false: the API continues the reply after compacting; true returns the "
                 "compaction block first (ctxlab's replay measures prompts, so it has no such pause to simulate)"))
    return edit, notes


_CODE = '''\
"""Anthropic server-side compaction exported by ctxlab {version} from a {strategy} config.

Needs: pip install anthropic. Compaction is a beta: the request names {betas!r}.
Append each response (its compaction block included) to your messages: the API drops what came
before the newest compaction block itself.
"""
{notes}
import anthropic

MODEL = {model}
BETAS = {betas!r}
CONTEXT_MANAGEMENT = {context}


def create_message(client: anthropic.Anthropic, messages: list, *, model: str = MODEL, **kwargs):
    """client.beta.messages.create with compaction on; pass max_tokens, tools, system as usual."""
    return client.beta.messages.create(model=model, messages=messages, betas=BETAS,
                                       context_management=CONTEXT_MANAGEMENT, **kwargs)


# The request's context_management, as JSON:
{json}
'''


def _export(lab: LabConfig) -> NativeExport:
    from ..version import __version__
    steps = lab.steps()
    edits, notes = [], [*common_notes(lab, budget_used=any(s.name != "server_compaction" for s in steps))]
    betas = [BETA]
    if steps[0].name == "clear_tool_results":
        edit, more = clear_tool_uses_edit(LabConfig(steps[0], lab.model, lab.max_tokens, lab.reserve,
                                                    lab.tools_tokens, lab.pins, lab.tools))
        edits.append(edit)
        notes += [T("clear_tool_uses_20250919: {note}", note=n) for n in more]
        betas.append(EDITING_BETA)
    edit, more = compact_edit(lab, steps[-1])
    edits.append(edit)
    notes += more
    notes.append(THINKING_NOTE)
    model = lab.model if (lab.model or "").startswith("claude") else None
    if model is None:
        notes.append(T("the config's model {model} is not a Claude model: pass model= yourself "
                     "(compaction runs on {items})", model=lab.model or 'gpt-4o', items=', '.join(SUPPORTED[:3])))
    elif not model.startswith(SUPPORTED):
        notes.append(T("{model}: Anthropic lists compaction for {items} only", model=model, items=', '.join(SUPPORTED[:3])))
    context = {"edits": edits}
    strategy = " >> ".join(s.name for s in steps)
    code = _CODE.format(version=__version__, strategy=strategy, betas=betas, notes=notes_block(notes).rstrip("\n"),
                        model=literal(model) + ("  # set a Claude model" if model is None else ""),
                        context=literal(context), json="\n".join("# " + ln for ln in pretty(context).splitlines()))
    return NativeExport("anthropic", strategy, {"betas": betas, "context_management": context}, code, tuple(notes))


extend("anthropic", {"summarize": _export, "server_compaction": _export,
                     "clear_tool_results >> summarize": _export, "clear_tool_results >> server_compaction": _export})

__all__ = ["BETA", "EDIT_TYPE", "MINIMUM_TRIGGER", "compact_edit"]
