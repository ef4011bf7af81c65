"""Probes: the model judges what a strategy lost.

A probe is a question about a fact from early in the conversation with its expected answer,
written by the user or generated from the conversation's facts (:func:`generate_probes`). Each
probe is asked, as the newest user message, from the context each strategy leaves (the same path
as :mod:`ctxlab.answers`), and scored by **exact match on the fact**: a hit when the expected
answer appears in the model's answer once both are lower-cased and their white space collapsed
(``$483.95`` must appear as ``$483.95``; ``483.95`` alone is a miss). Every answer is kept, so a
user can see why a probe missed.

The probe score of a strategy (hits / probes answered) sits beside the offline measures of the
same plan: fact retention (the share of the conversation's facts still in the context) and, when
``ctxlab.fidelity`` is installed, the replay's ``needed_recall``. A sweep can probe a chosen subset
of its points with :func:`probe_points`.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from .answers import _labels, _strategies, ask, context_for
from .conversation import Conversation, Message
from .errors import CtxlabError
from .i18n import N_
from .llm import LLM, active_llm, use_llm
from .strategies import Budget, Strategy, auto_facts, get_strategy, prepare
from .strategies.plan import Plan

PROBE_TEMPLATE = ("Answer from the conversation above only, as briefly as you can. If the conversation does not "
                  "say, answer \"unknown\".\n\nQuestion: {question}")
BLANK = "____"
MAX_FACT_CHARS = 80  # a generated probe asks for a value an answer can quote, not a whole SQL query
NEUTRAL_QUESTION = "(a probe question)"  # stands for the probes when measuring retention offline
MATCH_RULE = N_("exact match on the fact: a hit when the expected answer appears in the model's answer, both "
              "lower-cased with white space collapsed")


class ProbeError(CtxlabError):
    """Probes that cannot be asked (none, an empty question or expected answer)."""


@dataclass(frozen=True)
class Probe:
    """A question and the fact its answer must contain. ``source``: ``user`` or ``generated``;
    ``message_index``: where the fact first appears (generated probes)."""

    question: str
    expected: str
    source: str = "user"
    message_index: int | None = None

    def __post_init__(self) -> None:
        if not self.question.strip():
            raise ProbeError("a probe question is empty", where="--question", hint="Write the question to ask")
        if not self.expected.strip():
            raise ProbeError(f"the probe {self.question!r} has no expected answer", where="--expect",
                             hint="Give the fact the answer must contain")

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready fields."""
        return {"question": self.question, "expected": self.expected, "source": self.source,
                "message_index": self.message_index}


def _normalise(text: str) -> str:
    return " ".join(text.casefold().split())


def exact_match(expected: str, answer: str | None) -> bool:
    """Whether ``expected`` appears in ``answer``, both lower-cased with white space collapsed."""
    return answer is not None and bool(expected.strip()) and _normalise(expected) in _normalise(answer)


def _searchable(m: Message) -> list[tuple[str, str]]:
    """(who said it, text) pieces of a message where a fact can appear."""
    if m.role == "tool":
        return [(f"a {m.name} tool result" if m.name else "a tool result", m.text)]
    out = [("the user" if m.role == "user" else f"the {m.role}", m.text)] if m.text else []
    out += [(f"a call to the {c.name} tool", c.arguments) for c in m.tool_calls]
    return out


def _cloze(text: str, fact: str, before: int = 90, after: int = 50) -> str:
    """The text around ``fact``'s first occurrence, with every occurrence of it blanked."""
    at = text.find(fact)
    start, end = max(0, at - before), min(len(text), at + len(fact) + after)
    snippet = " ".join(text[start:end].replace(fact, BLANK).split())
    return ("…" if start else "") + snippet + ("…" if end < len(text) else "")


