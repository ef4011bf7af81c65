"""The light view of a conversation that strategies read, and the budget they plan against.

A view is built once per conversation and model (token counts, segments, facts found per
message); strategies read it and return decisions, so re-planning while a slider moves costs
microseconds per message, not a recount.
"""
from __future__ import annotations

import re
import weakref
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Callable, Iterable, Mapping, Sequence

from ..errors import CtxlabError
from ..conversation import Conversation, Message
from ..model_specs import resolve_model
from ..segments import Segments, segment
from ..tokens import TokenCounter

DEFAULT_RESERVE = 0.15


class BudgetError(CtxlabError):
    """A budget that cannot hold anything (negative, or a reserve of 100%)."""


@dataclass(frozen=True)
class Budget:
    """What a request may hold: the model's context limit, less a reserve for the response,
    less the tool definitions sent with the request and the 3 tokens that prime the reply."""

    max_tokens: int
    reserve: float = DEFAULT_RESERVE
    tools_tokens: int = 0
    reply_priming: int = 3

    def __post_init__(self) -> None:
        if not isinstance(self.max_tokens, int) or self.max_tokens <= 0:
            raise BudgetError(f"max_tokens must be a positive whole number, got {self.max_tokens!r}",
                              where="budget.max_tokens")
        if not 0 <= self.reserve < 1:
            raise BudgetError(f"reserve must be at least 0 and below 1, got {self.reserve!r}",
                              where="budget.reserve", hint="0.15 keeps 15% of the window for the reply")
        if self.tools_tokens < 0:
            raise BudgetError("tools_tokens cannot be negative", where="budget.tools_tokens")

    @property
    def prompt_limit(self) -> int:
        """Tokens the whole prompt may use: the limit less the response reserve."""
        return int(self.max_tokens * (1 - self.reserve))

    @property
    def available(self) -> int:
        """Tokens left for messages once the reserve, tool definitions and reply priming are set aside."""
        return self.prompt_limit - self.tools_tokens - self.reply_priming

    @classmethod
    def for_model(cls, model: str | None, *, reserve: float = DEFAULT_RESERVE, tools_tokens: int = 0,
                  max_tokens: int | None = None) -> "Budget":
        """The model's context window (or ``max_tokens``), with a reserve and tool tokens."""
        spec = resolve_model(model)
        return cls(max_tokens or spec.context_window, reserve, tools_tokens, spec.reply_priming)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"max_tokens": self.max_tokens, "reserve": self.reserve, "tools_tokens": self.tools_tokens,
                "available": self.available}


_ID_LIKE = re.compile(r"\b(?=[A-Za-z0-9_-]*\d)[A-Za-z][A-Za-z0-9]*[-_][A-Za-z0-9_-]+\b|\b[A-Z]{2,}\d{3,}\b")


def auto_facts(messages: Sequence[Message], limit: int = 200) -> tuple[str, ...]:
    """Identifiers a good context must keep, when the conversation names none: string values of
    tool-call arguments, and id-like words (``KC-482193``, ``CUST-88217``) of user messages."""
    found: dict[str, None] = {}
    for m in messages:
        for c in m.tool_calls:
            try:
                args = c.parsed_arguments()
            except ValueError:
                continue
            for v in (args.values() if isinstance(args, dict) else ()):
                if isinstance(v, (str, int)) and not isinstance(v, bool) and 3 <= len(str(v)) <= 120:
                    found[str(v)] = None
        if m.role == "user":
            for w in _ID_LIKE.findall(m.text):
                found[w] = None
        if len(found) >= limit:
            break
    return tuple(list(found)[:limit])


def message_text(m: Message) -> str:
    """All the text of a message a fact could be found in: content and tool-call arguments."""
    text = m.text if isinstance(m.content, str) else "\n".join(p.text for p in m.content if p.text)
    if m.tool_calls:
        text += "\n" + "\n".join(f"{c.name} {c.arguments}" for c in m.tool_calls)
    return text


def fact_mask(m: Message, facts: Sequence[str], only: int = -1) -> int:
    """Bit k set when fact k appears in the message (checking only the bits set in ``only``)."""
    text = message_text(m)
    mask = 0
    if only < 0:
        for k, f in enumerate(facts):
            if f in text:
                mask |= 1 << k
        return mask
    while only:  # only the facts asked about
        low = only & -only
        if facts[low.bit_length() - 1] in text:
            mask |= low
        only ^= low
    return mask


MEMO_EXTENDERS: dict[str, Callable[["View", "View", Any], Any]] = {}
"""``View.memo`` key -> ``f(old_view, grown_view, old_value)``: the value for the grown view, made
from the old one (None: derive it again). ``View.append`` calls these, so a re-plan after an
append does not derive per-view tables from the whole history again."""


