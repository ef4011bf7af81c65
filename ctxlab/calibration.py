"""Calibrating an estimated count against what a provider reported (issue 18.3).

Where no tokenizer ships offline (Claude, Gemini, Alibaba Cloud's API names), ctxlab's count is an
estimate. One real call gives the truth for one prompt: the provider's ``usage.prompt_tokens``.
``calibrate`` compares it with ctxlab's count of the same request and returns a ``Calibration``
whose ``factor`` scales later counts of that model (``apply``). The factor is a ratio over one
prompt: it is as good as that prompt is like the ones it scales (language, share of JSON).
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
                "factor": round(self.factor, 4), "exact_before": self.exact_before}


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
