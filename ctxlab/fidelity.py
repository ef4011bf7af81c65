"""Replay fidelity: could the agent still have done what it did?

A model-free measure of what a strategy loses, computed on a replay (the strategy applied before
every model call, or at every user turn: its ``apply_at``).

* The facts an assistant message *uses* are the identifiers (``KC-482193``, ``mia_li_3668``,
  ``NO6JO3``, e-mail addresses), amounts (``$1,234.50`` and ``1234.5`` are one fact), ISO dates
  found in its text or its tool calls, plus the values of its tool-call arguments, plus the code
  names its calls type (``EnumSerializer``, ``serializer_factory``: ``code_facts.specific``), plus
  the old text of every edit, by an editor's arguments, ``sed -i``, python ``.replace``,
  ``apply_patch``, SWE-agent's text-mode ``str_replace_editor`` or a heredoc rewrite of a file read
  earlier (``code_facts``). Not facts: line numbers and positions, what a call writes into a new
  file, the text of a text action (its command counts), the agent's own plan (``PLAN_TOOLS``).
* A used fact is *needed* when it appeared earlier in the conversation, in a user message, a tool
  result or an earlier assistant message (a code name or path only when a tool result or the user
  showed it first). Facts that the system prompt holds are not counted: the
  system prompt is always kept, so they are always served and would only dilute the measure.
  Facts that appear nowhere earlier (a total the assistant computed) are not needed either.
* A needed fact is *served* when the prompt of the model call that wrote the message holds it:
  what the strategy left at its last application (summaries and cleared copies count), plus the
  messages that arrived since. A fact used inside the turn that produced it counts like any other:
  a strategy that runs before every call can remove it (``Need.in_turn`` only says where it came from).
* ``needed_recall`` = served / needed over the whole conversation, also per turn, with every miss
  listed (the fact, the message it first came from, the message that needed it, the call).
* Each miss has a kind (``need_kind``: an identifier, a path, an edit's old text, an id, a number...)
  and a recovery (``NeededFacts.recovery``): *re-fetchable* when it came from a tool result that
  running the same call again would still return (or from a file the agent wrote: read back),
  *unrecoverable* when it came from the user or from a result that changed since (the same call,
  run again before the need, returned a text without it); a value the agent typed first itself (a
  timeout) is neither: it can type it again. A re-fetch is priced as one more call
  (``FactCheck`` records it as a ``strategies.offload.ReadBack`` with ``refetch=True``;
  ``pricing.replay_cost`` costs it as it costs a read-back: ``pricing.REFETCH_MODEL``). That is a
  model of what an agent does after losing a fact, not what it did: ``benchmarks/compaction_agreement.py``
  checks it against what agents re-read after a real compaction.

Facts are found once per conversation (``needed_facts``); each call then only checks presence in
its prompt (``FactCheck``, an observer of the replay), so the measure costs little next to the
replay itself.
"""
from __future__ import annotations

import bisect
import dataclasses
import json
import re
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from itertools import compress
from operator import is_, not_
from typing import Any, Callable, Sequence

from .code_facts import code_identifiers, command_strings, heredoc_rewrites, scrub_command, shell_edits, specific
from .conversation import TEXT_ACTION, Conversation, Message, json_leaves
from .i18n import N_
from .segments import segment
from .strategies.offload import OFFLOADED, ReadBack, is_offloaded
from .strategies.view import message_text

_FACT = re.compile(
    r"(?P<path>(?<![\w./@:-])(?:~|\.{1,2})?/?(?:[\w.@+-]+/)+[\w.@+-]*\w\.[A-Za-z][A-Za-z0-9]{0,7}\b)"
    r"|(?P<date>\b\d{4}-\d{2}-\d{2}\b)"
    r"|(?P<email>\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b)"
    r"|(?P<id>\b(?=[A-Za-z0-9_-]*\d)[A-Za-z][A-Za-z0-9]*[-_][A-Za-z0-9_-]*[A-Za-z0-9]\b)"
    r"|(?P<code>\b(?=[A-Z0-9]*\d)(?=[A-Z0-9]*[A-Z])[A-Z0-9]{5,24}\b)"
    r"|(?P<money>\$\s?\d[\d,]*(?:\.\d+)?)"
    r"|(?P<number>(?<![\w.])\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![\w])|(?<![\w.])\d+\.\d+(?![\w])|(?<![\w.,])(?<!\w:)\d{3,}(?![\w,\t]|:\S))")
_LITERAL_MAX = 60
CODE_KEYS = frozenset({"old_string", "new_string", "old_str", "new_str", "content", "file_text", "patch", "diff",
                       "code", "insert_text", "text"})
