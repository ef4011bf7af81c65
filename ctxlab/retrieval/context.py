"""Reading a short follow-up with the user messages before it.

In a multi-turn conversation the newest user message is often a follow-up that names no tool:
"The process ID is 123e…, threshold 70", "好的，这里有三个条目：…", "yes, the second one". Alone it
matches the catalog badly; the turn before it says what the user is doing. The rule: when the
newest message has at most ``max_words`` words (the BM25 words of
:func:`~ctxlab.retrieval.lexical.tokenize`: stop words not counted), the earlier user messages are
folded into the query, the most recent at ``weight``, the one before at ``weight`` squared, and
so on (``depth`` of them; None: all). Folding is done on both sides of the hybrid ranking: the
query vector is the newest message's vector plus the weighted vectors of the earlier ones,
normalised again; the BM25 scores are added with the same weights. A longer message is ranked
alone: it says what it wants, and a previous turn that asked for another tool would only pull
the ranking away from it.

Each earlier message is embedded on its own, so the vector of the message the previous turn
ranked is in the index's query cache: a follow-up costs one embedding, as a lone message does.

:data:`TUNED_CONTEXT` is the rule tuned by ``benchmarks/bench_tools_zh.py`` on the tuning halves
(sha256 of the qid even) of ACEBench Chinese and English multi-turn sets, BFCL multi-turn and two
near-duplicate catalogs built from it, for both default models (USE multilingual, MiniLM): the
weight, word limit and depth with the best mean top-5 recall among those that lower no set's.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from ..errors import CtxlabError
from .lexical import tokenize


class ContextError(CtxlabError):
    """A bad context rule."""


@dataclass(frozen=True)
class ContextRule:
    """Fold the earlier user messages (most recent at ``weight``, then ``weight`` squared, ...;
    at most ``depth`` of them, None: all) into a newest message of at most ``max_words`` words."""

    weight: float
    max_words: int
    depth: int | None = None

    def __post_init__(self) -> None:
        if isinstance(self.weight, bool) or not isinstance(self.weight, (int, float)) or not 0.0 <= self.weight <= 1.0:
            raise ContextError(f"the context weight must be a number between 0 and 1, got {self.weight!r}",
                               where="context_rule.weight", hint="0 turns folding off")
        if isinstance(self.max_words, bool) or not isinstance(self.max_words, int) or self.max_words < 0:
            raise ContextError(f"max_words must be a whole number of 0 or more, got {self.max_words!r}",
                               where="context_rule.max_words")
        if self.depth is not None and (isinstance(self.depth, bool) or not isinstance(self.depth, int)
                                       or self.depth < 1):
            raise ContextError(f"depth must be a whole number of at least 1 or None, got {self.depth!r}",
                               where="context_rule.depth", hint="None folds every earlier user message")

    def weights(self, query: str, context: Sequence[str]) -> list[tuple[str, float]]:
        """The earlier messages folded into ``query`` with their weights, most recent first;
        empty when the rule does not apply (no context, a zero weight, or a long message)."""
        turns = [t for t in context if t and t.strip()][::-1][:self.depth]
        if not turns or self.weight <= 0 or len(tokenize(query)) > self.max_words:
            return []
        return [(t, self.weight ** (k + 1)) for k, t in enumerate(turns)]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"weight": self.weight, "max_words": self.max_words, "depth": self.depth}


#: the rule ``context_rule="auto"`` applies (see the module docstring for how it was tuned)
TUNED_CONTEXT = ContextRule(weight=0.4, max_words=12, depth=None)


def context_rule_for(rule: ContextRule | str | None) -> ContextRule | None:
    """``"auto"``: :data:`TUNED_CONTEXT`; ``"off"`` or None: no folding; a :class:`ContextRule` as given."""
    if isinstance(rule, ContextRule) or rule is None:
        return rule
    if rule == "auto":
        return TUNED_CONTEXT
    if rule == "off":
        return None
    raise ContextError(f"unknown context rule {rule!r}", where="context_rule",
                       hint="Use 'auto', 'off', None or a ContextRule")
