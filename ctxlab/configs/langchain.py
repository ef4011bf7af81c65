"""ctxlab strategies as LangChain v1 agent middleware and ``trim_messages`` calls.

* ``clear_tool_results`` -> ``ContextEditingMiddleware(edits=[ClearToolUsesEdit(trigger, keep,
  clear_at_least, clear_tool_inputs, exclude_tools)])`` (LangChain's port of Anthropic's edit);
* ``summarize`` -> ``SummarizationMiddleware(model, trigger=[("messages", n), ("tokens", t)],
  keep=("messages", k))``;
* ``sliding_window``, ``turn_safe``, ``langchain_trim`` -> ``trim_messages(...)`` applied by a
  ``wrap_model_call`` middleware to what each model call sees (the agent's state keeps everything).

``data`` describes the objects (class and keyword arguments); :func:`build_middleware` builds them
with LangChain's own classes, and ``python`` is code that does the same. Each export lists in
``not_carried`` where LangChain's documented behaviour differs from ctxlab's (see the README's
"Configs for your framework").
"""
from __future__ import annotations

from importlib import metadata
from typing import Any, Callable, Mapping

from ..i18n import T
from .lab_config import LabConfig
from .native import NativeExport, common_notes, literal, notes_block, target


def _version(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


CHECKED_WITH = {"langchain": _version("langchain"), "langchain-core": _version("langchain-core")}


def checked_with(versions: Mapping[str, str | None]) -> str:
    """The snippet header's words on the LangChain packages installed where it was exported: their
    versions, or that they are not installed (never "langchain None")."""
    found = [f"{name} {v}" for name, v in versions.items() if v]
    missing = [name for name, v in versions.items() if not v]
    if not found:
        return "langchain and langchain-core are not installed where this was exported: untested here"
    text = "checked with " + ", ".join(found)
    return text + (f"; {' and '.join(missing)} not installed where this was exported" if missing else "")
PLACEHOLDER = "[cleared]"  # ClearToolUsesEdit's default
COUNTER_NOTE = (T("token counts: LangChain's default counter (count_tokens_approximately) guesses about 4 characters a "
                "token; ctxlab counted with tiktoken. The code passes token_counter=TOKEN_COUNTER: swap in "
                "ctxlab's counter there (see the comment) to fire where the lab did"))
AGENT_SYSTEM = (T("in create_agent the system prompt (system_prompt=) is not among the messages the middleware "
                "sees, so it is neither counted nor removed; ctxlab counts it in the conversation"))


def clear_tool_uses_kwargs(lab: LabConfig) -> dict[str, Any]:
    """``ClearToolUsesEdit`` keyword arguments for a clear_tool_results config."""
    s = lab.strategy
    return {"trigger": s.trigger_tokens, "keep": s.keep, "clear_at_least": s.clear_at_least,
            "clear_tool_inputs": s.clear_tool_inputs, "exclude_tools": list(s.exclude_tools)}


def summarization_kwargs(lab: LabConfig) -> dict[str, Any]:
    """``SummarizationMiddleware`` trigger and keep for a summarize config. ctxlab summarizes when
    there are MORE than trigger_messages messages or more than int(available x trigger_ratio)
    tokens; LangChain when there are AT LEAST n, hence the + 1."""
    s = lab.strategy
    limit = int(lab.budget().available * s.trigger_ratio)
    return {"trigger": [("messages", s.trigger_messages + 1), ("tokens", limit + 1)],
            "keep": ("messages", s.keep_recent)}


def trim_kwargs(lab: LabConfig) -> dict[str, Any]:
    """``trim_messages`` keyword arguments (besides token_counter) for a window strategy."""
    s, available = lab.strategy, lab.budget().available
    if s.name == "sliding_window":
        window = int(min(s.max_tokens or available, available) * (1 - s.buffer_ratio))
        return {"max_tokens": window, "strategy": "last", "start_on": "human", "include_system": True,
                "allow_partial": False}
    if s.name == "turn_safe":
        return {"max_tokens": s.last_n, "strategy": "last", "start_on": "human", "include_system": True,
                "allow_partial": False}
    out: dict[str, Any] = {"max_tokens": max(s.max_tokens or available, 0), "strategy": s.strategy,
                           "allow_partial": s.allow_partial, "end_on": None if s.end_on == "none" else s.end_on}
    if s.strategy == "last":
        out.update(start_on=None if s.start_on == "none" else s.start_on, include_system=s.include_system)
    return out


def _notes_clear(lab: LabConfig) -> list[str]:
    s = lab.strategy
    notes = [T("ctxlab leaves a tool result alone when its placeholder would not make it smaller; ClearToolUsesEdit "
             "replaces every older result with {placeholder!r}, whatever its size", placeholder=PLACEHOLDER),
             T("trigger {trigger_tokens:,}: ClearToolUsesEdit counts the messages it is given; {system}; "
             "tool definitions are counted by neither", trigger_tokens=s.trigger_tokens, system=AGENT_SYSTEM), COUNTER_NOTE]
    if s.clear_at_least:
        notes.append(T("clear_at_least {clear_at_least:,}: ClearToolUsesEdit clears the oldest results one by one "
                     "and stops as soon as that many tokens are reclaimed (and keeps what it cleared when it never "
                     "gets there); ctxlab, like Anthropic's documentation, treats it as a minimum: every older "
                     "result or none", clear_at_least=s.clear_at_least))
    if lab.pins:
        notes.append(T("pinned tool results may be cleared: list their tools in exclude_tools to keep them"))
    return [*common_notes(lab, budget_used=False), *notes]


def _notes_summarize(lab: LabConfig) -> list[str]:
    s, kw = lab.strategy, summarization_kwargs(lab)
    return [*common_notes(lab, budget_used=True),
            T("trigger: more than {trigger_messages:,} messages, or more than {count:,} tokens "
            "({trigger_ratio} of the {available:,} the budget leaves for messages); LangChain "
            "triggers at or above a threshold, hence the + 1", trigger_messages=s.trigger_messages, count=kw['trigger'][1][1] - 1, trigger_ratio=s.trigger_ratio, available=lab.budget().available),
            T("keep_recent {keep_recent:,}: LangChain keeps exactly the newest {keep_recent:,} messages (moved back "
            "only so that a tool result keeps its call); ctxlab widens them back to the start of their turn and never "
            "folds the newest turn", keep_recent=s.keep_recent),
            T("target_ratio {target_ratio}: no equivalent; LangChain keeps the newest messages whatever their size", target_ratio=s.target_ratio),
            T("summarizer {summarizer!r}: LangChain writes the summary with the chat model passed as model=; "
            "max_summary_tokens {max_summary_tokens:,} has no equivalent (trim_tokens_to_summarize bounds what "
            "the summarizer reads, not what it writes)", summarizer=s.summarizer, max_summary_tokens=s.max_summary_tokens),
            T("LangChain puts the summary in a HumanMessage at the start and replaces the agent's state with it for "
            "good; ctxlab inserts a system message after the system prompt and leaves the history alone"),
            T("a SystemMessage inside the agent's state is summarized like any other message; {system}", system=AGENT_SYSTEM),
            COUNTER_NOTE]


def _notes_trim(lab: LabConfig) -> list[str]:
    s, kw = lab.strategy, trim_kwargs(lab)
    if s.name == "sliding_window":
        return [*common_notes(lab, budget_used=True),
                T("window: max_tokens {max_tokens:,} = the {window:,}"
                "-token window less its buffer_ratio {buffer_ratio}", max_tokens=kw['max_tokens'], window=min(s.max_tokens or 10**12, lab.budget().available), buffer_ratio=s.buffer_ratio),
                T("ctxlab always keeps the system messages before the first user message and the newest user message, "
                "even when they alone overflow the window; trim_messages keeps only a leading system message"),
                T("when the newest turn does not fit, ctxlab keeps its user message and the newest tool rounds that fit; "
                "trim_messages(start_on='human') finds no human message in what fits and keeps nothing of the turn"),
                T("{system} (it is sent besides the window)", system=AGENT_SYSTEM), COUNTER_NOTE]
    if s.name == "turn_safe":
        return [*common_notes(lab, budget_used=False),
                T("ctxlab widens the last {last_n:,} messages back to the user message that starts their turn; "
                "trim_messages(start_on='human') can only move forward to the first human message inside them, so "
                "it keeps fewer messages (none of a turn longer than last_n)", last_n=s.last_n),
                T("token_counter=len counts messages; a leading SystemMessage counts as one of the {last_n:,} "
                "(ctxlab keeps the system prompt besides them); {system}", last_n=s.last_n, system=AGENT_SYSTEM)]
    return [*common_notes(lab, budget_used=s.max_tokens is None),
            T("the same trim_messages call ctxlab runs (max_tokens {max_tokens:,})", max_tokens=kw['max_tokens']),
            T("{system} (it is sent besides the window)", system=AGENT_SYSTEM), COUNTER_NOTE]


_HEAD = '''\
"""LangChain v1 agent middleware exported by ctxlab {version} from a {strategy} config.

Needs: pip install "langchain>=1,<2" ({checked}).
"""
{notes}
{imports}
from langchain_core.messages.utils import count_tokens_approximately

MODEL = {model}
# LangChain's default counter guesses about 4 characters a token; ctxlab counted with tiktoken.
# To count as ctxlab did:   import ctxlab
#                           from ctxlab.strategies.langchain_trim import tiktoken_counter
#                           TOKEN_COUNTER = tiktoken_counter(ctxlab.TokenCounter(MODEL))
TOKEN_COUNTER = {counter}
'''

_TAIL = '''

# Usage:
#   from langchain.agents import create_agent
#   agent = create_agent(MODEL, tools=[...], system_prompt="...", middleware=context_middleware())
'''

_CLEAR = '''

def context_middleware(model=MODEL, token_counter=TOKEN_COUNTER) -> list:
    """The middleware for create_agent(..., middleware=context_middleware())."""
    edit = ClearToolUsesEdit({args})
    return [ContextEditingMiddleware(edits=[edit], token_counter=token_counter)]
'''

_SUMMARIZE = '''

def context_middleware(model=MODEL, token_counter=TOKEN_COUNTER) -> list:
    """The middleware for create_agent(..., middleware=context_middleware(model))."""
    return [SummarizationMiddleware(model=model, {args}, token_counter=token_counter)]
'''

_TRIM = '''
TRIM_KWARGS = {kwargs}


def trim(messages: list, token_counter=TOKEN_COUNTER) -> list:
    """What trim_messages keeps of ``messages``."""
    return trim_messages(messages, token_counter=token_counter, **TRIM_KWARGS)


def context_middleware(model=MODEL, token_counter=TOKEN_COUNTER) -> list:
    """A middleware sending each model call what trim_messages keeps; the agent's state keeps everything."""
    @wrap_model_call
    def trim_context(request, handler):
        return handler(request.override(messages=trim(request.messages, token_counter)))
    return [trim_context]
'''


def _args(kwargs: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={literal(tuple(v) if isinstance(v, list) else v)}" for k, v in kwargs.items())


def _export(lab: LabConfig, data: dict[str, Any], imports: str, body: str, notes: list[str],
            counter: str = "count_tokens_approximately") -> NativeExport:
    from ..version import __version__
    code = _HEAD.format(version=__version__, strategy=lab.strategy.name, checked=checked_with(CHECKED_WITH),
                        notes=notes_block(notes).rstrip("\n"), imports=imports,
                        model=literal(lab.model or "gpt-4o"), counter=counter) + body + _TAIL
    return NativeExport("langchain", lab.strategy.name, {**data, "checked_with": CHECKED_WITH}, code, tuple(notes))


def _clear_tool_results(lab: LabConfig) -> NativeExport:
    kw = clear_tool_uses_kwargs(lab)
    data = {"middleware": [{"class": "ContextEditingMiddleware",
                            "kwargs": {"edits": [{"class": "ClearToolUsesEdit", "kwargs": kw}]}}]}
    imports = "from langchain.agents.middleware import ClearToolUsesEdit, ContextEditingMiddleware"
    return _export(lab, data, imports, _CLEAR.format(args=_args(kw)), _notes_clear(lab))


def _summarize(lab: LabConfig) -> NativeExport:
    kw = summarization_kwargs(lab)
    data = {"middleware": [{"class": "SummarizationMiddleware",
                            "kwargs": {"model": lab.model or "gpt-4o", "trigger": [list(t) for t in kw["trigger"]],
                                       "keep": list(kw["keep"])}}]}
    body = _SUMMARIZE.format(args=f"trigger={literal(kw['trigger'])}, keep={literal(kw['keep'])}")
    return _export(lab, data, "from langchain.agents.middleware import SummarizationMiddleware", body,
                   _notes_summarize(lab))


def _trim(lab: LabConfig) -> NativeExport:
    kw = trim_kwargs(lab)
    by_messages = lab.strategy.name == "turn_safe"
    data = {"trim_messages": kw, "token_counter": "len" if by_messages else "tokens",
            "middleware": [{"class": "wrap_model_call", "applies": "trim_messages"}]}
    imports = "from langchain.agents.middleware import wrap_model_call\nfrom langchain_core.messages import trim_messages"
    return _export(lab, data, imports, _TRIM.format(kwargs=literal(kw)), _notes_trim(lab),
                   counter="len  # counts messages, not tokens" if by_messages else "count_tokens_approximately")


def _none(lab: LabConfig) -> NativeExport:
    notes = [T("strategy none sends everything: no middleware"), *common_notes(lab, budget_used=False)]
    body = '\n\ndef context_middleware(model=MODEL, token_counter=TOKEN_COUNTER) -> list:\n' \
           '    """No context management: send everything."""\n    return []\n'
    return _export(lab, {"middleware": []}, "", body, notes)


def build_middleware(export: NativeExport | Mapping[str, Any], *, model: Any = None,
                     token_counter: Callable | None = None) -> list:
    """The exported middleware built with LangChain's own classes, from an export's ``data``.
    ``model`` (a chat model or a name) is what SummarizationMiddleware summarizes with; the
    default token counter is LangChain's approximate one (``len`` for a message-count trim)."""
    from langchain.agents.middleware import (ClearToolUsesEdit, ContextEditingMiddleware, SummarizationMiddleware,
                                             wrap_model_call)
    from langchain_core.messages.utils import count_tokens_approximately
    data = export.data if isinstance(export, NativeExport) else export
    counter = token_counter or count_tokens_approximately
    if "trim_messages" in data:
        trim = trim_function(data, token_counter)

        @wrap_model_call
        def trim_context(request, handler):
            return handler(request.override(messages=trim(request.messages)))
        return [trim_context]
    out = []
    for item in data["middleware"]:
        kw = dict(item["kwargs"])
        if item["class"] == "ContextEditingMiddleware":
            edits = [ClearToolUsesEdit(**{**e["kwargs"], "exclude_tools": tuple(e["kwargs"]["exclude_tools"])})
                     for e in kw["edits"]]
            out.append(ContextEditingMiddleware(edits=edits, token_counter=counter))
        elif item["class"] == "SummarizationMiddleware":
            out.append(SummarizationMiddleware(model=model or kw["model"], trigger=[tuple(t) for t in kw["trigger"]],
                                               keep=tuple(kw["keep"]), token_counter=counter))
    return out


def trim_function(export: NativeExport | Mapping[str, Any], token_counter: Callable | None = None) -> Callable:
    """``messages -> trim_messages(messages, **exported arguments)`` (a window export only)."""
    from langchain_core.messages import trim_messages
    from langchain_core.messages.utils import count_tokens_approximately
    data = export.data if isinstance(export, NativeExport) else export
    counter = len if data["token_counter"] == "len" else (token_counter or count_tokens_approximately)
    kwargs = dict(data["trim_messages"])
    return lambda messages: trim_messages(messages, token_counter=counter, **kwargs)


target("langchain", {"clear_tool_results": _clear_tool_results, "summarize": _summarize,
                     "sliding_window": _trim, "turn_safe": _trim, "langchain_trim": _trim, "none": _none},
       hint=T("For the others, run the ctxlab snippet (its LangGraph node) in the graph."))

__all__ = ["CHECKED_WITH", "build_middleware", "clear_tool_uses_kwargs", "summarization_kwargs", "trim_function",
           "trim_kwargs"]
