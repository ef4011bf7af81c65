"""ctxlab strategies as OpenAI Agents SDK settings, where one maps.

The SDK's session settings hold one number: ``SessionSettings(limit=N)``, passed per run as
``RunConfig(session_settings=...)``, retrieves only the newest N session items before each run
(documented in the SDK's Sessions guide). That is ``turn_safe``'s last-N window, counted in
Responses items instead of messages and not widened to a turn start: the export says so.

Not exported: ``ToolOutputTrimmer`` (the SDK's ``call_model_input_filter`` that shortens tool
outputs of older turns) trims by characters outside the newest user turns, a different rule from
``clear_tool_results``; ``OpenAIResponsesCompactionSession`` summarizes on OpenAI's side with no
ctxlab parameter to carry. For those, run the ctxlab snippet in ``call_model_input_filter``.
"""
from __future__ import annotations

from .config import LabConfig
from .native import NativeExport, common_notes, notes_block, target

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
    from .. import __version__
    n = lab.strategy.last_n
    notes = [*common_notes(lab, budget_used=False, runs="turn_start"),
             f"limit {n:,} counts session items, not messages: an assistant message with k tool calls is k "
             "function_call items (one more when it has text), and each tool result is a function_call_output item",
             "the limit cuts wherever the Nth newest item is: it is not widened back to the user message of its turn "
             "(ctxlab's window always starts on one) and it can keep a tool output whose call it cut off",
             "the system prompt is the agent's instructions, outside the session: always sent (ctxlab keeps it "
             f"besides the last {n:,} messages)",
             "the limit applies to the history retrieved before each run; what the run adds (this turn's tool rounds) "
             "is all sent"]
    code = _CODE.format(version=__version__, strategy="turn_safe", notes=notes_block(notes).rstrip("\n"), limit=n)
    data = {"run_config": {"session_settings": {"limit": n}}}
    return NativeExport("openai-agents", "turn_safe", data, code, tuple(notes))


def _none(lab: LabConfig) -> NativeExport:
    notes = ["strategy none sends everything: the default SessionSettings(limit=None)",
             *common_notes(lab, budget_used=False, runs="turn_start")]
    code = notes_block(notes) + "# Run as usual: the default session settings retrieve every item.\n"
    return NativeExport("openai-agents", "none", {"run_config": {"session_settings": {"limit": None}}}, code,
                        tuple(notes))


target("openai-agents", {"turn_safe": _turn_safe, "none": _none},
       hint="The SDK's session settings hold only an item limit; for the others, run the ctxlab snippet in "
            "RunConfig.call_model_input_filter.")

__all__: list[str] = []
