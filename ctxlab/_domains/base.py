"""Shared machinery of the generator's worlds: the ``World`` base class, the ``Turn`` record,
JSON sizing and schema helpers, and the names every world draws from."""
from __future__ import annotations

import json
import random
import string
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Callable

from ..conversation import ToolDef

JSONDict = dict[str, Any]
Call = tuple[str, JSONDict, JSONDict]
"""One step of an entity: (tool name, arguments, result document)."""

ALNUM = string.ascii_letters + string.digits
CHARS_PER_TOKEN = 4
"""The estimate used to size tool results: one token is about four characters of JSON."""

FIRST_NAMES = ("Maria", "James", "Aiko", "Dmitri", "Fatima", "Lucas", "Priya", "Owen", "Sofia",
               "Kwame", "Elena", "Mateo", "Hannah", "Ravi", "Chloe", "Tomasz", "Amara", "Noah",
               "Ingrid", "Yusuf", "Camila", "Felix", "Leila", "Arjun")
LAST_NAMES = ("Lopez", "Whitfield", "Tanaka", "Volkov", "Haddad", "Moreau", "Raman", "Gallagher",
              "Rossi", "Mensah", "Petrova", "Silva", "Becker", "Iyer", "Dubois", "Nowak", "Okafor",
              "Lindqvist", "Kaya", "Herrera", "Schmidt", "Nakamura", "Brennan", "Costa")


def dumps(doc: Any) -> str:
    """JSON text the way a Python tool usually returns it (default separators, UTF-8 kept)."""
    return json.dumps(doc, ensure_ascii=False)


def money(amount: float, symbol: str = "$") -> str:
    """``$1,234.50``: how amounts are written in user-facing text."""
    return f"{symbol}{amount:,.2f}"


def iso(moment: datetime) -> str:
    """An ISO-8601 UTC timestamp with a ``Z``."""
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def tool(name: str, description: str, category: str, properties: JSONDict,
         required: tuple[str, ...] = ()) -> ToolDef:
    """A ToolDef with an object schema that rejects unknown properties."""
    schema = {"type": "object", "properties": properties, "required": list(required),
              "additionalProperties": False}
    return ToolDef(name=name, description=description, parameters=schema, category=category)


def str_prop(description: str, **more: Any) -> JSONDict:
    """A string property schema."""
    return {"type": "string", "description": description, **more}


def num_prop(description: str, kind: str = "number", **more: Any) -> JSONDict:
    """A number (or integer) property schema."""
    return {"type": kind, "description": description, **more}


@dataclass
class Turn:
    """One user turn in the making: its request text, the entities it is about (one per
    parallel call) and, once answered, the facts a good context must keep."""

    index: int
    request: str = ""
    entities: list[JSONDict] = field(default_factory=list)
    facts: list[str] = field(default_factory=list)
    info: JSONDict = field(default_factory=dict)


class World:
    """Shared machinery of a domain: random draws, unique ids, a clock, and result sizing.

    Subclasses set ``name``, ``title``, ``description``, ``system_prompt``, ``tools`` and
    ``follow_up`` (the steps an entity cycles through once its own plan is done), and implement
    ``start_turn``, ``answer`` and one ``step_<name>`` method per step.
    """

    name = ""
    title = ""
    description = ""
    system_prompt = ""
    tools: tuple[ToolDef, ...] = ()
    follow_up: tuple[str, ...] = ()

    def __init__(self, rng: random.Random, result_chars: int):
        self.rng = rng
        self.result_chars = result_chars
        self._used: set[str] = set()
        self._longer: dict[tuple[str, int, str], int] = {}
        self.now = datetime(2024, 1, 8, 9, 0) + timedelta(days=rng.randrange(330),
                                                          minutes=rng.randrange(480))

    def new_id(self, prefix: str, length: int = 6, alphabet: str = string.digits) -> str:
        """An id never handed out before in this conversation, e.g. ``ORD-482913``.

        When ids of this shape keep colliding (a huge conversation), they get one character longer.
        """
        key = (prefix, length, alphabet)
        misses = 0
        while True:
            size = length + self._longer.get(key, 0)
            body = "".join(self.rng.choice(alphabet) for _ in range(size))
            value = prefix + body
            if body[0] != "0" and value not in self._used:
                self._used.add(value)
                return value
            misses += 1
            if misses % 16 == 0:
                self._longer[key] = self._longer.get(key, 0) + 1

    def pick(self, *options: Any) -> Any:
        """One of the options, at random."""
        return self.rng.choice(options)

    def person(self) -> tuple[str, str]:
        """A (first, last) name."""
        return self.rng.choice(FIRST_NAMES), self.rng.choice(LAST_NAMES)

    def tick(self, minutes_low: int = 1, minutes_high: int = 6) -> datetime:
        """Advance the conversation clock a little and return it."""
        self.now += timedelta(minutes=self.rng.randint(minutes_low, minutes_high),
                              seconds=self.rng.randrange(60))
        return self.now

    def fill(self, doc: JSONDict, make_item: Callable[[int], JSONDict], limit: int = 100_000) -> list[JSONDict]:
        """Items from ``make_item(i)`` until ``doc`` plus the items reach the target size.

        ``doc`` is measured as it is (with its list still empty); at least one item is made, at
        most ``limit``.
        """
        size = len(dumps(doc))
        items: list[JSONDict] = []
        while len(items) < limit:
            item = make_item(len(items))
            grow = len(dumps(item)) + 2
            if items and size + grow > self.result_chars:
                break
            items.append(item)
            size += grow
        return items

    def next_call(self, turn: Turn, entity: JSONDict) -> Call:
        """The entity's next tool call and its result."""
        if not entity["queue"]:
            entity["queue"] = list(self.follow_up)
        step = entity["queue"].pop(0)
        return getattr(self, "step_" + step)(turn, entity)

    def start_turn(self, index: int, entities: int) -> Turn:
        """A new user turn about ``entities`` things (one per parallel call)."""
        raise NotImplementedError

    def answer(self, turn: Turn) -> str:
        """The final assistant text of the turn; also records ``turn.facts``."""
        raise NotImplementedError

    # hooks for planting a mistyped id (ctxlab._domains.plant)

    def mention_lookup_target(self, turn: Turn) -> None:
        """Make sure the turn's request names an id a tool can look up (most worlds already do)."""

    def lookup_target(self, turn: Turn) -> str:
        """An id of the turn that has already appeared and that a tool of this world looks up."""
        raise NotImplementedError

    def lookup(self, turn: Turn, wrong_id: str) -> Call:
        """A lookup of ``wrong_id`` (a mistyped id) that finds some other record under it."""
        raise NotImplementedError

    def mistype(self, value: str) -> str:
        """``value`` with one character changed (the last digit, else the last letter), unused so far."""
        chars = list(value)
        for k in range(len(chars) - 1, -1, -1):
            c = chars[k]
            for step in range(1, 10):
                if c.isdigit():
                    chars[k] = str((int(c) + step) % 10)
                elif c.isalpha():
                    base = "A" if c.isupper() else "a"
                    chars[k] = chr((ord(c) - ord(base) + step) % 26 + ord(base))
                else:
                    break
                candidate = "".join(chars)
                if candidate not in self._used:
                    self._used.add(candidate)
                    return candidate
            chars[k] = c
        raise ValueError(f"cannot mistype {value!r}")


def join_words(words: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]

