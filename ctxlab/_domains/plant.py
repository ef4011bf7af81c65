"""Planting the four context failure modes into a generated conversation, for teaching.

``generate(..., plant_poisoning=..., plant_distraction=N, plant_confusion=K, plant_clash=C)``
builds the conversation as usual and lets a :class:`Planter` add to it at fixed points: before a
turn's request, after its first tool round, before and after its rounds, and in its answer. Every
planted failure is recorded as ``{"mode", "code", "messages", "tools"}`` (message indexes in the
final conversation), so a test can check that the detectors find exactly what was planted.

* poisoning ``mistyped_id`` (last turn): a lookup with one character of an id changed finds some
  other record, and the answer cites the wrong id. ``repeated_failure`` (last turn): the turn's
  last call is sent three more times with the same arguments and times out each time.
  ``false_claim`` (needs 2 turns): the second-to-last answer states a wrong status or amount of an
  entity, a summary before the last turn repeats it, and the last turn re-reads the entity.
* distraction N: N extra tool rounds in earlier turns whose results are 10x the usual size
  (at least 3,000 tokens).
* confusion K: K tools offered (the world's, their look-alikes, unrelated tools); in the last turn
  the agent calls the look-alike of its first tool, which fails, then the real one.
* clash C: after the first round of C turns (from the last one back), the same call is made again
  and its result disagrees with the first on one field of one entity.
"""
from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from typing import Any, Callable

from ..conversation import Message, ToolCall, ToolDef, compact_json
from ..diagnostics.observations import (COMMON_STATUSES, MONEY_WORDS, _identity, is_id_key, is_money_field,
                                        is_read_tool, records_in, result_failed)
from .base import CHARS_PER_TOKEN, JSONDict, Turn, World, dumps
from .lookalikes import FILLERS, lookalike_of

POISONINGS = ("none", "mistyped_id", "repeated_failure", "false_claim")
DISTRACTION_FACTOR = 10
DISTRACTION_MIN_TOKENS = 3_000


def distraction_tokens(result_tokens: int) -> int:
    """Approximate size of one planted distracting result."""
    return max(DISTRACTION_FACTOR * result_tokens, DISTRACTION_MIN_TOKENS)


def confusion_catalog(world: type[World], size: int, rng: random.Random) -> tuple[ToolDef, ...]:
    """``size`` tools: the world's own, then their look-alikes, then unrelated ones drawn at random."""
    own = list(world.tools)
    looks = [x for t in own if (x := lookalike_of(t))]
    if size < len(own) + 1:
        raise ValueError(f"plant_confusion must be 0 or at least {len(own) + 1} for {world.name} "
                         f"({len(own)} tools of its own plus a look-alike); got {size}")
    looks = looks[: size - len(own)]
    fillers = rng.sample(FILLERS, min(len(FILLERS), size - len(own) - len(looks)))
    if len(own) + len(looks) + len(fillers) < size:
        raise ValueError(f"plant_confusion can offer at most {len(own) + len(looks) + len(FILLERS)} tools "
                         f"for {world.name}; got {size}")
    return tuple(own + looks + fillers)


@dataclass
class Candidate:
    """A field of an entity in a tool result that a plant can contradict."""

    result: int
    call: ToolCall
    entity: str
    field: str
    value: Any


def _rank(field_name: str, value: Any) -> int | None:
    last = field_name.rsplit(".", 1)[-1].lower()
    if last == "status" and isinstance(value, str):
        return 0
    if is_money_field(field_name) and isinstance(value, (int, float)) and not isinstance(value, bool):
        return 1
    if isinstance(value, (int, float)) and not isinstance(value, bool) and not is_id_key(last):
        return 2
    return None


def candidates(messages: list[Message], start: int, end: int, claimable: bool) -> list[Candidate]:
    """Fields of entities in the successful read results of ``messages[start:end]``, best first
    (a status, then an amount, then another number; only the first two when ``claimable``)."""
    calls = {c.id: c for m in messages[start:end] for c in m.tool_calls}
    found: list[tuple[int, int, Candidate]] = []
    seen: set[str] = set()
    for i in range(start, end):
        m = messages[i]
        call = calls.get(m.tool_call_id or "")
        if m.role != "tool" or call is None or not is_read_tool(call.name) or result_failed(m):
            continue
        for entity, name, value in records_in(json.loads(m.text)):
            rank = _rank(name, value)
            if rank is None or (claimable and rank > 1) or entity in seen:
                continue
            seen.add(entity)
            found.append((rank, len(found), Candidate(i, call, entity, name, value)))
    return [c for _, _, c in sorted(found, key=lambda x: (x[0], x[1]))]


