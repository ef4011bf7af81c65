"""CLI commands of the strategy engine: ``strategies``, ``apply``, ``replay``.

The engine is imported when a command of this module is parsed or run, not when the CLI starts."""
from __future__ import annotations

import argparse
import json
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from .core import (EXIT_OK, _conversations, _emit, _input_args, command, finite_number, note, prefix_args,
                   whole_number, with_prefix)
from ..errors import CtxlabError
from ..formats import FORMATS, export
from ..conversation import Conversation

if TYPE_CHECKING:
    from ..strategies import Budget, Strategy


def _strategies_args(p: argparse.ArgumentParser) -> None:
    pass


@command("strategies", _strategies_args)
def _strategies(args: argparse.Namespace) -> int:
    """Print every registered strategy with its parameter schema, as JSON."""
    from ..strategies import STRATEGIES
    print(json.dumps([{"name": cls.name, "title": cls.title, "summary": cls.summary, "params": cls.schema()}
                      for cls in STRATEGIES.values()], indent=2))
    return EXIT_OK


def build_strategy(spec: str, params: list[str], scale_to: Budget | None = None) -> Strategy:
    """``name`` or ``a >> b`` (also ``a,b``) with ``key=value`` (or ``name.key=value``) parameters.
    With ``scale_to``, a parameter not given takes the strategy's value scaled to that budget (as
    the Strategy Lab and ``ctxlab sweep`` set them), not its documented peer default."""
    from ..strategies import STRATEGIES, StrategyError, get_strategy, parse_param
    names = [n.strip() for n in spec.replace(">>", ",").split(",") if n.strip()]
    if not names:
        raise StrategyError("no strategy named", where="--strategy", hint=f"Known: {', '.join(STRATEGIES)}")
    per: dict[str, dict[str, Any]] = {n: {} for n in names}
    for text in params:
        key = text.split("=", 1)[0]
        owner, _, bare = key.rpartition(".")
        if owner and owner not in per:
            raise StrategyError(f"--param {text!r} names {owner!r}, which is not in the pipeline", where="--param")
        targets = [owner] if owner else names
        if not owner and len(names) > 1:
            raise StrategyError(f"--param {text!r} is ambiguous in a pipeline", where="--param",
                                hint="Prefix it with the strategy name, e.g. sliding_window.buffer_ratio=0.2")
        for n in targets:
            if n not in STRATEGIES:
                get_strategy(n)  # raises with the known names
            k, v = parse_param(STRATEGIES[n], text[len(owner) + 1:] if owner else text)
            per[n][k] = v
    scaled = {n: STRATEGIES[n].scaled_defaults(scale_to) if scale_to is not None and n in STRATEGIES else {}
              for n in names}
    steps = [get_strategy(n, **{**scaled[n], **per[n]}) for n in names]
    out = steps[0]
    for s in steps[1:]:
        out = out >> s
    return out


def _plan_args(p: argparse.ArgumentParser) -> None:
    _input_args(p)
    p.add_argument("--strategy", help="a name from `ctxlab strategies`, or a pipeline: 'a >> b' (or give --config)")
    p.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                   help="a strategy parameter (repeatable); in a pipeline prefix it: name.key=value")
    p.add_argument("--model", help="model: encoding and default context limit (default: the file's, else gpt-4o)")
    p.add_argument("--max-tokens", type=whole_number(1), help="context limit in tokens (overrides the model's)")
    p.add_argument("--reserve", type=finite_number(0, 0.99), help="share kept free for the response (default 0.15)")
    p.add_argument("--pin", type=int, action="append", default=[], help="message index to pin (repeatable)")
    p.add_argument("--config", help="a ctxlab config (.json or .yaml): strategy, parameters, model, budget and "
                                    "pins; the flags above override it")
    p.add_argument("--peer-defaults", action="store_true",
                   help="parameters not given keep the documented peer defaults (e.g. a 100,000-token trigger); "
                        "by default they are scaled to the budget, as in the Strategy Lab and `ctxlab sweep`")


def _setup(args: argparse.Namespace, conv: Conversation):
    if args.config:
        return _setup_from_config(args, conv)
    if not args.strategy:
        raise CtxlabError("no strategy given", where="--strategy", hint="Give --strategy NAME or --config FILE")
    from ..strategies import prepare
    reserve = 0.15 if args.reserve is None else args.reserve
    view, budget = prepare(conv, args.model, context_limit=args.max_tokens, reserve=reserve, pins=args.pin)
    strategy = build_strategy(args.strategy, args.param, None if args.peer_defaults else budget)
    return strategy, budget, view


