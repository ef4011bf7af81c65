"""Summarizing and truncating strategies as the OpenAI Responses API's own context handling.

* ``server_compaction`` / ``summarize`` -> ``context_management=[{"type": "compaction",
  "compact_threshold": N}]`` on ``responses.create``: past N rendered tokens the server compacts and
  the output carries an encrypted compaction item. The standalone ``POST /responses/compact`` does
  the same on demand; the API reference says its output is "all user messages, followed by a single
  compaction item". Both shapes are the installed ``openai`` SDK's (3.57:
  ``ResponseCreateParams.context_management``, ``client.responses.compact``).
* ``truncation_auto`` -> ``truncation="auto"``: the SDK documents it as dropping items from the
  beginning of the conversation when the input exceeds the context window (which may already be
  reduced by the model's maximum output allowance); ``"disabled"`` (the default) fails with a 400.

The ``compact_threshold`` counts rendered input tokens (instructions and tools too), so the export
adds the config's ``tools_tokens`` to the tuned trigger.
"""
from __future__ import annotations

from ..i18n import T
from .compaction import kept_notes, trigger_note, tuned_trigger
from .lab_config import LabConfig
from .native import NativeExport, common_notes, literal, notes_block, pretty, target

_CODE = '''\
"""OpenAI Responses context settings exported by ctxlab {version} from a {strategy} config.

Needs: pip install openai
"""
{notes}
from openai import OpenAI

RESPONSE_SETTINGS = {settings}


def create_response(client: OpenAI, input_items: list, *, model: str = {model}, **kwargs):
    """client.responses.create with the exported settings; pass tools, instructions as usual."""
    return client.responses.create(model=model, input=input_items, **RESPONSE_SETTINGS, **kwargs)
{extra}
# As JSON (the request body's fields):
{json}
'''

_COMPACT = '''

def compact_now(client: OpenAI, input_items: list, *, model: str = {model}) -> list:
    """The standalone compaction (POST /responses/compact): every user message, then one compaction item."""
    return [item.model_dump(exclude_unset=True) for item in client.responses.compact(model=model,
                                                                                     input=input_items).output]
'''


def _code(lab: LabConfig, settings: dict, notes: list[str], extra: str = "") -> str:
    from ..version import __version__
    model = literal(lab.model if lab.model and not lab.model.startswith("claude") else "gpt-5.2")
    return _CODE.format(version=__version__, strategy=lab.strategy.name, notes=notes_block(notes).rstrip("\n"),
                        settings=literal(settings), model=model, extra=extra.format(model=model),
                        json="\n".join("# " + ln for ln in pretty(settings).splitlines()))


def _compaction(lab: LabConfig) -> NativeExport:
    t = tuned_trigger(lab)
    settings = {"context_management": [{"type": "compaction", "compact_threshold": t.inputs}]}
    notes = [*common_notes(lab, budget_used=lab.strategy.name == "summarize"),
             trigger_note(t, lab, "OpenAI"), *kept_notes(lab, T("OpenAI's compaction"), keeps_users=True),
             T("the compaction item is encrypted and opaque (not readable, unlike ctxlab's summary message); after it, "
             "items before the newest compaction item may be dropped from the input (stateless chaining) -- with "
             "previous_response_id, send only the new items"),
             T("where the summary sits: OpenAI puts the compaction item after the user messages it keeps; ctxlab puts "
             "its summary after the system prompt")]
    return NativeExport("openai_responses", lab.strategy.name, settings, _code(lab, settings, notes, _COMPACT),
                        tuple(notes))


def _truncation(lab: LabConfig) -> NativeExport:
    s = lab.strategy
    settings = {"truncation": "auto"}
    notes = [*common_notes(lab, budget_used=True),
             T("the window: ctxlab truncated to the budget's room (max_tokens {max_tokens:,} less the "
               "{reserve:.0%} reserve, tool definitions and reply priming, output_allowance {allowance:,}); the API "
               "truncates to the model's own window less its maximum output, and has no setting for either",
               max_tokens=lab.max_tokens, reserve=lab.reserve, allowance=s.output_allowance) if s.output_allowance else
             T("the window: ctxlab truncated to the budget's room (max_tokens {max_tokens:,} less the "
               "{reserve:.0%} reserve, tool definitions and reply priming); the API truncates to the model's own "
               "window less its maximum output, and has no setting for either", max_tokens=lab.max_tokens,
               reserve=lab.reserve),
             T("items, not turns: the API drops items one by one (a function_call apart from its output is possible); "
             "ctxlab drops a tool call with all of its results, and a turn whole once its user message goes"),
             T("the task: the API drops the oldest items whatever they are, the newest user message included when it "
             "is the oldest; ctxlab always keeps it (and the system prompt, which the API sends as instructions)")]
    return NativeExport("openai_responses", s.name, settings, _code(lab, settings, notes), tuple(notes))


def _none(lab: LabConfig) -> NativeExport:
    notes = [T("strategy none sends everything: truncation \"disabled\" (the API's default: over the window the request "
             "fails with a 400) and no context_management"), *common_notes(lab, budget_used=False)]
    settings = {"truncation": "disabled"}
    return NativeExport("openai_responses", "none", settings, _code(lab, settings, notes), tuple(notes))


target("openai_responses", {"server_compaction": _compaction, "summarize": _compaction,
                            "truncation_auto": _truncation, "none": _none},
       hint=T("The Responses API compacts (summarize, server_compaction) and truncates (truncation_auto); run the "
            "ctxlab snippet client-side for the others."))

__all__: list[str] = []
