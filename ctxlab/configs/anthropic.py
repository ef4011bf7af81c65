"""``clear_tool_results`` as the Anthropic Messages API's own context editing.

The request carries ``context_management={"edits": [{"type": "clear_tool_uses_20250919", ...}]}``
and the beta header ``context-management-2025-06-27``; the API then clears old tool results on
its side, before the prompt reaches the model, and the client keeps its full history. Fields, as
Anthropic documents them: ``trigger`` (``{"type": "input_tokens", "value": N}``; default 100,000),
``keep`` (``{"type": "tool_uses", "value": N}``; default 3), ``clear_at_least``
(``{"type": "input_tokens", "value": N}``; if the API cannot clear that many, it clears nothing),
``exclude_tools`` (tool names never cleared), ``clear_tool_inputs`` (also clear the calls' inputs).

Where ctxlab and Anthropic differ, the export says so in ``not_carried``: Anthropic's trigger
counts every input token (tool definitions too) with Claude's tokenizer; ctxlab leaves a result
alone when its placeholder would not shrink it; pins have no equivalent.
"""
from __future__ import annotations

from typing import Any

from ..i18n import T
from .lab_config import LabConfig
from .native import NativeExport, common_notes, literal, notes_block, target

BETA = "context-management-2025-06-27"
EDIT_TYPE = "clear_tool_uses_20250919"
SMALL_RESULTS = (T("ctxlab leaves a tool result alone when its placeholder would not make it smaller; "
                 "Anthropic clears every older result that is not kept or excluded, whatever its size"))


def clear_tool_uses_edit(lab: LabConfig) -> tuple[dict[str, Any], list[str]]:
    """The ``clear_tool_uses_20250919`` edit for a clear_tool_results config, and its notes."""
    s = lab.strategy
    trigger = max(s.trigger_tokens + lab.tools_tokens, 1)
    edit: dict[str, Any] = {"type": EDIT_TYPE, "trigger": {"type": "input_tokens", "value": trigger},
                            "keep": {"type": "tool_uses", "value": s.keep}}
    if s.clear_at_least:
        edit["clear_at_least"] = {"type": "input_tokens", "value": s.clear_at_least}
    if s.exclude_tools:
        edit["exclude_tools"] = list(s.exclude_tools)
    edit["clear_tool_inputs"] = s.clear_tool_inputs
    when = (T("trigger_tokens 0 (clear on every request) becomes the smallest input-token trigger")
            if not s.trigger_tokens else T("trigger_tokens {trigger_tokens:,} counts the messages only", trigger_tokens=s.trigger_tokens))
    notes = [T("trigger: {when}; Anthropic counts all input tokens, tool definitions included, so the export "
             "adds the config's tools_tokens ({tools_tokens:,}): input_tokens {trigger:,}", when=when, tools_tokens=lab.tools_tokens, trigger=trigger),
             T("token counts: ctxlab counted with tiktoken for {model} (an estimate for Claude "
             "models); the API counts with Claude's tokenizer, so the trigger fires at a slightly different point", model=lab.model or 'gpt-4o'),
             SMALL_RESULTS,
             T("the placeholder text is Anthropic's own, not ctxlab's '[tool result cleared by ctxlab: N tokens]'")]
    if s.clear_at_least:
        notes.append(T("clear_at_least is all-or-nothing in both (if that many tokens cannot be cleared, nothing is); "
                     "each side measures the tokens saved with its own tokenizer and placeholder"))
    if lab.pins:
        notes.append(T("pinned tool results may be cleared by the API: list their tools in exclude_tools to keep them"))
    notes.append(T("the budget (max_tokens {max_tokens:,}, reserve {reserve}): ctxlab's planning limit; "
                 "the API has no such setting (it enforces the model's window)", max_tokens=lab.max_tokens, reserve=lab.reserve))
    return edit, notes


_CODE = '''\
"""Anthropic context editing exported by ctxlab {version} from a clear_tool_results config.

Needs: pip install anthropic. Context editing is a beta: the request names the beta {beta!r}.
The API clears old tool results on its side; keep sending your full history.
"""
{notes}
import anthropic

MODEL = {model}
BETAS = [{beta!r}]
CONTEXT_MANAGEMENT = {context}


def create_message(client: anthropic.Anthropic, messages: list, *, model: str = MODEL, **kwargs):
    """client.beta.messages.create with tool-result clearing on; pass max_tokens, tools, system as usual."""
    return client.beta.messages.create(model=model, messages=messages, betas=BETAS,
                                       context_management=CONTEXT_MANAGEMENT, **kwargs)


# Usage:
#   response = create_message(anthropic.Anthropic(), messages, max_tokens=1024, tools=tools)
#   response.context_management  # the edits the API applied (cleared tool uses, tokens cleared)
'''


def _clear_tool_results(lab: LabConfig) -> NativeExport:
    from ..version import __version__
    edit, notes = clear_tool_uses_edit(lab)
    notes = [*common_notes(lab, budget_used=True), *notes]
    model = lab.model if (lab.model or "").startswith("claude") else None
    if model is None:
        notes.append(T("the config's model {model} is not a Claude model: pass model= yourself", model=lab.model or 'gpt-4o'))
    context = {"edits": [edit]}
    code = _CODE.format(version=__version__, beta=BETA, notes=notes_block(notes).rstrip("\n"),
                        model=literal(model) + ("  # set a Claude model" if model is None else ""),
                        context=literal(context))
    data = {"betas": [BETA], "context_management": context}
    return NativeExport("anthropic", lab.strategy.name, data, code, tuple(notes))


def _none(lab: LabConfig) -> NativeExport:
    notes = [T("strategy none sends everything: no context_management block, nothing to configure"),
             *common_notes(lab, budget_used=False)]
    code = notes_block(notes) + "# Send the request as usual: no context_management, no beta header.\n"
    return NativeExport("anthropic", "none", {}, code, tuple(notes))


target("anthropic", {"clear_tool_results": _clear_tool_results, "none": _none},
       hint=T("Anthropic's context editing clears tool results (and thinking blocks) and compacts (summarize, "
            "server_compaction: see anthropic_compaction); run the ctxlab snippet client-side for the others."))

__all__ = ["BETA", "EDIT_TYPE", "clear_tool_uses_edit"]