def defaults_used(args: argparse.Namespace) -> str:
    """Which values the parameters not given took: the config's, the documented peer defaults, or
    the budget-scaled ones (the output says which, so a figure can be reproduced)."""
    if args.config and not args.strategy:
        return "config"
    return "peer" if args.peer_defaults else "budget_scaled"


def _say_scaled(args: argparse.Namespace, strategy: Strategy, budget: Budget) -> None:
    """A note on stderr naming the parameters scaled to the budget (once per run)."""
    if defaults_used(args) != "budget_scaled" or getattr(args, "_said_scaled", False):
        return
    args._said_scaled = True
    steps = getattr(strategy, "steps", (strategy,))
    given = {t.split("=", 1)[0].rpartition(".")[2] for t in args.param}
    values = [(k, st.params()[k]) for st in steps for k in type(st).budget_scaled(budget)
              if k not in given and k in st.params()]
    changed = [f"{k}={v:,}" if isinstance(v, int) and not isinstance(v, bool) else f"{k}={v}" for k, v in values]
    if changed:
        note(f"parameters scaled to the {budget.max_tokens:,}-token budget, as the Strategy Lab and sweep set them: "
             f"{', '.join(changed)} (--peer-defaults keeps the documented defaults)")


def _setup_from_config(args: argparse.Namespace, conv: Conversation):
    """The config file's strategy, model, budget and pins, each overridden by the flag given."""
    from ..configs import load_config_file
    from ..strategies import STRATEGIES, Pipeline, get_strategy, parse_param, prepare
    lab = load_config_file(args.config)
    reserve = lab.reserve if args.reserve is None else args.reserve
    view, budget = prepare(conv, args.model or lab.model, context_limit=args.max_tokens or lab.max_tokens,
                           reserve=reserve, pins=args.pin or lab.pins)
    if not conv.tools:  # no tool definitions in the file: the ones measured in the lab
        budget = replace(budget, tools_tokens=lab.tools_tokens)
    if args.strategy:  # a strategy the config does not hold: its parameters as without a config
        strategy = build_strategy(args.strategy, args.param, None if args.peer_defaults else budget)
    else:
        steps = list(lab.steps())
        build_strategy(" >> ".join(s.name for s in steps), args.param)  # the CLI's own checks and messages
        for text in args.param:
            owner, _, bare = text.split("=", 1)[0].rpartition(".")
            name = owner or steps[0].name
            key, value = parse_param(STRATEGIES[name], text[len(owner) + 1:] if owner else text)
            steps = [get_strategy(name, **{**s.params(), key: value}) if s.name == name else s for s in steps]
        strategy = steps[0] if len(steps) == 1 else Pipeline(steps=tuple(steps))
    return strategy, budget, view


def _apply_args(p: argparse.ArgumentParser) -> None:
    _plan_args(p)
    p.add_argument("--to", default="openai", choices=sorted(n for n, f in FORMATS.items() if f.write),
                   help="format of the resulting messages (default openai)")
    p.add_argument("--rules", default=None, choices=["openai", "anthropic"],
                   help="validator rules for the result (default: anthropic for --to anthropic, else openai)")


@command("apply", _apply_args)
def _apply(args: argparse.Namespace) -> int:
    """Apply a strategy; print the plan, the resulting messages and the validator's findings."""
    from ..validate import validate
    out = []
    for i, conv in _conversations(args):
        strategy, budget, view = _setup(args, conv)
        _say_scaled(args, strategy, budget)
        plan = strategy.apply(view, budget)
        result = conv.with_messages(plan.messages)
        exported = export(result, args.to)
        for text in exported.notes:
            note(text)
        rules = args.rules or ("anthropic" if args.to == "anthropic" else "openai")
        d = plan.to_dict(lazy=True)  # the decisions are written one by one (see _emit)
        d["params"] = strategy.params()
        d["findings"] = [f.to_dict() for f in validate(list(plan.messages), rules=rules)]
        d["messages"] = exported.data
        out.append(d)
    _emit(out)
    return EXIT_OK