@dataclass(frozen=True, eq=False)
class View:
    """What a strategy reads: messages (never copied), their token counts and categories, the
    segments, pinned indexes, facts found per message, where each entry came from, and state
    carried over from the previous application (replay)."""

    messages: tuple[Message, ...]
    tokens: tuple[int, ...]
    categories: tuple[str, ...]
    seg: Segments
    counter: TokenCounter
    facts: tuple[str, ...] = ()
    fact_masks: tuple[int, ...] = ()
    pins: frozenset[int] = frozenset()
    origin: tuple[int | None, ...] = ()
    state: Mapping[str, Any] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.messages)

    @cached_property
    def roles(self) -> tuple[str, ...]:
        """Role per message."""
        return tuple(m.role for m in self.messages)

    @cached_property
    def multi_groups(self) -> tuple[tuple[int, ...], ...]:
        """The atomic groups of more than one message (tool rounds with results)."""
        return tuple(g for g in self.seg.groups if len(g) > 1)

    @cached_property
    def category_sums(self) -> dict[str, int]:
        """Tokens per category over all messages."""
        out: dict[str, int] = {}
        for c, n in zip(self.categories, self.tokens):
            out[c] = out.get(c, 0) + n
        return out

    @cached_property
    def memo(self) -> dict[Any, Any]:
        """Scratch space for what strategies derive from this view alone (tool names per result,
        cleared copies of messages, ...), so a re-plan while a slider moves does not derive it again.
        Never holds anything that depends on a budget or on parameters' effect on decisions."""
        return {}

    @cached_property
    def turn_systems(self) -> tuple[tuple[int, ...], ...]:
        """Per turn, the indexes of the system messages inside it (after its user message)."""
        out: list[list[int]] = [[] for _ in self.seg.turns]
        for i in _positions(self.roles, "system"):
            t = self.seg.turn_of[i]
            if t >= 0:
                out[t].append(i)
        return tuple(map(tuple, out))

    @cached_property
    def fact_counts(self) -> tuple[int, ...]:
        """How many messages hold each fact (by the order of ``facts``)."""
        counts = [0] * len(self.facts)
        for mask in self.fact_masks:
            while mask:
                low = mask & -mask
                counts[low.bit_length() - 1] += 1
                mask ^= low
        return tuple(counts)

    @cached_property
    def total(self) -> int:
        """Tokens of all messages."""
        return sum(self.tokens)

    @cached_property
    def compactions(self) -> tuple[int, ...]:
        """Indexes of the user messages every strategy keeps: compaction summaries a trace carries
        (a coding agent's ``/compact``, marked ``extra["ctxlab_compaction"]`` by its reader) and
        the task of a coding agent's run (its first user message, marked ``extra["ctxlab_task"]``)."""
        return tuple(i for i in _positions(self.roles, "user")
                     if self.messages[i].extra.get("ctxlab_compaction") or self.messages[i].extra.get("ctxlab_task"))

    def first_system(self) -> int | None:
        """Index of the first system message, if there is one."""
        try:
            return self.roles.index("system")
        except ValueError:
            return None

    def newest_user(self) -> int | None:
        """Index of the newest user message."""
        turns = self.seg.turns
        return turns[-1][0] if turns else None

    def parent(self) -> "View | None":
        """The view this one was grown from by ``append``, while it is still alive (else None)."""
        ref = self.__dict__.get("grown_from")
        return ref() if ref is not None else None

    def append(self, *messages: Message, pins: Iterable[int] = (), origin: Sequence[int] | None = None) -> "View":
        """This view with ``messages`` added at the end: what a live agent calls each turn. Only the
        new messages are counted and searched for facts; segments are extended, not rebuilt, so the
        cost does not grow with the history (beyond copying its tuples). ``pins`` adds pinned
        indexes; the new messages' ``origin`` continues this view's numbering, or is ``origin`` when
        given (a replay whose strategy dropped the newest messages numbers the next ones itself)."""
        if not messages:
            return self
        n = len(self.messages)
        split = [self.counter.message_split(m) for m in messages]
        tokens = tuple(t + c for _, t, c in split)
        cats = tuple(cat for cat, _, _ in split)
        masks = tuple(fact_mask(m, self.facts) for m in messages)
        # origins only grow: the newest one that is not an inserted summary is the highest
        last = next((o for o in reversed(self.origin) if o is not None), -1) if self.origin else n - 1
        pins = frozenset(pins)
        bad = sorted(p for p in pins if not 0 <= p < n + len(messages))
        if bad:
            raise CtxlabError(f"pinned index {bad[0]} is not a message of this conversation", where="pins",
                              hint=f"Pin indexes from 0 to {n + len(messages) - 1}")
        new = View(self.messages + messages, self.tokens + tokens, self.categories + cats,
                   extend_segments(self.seg, self.messages, messages), self.counter, self.facts,
                   self.fact_masks + masks, self.pins | pins,
                   self.origin + (tuple(origin) if origin is not None
                                  else tuple(range(last + 1, last + 1 + len(messages)))), self.state)
        known = self.__dict__
        new.__dict__["grown_from"] = weakref.ref(self)  # lets per-view caches extend the parent's
        for key, value in known.get("memo", {}).items():
            extend = MEMO_EXTENDERS.get(key)
            if extend is not None and (grown := extend(self, new, value)) is not None:
                new.memo[key] = grown
        if "roles" in known:
            new.__dict__["roles"] = known["roles"] + tuple(m.role for m in messages)
        if "total" in known:
            new.__dict__["total"] = known["total"] + sum(tokens)
        if "fact_counts" in known:
            counts = list(known["fact_counts"])
            for mask in masks:
                for k in range(len(counts)):
                    counts[k] += mask >> k & 1
            new.__dict__["fact_counts"] = tuple(counts)
        if "category_sums" in known:
            sums = dict(known["category_sums"])
            for c, t in zip(cats, tokens):
                sums[c] = sums.get(c, 0) + t
            new.__dict__["category_sums"] = sums
        return new