"""Tool-call arguments that carry code or file text (an edit's old and new text, a file written):
their identifiers are not facts the call took from earlier; an edit's old text is checked whole."""
PROSE_KEYS = frozenset({"description", "explanation", "thought", "reason", "command", "cmd", "output_mode"})
"""Arguments whose whole value is not a fact (a Bash call's description, the command line itself, an
option word): the identifiers, paths and amounts inside them still count. Chosen on a hand-checked
sample of needs on coding traces."""
ARITHMETIC = re.compile(r"(?!\s*\d{1,4}/\d{1,2}/\d{1,4}\s*$)(?=.*[\d)]\s*(?:[+*/%^]|\s-\s)\s*[\d(.])[\d\s.,+\-*/%^()]+")
"""A calculator's expression (``152 + 103``, ``(13 - 11) * 2``): its operands are intermediate
arithmetic, not facts the call took from its context. The values a later call acts on (the
amount it books, refunds or pays) still count there. tau-bench's airline agents make 44 such
calls in 100 runs; counted, they added 119 needs that any stray number in the prompt served."""
EDIT_KEYS = ("old_string", "old_str")
"""The argument holding the text an edit replaces (Claude Code ``Edit``, SWE-agent and OpenHands
``str_replace``): the edit needs it in its context, served while the read that showed it stays."""
EDIT_LINE_MIN = 3
"""Lines of an edit's old text shorter than this (a brace, a blank) are not checked."""
COMMAND_KEYS = ("command", "cmd", "input", "script")
"""Arguments holding a shell command or a patch (Bash, mini-swe-agent and SWE-agent actions, Codex
``exec_command`` / ``shell`` / ``apply_patch``): read for the edits they make (``code_facts.shell_edits``)
and scrubbed of code bodies and line positions before their facts are taken."""
LINE_KEYS = frozenset({"view_range", "offset", "limit", "insert_line", "line", "line_number", "start_line",
                       "end_line", "head_limit", "-a", "-b", "-c", "-n"})
"""Arguments that are line positions or counts (a read's offset, a view range): not facts."""
OPTION_KEYS = frozenset({"timeout", "run_in_background", "subagent_type"})
"""Arguments that set how a call runs (a Bash timeout in milliseconds, Claude Code's sub-agent type):
the agent's own choice, not a fact taken from its context. Found on real compacted Claude Code sessions
(``benchmarks/compaction_agreement.py``): ``"timeout": 30000`` matched a number in an earlier file
read, ``"subagent_type": "Explore"`` the word in an earlier tool result."""
PLAN_TOOLS = frozenset({"todowrite", "todoread", "todo_write", "write_todos", "update_plan", "plan"})
"""Tools that write the agent's own plan: their status words (``completed``, ``in_progress``) and
items are not facts a call took from its context."""
HABIT_SHARE, HABIT_MIN_CALLS = 0.5, 6
"""A fact that at least this share of the calls of a conversation use (with at least that many
calls), first brought in by the agent itself, is a habit (a timeout, the worktree path), not a fact
one call took from an earlier message; an id the user gave stays a need however often it is used.
Chosen, not tuned."""

KINDS = {"edit": N_("edit text"), "path": N_("path"), "identifier": N_("identifier"), "id": N_("id"),
         "number": N_("number or amount"), "date": N_("date"), "email": N_("e-mail address"),
         "value": N_("argument value")}
"""The kinds of a needed fact (``need_kind``) and their labels."""
REFETCH, FROM_USER, FROM_AGENT, CHANGED = "refetch", "user", "agent", "changed"
RECOVERIES = {REFETCH: N_("re-fetchable: run the tool call again"),
              FROM_USER: N_("not re-fetchable: the user gave it"),
              FROM_AGENT: N_("the agent's own value: it can write it again"),
              CHANGED: N_("not re-fetchable: the result changed since")}
"""How a lost fact could come back (``NeededFacts.recovery``) and its label. ``REFETCH`` costs a
call; ``FROM_USER`` and ``CHANGED`` are unrecoverable; ``FROM_AGENT`` (a value the agent typed first
itself: a timeout, a version in its commit messages) is neither: the agent chose it and can again."""
UNRECOVERABLE = frozenset({FROM_USER, CHANGED})
"""Recoveries no tool call brings back."""
PATH_KEYS = ("file_path", "path", "filename", "notebook_path")
"""Arguments naming the file a call writes (with its text in a ``CODE_KEYS`` argument)."""
_GROUP_KIND = {"path": "path", "date": "date", "email": "email", "id": "id", "code": "id", "money": "number",
               "number": "number"}


def _number(text: str) -> str:
    """One spelling per amount: no currency sign, no thousands separators, no trailing zeros."""
    s = text.replace("$", "").replace(",", "").strip()
    if "." in s:
        s = s.rstrip("0").rstrip(".")
    return s


