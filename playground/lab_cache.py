"""The Strategy Lab's cached computations: the plan with its validator findings and table, the
figures, the replay and its measures (Compare's columns use the same), the exports, a session's
sub-agents isolated or inline. Defined here, once per process, and not in the page script:
Streamlit runs a page's whole file on every rerun, so each cache decorator there was re-created on
every rerun (it reads the function's source to key its cache).

Every function is keyed by strings (``view_key``: conversation hash, model, pins;
``strategy_key``, which names the model a summarizer=llm calls; ``budget_key``; the language where
the result holds translated text); the underscored arguments are the objects those strings name,
which Streamlit does not hash. ``_llm`` is that model (the sidebar's settings): the plan and the
replays run under it (``ctxlab.llm.use_llm``)."""
from __future__ import annotations

import dataclasses
import json
import weakref
from typing import Any

import streamlit as st

import ctxlab
from ctxlab import figures
from ctxlab.cache_breaks import CacheBreak
from ctxlab.compare import RULE_NAMES
from ctxlab.measure import ReplayMeasures, measure
from ctxlab.errors import CtxlabError
from ctxlab.fidelity import NeededFacts, needed_facts
from ctxlab.llm import LLM, use_llm
from ctxlab.pricing import Price
from ctxlab.replay import Replay, replay
from ctxlab.subagents import isolation
from ctxlab.strategies import Budget, Plan, Strategy, View, get_strategy
from ctxlab.strategies.base import APPLY_AT
from ctxlab.prefix import check_against_bill
from ctxlab.tools_per_call import ToolsAt, tools_per_call
from ctxlab.usage import UsageComparison, has_usage
from ctxlab.findings import Finding
from ctxlab.validate import validate
from playground import lab_table

RULES = RULE_NAMES
EXPORTS = {"openai": "OpenAI", "anthropic": "Anthropic", "langchain": "LangChain"}


def strategy_key(s: Strategy, model_llm: Any) -> str:
    """The cache key of a strategy's results: its parameters and the model its summaries use."""
    return f"{s!r}|{model_llm.config.fingerprint()}"


@st.cache_resource(show_spinner=False, max_entries=64)
def outcome(view_key: tuple, strategy_key: str, budget_key: str, _view: View, _strategy: Strategy,
            _budget: Budget, _llm: LLM | None = None) -> tuple[Plan, dict[str, list[Finding]], lab_table.PlanTable]:
    """The plan, the validator's findings on its result, and its message table (arrays; the
    page builds a frame of the rows it shows), cached."""
    with use_llm(_llm):
        plan = _strategy.apply(_view, _budget)
    findings = {r: validate(list(plan.messages), r) for r in RULES}  # the result's
    return plan, findings, lab_table.PlanTable(_view, plan)


@st.cache_resource(show_spinner=False, max_entries=16)
def input_findings(text_key: str, _conv: ctxlab.Conversation) -> dict[str, list[Finding]]:
    """The providers' findings on the conversation as it came in, before any strategy."""
    return {r: validate(list(_conv.messages), r) for r in RULES}


@st.cache_resource(show_spinner=False, max_entries=8)
def tools_at(view_key: tuple, mode: str, _conv: ctxlab.Conversation) -> tuple[ToolsAt, ...] | None:
    """The tool definitions sent at each call under ``mode`` (None for ``all``: the budget's tools at every call)."""
    return None if mode == "all" else tools_per_call(_conv, mode, model=view_key[1])


@dataclasses.dataclass(frozen=True)
class ShownPrompt:
    """What the Replay tab shows of a call's prompt: its messages, their original indexes (None for
    a summary) and their tokens."""

    messages: tuple[Any, ...]
    origins: tuple[int | None, ...]
    tokens: tuple[int, ...]


class _Newest:
    """An observer of a replay that holds the prompt of the newest call it saw (the view itself: no
    tuple is built per call)."""

    def __init__(self) -> None:
        self.view: View | None = None

    def __call__(self, call: Any, view: View) -> None:
        self.view = view


