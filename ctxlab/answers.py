"""Answer replay: what the model answers from the context each strategy leaves.

For each of one to four strategies, the same final question is appended to the conversation as
the newest user message, the strategy is applied to that (so the question counts in the budget
and always survives), and the result (its messages and the conversation's tool definitions, in
OpenAI chat format) is sent to the model. Each :class:`Answer` holds the reply beside what it cost:
the server's ``prompt_tokens``, ``cached_tokens`` (from ``usage.prompt_tokens_details`` when the
server reports it, else None), ``completion_tokens``, the latency, and ctxlab's own count of the
context sent. A call that fails gives an Answer with ``error`` set and no answer; the plan and its
counts are still there (the offline result is never lost).

``answer_replay(conv, ["sliding_window", "summarize"], "What was the refund amount?", llm)``
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Sequence

from .conversation import Conversation, Message
from .errors import CtxlabError
from .formats import export
from .llm import LLM, LLMError, active_llm, use_llm
from .strategies import (STRATEGIES, Budget, Pipeline, Strategy, auto_facts, get_strategy, make_view, parse_param,
                         prepare)
from .strategies.plan import Plan
from .tokens import TokenCounter

MAX_STRATEGIES = 4
DEFAULT_ANSWER_TOKENS = 512
NO_ANSWER = "no answer: the context and its token counts above are ctxlab's own, computed offline"


class AnswerError(CtxlabError):
    """An answer replay that cannot start (no question, too many strategies, a bad strategy spec)."""


def strategy_from_spec(spec: str, params: Sequence[str] = ()) -> Strategy:
    """``name`` or ``a >> b`` with ``key=value`` parameters (``name.key=value`` in a pipeline, or
    to aim at one strategy), as the CLI's ``--strategy`` and ``--param`` take them."""
    names = [n.strip() for n in spec.split(">>") if n.strip()]
    if not names:
        raise AnswerError("no strategy named", where="--strategy", hint=f"Known: {', '.join(STRATEGIES)}")
    per: dict[str, dict[str, Any]] = {n: {} for n in names}
    for text in params:
        owner, _, _ = text.split("=", 1)[0].rpartition(".")
        if not owner and len(names) > 1:
            raise AnswerError(f"--param {text!r} is ambiguous in a pipeline", where="--param",
                              hint="Prefix it with the strategy name, e.g. sliding_window.buffer_ratio=0.2")
        if owner and owner not in per:
            continue  # aimed at another --strategy of the same command
        name = owner or names[0]
        if name not in STRATEGIES:
            get_strategy(name)  # raises with the known names
        key, value = parse_param(STRATEGIES[name], text[len(owner) + 1:] if owner else text)
        per[name][key] = value
    steps = [get_strategy(n, **per[n]) for n in names]
    return steps[0] if len(steps) == 1 else Pipeline(steps=tuple(steps))


@dataclass(frozen=True)
class Answer:
    """One strategy's answer and what it cost. ``answer`` is None when the call failed (``error``
    says why, ``fallback`` what was kept instead). ``context_tokens`` is ctxlab's count of the
    prompt sent (messages and tool definitions); ``prompt_tokens``, ``cached_tokens`` and
    ``completion_tokens`` are the server's (None when it reports none)."""

    label: str
    strategy: str
    question: str
    answer: str | None
    model: str
    context_tokens: int
    context_messages: int
    prompt_tokens: int | None = None
    cached_tokens: int | None = None
    completion_tokens: int | None = None
    latency_ms: float | None = None
    attempts: int = 0
    retention: float | None = None
    warnings: tuple[str, ...] = ()
    error: str | None = None
    fallback: str | None = None
    tool_calls: tuple[str, ...] = ()
    plan: Plan | None = field(default=None, repr=False, compare=False)

    @property
    def ok(self) -> bool:
        """True when the model answered."""
        return self.answer is not None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready fields (the plan left out: ``plan.to_dict()`` has it)."""
        return {"label": self.label, "strategy": self.strategy, "question": self.question, "answer": self.answer,
                "model": self.model, "context_tokens": self.context_tokens, "context_messages": self.context_messages,
                "prompt_tokens": self.prompt_tokens, "cached_tokens": self.cached_tokens,
                "completion_tokens": self.completion_tokens,
                "latency_ms": None if self.latency_ms is None else round(self.latency_ms, 1),
                "attempts": self.attempts, "retention": self.retention, "warnings": list(self.warnings),
                "error": self.error, "fallback": self.fallback, "tool_calls": list(self.tool_calls)}


def _strategies(strategies: Sequence[Strategy | str]) -> list[Strategy]:
    if isinstance(strategies, (str, Strategy)):
        strategies = [strategies]
    if not 1 <= len(strategies) <= MAX_STRATEGIES:
        raise AnswerError(f"give one to {MAX_STRATEGIES} strategies, got {len(strategies)}", where="strategies")
    return [s if isinstance(s, Strategy) else strategy_from_spec(s) for s in strategies]


def context_for(conv: Conversation, strategy: Strategy, question: str, budget: Budget | None = None, *,
                model: str | None = None, context_limit: int | None = None) -> tuple[Plan, dict[str, Any], int]:
    """The plan of ``strategy`` on the conversation plus ``question`` as its newest user message,
    the OpenAI chat payload it makes (``messages``, ``tools``), and ctxlab's count of that prompt."""
    facts = conv.facts or auto_facts(conv.messages)  # the conversation's, not identifiers quoted in the question
    asked = replace(conv.with_messages((*conv.messages, Message("user", question))), facts=tuple(facts))
    if budget is None:
        view, budget = prepare(asked, model, context_limit=context_limit)
    else:
        view = make_view(asked, counter=TokenCounter(model or conv.model))
    plan = strategy.apply(view, budget)
    payload = export(asked.with_messages(plan.messages), "openai").data
    return plan, payload, plan.tokens_after


