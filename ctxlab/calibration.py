"""Calibrating an estimated count against what a provider reported.

Where no tokenizer ships offline (Claude, Gemini, Alibaba Cloud's API names), ctxlab's count is an
estimate. One real call gives the truth for one prompt: the provider's ``usage.prompt_tokens``.
``calibrate`` compares it with ctxlab's count of the same request and returns a ``Calibration``
whose ``factor`` scales later counts of that model (``apply``). The factor is a ratio over one
prompt: it is as good as that prompt is like the ones it scales (language, share of JSON).

A production trace gives many such pairs: every call that reported its usage (see
``ctxlab.usage``). ``calibrate_from_usage`` sums them per billing model, so the factor is a ratio
over every prompt the team's agents sent (``calls`` says how many), not over one.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from .conversation import Conversation, Message, ToolDef
from .errors import CtxlabError
from .tokens import TokenCounter


class CalibrationError(CtxlabError):
    """A calibration that cannot be made (no count to compare, no usage reported)."""


@dataclass(frozen=True, slots=True)
class Calibration:
    """ctxlab's ``counted`` tokens against the provider's ``reported`` prompt tokens, for ``model``."""

    model: str
    counted: int
    reported: int
    exact_before: bool
    calls: int = 1
    method: str = "whole"

    @property
    def factor(self) -> float:
        """reported / counted: what a count of this model is multiplied by."""
        return self.reported / self.counted

    def apply(self, tokens: int) -> int:
        """A count of this model, calibrated (rounded to the nearest token)."""
        return round(tokens * self.factor)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"model": self.model, "counted": self.counted, "reported": self.reported,
                "factor": round(self.factor, 4), "exact_before": self.exact_before, "calls": self.calls,
                "method": self.method}


def calibrate(conv: Conversation | Sequence[Message], reported_prompt_tokens: int, model: str | None = None,
              tools: Sequence[ToolDef] | None = None) -> Calibration:
    """Compare ctxlab's count of a request with the ``prompt_tokens`` the provider reported for it."""
    if isinstance(reported_prompt_tokens, bool) or not isinstance(reported_prompt_tokens, int) \
            or reported_prompt_tokens <= 0:
        raise CalibrationError("reported prompt tokens must be a positive whole number, "
                               f"not {reported_prompt_tokens!r}",
                               where="prompt_tokens", hint="Copy usage.prompt_tokens from the provider's response")
    if model is None and isinstance(conv, Conversation):
        model = conv.model
    count = TokenCounter(model).count(conv, tools)
    if count.total <= 0:
        raise CalibrationError("the request counts 0 tokens: nothing to compare", where="conversation",
                               hint="Calibrate on a conversation with at least one message")
    return Calibration(count.model, count.total, reported_prompt_tokens, count.exact)


def calibrate_with_llm(conv: Conversation, llm: Any) -> Calibration:
    """Send ``conv`` once to a connected model (``ctxlab.llm.LLM``; one output token asked) and
    calibrate on the ``prompt_tokens`` it reports. Counts under the LLM's model name."""
    from .formats.openai_chat import message_to_openai
    from .formats.tools import tools_to_openai
    notes: list[str] = []
    messages = [message_to_openai(m, i, notes) for i, m in enumerate(conv.messages)]
    result = llm.chat(messages, max_tokens=1, tools=tools_to_openai(conv.tools) if conv.tools else None)
    if result.prompt_tokens is None:
        raise CalibrationError("the model's reply reported no usage.prompt_tokens", where=f"model {llm.model}",
                               hint="Use a provider that reports usage, or enter the number by hand")
    return calibrate(conv, result.prompt_tokens, model=llm.model, tools=conv.tools)


def calibrate_from_usage(convs: Sequence[Conversation], model: str | None = None) -> list[Calibration]:
    """One Calibration per billing model from the calls of production traces that reported usage
    (each conversation counted with ``model``, else its own model). Empty when no call did.

    Where a trace logs the whole prompt (a system message first and the tool definitions), the
    factor is billed over counted prompt tokens, summed over the calls (``method`` "whole").
    Where it does not (a Claude Code session logs neither the system prompt nor the tool
    definitions), that ratio would mostly measure what is missing, so the factor compares the
    *growth* of the prompt between consecutive calls instead, where a constant missing part
    cancels (``method`` "growth"; only consecutive calls billed by the same model, and pairs with
    a compaction between them, or whose billed prompt shrank, are left out)."""
    from .formats._trace import is_compaction
    from .usage import compare_usage, has_usage
    sums: dict[tuple[str, str], list[int]] = {}
    exact: dict[tuple[str, str], bool] = {}
    for conv in convs:
        if not has_usage(conv):
            continue
        cmp = compare_usage(conv, model=model)
        whole = bool(conv.tools) and bool(conv.messages) and conv.messages[0].role == "system"
        marks = [i for i, m in enumerate(conv.messages) if is_compaction(m)]
        pairs = [(c.counted, c.reported.prompt_tokens, c.reported.model) for c in cmp.calls] if whole else [
            (b.counted - a.counted, b.reported.prompt_tokens - a.reported.prompt_tokens, b.reported.model)
            for a, b in zip(cmp.calls, cmp.calls[1:])
            if a.reported.model == b.reported.model and not any(a.index < i < b.index for i in marks)
            and b.reported.prompt_tokens >= a.reported.prompt_tokens]
        for counted, reported, billed_by in pairs:
            key = (billed_by or cmp.model, "whole" if whole else "growth")
            row = sums.setdefault(key, [0, 0, 0])
            row[0] += counted
            row[1] += reported
            row[2] += 1
            exact[key] = exact.get(key, True) and cmp.exact
    return [Calibration(name, counted, reported, exact[(name, method)], calls, method)
            for (name, method), (counted, reported, calls) in sorted(sums.items()) if counted > 0 and reported > 0]


__all__ = ["calibrate", "calibrate_from_usage", "calibrate_with_llm", "Calibration", "CalibrationError"]
