"""The light view of a conversation that strategies read, and the budget they plan against.

A view is built once per conversation and model (token counts, segments, facts found per
message); strategies read it and return decisions, so re-planning while a slider moves costs
microseconds per message, not a recount.
"""
from __future__ import annotations

import re
import weakref
from dataclasses import FrozenInstanceError, dataclass
from functools import cached_property, lru_cache
from itertools import compress
from typing import Any, Callable, Iterable, Mapping, Sequence

from ..errors import CtxlabError
from ..conversation import Conversation, Message
from ..model_specs import resolve_model
from ..segments import Segments, segment
from .incremental.log import Log
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


@lru_cache(maxsize=16)
def _bits(n: int) -> tuple[int, ...]:
    """``(1, 2, 4, ...)``: the bit of each of ``n`` facts."""
    return tuple(1 << k for k in range(n))


def fact_mask(m: Message, facts: Sequence[str], only: int = -1) -> int:
    """Bit k set when fact k appears in the message (checking only the bits set in ``only``)."""
    text = message_text(m)
    mask = 0
    if only < 0:
        return sum(compress(_bits(len(facts)), map(text.__contains__, facts)))  # at C speed
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


MEMO_REPLACERS: dict[str, Callable[["View", "View", Any, Sequence[int]], Any]] = {}
"""``View.memo`` key -> ``f(old_view, new_view, old_value, replaced)``: the value for a view holding the
same messages as the old one but at the indexes ``replaced`` (a plan that cut or cleared them in
place; ``base.result_view``), or None to derive it again."""


def shared_memo(view: "View", key: str) -> dict:
    """The table ``view.memo[key]``, shared with every view grown from this one or made from it by a
    plan applied in place: its entries must hold for any of them (keyed by, or checked against, the
    message they were made from, so a view on another branch never takes another message's entry)."""
    MEMO_EXTENDERS.setdefault(key, _same_table)
    MEMO_REPLACERS.setdefault(key, _same_table)
    return view.memo.setdefault(key, {})


def _same_table(old: "View", new: "View", known: dict, *replaced: object) -> dict:
    return known


class _FromLog:
    """A view attribute built from the view's log on first use, then kept (a non-data descriptor,
    so a view built directly holds its own value and never calls it)."""

    def __init__(self, build: Callable[["View"], Any], doc: str) -> None:
        self.build, self.__doc__ = build, doc

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, view: "View | None", owner: type | None = None) -> Any:
        if view is None:
            return self
        value = view.__dict__[self.name] = self.build(view)
        return value


def _column(name: str) -> Callable[["View"], tuple]:
    return lambda view: view._log.column(name, view._n)