def extract_facts(text: str, code: bool = True) -> set[str]:
    """The identifiers (ids, and code names specific enough: ``code_facts.specific``), e-mail
    addresses, ISO dates and amounts in ``text``, normalized (amounts without currency sign,
    separators or trailing zeros). A line number is not one: after a name and a colon
    (``CHANGES:280``, ``x.py:12``; ``"timeout":60000`` stays) or before a colon or a tab (``grep -n``
    and ``cat -n`` output: ``1909:class``, ``  1909\tclass``).
    ``code=False`` leaves code names out."""
    out: set[str] = set()
    for m in _FACT.finditer(text):
        kind = m.lastgroup
        value = m.group(kind)
        if kind == "number":
            value = _number(value)
            if len(value) < 2:  # 1.0, 0.0: no amount one could tell from any other
                continue
        out.add(_number(value) if kind == "money" else value)
    return out | code_identifiers(text) if code else out


def argument_facts(m: Message) -> tuple[set[str], set[str]]:
    """The facts of a message's tool-call argument values: (normalized facts, literal strings).
    A value that holds identifiers, dates or amounts gives those; another short string value
    (``economy``, ``Los Angeles``) is a literal, matched as a whole word, case-insensitively."""
    facts: set[str] = set()
    literals: set[str] = set()
    for call in m.tool_calls:
        if call.name.lower() in PLAN_TOOLS:
            continue
        try:
            args = json.loads(call.arguments) if call.arguments.strip() else {}
        except ValueError:
            continue
        if isinstance(args, dict):
            args = {k: scrub_command(v) if k in COMMAND_KEYS and isinstance(v, str) else v
                    for k, v in args.items() if k not in CODE_KEYS and k.lower() not in LINE_KEYS
                    and k not in OPTION_KEYS}
        leaves = json_leaves(args)
        prose = ({str(v) for k, v in args.items() if k in PROSE_KEYS and isinstance(v, str)}
                 if isinstance(args, dict) else set())
        for v in leaves:
            if isinstance(v, bool) or v is None:
                continue
            if isinstance(v, (int, float)):
                facts.add(_number(repr(v)))
                continue
            text = str(v)
            if ARITHMETIC.fullmatch(text):
                continue
            found = extract_facts(text, code=False)
            names = code_identifiers(text) - {text.strip()}  # a whole value (``one_way``) stays a literal
            if found or names:
                facts |= found | names
            elif 3 <= len(text.strip()) <= _LITERAL_MAX and text not in prose:
                literals.add(text.strip().lower())
    return facts, literals


@lru_cache(maxsize=4096)
def _literal_pattern(literal: str) -> re.Pattern[str]:
    return re.compile(r"(?<!\w)" + re.escape(literal) + r"(?!\w)")


@dataclass(frozen=True, slots=True)
class _Facts:
    """What one message holds: its normalized facts and its lowercased text."""

    facts: frozenset[str]
    lower: str

    def has(self, fact: str, literal: bool) -> bool:
        return _literal_pattern(fact).search(self.lower) is not None if literal else fact in self.facts

    def has_lines(self, lines: Sequence[str]) -> bool:
        """Every line of an edit's old text is in this message (a read shows it with line numbers)."""
        return all(line in self.lower for line in lines)


def _message_facts(m: Message) -> _Facts:
    text = message_text(m)
    return _Facts(frozenset(extract_facts(text)), text.lower())


@dataclass(frozen=True, slots=True)
class Need:
    """A fact message ``needed_by`` used that first appeared in message ``source``; ``turn`` is
    the turn ``needed_by`` belongs to (-1 before the first user message); ``in_turn`` says it is
    also in a message of that turn before ``needed_by`` (so it is served whatever the strategy
    did); ``literal`` marks a tool-argument string matched as a whole word."""

    fact: str
    source: int
    needed_by: int
    turn: int
    in_turn: bool
    literal: bool = False
    lines: tuple[str, ...] = ()

    def served_by(self, facts: "_Facts") -> bool:
        """Whether one message holds it (every line of an edit's old text, or the fact)."""
        return facts.has_lines(self.lines) if self.lines else facts.has(self.fact, self.literal)


def need_kind(need: Need) -> str:
    """What a needed fact is (a key of ``KINDS``): an edit's old text, a path, an id, a number or
    amount, a date, an e-mail address, a code identifier, or another argument value."""
    if need.lines:
        return "edit"
    if need.literal:
        return "value"
    m = _FACT.fullmatch(need.fact)
    if m is not None:
        return _GROUP_KIND[m.lastgroup]
    return "identifier" if specific(need.fact) else "value"