def generate_probes(conv: Conversation, n: int = 5) -> list[Probe]:
    """Up to ``n`` probes from the conversation's facts (the file's ``facts``, else the identifiers
    ctxlab extracts), the earliest-mentioned first; a fact first mentioned in the newest turn is
    skipped (no strategy removes it), and so is one longer than ``MAX_FACT_CHARS`` (a whole query). Each question quotes the fact's first mention with the fact
    blanked out and asks for it; the expected answer is the fact."""
    if n < 1:
        raise ProbeError(f"the number of probes must be at least 1, got {n}", where="--n")
    messages = conv.messages
    facts = conv.facts or auto_facts(messages)
    users = [i for i, m in enumerate(messages) if m.role == "user"]
    newest_turn = users[-1] if users else len(messages)
    found: list[tuple[int, str, str, str]] = []
    for fact in dict.fromkeys(f for f in facts if f.strip() and len(f) <= MAX_FACT_CHARS):
        first = next(((i, who, text) for i, m in enumerate(messages[:newest_turn]) if m.role != "system"
                      for who, text in _searchable(m) if fact in text), None)
        if first is not None:
            found.append((first[0], fact, first[1], first[2]))
    found.sort(key=lambda f: f[0])
    probes = []
    for index, fact, who, text in found[:n]:
        question = (f"Earlier in this conversation, {who} (message {index}) said: \"{_cloze(text, fact)}\". "
                    f"What exact value is the blank ({BLANK})?")
        probes.append(Probe(question, fact, "generated", index))
    return probes


def user_probes(questions: Sequence[str], expected: Sequence[str]) -> list[Probe]:
    """Probes written by the user: one expected answer per question, in order."""
    if len(questions) != len(expected):
        raise ProbeError(f"{len(questions)} questions but {len(expected)} expected answers", where="--expect",
                         hint="Give one --expect after each --question")
    return [Probe(q.strip(), a.strip(), "user") for q, a in zip(questions, expected)]