def _replay_args(p: argparse.ArgumentParser) -> None:
    from ..strategies.base import APPLY_AT
    _plan_args(p)
    p.add_argument("--apply-at", choices=list(APPLY_AT), default=None,
                   help="where the strategy runs: every_call (before every model call, the default) or turn_start "
                        "(only when a user message arrives); overrides the strategy's apply_at")
    p.add_argument("--prices", metavar="FILE", help="a JSON price table (the shape of ctxlab/prices.json)")
    p.add_argument("--price", metavar="input=..,cached=..,output=..", help="the model's price, USD per million tokens")
    prefix_args(p)
    p.add_argument("--tools", choices=("all", "retrieval", "deferred"), default=None,
                   help="the tool definitions sent at each call, counted in its prompt and budget: all of them, a "
                        "BM25 retrieval's pick per call (the query is the call's last messages), or deferred "
                        "loading (a search tool plus the definitions found so far); default: the conversation's "
                        "tools at every call, as the budget counts them")
    p.add_argument("--tools-top-k", type=int, default=5, metavar="N", help="tools a retrieval picks per call (5)")
    p.add_argument("--tools-context", type=int, default=3, metavar="N",
                   help="messages before a call that make its retrieval query (3)")


def _tools_of(args: argparse.Namespace, conv: Conversation, model: str) -> Any:
    """The tools sent at each call (``--tools``), or None."""
    if args.tools is None:
        return None
    from ..tools_per_call import tools_per_call
    if args.tools_context < 1:
        raise CtxlabError(f"--tools-context must be at least 1, got {args.tools_context}", where="--tools-context")
    return tools_per_call(conv, args.tools, model=model, top_k=args.tools_top_k, context_messages=args.tools_context)


def _tools_summary(mode: str, tools: Any) -> dict[str, Any]:
    """What the tools per call add up to: tokens, list changes, tools a call used but was not sent."""
    return {"mode": mode, "tools_tokens": sum(t.tokens for t in tools),
            "list_changes": sum(t.changed for t in tools),
            "calls_missing_a_tool": sum(bool(t.missing) for t in tools),
            "found": sum(len(t.found) for t in tools)}


MATRIX_CELLS = 200_000
"""``ctxlab replay`` prints the state matrix (calls x messages) up to this many cells."""


@command("replay", _replay_args)
def _replay(args: argparse.Namespace) -> int:
    """Replay a conversation call by call under a strategy; print every call's prompt tokens and
    fit, needed_recall per call, and the cost with the prompt cache."""
    from ..cache_breaks import summary as breaks_summary
    from ..measure import measure
    from ..pricing import load_prices, parse_price_override
    from ..prefix import check_against_bill
    from ..usage import has_usage
    out = []
    for i, conv in _conversations(args):
        conv, prefix, prefix_notes = with_prefix(args, conv)
        each = argparse.Namespace(**{**vars(args), "pin": [p + 1 for p in args.pin] if prefix else args.pin})
        strategy, budget, view = _setup(each, conv)
        _say_scaled(args, strategy, budget)
        model = args.model or conv.model or "gpt-4o"
        tools = _tools_of(args, conv, model)
        prices = parse_price_override(args.price, model) if args.price else load_prices(args.prices)
        done = measure(conv, strategy, budget, model=model, price=prices, tools=tools, pins=each.pin,
                       apply_at=args.apply_at)
        r, fid = done.replay, done.fidelity
        d = r.to_dict(matrix=len(r.calls) * r.size <= MATRIX_CELLS)
        d["defaults"], d["params"] = defaults_used(args), strategy.params()
        if tools is not None:
            d["tools_per_call"] = _tools_summary(args.tools, tools)
        d["unlogged_prefix"] = prefix
        for text in prefix_notes:
            note(f"conversation {i}: {text}")
        d["fidelity"], d["needed_recall"] = fid.to_dict(), fid.needed_recall
        d["cost"] = done.cost.to_dict()
        d["cache_breaks"] = {**breaks_summary(done.breaks), "calls": [b.to_dict() for b in done.breaks]}
        d["cost_none"] = {k: v for k, v in done.cost_none.to_dict().items() if k != "turns"}
        if has_usage(conv):  # a production trace: billed beside counted and modelled, per call as sent
            d["reported_usage"] = check_against_bill(conv, model=model, price=prices, budget=budget).to_dict()
        for warning in r.warnings:
            note(f"conversation {i}: {warning}")
        if not r.fits:
            w = r.worst
            note(f"conversation {i}: {r.calls_over_limit:,} of {len(r.calls):,} model calls are over the "
                 f"{budget.prompt_limit:,}-token prompt limit (largest: call {w.number}, {w.tokens_after:,} tokens)")
        out.append(d)
    _emit(out)
    return EXIT_OK


__all__ = ["build_strategy", "CtxlabError"]