@dataclass(frozen=True, eq=False)
class NeededFacts:
    """Every needed fact of a conversation, found once (see the module docstring)."""

    messages: tuple[Message, ...]
    turn_starts: tuple[int, ...]
    needs: tuple[Need, ...]
    per_message: tuple[_Facts, ...]
    result_calls: dict[int, str] = field(default_factory=dict)
    """Tool result index -> the call that produced it (tool name and arguments), to tell a re-run."""
    runs: dict[str, tuple[int, ...]] = field(default_factory=dict)
    """A call (as in ``result_calls``) -> the indexes of its results, in order."""

    def __len__(self) -> int:
        return len(self.needs)

    def refetch_from(self, need: Need) -> int | None:
        """The tool result a re-run of ``need``'s source call would give at ``need.needed_by``: the
        latest result of the same call before it, or the agent's message that wrote the fact into a
        file (None when the need came from neither, or that latest result no longer holds the fact:
        it changed)."""
        m = self.messages[need.source]
        if m.role != "tool":
            return need.source if m.role == "assistant" and _wrote(m, need) else None  # a file it wrote: read back
        runs = self.runs.get(self.result_calls.get(need.source, ""), (need.source,))
        latest = runs[bisect.bisect_left(runs, need.needed_by) - 1]  # the source itself is one, before the need
        return latest if latest == need.source or need.served_by(self.per_message[latest]) else None

    def recovery(self, need: Need) -> str:
        """How the fact could come back if the prompt lost it (a key of ``RECOVERIES``): re-fetched
        from a tool result or from a file the agent wrote (``Write``, an editor's new text: read
        back), or not (the user's, a result that changed since; a value the agent typed itself).
        Agent-written files were found re-fetchable on real compacted Claude Code sessions
        (``benchmarks/compaction_agreement.py``): the agent re-read them after the compaction."""
        m = self.messages[need.source]
        if self.refetch_from(need) is not None:
            return REFETCH
        if m.role == "tool":
            return CHANGED
        return FROM_USER if m.role == "user" else FROM_AGENT

    @cached_property
    def holders(self) -> "FactIndex":
        """Which messages hold each needed fact (built on first use, then kept)."""
        return FactIndex(self.per_message)

    def facts_of(self, m: Message, origin: int | None) -> _Facts:
        """The facts of a context message (an original one is looked up, not re-read)."""
        if origin is not None and 0 <= origin < len(self.messages) and self.messages[origin] is m:
            return self.per_message[origin]
        return _message_facts(m)


class FactIndex:
    """Which messages of a conversation hold a fact, so a need is looked up instead of checked
    against every message: a scan of all earlier messages per used fact made finding the needs of a
    10,000-message conversation quadratic (45 million checks), and so did checking each need
    against every message of a long prompt. ``holders(need)`` is every index whose ``_Facts``
    serve ``need``, ascending; an edit's old text (``Need.lines``) is not indexed: it is checked
    line by line against each message, as ``Need.served_by`` does."""

    def __init__(self, per_message: Sequence[_Facts]) -> None:
        self.per_message = per_message
        self._facts: dict[str, list[int]] | None = None
        self._literals: dict[str, tuple[int, ...]] = {}

    def holders(self, need: Need) -> Sequence[int]:
        """The indexes of the messages that serve ``need`` (not for an edit's old text)."""
        if need.lines:
            raise ValueError("an edit's old text is checked line by line, not indexed")
        if need.literal:
            found = self._literals.get(need.fact)
            if found is None:  # a substring test first: the word pattern only where the text holds it
                fact, pattern = need.fact, _literal_pattern(need.fact)
                found = self._literals[fact] = tuple(
                    i for i, f in enumerate(self.per_message) if fact in f.lower and pattern.search(f.lower))
            return found
        if self._facts is None:
            index: dict[str, list[int]] = {}
            for i, f in enumerate(self.per_message):
                for fact in f.facts:
                    index.setdefault(fact, []).append(i)
            self._facts = index
        return self._facts.get(need.fact, ())


def _turn_of(index: int, starts: Sequence[int]) -> int:
    t = -1
    for k, s in enumerate(starts):
        if s > index:
            break
        t = k
    return t


def edit_texts(m: Message) -> list[tuple[str, tuple[str, ...]]]:
    """The old text of each edit call of ``m`` and its checked lines (stripped, lowercased): an
    editor's old-text argument, or the edits a shell command or patch makes (``code_facts.shell_edits``)."""
    out = []
    for call in m.tool_calls:
        try:
            args = json.loads(call.arguments) if call.arguments.strip() else {}
        except ValueError:
            continue
        if not isinstance(args, dict):
            continue
        for command in command_strings(args, COMMAND_KEYS):
            out += shell_edits(command)
        for key in EDIT_KEYS:
            old = args.get(key)
            if isinstance(old, str) and old.strip():
                lines = tuple(dict.fromkeys(ln.strip().lower() for ln in old.splitlines()
                                            if len(ln.strip()) >= EDIT_LINE_MIN))
                if lines:
                    out.append((old, lines))
    return out


def _used(m: Message) -> list[tuple[str, bool]]:
    """The facts an assistant message uses: (fact, literal) pairs: what its calls type, and the ids,
    paths, dates and amounts of its text (code names only when a call types them). The text of a
    text action (mini-swe-agent, SWE-agent: ``TEXT_ACTION``, the call stands for a command written
    in it) is the agent's reasoning before the command ("``DataDocumenter`` starts at 1909", "this
    is likely in ``django/db/models/base.py``"), not a use: only its call counts (most false
    needs on such traces came from that text)."""
    arg_facts, literals = argument_facts(m)
    if m.extra.get(TEXT_ACTION) and m.tool_calls:
        return [(f, False) for f in sorted(arg_facts)] + [(f, True) for f in sorted(literals)]
    text = m.text if isinstance(m.content, str) else "\n".join(p.text for p in m.content if p.text)
    used = extract_facts(scrub_command(text), code=False) | arg_facts
    return [(f, False) for f in sorted(used)] + [(f, True) for f in sorted(literals)]


