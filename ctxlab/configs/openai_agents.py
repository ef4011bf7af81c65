"""ctxlab strategies as OpenAI Agents SDK settings, where one maps.

The SDK's session settings hold one number: ``SessionSettings(limit=N)``, passed per run as
``RunConfig(session_settings=...)``, retrieves only the newest N session items before each run
(documented in the SDK's Sessions guide). That is ``turn_safe``'s last-N window, counted in
Responses items instead of messages and not widened to a turn start: the export says so.

``summarize`` and ``server_compaction`` map to ``OpenAIResponsesCompactionSession`` (openai-agents
``agents.memory``): a session wrapper that calls ``responses.compact`` after a turn when its
``should_trigger_compaction(context)`` hook says so. The SDK's default hook counts items (10 or more
candidates: items that are neither user messages nor compaction items); the hook gets the items,
not a token count, so the export writes one that estimates tokens (characters / 4) against the
tuned trigger and says so. ``truncation_auto`` maps to ``ModelSettings(truncation="auto")``.

Not exported: ``ToolOutputTrimmer`` (the SDK's ``call_model_input_filter`` that shortens tool
outputs of older turns) trims by characters outside the newest user turns, a different rule from
``clear_tool_results``. For that, run the ctxlab snippet in ``call_model_input_filter``.
"""
from __future__ import annotations

from ..i18n import T
from .compaction import kept_notes, trigger_note, tuned_trigger
from .lab_config import LabConfig
from .native import NativeExport, common_notes, literal, notes_block, target

_CODE = '''\
"""OpenAI Agents SDK run settings exported by ctxlab {version} from a {strategy} config.

Needs: pip install openai-agents
"""
{notes}
from agents import RunConfig, SessionSettings

RUN_CONFIG = RunConfig(session_settings=SessionSettings(limit={limit}))

# Usage:
#   result = await Runner.run(agent, "...", session=session, run_config=RUN_CONFIG)
'''


def _turn_safe(lab: LabConfig) -> NativeExport:
    from ..version import __version__
    n = lab.strategy.last_n
    notes = [*common_notes(lab, budget_used=False, runs="turn_start"),
             T("limit {n:,} counts session items, not messages: an assistant message with k tool calls is k "
             "function_call items (one more when it has text), and each tool result is a function_call_output item", n=n),
             T("the limit cuts wherever the Nth newest item is: it is not widened back to the user message of its turn "
             "(ctxlab's window always starts on one) and it can keep a tool output whose call it cut off"),
             T("the system prompt is the agent's instructions, outside the session: always sent (ctxlab keeps it "
             "besides the last {n:,} messages)", n=n),
             T("the limit applies to the history retrieved before each run; what the run adds (this turn's tool rounds) "
             "is all sent")]
    code = _CODE.format(version=__version__, strategy="turn_safe", notes=notes_block(notes).rstrip("\n"), limit=n)
    data = {"run_config": {"session_settings": {"limit": n}}}
    return NativeExport("openai_agents", "turn_safe", data, code, tuple(notes))


def _none(lab: LabConfig) -> NativeExport:
    notes = [T("strategy none sends everything: the default SessionSettings(limit=None)"),
             *common_notes(lab, budget_used=False, runs="turn_start")]
    code = notes_block(notes) + "# Run as usual: the default session settings retrieve every item.\n"
    return NativeExport("openai_agents", "none", {"run_config": {"session_settings": {"limit": None}}}, code,
                        tuple(notes))


_COMPACTION = '''\
"""OpenAI Agents SDK compaction session exported by ctxlab {version} from a {strategy} config.

Needs: pip install openai-agents
"""
{notes}
import json

from agents import SQLiteSession
from agents.memory import OpenAIResponsesCompactionSession

COMPACT_ABOVE_TOKENS = {threshold}  # the tuned trigger (input tokens)


def should_trigger_compaction(context: dict) -> bool:
    """Compact when the session's items exceed the trigger, estimated at 4 characters a token."""
    text = json.dumps(context["session_items"], ensure_ascii=False, default=str)
    return len(text) // 4 > COMPACT_ABOVE_TOKENS


def compaction_session(session_id: str, *, model: str = {model}) -> OpenAIResponsesCompactionSession:
    """A SQLite session that calls responses.compact after a turn once it is over the trigger."""
    return OpenAIResponsesCompactionSession(session_id, SQLiteSession(session_id), model=model,
                                            should_trigger_compaction=should_trigger_compaction)

# Usage:
#   result = await Runner.run(agent, "...", session=compaction_session("user-42"))
'''


def _compaction(lab: LabConfig) -> NativeExport:
    from ..version import __version__
    t = tuned_trigger(lab)
    notes = [*common_notes(lab, budget_used=lab.strategy.name == "summarize", runs="turn_start"),
             trigger_note(t, lab, T("the session's hook")),
             T("the hook sees items, not tokens: the export estimates 4 characters a token over the items' JSON, which "
             "is not the tokenizer the model bills; the SDK's own default compacts at 10 candidate items instead"),
             T("compaction runs after a completed turn, on the stored history, not before each model call inside a "
             "turn: a long turn can pass the trigger until it ends"),
             *kept_notes(lab, "responses.compact", keeps_users=True)]
    model = lab.model if lab.model and lab.model.startswith(("gpt-", "o")) else "gpt-4.1"
    if model != lab.model:
        notes.append(T("the config's model {model} is not an OpenAI model; the session's compaction model "
                     "must be one (gpt-*, o*): the export uses gpt-4.1, the SDK's default", model=lab.model or 'none'))
    code = _COMPACTION.format(version=__version__, strategy=lab.strategy.name, notes=notes_block(notes).rstrip("\n"),
                              threshold=t.inputs, model=literal(model))
    data = {"session": {"class": "OpenAIResponsesCompactionSession", "model": model,
                        "should_trigger_compaction": {"estimated_tokens_above": t.inputs}}}
    return NativeExport("openai_agents", lab.strategy.name, data, code, tuple(notes))


def _truncation(lab: LabConfig) -> NativeExport:
    from ..version import __version__
    notes = [*common_notes(lab, budget_used=True),
             T("the window: the API truncates to the model's own window less its maximum output; ctxlab's budget "
             "(max_tokens {max_tokens:,}, reserve {reserve:g}) has no SDK setting", max_tokens=lab.max_tokens, reserve=lab.reserve),
             T("items, not turns: the API drops the oldest items one by one, the task included when it is the oldest; "
             "ctxlab keeps the task and drops a tool call with its results")]
    code = (f'"""OpenAI Agents SDK model settings exported by ctxlab {__version__} from a truncation_auto config."""\n'
            + notes_block(notes) + "from agents import ModelSettings\n\nMODEL_SETTINGS = ModelSettings("
            'truncation="auto")\n\n# Usage: Agent(..., model_settings=MODEL_SETTINGS)\n')
    return NativeExport("openai_agents", "truncation_auto", {"model_settings": {"truncation": "auto"}}, code,
                        tuple(notes))


target("openai_agents", {"turn_safe": _turn_safe, "server_compaction": _compaction, "summarize": _compaction,
                         "truncation_auto": _truncation, "none": _none},
       hint=T("The SDK's session settings hold an item limit, its compaction session a trigger and its model "
            "settings truncation; for the others, run the ctxlab snippet in RunConfig.call_model_input_filter."))

__all__: list[str] = []