def ask(conv: Conversation, strategy: Strategy, question: str, llm: LLM, budget: Budget | None = None, *,
        label: str | None = None, max_answer_tokens: int = DEFAULT_ANSWER_TOKENS, model: str | None = None,
        context_limit: int | None = None, send_tools: bool = True) -> Answer:
    """One strategy's context plus ``question`` sent to ``llm``; an :class:`Answer` either way."""
    with use_llm(llm):  # the llm summarizer, if the strategy has one, writes with the same model
        plan, payload, tokens = context_for(conv, strategy, question, budget, model=model, context_limit=context_limit)
    base = dict(label=label or strategy.name, strategy=strategy.name, question=question, model=llm.model,
                context_tokens=tokens, context_messages=len(payload.get("messages", [])), retention=plan.retention,
                warnings=tuple(plan.warnings), plan=plan)
    try:
        reply = llm.chat(payload["messages"], max_tokens=max_answer_tokens,
                         tools=payload.get("tools") if send_tools else None)
    except LLMError as e:
        return Answer(answer=None, error=str(e), fallback=NO_ANSWER, attempts=e.attempts, **base)
    text = reply.text
    if not text and reply.tool_calls:
        text = f"(no text: the model asked to call {', '.join(reply.tool_calls)} instead of answering)"
    return Answer(answer=text, prompt_tokens=reply.prompt_tokens, cached_tokens=reply.cached_tokens,
                  completion_tokens=reply.completion_tokens, latency_ms=reply.latency_ms, attempts=reply.attempts,
                  tool_calls=reply.tool_calls, **{**base, "model": reply.model})


def answer_replay(conv: Conversation, strategies: Sequence[Strategy | str], question: str, llm: LLM | None = None,
                  budget: Budget | None = None, *, labels: Sequence[str] | None = None,
                  max_answer_tokens: int = DEFAULT_ANSWER_TOKENS, model: str | None = None,
                  context_limit: int | None = None, send_tools: bool = True) -> list[Answer]:
    """Ask the same ``question`` from the context each strategy leaves; one :class:`Answer` per
    strategy, in order. ``llm`` defaults to :func:`ctxlab.llm.active_llm`; ``budget`` to the
    conversation's model window (or ``context_limit``), counted with ``model`` (default: the
    conversation's). Fails fast only on bad input; a failed call is an Answer with ``error``."""
    if not isinstance(question, str) or not question.strip():
        raise AnswerError("the question is empty", where="--question", hint="Give the final question to ask")
    steps = _strategies(strategies)
    names = list(labels) if labels is not None else _labels(steps)
    if len(names) != len(steps):
        raise AnswerError(f"{len(names)} labels for {len(steps)} strategies", where="labels")
    llm = llm or active_llm()
    return [ask(conv, s, question.strip(), llm, budget, label=lab, max_answer_tokens=max_answer_tokens,
                model=model, context_limit=context_limit, send_tools=send_tools) for s, lab in zip(steps, names)]


def _labels(steps: Sequence[Strategy]) -> list[str]:
    """The strategy names, numbered when one appears twice (``1 · summarize``)."""
    names = [s.name if not isinstance(s, Pipeline) else " >> ".join(p.name for p in s.steps) for s in steps]
    if len(set(names)) == len(names):
        return names
    return [f"{k} · {n}" for k, n in enumerate(names, 1)]


__all__ = ["Answer", "AnswerError", "MAX_STRATEGIES", "NO_ANSWER", "answer_replay", "ask", "context_for",
           "strategy_from_spec"]