_NEWEST: "weakref.WeakKeyDictionary[Replay, ShownPrompt]" = weakref.WeakKeyDictionary()
"""The last call's prompt of each replay ``lab_replay`` made, seen in its own pass."""


@st.cache_resource(show_spinner=False, max_entries=16)
def lab_replay(view_key: tuple, strategy_key: str, budget_key: str, _view: View, _strategy: Strategy,
               _budget: Budget, _tools: tuple[ToolsAt, ...] | None = None, _llm: LLM | None = None) -> Replay:
    """The strategy replayed call by call (with the tools sent at each call, when given; ``budget_key``
    names them). The newest call's prompt, which the Replay tab opens on, is kept from the same pass
    (``prompt_at``): past the prompts a replay keeps, asking the replay for it replayed every call
    again (8.7 s of a 10,000-message conversation's first view of the tab)."""
    newest = _Newest()
    with use_llm(_llm):
        rp = replay(_view, _strategy, _budget, tools=_tools, observe=newest)
    if newest.view is not None:
        v = newest.view
        _NEWEST[rp] = ShownPrompt(v.messages, v.origin, v.tokens)
    return rp


def prompt_at(rp: Replay, c: int) -> Any:
    """The prompt of call ``c`` of a ``lab_replay`` (``messages``, ``origins``, ``tokens``): kept by the
    replay, the newest call's seen in its pass, or replayed up to ``c`` (``Replay.prompt``)."""
    kept = rp.kept_prompt(c)
    if kept is not None:
        return kept
    newest = _NEWEST.get(rp)
    if newest is not None and c % len(rp.calls) == len(rp.calls) - 1:
        return newest
    return rp.prompt(c)


@st.cache_resource(show_spinner=False, max_entries=8)
def needed(text_key: str, _conv: ctxlab.Conversation) -> NeededFacts:
    """The facts each assistant message needed from earlier messages, found once per conversation."""
    return needed_facts(_conv)


@st.cache_resource(show_spinner=False, max_entries=8)
def baseline(view_key: tuple, budget_key: str, _view: View, _budget: Budget,
             _tools: tuple[ToolsAt, ...] | None = None) -> Replay:
    """Keeping everything, replayed call by call (what the measures compare with)."""
    return replay(_view, get_strategy("none"), _budget, tools=_tools)


@st.cache_resource(show_spinner=False, max_entries=16)
def measures(view_key: tuple, strategy_key: str, budget_key: str, price_key: str, _conv: ctxlab.Conversation,
             _view: View, _strategy: Strategy, _budget: Budget, _model: str, _price: Price | None,
             _tools: tuple[ToolsAt, ...] | None = None, _llm: LLM | None = None) -> ReplayMeasures:
    """Needed recall and cost of the strategy's replay (shared with the Replay tab) and of keeping everything."""
    return measure(_conv, replayed=lab_replay(view_key, strategy_key, budget_key, _view, _strategy, _budget, _tools,
                                              _llm),
                   baseline=baseline(view_key, budget_key, _view, _budget, _tools), model=_model, price=_price,
                   facts=needed(view_key[0], _conv))


@st.cache_resource(show_spinner=False, max_entries=16)
def measured(view_key: tuple, strategy_key: str, budget_key: str, price_key: str, _conv: ctxlab.Conversation,
             _view: View, _strategy: Strategy, _budget: Budget, _model: str, _price: Price | None,
             _tools: tuple[ToolsAt, ...] | None = None, _llm: LLM | None = None) -> ReplayMeasures:
    """As :func:`measures`, for a strategy the Replay tab does not draw: replayed with the measures
    watching the same pass, where :func:`measures` walks the tab's replay once more (a second run of
    the strategy over every call)."""
    with use_llm(_llm):
        return measure(_conv, _strategy, _budget, model=_model, price=_price, facts=needed(view_key[0], _conv),
                       tools=_tools, baseline=baseline(view_key, budget_key, _view, _budget, _tools), source=_view)