def _code_name(fact: str) -> bool:
    """A code name (``code_facts.specific``) or a file path: what a coding agent may name first
    itself (it guesses ``django/db/models/base.py``, it names ``reproduce_issue.py``); a need only
    when a tool result or the user showed it first. Counting the first tool result that
    echoes a name the agent made (a traceback through its own script) found 11 weak needs in 49."""
    m = _FACT.fullmatch(fact)
    return m.lastgroup == "path" if m is not None else specific(fact)


def _habits(used: dict[int, list[tuple[str, bool]]]) -> set[tuple[str, bool]]:
    """Facts most calls use (see ``HABIT_SHARE``)."""
    calls = len(used)
    if calls < HABIT_MIN_CALLS:
        return set()
    counts: dict[tuple[str, bool], int] = {}
    for facts in used.values():
        for f in set(facts):
            counts[f] = counts.get(f, 0) + 1
    return {f for f, n in counts.items() if n >= HABIT_SHARE * calls}


def needed_facts(source: Conversation | Sequence[Message]) -> NeededFacts:
    """Find, for every assistant message, the facts it uses that appeared earlier (once per
    conversation; ``needed_recall`` reuses the result for every strategy and budget): identifiers,
    amounts, dates, file paths and argument values, less the habits most calls share (see
    ``HABIT_SHARE``), plus the old text of every edit, needed whole.

    The facts depend on the messages alone, so the last few results are kept (``RECENT_FACTS``): the
    same conversation read again (another page parses the same text into new objects) gets them
    bound to its own messages, not found again (3.5 s at 10,000 messages)."""
    messages = source.messages if isinstance(source, Conversation) else tuple(source)
    for k, known in enumerate(_RECENT):
        if known.messages is messages or _same_messages(known.messages, messages):
            _RECENT.insert(0, _RECENT.pop(k))  # the newest used first: a hit is not evicted before a newer miss
            if known.messages is messages:
                return known
            again = dataclasses.replace(known, messages=messages)
            again.__dict__["holders"] = known.holders  # of the same facts per message
            return again
    nf = _find_needs(messages)
    _RECENT.insert(0, nf)
    del _RECENT[RECENT_FACTS:]
    return nf


RECENT_FACTS = 4
"""How many conversations' needed facts ``needed_facts`` keeps (each holds its messages' text,
lowercased): four, because a page may find those of its bundled samples (Where it runs: an agent run
and a coding session) between the Lab's and its own reading of the same conversation."""
_RECENT: list[NeededFacts] = []


def _same_messages(a: Sequence[Message], b: Sequence[Message]) -> bool:
    """Whether two message lists are equal message by message (the same object, or equal fields)."""
    return len(a) == len(b) and all(x is y or x == y for x, y in zip(a, b))


def _find_needs(messages: tuple[Message, ...], index: Callable[[Sequence[_Facts]], Any] | None = None) -> NeededFacts:
    """``needed_facts`` on messages seen for the first time. ``index``: what finds the messages that
    hold a fact (``FactIndex`` by default; a test passes a scan of every message to check it)."""
    starts = tuple(s for s, _ in segment(messages).turns)
    per = tuple(_message_facts(m) for m in messages)
    system = [per[i] for i, m in enumerate(messages) if m.role == "system"]
    used = {j: _used(m) for j, m in enumerate(messages) if m.role == "assistant"}
    habits = _habits({j: u for j, u in used.items() if messages[j].tool_calls})
    call_args = {c.id: c.arguments for m in messages for c in m.tool_calls}
    lowered = [f.lower for f in per]
    index = (index or FactIndex)(per)
    needs: list[Need] = []
    for j, facts in used.items():
        t = _turn_of(j, starts)
        first = starts[t] if t >= 0 else -1
        wanted = [Need(f, -1, j, t, False, lit) for f, lit in facts]
        wanted += [Need(old[:200], -1, j, t, False, False, lines)
                   for old, lines in edit_texts(messages[j]) + heredoc_rewrites(messages, lowered, j, call_args)]
        for need in dict.fromkeys(wanted):
            if any(need.served_by(s) for s in system):
                continue
            if need.lines:
                source_i = next((i for i in range(j) if messages[i].role != "system" and need.served_by(per[i])),
                                None)
            else:  # no system message holds it (above): the first holder is the source
                held = index.holders(need)
                source_i = held[0] if held and held[0] < j else None
            if source_i is None:
                continue
            named_first = not need.lines and not need.literal and _code_name(need.fact)
            if messages[source_i].role == "assistant" and ((need.fact, need.literal) in habits or named_first):
                continue  # a value the agent brought in itself: a habit, or a code name or path it named first
            lo = max(first + 1, source_i)
            if t < 0:
                in_turn = True
            elif need.lines:
                in_turn = any(need.served_by(per[i]) for i in range(lo, j))
            else:
                k = bisect.bisect_left(held, lo)
                in_turn = k < len(held) and held[k] < j
            needs.append(Need(need.fact, source_i, j, t, in_turn, need.literal, need.lines))
    calls = _result_calls(messages)
    runs: dict[str, list[int]] = {}
    for i, key in calls.items():
        runs.setdefault(key, []).append(i)
    nf = NeededFacts(messages, starts, tuple(needs), per, calls, {k: tuple(v) for k, v in runs.items()})
    nf.__dict__["holders"] = index  # built while finding the needs: the checks of every replay reuse it
    return nf


