"""Context strategies: each decides, for every message, keep / drop / summarize / clear /
truncate, and says why. ``get_strategy("sliding_window", buffer_ratio=0.2).apply(view, budget)``
returns a Plan; ``a >> b`` applies b to what a leaves.
"""
from .base import STRATEGIES, Pipeline, Strategy, StrategyError, get_strategy, param, parse_param, register
from .plan import ACTIONS, Decision, Insertion, Plan, build_plan, make_plan, settle
from .view import Budget, BudgetError, View, auto_facts, make_view
# the built-ins register themselves on import, in the order the app and `ctxlab strategies` list them
from . import windows  # noqa: F401,I001  (none, sliding_window, turn_safe)
from .summarizers import summarize  # noqa: F401,I001
from . import tool_rounds, key_messages, clear_tool_results  # noqa: F401,I001
from . import middle_out, oldest_first, hybrid, langchain_trim  # noqa: F401,I001
from . import condensers  # noqa: F401,I001  (observation_masking, recent_events, amortized_forgetting)
from . import llm_attention  # noqa: F401,I001  (after the offline condensers)
from . import compaction  # noqa: F401,I001  (server_compaction, truncation_auto: the providers' own, simulated)
from . import head_tail  # noqa: F401,I001  (Codex's cut of each large result to its head and tail)
from . import offload  # noqa: F401,I001  (large results to files, a pointer and a preview kept: Manus, Deep Agents)

__all__ = ["ACTIONS", "STRATEGIES", "Budget", "BudgetError", "Decision", "Insertion", "Pipeline", "Plan",
           "Strategy", "StrategyError", "View", "auto_facts", "build_plan", "get_strategy", "make_plan",
           "make_view", "param", "parse_param", "register", "settle"]


def prepare(conv, model: str | None = None, *, context_limit: int | None = None, reserve: float = 0.15,
            pins=()) -> tuple[View, Budget]:
    """The view of a conversation and its budget: the model's window (or ``context_limit``) less the
    reserve, with the conversation's tool definitions counted in it."""
    from ..conversation import Conversation
    from ..tokens import TokenCounter
    if model is None and isinstance(conv, Conversation):
        model = conv.model
    counter = TokenCounter(model)
    tools = counter.tools(conv.tools) if isinstance(conv, Conversation) else 0
    budget = Budget.for_model(model, reserve=reserve, tools_tokens=tools, max_tokens=context_limit)
    return make_view(conv, counter=counter, pins=pins), budget


def apply_strategy(conv, strategy: "Strategy | str", *, model: str | None = None, context_limit: int | None = None,
                   reserve: float = 0.15, pins=(), **params) -> Plan:
    """One call for production code: prepare the view and the budget and apply ``strategy`` (an
    object, or a name with ``params``). ``context_limit`` overrides the model's context window."""
    if isinstance(strategy, str):
        strategy = get_strategy(strategy, **params)
    view, budget = prepare(conv, model, context_limit=context_limit, reserve=reserve, pins=pins)
    return strategy.apply(view, budget)


__all__ += ["apply_strategy", "prepare"]