def where_it_runs(view_key: tuple, budget_key: str, price_key: str, conv: ctxlab.Conversation, view: View,
                  strategy: Strategy, budget: Budget, model: str, price: Price | None,
                  tools: tuple[ToolsAt, ...] | None, llm: LLM) -> dict[str, ReplayMeasures]:
    """The same trace under each place the strategy can run (its ``apply_at``: before every model call,
    when a user message arrives), measured (cached: the strategy's own place through :func:`measures`,
    which shares the Replay tab's replay, the other through :func:`measured`, in one pass): the
    LangGraph question, a trim node after START or before every model call."""
    out = {}
    for where in APPLY_AT:
        variant = dataclasses.replace(strategy, apply_at=where)
        how = measures if where == strategy.apply_at else measured
        out[where] = how(view_key, strategy_key(variant, llm), budget_key, price_key, conv, view, variant, budget,
                         model, price, tools, llm)
    return out


@st.cache_resource(show_spinner=False, max_entries=32)
def plan_figures(view_key: tuple, strategy_key: str, budget_key: str, title: str, lang: str, _view: View,
                 _plan: Plan) -> tuple:
    """The token bars (before / after) and the message timeline of a plan, in a language."""
    return (figures.token_bars([_plan], names=[title]), figures.timeline(_plan, _view.roles, _view.tokens))


@st.cache_resource(show_spinner=False, max_entries=16)
def exports(view_key: tuple, strategy_key: str, budget_key: str, _conv: ctxlab.Conversation,
            _plan: Plan) -> dict[str, tuple[str | None, tuple[str, ...]]]:
    """Per format: the resulting conversation as JSON text and the export's notes, or None and
    the engine's error."""
    result = _conv.with_messages(_plan.messages)
    out: dict[str, tuple[str | None, tuple[str, ...]]] = {}
    for fmt in EXPORTS:
        try:
            exported = ctxlab.export(result, fmt)
        except CtxlabError as e:
            out[fmt] = (None, (str(e),))
            continue
        out[fmt] = (json.dumps(exported.data, indent=2, ensure_ascii=False), exported.notes)
    return out


@st.cache_resource(show_spinner=False, max_entries=16)
def heatmap(view_key: tuple, strategy_key: str, budget_key: str, lang: str, _rp: Replay, price_key: str = "",
            _breaks: tuple[CacheBreak, ...] = ()) -> Any:
    """The replay heatmap with a mark at each call whose prompt broke the cache (``_breaks``, found
    under the price ``price_key`` names; "" for none), drawn once per replay (grouping a large one takes a moment)."""
    return figures.call_heatmap(_rp, _breaks)


@st.cache_resource(show_spinner=False, max_entries=8)
def usage(text_key: str, model_key: str, price_key: str, budget_key: str, _conv: ctxlab.Conversation,
          _price: Price | None, _budget: Budget) -> UsageComparison | None:
    """A production trace's billed usage beside ctxlab's counts (and estimate: the unlogged prefix included);
    None for a conversation that logs no usage."""
    if not has_usage(_conv):
        return None
    return check_against_bill(_conv, model=model_key, price=_price, budget=_budget)


@st.cache_resource(show_spinner=False, max_entries=8)
def subagents(text_key: str, model: str, return_cap: int | None, _text: str) -> dict[str, Any]:
    """A Claude Code main session's sub-agents in their own contexts against the same work inline
    (``ctxlab.subagents.isolation``: six replays of a few hundred messages), cached per cap."""
    return isolation(_text, model=model, return_cap=return_cap)


@st.cache_resource(show_spinner=False, max_entries=16)
def subagents_measured(text_key: str, model: str, return_cap: int | None, strategy_key: str, budget_key: str,
                       price_key: str, _text: str, _strategy: Strategy, _budget: Budget, _price: Price | None,
                       _llm: LLM | None = None) -> dict[str, Any]:
    """A main session's isolated parent, each sub-agent and the inline parent replayed under a strategy
    and budget (``ctxlab.subagents.isolation``'s ``measured``: through ``ctxlab.measure``, as every
    column of Compare), cached per strategy, budget, price and cap."""
    with use_llm(_llm):
        return isolation(_text, model=model, return_cap=return_cap, strategy=_strategy, budget=_budget,
                         price=_price)["measured"]