def _wrote(m: Message, need: Need) -> bool:
    """Whether a call of ``m`` wrote the fact into a file (a path argument and the text that holds it)."""
    for call in m.tool_calls:
        try:
            args = json.loads(call.arguments) if call.arguments.strip() else {}
        except ValueError:
            continue
        if isinstance(args, dict) and any(isinstance(args.get(k), str) for k in PATH_KEYS):
            for k in CODE_KEYS & args.keys():
                text = args[k]
                if isinstance(text, str) and need.served_by(_Facts(frozenset(extract_facts(text)), text.lower())):
                    return True
    return False


def _result_calls(messages: Sequence[Message]) -> dict[int, str]:
    """Each tool result's call as a key (tool name and arguments, re-serialized so spacing does not count)."""
    calls = {}
    for m in messages:
        for c in m.tool_calls:
            try:
                args = json.dumps(json.loads(c.arguments), sort_keys=True) if c.arguments.strip() else ""
            except ValueError:
                args = c.arguments
            calls[c.id] = f"{c.name}\0{args}"
    return {i: calls[m.tool_call_id] for i, m in enumerate(messages)
            if m.role == "tool" and m.tool_call_id in calls}


@dataclass(frozen=True, slots=True)
class Miss:
    """A needed fact the context did not hold: which, where it came from, who needed it, when."""

    fact: str
    source: int
    needed_by: int
    turn: int
    call: int = -1
    edit: bool = False
    """The need was an edit's old text (the read that showed it was gone)."""
    kind: str = "value"
    """What the fact is: a key of ``KINDS`` (``need_kind``)."""
    recovery: str = REFETCH
    """How it could come back: a key of ``RECOVERIES`` (``NeededFacts.recovery``)."""

    @property
    def refetchable(self) -> bool:
        """Whether running a tool call again would bring the fact back (a model: see the module docstring)."""
        return self.recovery == REFETCH

    @property
    def unrecoverable(self) -> bool:
        """Whether nothing brings it back: the user gave it, or the result it came from changed since."""
        return self.recovery in UNRECOVERABLE


@dataclass(frozen=True)
class TurnFidelity:
    """One turn: how many needed facts its assistant messages used, how many were served, the misses."""

    turn: int
    needed: int
    served: int
    misses: tuple[Miss, ...]

    @property
    def recall(self) -> float | None:
        """served / needed (None when the turn needed nothing)."""
        return self.served / self.needed if self.needed else None


@dataclass(frozen=True)
class Fidelity:
    """``needed_recall`` of a replay: totals, per turn, and every miss."""

    strategy: str
    needed: int
    served: int
    turns: tuple[TurnFidelity, ...]
    read_backs: tuple[ReadBack, ...] = ()
    """Modelled reads of offloaded results: a miss whose source the prompt held as a pointer and a preview."""
    refetches: tuple[ReadBack, ...] = ()
    """Modelled re-fetches (``refetch=True``): a re-fetchable miss whose source the prompt did not hold at all."""

    @property
    def needed_recall(self) -> float | None:
        """served / needed over the whole conversation (None when nothing was needed)."""
        return self.served / self.needed if self.needed else None

    @property
    def recall_with_read_backs(self) -> float | None:
        """Needed recall counting a fact read back from an offloaded result as served (a model)."""
        if not self.needed:
            return None
        return (self.served + sum(len(r.facts) for r in self.read_backs)) / self.needed

    @property
    def misses(self) -> tuple[Miss, ...]:
        """Every miss, turn by turn."""
        return tuple(m for t in self.turns for m in t.misses)

    @property
    def unrecoverable(self) -> int:
        """Misses nothing brings back (``UNRECOVERABLE``: the user's facts, results that changed since)."""
        return sum(m.unrecoverable for m in self.misses)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"strategy": self.strategy, "needed": self.needed, "served": self.served,
                "needed_recall": self.needed_recall,
                "turns": [{"turn": t.turn, "needed": t.needed, "served": t.served, "recall": t.recall}
                          for t in self.turns],
                "misses": [{"fact": m.fact, "source": m.source, "needed_by": m.needed_by, "turn": m.turn,
                            "call": m.call, "kind": m.kind, "recovery": m.recovery} for m in self.misses],
                "unrecoverable": self.unrecoverable, "refetches_model": [r.to_dict() for r in self.refetches],
                **({"read_backs_model": [r.to_dict() for r in self.read_backs],
                    "needed_recall_with_read_backs": self.recall_with_read_backs} if self.read_backs else {})}