@dataclass(frozen=True)
class ProbeAnswer:
    """One probe asked from one strategy's context: the model's answer (None on failure), the hit."""

    probe: Probe
    answer: str | None
    hit: bool
    error: str | None = None
    latency_ms: float | None = None
    prompt_tokens: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready fields."""
        return {**self.probe.to_dict(), "answer": self.answer, "hit": self.hit, "error": self.error,
                "latency_ms": None if self.latency_ms is None else round(self.latency_ms, 1),
                "prompt_tokens": self.prompt_tokens}


@dataclass(frozen=True)
class ProbeScore:
    """A strategy's probe score (hits / probes answered; None when none was answered) beside its
    offline measures: ``retention`` (facts kept by the plan of the conversation as it is) and
    ``needed_recall`` (the replay's, when ``ctxlab.fidelity`` is there), and ``tokens_after``."""

    label: str
    strategy: str
    answers: tuple[ProbeAnswer, ...]
    retention: float | None
    needed_recall: float | None
    tokens_after: int
    warnings: tuple[str, ...] = ()
    plan: Plan | None = field(default=None, repr=False, compare=False)

    @property
    def hits(self) -> int:
        """Probes whose answer contains the expected fact."""
        return sum(a.hit for a in self.answers)

    @property
    def answered(self) -> int:
        """Probes the model answered (failed calls left out)."""
        return sum(a.answer is not None for a in self.answers)

    @property
    def errors(self) -> tuple[str, ...]:
        """The distinct errors of the failed calls."""
        return tuple(dict.fromkeys(a.error for a in self.answers if a.error))

    @property
    def score(self) -> float | None:
        """hits / answered, or None when the model answered none."""
        return self.hits / self.answered if self.answered else None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready fields."""
        return {"label": self.label, "strategy": self.strategy, "score": self.score, "hits": self.hits,
                "answered": self.answered, "asked": len(self.answers), "retention": self.retention,
                "needed_recall": self.needed_recall, "tokens_after": self.tokens_after, "match_rule": MATCH_RULE,
                "errors": list(self.errors), "warnings": list(self.warnings),
                "answers": [a.to_dict() for a in self.answers]}


def _needed_recall(conv: Conversation, strategy: Strategy, budget: Budget | None, model: str | None,
                   context_limit: int | None) -> float | None:
    """The replay's needed_recall when ``ctxlab.fidelity`` is installed, else None."""
    try:
        from .fidelity import needed_recall  # type: ignore[import-not-found]
    except ImportError:
        return None
    from .replay import replay
    if budget is None:
        _, budget = prepare(conv, model, context_limit=context_limit)
    return needed_recall(replay(conv, strategy, budget, model=model), conv).needed_recall


def score_probes(conv: Conversation, strategies: Sequence[Strategy | str], probes: Sequence[Probe],
                 llm: LLM | None = None, budget: Budget | None = None, *, labels: Sequence[str] | None = None,
                 model: str | None = None, context_limit: int | None = None, max_answer_tokens: int = 128,
                 offline_measures: bool = True) -> list[ProbeScore]:
    """Ask every probe from each strategy's context; one :class:`ProbeScore` per strategy, in order.
    A failed call counts as unanswered (its error kept), never as a miss."""
    if not probes:
        raise ProbeError("no probes to ask", where="probes",
                         hint="Write questions with expected answers, or generate them from the conversation's facts")
    steps = _strategies(strategies)
    names = list(labels) if labels is not None else _labels(steps)
    llm = llm or active_llm()
    out = []
    for strategy, label in zip(steps, names):
        answers, warnings = [], []
        for probe in probes:
            a = ask(conv, strategy, PROBE_TEMPLATE.format(question=probe.question), llm, budget,
                    max_answer_tokens=max_answer_tokens, model=model, context_limit=context_limit)
            answers.append(ProbeAnswer(probe, a.answer, exact_match(probe.expected, a.answer), a.error,
                                       a.latency_ms, a.prompt_tokens))
            warnings.extend(w for w in a.warnings if w not in warnings)
        with use_llm(llm):  # offline measures of the context the probes were asked from (an llm summary is cached)
            plan, _, _ = context_for(conv, strategy, NEUTRAL_QUESTION, budget, model=model, context_limit=context_limit)
            recall = _needed_recall(conv, strategy, budget, model, context_limit) if offline_measures else None
        out.append(ProbeScore(label, strategy.name, tuple(answers), plan.retention, recall, plan.tokens_after,
                              tuple(warnings), plan))
    return out


def probe_points(conv: Conversation, points: Sequence[Mapping[str, Any]], probes: Sequence[Probe],
                 llm: LLM | None = None, *, model: str | None = None) -> list[ProbeScore]:
    """Probe a chosen subset of a sweep's points: each point is a mapping with ``strategy`` (a
    name), ``params`` (a dict, or its JSON text) and ``max_tokens`` (the context limit), as the
    sweep's rows have them. One ProbeScore per point, labelled ``name params @ max_tokens``."""
    out = []
    for k, point in enumerate(points):
        try:
            params = point.get("params") or {}
            params = json.loads(params) if isinstance(params, str) else dict(params)
            strategy = get_strategy(str(point["strategy"]), **params)
            limit = int(point["max_tokens"]) if point.get("max_tokens") is not None else None
        except (KeyError, TypeError, ValueError) as e:
            raise ProbeError(f"sweep point {k} cannot be read ({type(e).__name__}: {e})", where=f"points[{k}]",
                             hint="Each point needs strategy, params and max_tokens") from None
        label = f"{strategy.name} {json.dumps(params, sort_keys=True)} @ {limit}"
        out.extend(score_probes(conv, [strategy], probes, llm, labels=[label], model=model, context_limit=limit))
    return out


__all__ = ["MATCH_RULE", "PROBE_TEMPLATE", "Probe", "ProbeAnswer", "ProbeError", "ProbeScore", "exact_match",
           "generate_probes", "probe_points", "score_probes", "user_probes"]