def extend_segments(seg: Segments, old: Sequence[Message], new: Sequence[Message]) -> Segments:
    """The segments of ``old + new`` from those of ``old``, in time proportional to ``new`` (plus
    tuple copies): the same result as ``segment(old + new)``."""
    turn_of, group_of, round_of = list(seg.turn_of), list(seg.group_of), list(seg.round_of)
    preamble, turns = seg.preamble, list(seg.turns)
    groups, rounds, orphans = list(seg.groups), list(seg.rounds), list(seg.orphans)
    messages = list(old)
    for m in new:
        i = len(messages)
        messages.append(m)
        if m.role == "user":
            turns.append((i, i + 1))
        elif turns:
            turns[-1] = (turns[-1][0], i + 1)
        else:
            preamble = (0, i + 1)
        turn_of.append(len(turns) - 1)
        r = _caller_round(rounds, messages, m) if m.role == "tool" and m.tool_call_id is not None else None
        if r is not None:
            g = group_of[rounds[r][0]]
            groups[g] += (i,)
            rounds[r] += (i,)
            group_of.append(g)
            round_of.append(r)
            continue
        if m.role == "tool":
            orphans.append(i)
        group_of.append(len(groups))
        groups.append((i,))
        if m.role == "assistant" and m.tool_calls:
            round_of.append(len(rounds))
            rounds.append((i,))
        else:
            round_of.append(-1)
    return Segments(tuple(turn_of), tuple(group_of), tuple(round_of), preamble, tuple(turns), tuple(groups),
                    tuple(rounds), tuple(orphans))


def _caller_round(rounds: Sequence[tuple[int, ...]], messages: Sequence[Message], m: Message) -> int | None:
    """The round of the latest call with ``m.tool_call_id`` (searched from the newest round back)."""
    for r in range(len(rounds) - 1, -1, -1):
        if any(c.id == m.tool_call_id for c in messages[rounds[r][0]].tool_calls):
            return r
    return None


def _positions(items: tuple[str, ...], value: str) -> list[int]:
    """Indexes where ``value`` occurs, by C-speed scans (fast when it is rare)."""
    found, i = [], -1
    try:
        while True:
            i = items.index(value, i + 1)
            found.append(i)
    except ValueError:
        return found


def make_view(conv: Conversation | Sequence[Message], model: str | None = None, *, pins: Iterable[int] = (),
              facts: Sequence[str] | None = None, counter: TokenCounter | None = None,
              state: Mapping[str, Any] | None = None, origin: Sequence[int | None] | None = None) -> View:
    """Build the view of a conversation for ``model`` (counts are cached, so this is cheap again)."""
    messages = conv.messages if isinstance(conv, Conversation) else tuple(conv)
    if counter is None:
        if model is None and isinstance(conv, Conversation):
            model = conv.model
        counter = TokenCounter(model)
    counts = counter.count(messages, tools=())
    if facts is None:
        facts = conv.facts if isinstance(conv, Conversation) and conv.facts else auto_facts(messages)
    facts = tuple(facts)
    pins = frozenset(pins)
    bad = sorted(p for p in pins if not 0 <= p < len(messages))
    if bad:
        raise CtxlabError(f"pinned index {bad[0]} is not a message of this conversation", where="pins",
                          hint=f"Pin indexes from 0 to {len(messages) - 1}")
    return View(messages, counts.message_tokens, counts.message_categories, segment(messages), counter, facts,
                tuple(fact_mask(m, facts) for m in messages), pins,
                tuple(origin) if origin is not None else tuple(range(len(messages))), dict(state or {}))