class _PromptFacts:
    """A prompt as ``FactCheck`` reads it: the original indexes of the messages it sends as they
    are (``present``), and the facts of the others (summaries, cleared or truncated copies), grown
    message by message."""

    __slots__ = ("original", "present", "others", "size")

    def __init__(self, original: Callable[[Any], Message | None]) -> None:
        self.original = original
        self.present: set[int] = set()
        self.others: list[_Facts] = []
        self.size = 0

    def extend(self, view: Any, check: "FactCheck") -> None:
        """Add the messages of ``view`` past the ones already held: which are their original
        message is told at C speed (``original``: index -> message, None for any other origin), so
        indexing a prompt of thousands of messages again costs little more than copying it."""
        n, size = len(view), self.size
        if n == size:
            return
        messages, origins = view.entries("messages")[size:n], view.entries("origin")[size:n]
        same = list(map(is_, map(self.original, origins), messages))
        self.present.update(compress(origins, same))
        if not all(same):
            other = list(map(not_, same))
            self.others.extend(check._facts(m, o) for m, o in zip(compress(messages, other), compress(origins, other)))
        self.size = n


class FactCheck:
    """An observer of a replay (``replay(..., observe=check)``): at every call that wrote a message
    with needs, checks each needed fact against that call's prompt. ``fidelity(strategy)`` gives
    the result once the replay is done."""

    def __init__(self, nf: NeededFacts) -> None:
        self.nf = nf
        self.by_index: dict[int, list[Need]] = {}
        for need in nf.needs:
            self.by_index.setdefault(need.needed_by, []).append(need)
        self.served: dict[int, int] = {}
        self.misses: dict[int, list[Miss]] = {}
        self._other: dict[int, tuple[Message, _Facts]] = {}  # facts of summaries and replaced copies, by object
        self.read_backs: dict[tuple[int, int], ReadBack] = {}  # (call, source): an offloaded result read back
        self.refetches: dict[tuple[int, int], ReadBack] = {}  # (call, source): a tool call run again
        self.counter: Any = None  # counts a re-fetched result: the replay's counter (first view seen), else gpt-4o's
        self._tokens: dict[int, int] = {}
        self._prompt: _PromptFacts | None = None  # the last prompt seen by __call__, indexed (None: stale)
        self._seen = -1  # the number of the last call __call__ saw
        self._original: Callable[[Any], Message | None] | None = None  # index -> the conversation's message

    def _facts(self, m: Message, origin: int | None) -> _Facts:
        nf = self.nf
        if origin is not None and 0 <= origin < len(nf.messages) and nf.messages[origin] is m:
            return nf.per_message[origin]
        hit = self._other.get(id(m))
        if hit is None or hit[0] is not m:
            if len(self._other) > 4096:
                self._other.clear()
            hit = self._other[id(m)] = (m, _message_facts(m))
        return hit[1]

    def check(self, call: Any, messages: Sequence[Message], origins: Sequence[int | None]) -> None:
        """Check the needs of the message ``call.index`` against the prompt ``messages`` (every
        message of it read: for a prompt seen once; a replay's walk goes through ``__call__``)."""
        needs = self.by_index.get(call.index)
        if not needs:
            return
        context = [self._facts(m, o) for m, o in zip(messages, origins)]
        for need in needs:
            self._count(call, need, any(need.served_by(c) for c in context), messages, origins)

    def _count(self, call: Any, need: Need, served: bool, messages: Sequence[Message],
               origins: Sequence[int | None]) -> None:
        """Count one need served, or record its miss (and the read-back or re-fetch it models)."""
        t = need.turn
        if served:
            self.served[t] = self.served.get(t, 0) + 1
            return
        recovery = self.nf.recovery(need)
        self.misses.setdefault(t, []).append(Miss(need.fact, need.source, need.needed_by, t, call.number,
                                                  bool(need.lines), need_kind(need), recovery))
        if not self._read_back(call, need, messages, origins) and recovery == REFETCH:
            self._refetch(call, need)

    def _walked(self, call: Any, view: Any) -> None:
        """Check a call of a replay's walk against its prompt as an index (``_PromptFacts``) kept
        from call to call: a prompt that extends the previous one (``Call.extends_previous``, the
        calls seen in order) adds only its new messages; another is indexed again, and only when
        a call with needs reads it. A need is then served when one of its holders
        (``NeededFacts.holders``) is in the prompt as itself, or a summary or replaced copy holds
        it; so a long prompt costs what arrived, not every message at every call."""
        needs = self.by_index.get(call.index)
        prompt = self._prompt
        follows = call.number == self._seen + 1 and call.extends_previous
        self._seen = call.number
        if prompt is not None and follows and prompt.size <= len(view):
            prompt.extend(view, self)
        elif needs:
            if self._original is None:
                self._original = dict(enumerate(self.nf.messages)).get
            prompt = self._prompt = _PromptFacts(self._original)
            prompt.extend(view, self)
        else:  # not needed yet: indexed again when a call with needs comes
            self._prompt = None
            return
        if not needs:
            return
        holders = self.nf.holders
        for need in needs:
            if need.lines:
                served = any(need.served_by(self.nf.per_message[o]) for o in prompt.present) or \
                    any(need.served_by(f) for f in prompt.others)
            else:
                served = not prompt.present.isdisjoint(holders.holders(need)) or \
                    any(need.served_by(f) for f in prompt.others)
            self._count(call, need, served, view.messages if not served else (),
                        view.origin if not served else ())

    def _read_back(self, call: Any, need: Need, messages: Sequence[Message], origins: Sequence[int | None]) -> bool:
        """Model a read-back when the missed fact's source is in the prompt as an offloaded copy."""
        if need.source not in origins:
            return False
        m = messages[origins.index(need.source)]
        if not is_offloaded(m):
            return False
        self._record(self.read_backs, call, need, need.source, m.extra[OFFLOADED]["tokens"], False)
        return True

    def _refetch(self, call: Any, need: Need) -> None:
        """Model a re-fetch: the call that gave the fact run again, its whole result read (``pricing.REFETCH_MODEL``)."""
        source = self.nf.refetch_from(need)
        if source not in self._tokens:
            if self.counter is None:
                from .tokens import TokenCounter
                self.counter = TokenCounter("gpt-4o")
            self._tokens[source] = self.counter.message(self.nf.messages[source])
        self._record(self.refetches, call, need, source, self._tokens[source], True)

    @staticmethod
    def _record(into: dict[tuple[int, int], ReadBack], call: Any, need: Need, source: int, tokens: int,
                refetch: bool) -> None:
        """One read per call and source, with every fact it brings back."""
        key = (call.number, source)
        old = into.get(key)
        facts = (old.facts if old else ()) + (need.fact,)
        into[key] = ReadBack(call.number, call.index, getattr(call, "turn", need.turn), source, tokens,
                             getattr(call, "tokens_after", 0), facts, refetch)

    def __call__(self, call: Any, view: Any) -> None:
        if self.counter is None:
            self.counter = getattr(view, "counter", None)
        self._walked(call, view)

    def fidelity(self, strategy: str) -> Fidelity:
        """The needed recall of what was checked, per turn and in total."""
        by_turn: dict[int, int] = {}
        for need in self.nf.needs:
            by_turn[need.turn] = by_turn.get(need.turn, 0) + 1
        rows = [TurnFidelity(t, by_turn[t], self.served.get(t, 0), tuple(self.misses.get(t, ())))
                for t in sorted(by_turn)]
        return Fidelity(strategy, sum(r.needed for r in rows), sum(r.served for r in rows), tuple(rows),
                        tuple(self.read_backs[k] for k in sorted(self.read_backs)),
                        tuple(self.refetches[k] for k in sorted(self.refetches)))