class View:
    """What a strategy reads: messages (never copied), their token counts and categories, the
    segments, pinned indexes, facts found per message, where each entry came from, and state
    carried over from the previous application (replay).

    Built directly (``make_view``) a view holds tuples; grown by ``append`` it is a length over a
    log of growable columns shared with the view it was grown from (``_log``), and builds each
    tuple on first use. Either way it is immutable as its readers see it."""

    messages = _FromLog(_column("messages"), "The messages (never copied).")
    tokens = _FromLog(_column("tokens"), "Token count per message.")
    categories = _FromLog(_column("categories"), "Category per message (system, user, tool_results, ...).")
    fact_masks = _FromLog(_column("fact_masks"), "Per message, bit k set when it holds fact k.")
    origin = _FromLog(_column("origin"), "Per message, its index in the conversation (None: a summary).")
    seg = _FromLog(lambda view: view._log.segments(view._n), "Turns, tool rounds and atomic groups.")

    def __init__(self, messages: tuple[Message, ...], tokens: tuple[int, ...], categories: tuple[str, ...],
                 seg: Segments, counter: TokenCounter, facts: tuple[str, ...] = (), fact_masks: tuple[int, ...] = (),
                 pins: frozenset[int] = frozenset(), origin: tuple[int | None, ...] = (),
                 state: Mapping[str, Any] | None = None) -> None:
        self.__dict__.update(messages=messages, tokens=tokens, categories=categories, seg=seg, counter=counter,
                             facts=facts, fact_masks=fact_masks, pins=pins, origin=origin,
                             state={} if state is None else state, _n=len(messages), _log=None)

    @classmethod
    def _over(cls, log: Log, n: int, counter: TokenCounter, facts: tuple[str, ...], pins: frozenset[int],
              state: Mapping[str, Any]) -> "View":
        """The view of the first ``n`` messages of ``log``."""
        view = cls.__new__(cls)
        view.__dict__.update(counter=counter, facts=facts, pins=pins, state=state, _n=n, _log=log,
                             total=log.total(n))
        return view

    def __setattr__(self, name: str, value: Any) -> None:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __repr__(self) -> str:
        return f"View({self._n:,} messages, {self.total:,} tokens)"

    def __len__(self) -> int:
        return self._n

    def entries(self, name: str) -> Sequence[Any]:
        """The column ``name`` (``messages``, ``tokens``, ``categories``, ``fact_masks``, ``origin``)
        for reading entries by index: a grown view's log list (entries past the view's length are not
        its own), so reading a few of a long view's entries does not build a tuple of all of them."""
        return getattr(self._log, name) if self._log is not None else getattr(self, name)

    def with_state(self, state: Mapping[str, Any]) -> "View":
        """This view with another carried-over ``state`` (same messages, same derived tables)."""
        view = View.__new__(View)
        view.__dict__.update(self.__dict__)
        view.__dict__["state"] = state
        for key in ("_replan", "_replan_parent"):  # plans remembered for re-planning were made with the old state
            view.__dict__.pop(key, None)
        return view

    @cached_property
    def roles(self) -> tuple[str, ...]:
        """Role per message."""
        if self._log is not None:
            return self._log.column("roles", self._n)
        return tuple(m.role for m in self.messages)

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
        users = self._log.turn_starts(self._n) if self._log is not None else _positions(self.roles, "user")
        return _kept_users(self.messages if self._log is None else self._log.messages, users)

    @property
    def preamble(self) -> tuple[int, int]:
        """The messages before the first user message (``seg.preamble``, without building ``seg``)."""
        return self._log.preamble(self._n) if self._log is not None else self.seg.preamble

    def role_of(self, i: int) -> str:
        """The role of message ``i`` (without building ``roles``)."""
        return self._log.roles[i] if self._log is not None else self.messages[i].role

    def message_at(self, i: int) -> Message:
        """Message ``i`` (without building ``messages``: a grown view builds that tuple on first use)."""
        return self._log.messages[i] if self._log is not None and 0 <= i < self._n else self.messages[i]

    def tokens_at(self, i: int) -> int:
        """The tokens of message ``i`` (without building ``tokens``)."""
        return self._log.tokens[i] if self._log is not None and 0 <= i < self._n else self.tokens[i]

    def first_system(self) -> int | None:
        """Index of the first system message, if there is one."""
        if self._log is not None:
            i = self._log.first_system
            return i if i is not None and i < self._n else None
        try:
            return self.roles.index("system")
        except ValueError:
            return None

    def newest_user(self) -> int | None:
        """Index of the newest user message."""
        if self._log is not None:
            return self._log.newest_user(self._n)
        turns = self.seg.turns
        return turns[-1][0] if turns else None

    def parent(self) -> "View | None":
        """The view this one was grown from by ``append``, while it is still alive (else None)."""
        ref = self.__dict__.get("grown_from")
        return ref() if ref is not None else None

    def _own_log(self) -> Log:
        """The log this view reads, made from its tuples the first time it is appended to."""
        log = self._log
        if log is None:
            log = Log.of(self.messages, self.tokens, self.categories, self.fact_masks,
                         self.origin or range(self._n))
            self.__dict__["_log"] = log
        return log

    def _next_origin(self, count: int) -> tuple[int | None, ...]:
        """Origins of ``count`` appended messages that continue this view's numbering."""
        origin = self._log.origin if self._log is not None else self.origin
        if self._log is None and not origin:
            last = self._n - 1
        else:  # origins only grow: the newest one that is not an inserted summary is the highest
            k = self._n - 1
            while k >= 0 and origin[k] is None:
                k -= 1
            last = origin[k] if k >= 0 else -1
        return tuple(range(last + 1, last + 1 + count))

    def append(self, *messages: Message, pins: Iterable[int] = (), origin: Sequence[int] | None = None) -> "View":
        """This view with ``messages`` added at the end: what a live agent calls each turn. Only the
        new messages are counted, segmented and searched for facts, and nothing of the history is
        copied (the new view shares this one's log, see ``_log``), so the cost does not grow with the
        history. ``pins`` adds pinned indexes; the new messages' ``origin`` continues this view's
        numbering, or is ``origin`` when given (a replay whose strategy dropped the newest messages
        numbers the next ones itself)."""
        if not messages:
            return self
        n, k = self._n, len(messages)
        pins = frozenset(pins)
        bad = sorted(p for p in pins if not 0 <= p < n + k)
        if bad:
            raise CtxlabError(f"pinned index {bad[0]} is not a message of this conversation", where="pins",
                              hint=f"Pin indexes from 0 to {n + k - 1}")
        origin = tuple(origin) if origin is not None else self._next_origin(k)
        return self._grow(messages, origin, pins, None)

    def _grow(self, messages: Sequence[Message], origin: tuple[int | None, ...], pins: frozenset[int],
              known: "View | None") -> "View":
        """``append`` once its arguments are checked. ``known``, a view whose entries ``origin``
        hold the same messages with the same counter and facts (the whole conversation, in a
        replay), gives their counts and fact masks, so they are not found again."""
        n, k = self._n, len(messages)
        log = self._own_log()
        if len(log) != n and not log.holds(n, messages, origin):
            log = log.branch(n)  # another view was grown from this one: keep its entries, start anew
        if len(log) == n and known is not None:
            at = slice(origin[0], origin[-1] + 1)
            log.extend(messages, known.tokens[at], known.categories[at], known.fact_masks[at], origin)
        elif len(log) == n:
            split = [self.counter.message_split(m) for m in messages]
            log.extend(messages, [t + c for _, t, c in split], [cat for cat, _, _ in split],
                       [fact_mask(m, self.facts) for m in messages], origin)
        new = View._over(log, n + k, self.counter, self.facts, self.pins | pins, self.state)
        new.__dict__["grown_from"] = weakref.ref(self)  # lets per-view caches extend the parent's
        self._carry(new, log, n)
        return new

    def _carry(self, new: "View", log: Log, n: int) -> None:
        """Give ``new`` (this view grown) what this one derived, extended by the new messages."""
        known = self.__dict__
        # the plans made (and to be made) of this view, for re-planning the grown one from them: held by
        # the grown view, since a live agent lets go of the view it appended to
        new.__dict__["_replan_parent"] = (n, known.setdefault("_replan", {}))
        for key, value in known.get("memo", {}).items():
            extend = MEMO_EXTENDERS.get(key)
            if extend is not None and (grown := extend(self, new, value)) is not None:
                new.memo[key] = grown
        end = len(new)
        if "fact_counts" in known:
            counts = list(known["fact_counts"])
            for mask in log.fact_masks[n:end]:
                while mask:
                    low = mask & -mask
                    counts[low.bit_length() - 1] += 1
                    mask ^= low
            new.__dict__["fact_counts"] = tuple(counts)
        if "category_sums" in known:
            sums = dict(known["category_sums"])
            for c, t in zip(log.categories[n:end], log.tokens[n:end]):
                sums[c] = sums.get(c, 0) + t
            new.__dict__["category_sums"] = sums
        if "compactions" in known:
            users = [i for i in range(n, end) if log.roles[i] == "user"]
            new.__dict__["compactions"] = known["compactions"] + _kept_users(log.messages, users)


def _kept_users(messages: Sequence[Message], users: Iterable[int]) -> tuple[int, ...]:
    """Those of ``users`` (indexes) that are compaction summaries or the task of a run."""
    return tuple(i for i in users if messages[i].extra.get("ctxlab_compaction") or messages[i].extra.get("ctxlab_task"))

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
