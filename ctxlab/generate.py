"""Deterministic, realistic multi-round tool conversations for trying context strategies.

``generate("sql", turns=100, result_tokens=2000, seed=7)`` returns a Conversation: a system prompt
with the agent's policy, then for each user turn a request, ``rounds_per_turn`` tool rounds
(an assistant message with ``parallel_calls`` tool calls, one tool result right after it per call)
and a final answer that cites ids from the results. Tool results are JSON documents of about
``result_tokens`` tokens (counted as 4 characters a token). The same arguments always give the same
conversation: everything is drawn from ``random.Random(seed)``, nothing from the clock.

``DOMAINS`` names the worlds (``ecommerce``, ``sql``, ``travel``; each a ``World`` subclass in
``ctxlab._domains``) and ``PARAMS`` describes the parameters for building controls.

The ``plant_*`` parameters plant the context failure modes for teaching (see
``ctxlab._domains.plant``); each planted failure is listed in ``metadata["planted"]`` as
``{"mode", "code", "messages", "tools"}`` with message indexes, which ``ctxlab.diagnostics`` finds.
"""
from __future__ import annotations

import itertools
import random
from typing import Any, Callable

from ._domains import BUILTIN_WORLDS, CHARS_PER_TOKEN, JSONDict, Turn, World, dumps
from ._domains.plant import POISONINGS, Planter, distraction_tokens
from .conversation import Conversation, Message, ToolCall, compact_json
from .i18n import N_

__all__ = ["DOMAINS", "PARAMS", "WORLDS", "CHARS_PER_TOKEN", "MAX_TOTAL_RESULT_TOKENS", "World",
           "generate", "validate_params"]

MAX_FACTS = 60
"""At most this many facts per conversation, spread evenly over its turns."""

MAX_TOTAL_RESULT_TOKENS = 10_000_000
"""Upper bound of turns x rounds_per_turn x parallel_calls x result_tokens (about 40 MB of text)."""

WORLDS: dict[str, type[World]] = {cls.name: cls for cls in BUILTIN_WORLDS}
"""The worlds by name: a World subclass per domain."""

DOMAINS: tuple[str, ...] = tuple(WORLDS)
"""The names ``generate(domain=...)`` accepts."""

PARAMS: list[dict[str, Any]] = [
    {"name": "domain", "type": "str", "default": "ecommerce", "choices": DOMAINS,
     "help": N_("ecommerce: support desk (orders, shipments, payments, refunds); sql: analytics "
             "agent (generate_sql, valid_sql, run_sql); travel: flights and hotels, good for "
             "parallel calls.")},
    {"name": "turns", "type": "int", "default": 6, "min": 1, "max": 500,
     "help": N_("User turns (steps of the task in an agent_run); each ends with an assistant answer.")},
    {"name": "rounds_per_turn", "type": "int", "default": 2, "min": 1, "max": 20,
     "help": N_("Tool rounds per turn (an assistant message with tool calls and their results).")},
    {"name": "result_tokens", "type": "int", "default": 400, "min": 200, "max": 20_000,
     "help": N_("Approximate size of each tool result, at 4 characters of JSON per token.")},
    {"name": "parallel_calls", "type": "int", "default": 1, "min": 1, "max": 8,
     "help": N_("Tool calls per assistant message, run in parallel (one per order, question or trip leg).")},
    {"name": "seed", "type": "int", "default": 0, "min": 0, "max": 2**32 - 1,
     "help": N_("Random seed: the same seed and parameters give the same conversation.")},
    {"name": "plant_poisoning", "type": "str", "default": "none", "choices": POISONINGS,
     "help": N_("Plant context poisoning: mistyped_id (a lookup with a one-character typo finds another record, "
             "and the answer reuses it), repeated_failure (the same failing call sent 3 times), false_claim "
             "(an answer states a wrong status or amount, a summary repeats it, a later result contradicts it).")},
    {"name": "plant_distraction", "type": "int", "default": 0, "min": 0, "max": 20,
     "help": N_("Plant context distraction: this many extra tool results, 10x the usual size (at least "
             "3,000 tokens), in earlier turns.")},
    {"name": "plant_confusion", "type": "int", "default": 0, "min": 0, "max": 80,
     "help": N_("Plant context confusion: offer this many tools (the domain's, look-alikes of them, unrelated "
             "ones; 0 = only the domain's), and have the agent call a look-alike that fails.")},
    {"name": "plant_clash", "type": "int", "default": 0, "min": 0, "max": 10,
     "help": N_("Plant context clash: this many re-read tool results that disagree with the first read on one "
             "field of one entity (a status, an amount).")},
    {"name": "shape", "type": "str", "default": "chat", "choices": ("chat", "agent_run"),
     "help": N_("chat: a user message starts every turn; agent_run: one task message, then the agent works "
             "alone (each later request becomes a step the agent states before its next calls), as an "
             "autonomous or coding agent does: one user turn, dozens of model calls.")},
]
"""The parameters of ``generate``: name, type, default, min and max (or choices), help."""