def needed_recall(replay: Any, facts: NeededFacts | Conversation | Sequence[Message]) -> Fidelity:
    """Check every needed fact against the prompt of the call that used it.

    ``replay`` is a ``ctxlab.replay.Replay`` of the same conversation; ``facts`` is its
    ``needed_facts`` (or the conversation, and they are found here). Prompts the replay kept are
    read; otherwise the replay is walked again once with a ``FactCheck``."""
    nf = facts if isinstance(facts, NeededFacts) else needed_facts(facts)
    check = FactCheck(nf)
    calls = [c for c in replay.calls if c.index in check.by_index]
    kept = [replay.kept_prompt(c.number) for c in calls]
    if all(p is not None for p in kept):
        for c, p in zip(calls, kept):
            check.check(c, p.messages, p.origins)
    else:
        replay.walk(check)
    return check.fidelity(replay.strategy)


__all__ = ["ARITHMETIC", "CHANGED", "CODE_KEYS", "EDIT_KEYS", "EDIT_LINE_MIN", "FROM_AGENT", "FROM_USER", "KINDS",
           "OPTION_KEYS", "PATH_KEYS", "PROSE_KEYS", "RECOVERIES", "REFETCH", "UNRECOVERABLE", "FactCheck",
           "Fidelity", "Miss", "Need", "NeededFacts", "TurnFidelity", "argument_facts", "edit_texts", "extract_facts",
           "need_kind", "needed_facts", "needed_recall"]