def set_field(doc: Any, entity: str, name: str, value: Any, container: str = "") -> bool:
    """Set ``name`` (dotted) of the record ``entity`` in ``doc``; True when found."""
    if isinstance(doc, list):
        return any(set_field(item, entity, name, value, container) for item in doc)
    if not isinstance(doc, dict):
        return False
    if _identity(doc, container) == entity:
        *path, last = name.split(".")
        target = doc
        for key in path:
            target = target.get(key) if isinstance(target, dict) else None
        if isinstance(target, dict) and last in target:
            target[last] = value
            return True
    return any(set_field(v, entity, name, value, k) for k, v in doc.items() if isinstance(v, (dict, list)))


def wrong_value(c: Candidate, rng: random.Random) -> Any:
    """A value that disagrees with ``c.value``."""
    if isinstance(c.value, str):
        return rng.choice([s for s in COMMON_STATUSES if s != c.value.lower() and s != "canceled"])
    return round(c.value * 1.25 + 10, 2) if isinstance(c.value, float) or c.value > 1 else round(c.value + 0.25, 2)


@dataclass
class Planter:
    """Adds the planted failures while ``generate`` builds the conversation (see the module doc)."""

    world: World
    messages: list[Message]
    turns: int
    result_tokens: int
    new_call_id: Callable[[], str]
    rng: random.Random
    poisoning: str = "none"
    distraction: int = 0
    confusion: int = 0
    clash: int = 0
    planted: list[JSONDict] = field(default_factory=list)
    tools: tuple[ToolDef, ...] = ()
    _turn_start: int = 0
    _claim: JSONDict | None = None

    def __post_init__(self) -> None:
        if self.poisoning == "false_claim" and self.turns < 2:
            raise ValueError("plant_poisoning=false_claim needs at least 2 turns (the claim, then its contradiction)")
        self.tools = confusion_catalog(type(self.world), self.confusion, self.rng) if self.confusion \
            else self.world.tools
        if self.confusion > 30:
            self._record("confusion", "too_many_tools", [], [t.name for t in self.tools])
        for t in self.world.tools:
            look = lookalike_of(t)
            if self.confusion and look and look.name in {x.name for x in self.tools}:
                self._record("confusion", "overlapping_tools", [], [t.name, look.name])
        old = max(1, self.turns - 1)
        self._distraction_turns = [k % old for k in range(self.distraction)]
        self._clash_turns = [(self.turns - 1 - j) % self.turns for j in range(self.clash)]

    # -------------------------------------------------------------- helpers

    def _record(self, mode: str, code: str, messages: list[int], tools: list[str]) -> JSONDict:
        entry = {"mode": mode, "code": code, "messages": sorted(messages), "tools": tools}
        self.planted.append(entry)
        return entry

    def _round(self, name: str, arguments: JSONDict | str, result: str) -> tuple[int, int]:
        """Append one call and its result; return their indexes."""
        call = ToolCall(self.new_call_id(), name, arguments if isinstance(arguments, str) else compact_json(arguments))
        self.messages.append(Message("assistant", "", tool_calls=(call,)))
        self.messages.append(Message("tool", result, name=name, tool_call_id=call.id))
        return len(self.messages) - 2, len(self.messages) - 1

    def _first_call(self) -> tuple[ToolCall, str]:
        """The turn's first call and the newest result of that same call (a planted re-read may
        have answered it since: repeating the older answer would plant a second clash)."""
        first = next((m.tool_calls[0] for m in self.messages[self._turn_start:] if m.tool_calls), None)
        if first is None:
            raise ValueError("the turn has no tool call to plant on")
        same = {c.id for m in self.messages[self._turn_start:] for c in m.tool_calls
                if c.name == first.name and c.arguments == first.arguments}
        return first, next(r.text for r in reversed(self.messages) if r.role == "tool" and r.tool_call_id in same)

    # -------------------------------------------------------------- hooks

    def before_request(self, k: int, turn: Turn) -> None:
        """Before turn k's user message: the summary carrying a false claim; an id to mistype."""
        if self.poisoning == "mistyped_id" and k == self.turns - 1:
            self.world.mention_lookup_target(turn)
        if self._claim is not None and k == self._claim["turn"] + 1:
            summary = (f"Summary of earlier conversation (messages 1-{len(self.messages) - 1}):\n"
                       f"- {self._claim['summary']}")
            self._claim["summary_index"] = len(self.messages)
            self.messages.append(Message("system", summary))
        self._turn_start = len(self.messages) + 1

    def after_first_round(self, k: int) -> None:
        """Clashes: the first round's call made again, one field of one entity disagreeing."""
        for j in [j for j, t in enumerate(self._clash_turns) if t == k]:
            options = candidates(self.messages, self._turn_start, len(self.messages), claimable=False)
            taken = {p["entity"] for p in self.planted if p.get("entity")}
            options = [c for c in options if c.entity not in taken]
            if not options:
                raise ValueError(f"turn {k} has no entity left to plant clash number {j + 1} on; "
                                 "lower plant_clash or raise turns or parallel_calls")
            c = options[0]
            doc = json.loads(self.messages[c.result].text)
            set_field(doc, c.entity, c.field, wrong_value(c, self.rng))
            _, result = self._round(c.call.name, c.call.arguments, dumps(doc))
            entry = self._record("clash", "conflicting_values", [c.result, result], [c.call.name])
            entry["entity"] = c.entity

    def before_rounds(self, k: int) -> None:
        """The last turn first re-reads the entity a false claim was about."""
        if self._claim is not None and k == self._claim["turn"] + 1:
            c: Candidate = self._claim["candidate"]
            _, result = self._round(c.call.name, c.call.arguments, self.messages[c.result].text)
            answer, summary = self._claim["answer_index"], self._claim["summary_index"]
            self._record("poisoning", "contradicted_claim", [answer, result], [c.call.name])
            self._record("poisoning", "summary_carries_claim", [answer, summary, result], [c.call.name])

    def after_rounds(self, k: int) -> None:
        """Distracting results, a look-alike call, a mistyped id or repeated failures."""
        for _ in range(self._distraction_turns.count(k)):
            self._distraction_round(k)
        if k != self.turns - 1:
            return
        if self.confusion:
            call, text = self._first_call()
            look = lookalike_of(next(t for t in self.world.tools if t.name == call.name))
            if look is not None and look.name in {t.name for t in self.tools}:
                error = dumps({"error": {"code": "invalid_request", "message": f"{look.name} could not process "
                                         "these arguments; no matching record"}})
                a_call, a_result = self._round(look.name, call.arguments, error)
                b_call, _ = self._round(call.name, call.arguments, text)
                self._record("confusion", "lookalike_switch", [a_call, a_result, b_call], [look.name, call.name])
        if self.poisoning == "repeated_failure":
            last = next(m.tool_calls[-1] for m in reversed(self.messages) if m.tool_calls)
            indexes: list[int] = []
            for attempt in range(3):
                error = dumps({"error": {"code": "upstream_timeout",
                                         "message": f"{last.name} timed out after 30 s (HTTP 504)"}})
                indexes.extend(self._round(last.name, last.arguments, error))
            self._record("poisoning", "repeated_failing_call", indexes, [last.name])
        elif self.poisoning == "mistyped_id":
            turn = self._turn
            wrong = self.world.mistype(self.world.lookup_target(turn))
            name, args, doc = self.world.lookup(turn, wrong)
            self._mistyped = (wrong, name, list(self._round(name, args, dumps(doc))))

    def _distraction_round(self, k: int) -> None:
        saved = self.world.result_chars
        self.world.result_chars = distraction_tokens(self.result_tokens) * CHARS_PER_TOKEN
        try:
            entity = self._turn.entities[0]
            name, args, doc = self.world.next_call(self._turn, entity)
        finally:
            self.world.result_chars = saved
        _, result = self._round(name, args, dumps(doc))
        self._record("distraction", "oversized_results", [result], [name])

    def answer(self, k: int, text: str) -> str:
        """Turn k's answer, with a false claim or the reuse of a mistyped id."""
        index = len(self.messages)
        if self.poisoning == "false_claim" and k == self.turns - 2:
            options = candidates(self.messages, self._turn_start, index, claimable=True) or \
                candidates(self.messages, 1, index, claimable=True)  # else an entity of an earlier turn
            if not options:
                raise ValueError(f"turn {k} has no status or amount to make a false claim about; raise rounds_per_turn")
            c = options[0]
            wrong = wrong_value(c, self.rng)
            if isinstance(wrong, str):
                claim = f"{c.entity} is {wrong}."
            else:
                word = next(w for w in MONEY_WORDS if w in c.field.rsplit(".", 1)[-1].lower())
                claim = f"{c.entity} has a {word} of ${wrong:,.2f}."
            self._claim = {"turn": k, "candidate": c, "answer_index": index, "summary": claim}
            return f"{text}\nUpdate: {claim}"
        if self.poisoning == "mistyped_id" and k == self.turns - 1:
            wrong, name, indexes = self._mistyped
            self._record("poisoning", "mistyped_id", indexes + [index], [name])
            return f"{text}\nI also looked up {wrong} with {name}, as asked; its record is above."
        return text

    def start_turn(self, turn: Turn) -> None:
        """Remember the turn being built."""
        self._turn = turn