def validate_params(**values: Any) -> JSONDict:
    """The parameters checked against ``PARAMS`` (missing ones take their default).

    Raises ValueError naming the parameter and its allowed range, or the size limit.
    """
    unknown = sorted(set(values) - {p["name"] for p in PARAMS})
    if unknown:
        raise ValueError(f"unknown parameter {unknown[0]!r}; known: {', '.join(p['name'] for p in PARAMS)}")
    out: JSONDict = {}
    for p in PARAMS:
        value = values.get(p["name"], p["default"])
        if "choices" in p:
            if not isinstance(value, str) or value not in p["choices"]:
                raise ValueError(f"{p['name']} must be one of {', '.join(p['choices'])}; got {value!r}")
        elif isinstance(value, bool) or not isinstance(value, int) or not p["min"] <= value <= p["max"]:
            raise ValueError(f"{p['name']} must be an integer from {p['min']:,} to {p['max']:,}; got {value!r}")
        out[p["name"]] = value
    total = out["turns"] * out["rounds_per_turn"] * out["parallel_calls"] * out["result_tokens"]
    total += out["plant_distraction"] * distraction_tokens(out["result_tokens"])
    if total > MAX_TOTAL_RESULT_TOKENS:
        raise ValueError(
            f"turns x rounds_per_turn x parallel_calls x result_tokens (with planted results) is {total:,} "
            f"tokens of tool results; the limit is {MAX_TOTAL_RESULT_TOKENS:,}: lower one of them")
    return out


def generate(domain: str = "ecommerce", turns: int = 6, rounds_per_turn: int = 2, result_tokens: int = 400,
             parallel_calls: int = 1, seed: int = 0, plant_poisoning: str = "none", plant_distraction: int = 0,
             plant_confusion: int = 0, plant_clash: int = 0, shape: str = "chat") -> Conversation:
    """A made-up but realistic tool conversation; the same arguments give the same one.

    See the module docstring for its shape; ``facts`` lists the strings a good context must keep
    (request entities, ids, decided amounts, final SQL), each a literal substring of a message or
    of tool-call arguments. The ``plant_*`` parameters add failures for teaching, recorded in
    ``metadata["planted"]``. Raises ValueError on a parameter out of range, or a failure that
    cannot be planted in a conversation this small (the message says what to raise).
    ``shape="agent_run"`` gives one user message and the rest as the agent's own steps (see PARAMS).
    """
    if shape == "agent_run" and (plant_poisoning != "none" or plant_distraction or plant_confusion or plant_clash):
        raise ValueError("shape agent_run cannot plant failures yet: use shape chat to plant one")
    params = validate_params(domain=domain, turns=turns, rounds_per_turn=rounds_per_turn, shape=shape,
                             result_tokens=result_tokens, parallel_calls=parallel_calls, seed=seed,
                             plant_poisoning=plant_poisoning, plant_distraction=plant_distraction,
                             plant_confusion=plant_confusion, plant_clash=plant_clash)
    world = WORLDS[domain](random.Random(seed), result_tokens * CHARS_PER_TOKEN)
    messages = [Message("system", world.system_prompt)]
    facts: dict[str, None] = {}
    call_numbers = itertools.count(1)

    def new_call_id() -> str:
        return f"call_{seed}_{next(call_numbers)}"
    planter = Planter(world, messages, turns, result_tokens, new_call_id, random.Random(seed ^ 0x5EED),
                      plant_poisoning, plant_distraction, plant_confusion, plant_clash)
    for index in range(turns):
        turn = world.start_turn(index, parallel_calls)
        planter.start_turn(turn)
        planter.before_request(index, turn)
        step = shape == "agent_run" and index > 0
        if not step:
            messages.append(Message("user", turn.request))
        planter.before_rounds(index)
        for r in range(rounds_per_turn):
            rnd = _tool_round(world, turn, new_call_id)
            if step and r == 0:  # the agent states what it does next: its last answer, then the next request
                note = f"{messages.pop().text}\n\nNext step: {turn.request}"
                rnd[0] = Message("assistant", note, tool_calls=rnd[0].tool_calls)
            messages.extend(rnd)
            if r == 0:
                planter.after_first_round(index)
        planter.after_rounds(index)
        messages.append(Message("assistant", planter.answer(index, world.answer(turn))))
        facts.update(dict.fromkeys(turn.facts))
    metadata = {
        "title": (f"{world.title} (agent run: {turns} steps, seed {seed})" if shape == "agent_run"
                  else f"{world.title} ({turns} turns, seed {seed})"),
        "description": world.description,
        "generator": params,
    }
    if planter.planted:
        metadata["planted"] = [{k: v for k, v in p.items() if k != "entity"} for p in planter.planted]
    return Conversation(messages=tuple(messages), tools=planter.tools, model="gpt-4o", format="openai",
                        facts=spread(tuple(facts), MAX_FACTS), metadata=metadata)


def spread(items: tuple[str, ...], limit: int) -> tuple[str, ...]:
    """At most ``limit`` items, taken evenly from the whole sequence (so long conversations keep
    facts from every part, and retention stays cheap to measure)."""
    if len(items) <= limit:
        return items
    return tuple(items[k * len(items) // limit] for k in range(limit))


def _tool_round(world: World, turn: Turn, new_call_id: Callable[[], str]) -> list[Message]:
    """One assistant message calling a tool per entity of the turn, then one result per call."""
    calls: list[ToolCall] = []
    results: list[Message] = []
    for entity in turn.entities:
        name, arguments, result = world.next_call(turn, entity)
        call_id = new_call_id()
        calls.append(ToolCall(call_id, name, compact_json(arguments)))
        results.append(Message("tool", dumps(result), name=name, tool_call_id=call_id))
    return [Message("assistant", "", tool_calls=tuple(calls)), *results]
