"""Context strategies: each decides, for every message, keep / drop / summarize / clear /
truncate, and says why. ``get_strategy("sliding_window", buffer_ratio=0.2).apply(view, budget)``
returns a Plan; ``a >> b`` applies b to what a leaves.
"""
from .base import STRATEGIES, Pipeline, Strategy, StrategyError, get_strategy, param, parse_param, register
from .plan import ACTIONS, Decision, Insertion, Plan, build_plan, make_plan, settle
from .view import Budget, BudgetError, View, auto_facts, make_view
from . import windows  # noqa: F401  (registers none, sliding_window, turn_safe)


def _register_builtins() -> None:
    import importlib
    for mod in ("summarize", "rounds", "priority", "baseline"):
        try:
            importlib.import_module(f"{__name__}.{mod}")
        except ModuleNotFoundError as e:  # a module not written yet; remove once all exist
            if e.name != f"{__name__}.{mod}":
                raise


_register_builtins()

__all__ = ["ACTIONS", "STRATEGIES", "Budget", "BudgetError", "Decision", "Insertion", "Pipeline", "Plan",
           "Strategy", "StrategyError", "View", "auto_facts", "build_plan", "get_strategy", "make_plan",
           "make_view", "param", "parse_param", "register", "settle"]


def apply_strategy(conv, strategy: "Strategy | str", *, model: str | None = None, context_limit: int | None = None,
                   reserve: float = 0.15, pins=(), **params) -> Plan:
    """One call for production code: build the view and the budget (the conversation's tool
    definitions counted in it) and apply ``strategy`` (an object, or a name with ``params``).
    ``context_limit`` overrides the model's context window."""
    from ..model import Conversation
    from ..tokens import TokenCounter
    if isinstance(strategy, str):
        strategy = get_strategy(strategy, **params)
    if model is None and isinstance(conv, Conversation):
        model = conv.model
    counter = TokenCounter(model)
    tools = counter.tools(conv.tools) if isinstance(conv, Conversation) else 0
    budget = Budget.for_model(model, reserve=reserve, tools_tokens=tools, max_tokens=context_limit)
    return strategy.apply(make_view(conv, counter=counter, pins=pins), budget)


__all__.append("apply_strategy")
