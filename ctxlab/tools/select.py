"""Which tools to send for this turn: rank the catalog against the query, keep the top k over a
similarity threshold, pull in their categories, add the always-included tools; count what it saves.

Ranking is dense (cosine similarity from the :class:`~ctxlab.tools.index.ToolIndex`) or hybrid:
cosine plus ``LEXICAL_WEIGHT`` times the tool's BM25 score (``bm25s``) divided by the best BM25
score for that query, so a tool that shares rare words with the query moves up by at most
``LEXICAL_WEIGHT``. Hybrid is the default because it wins on both real sets measured
(``benchmarks/bench_tools.py``).

Rules, in order:

* ``similarity`` picks: the best ``top_k`` tools whose ranking score reaches ``threshold``
  (``None``: no threshold). The score is the cosine similarity, plus the lexical bonus when hybrid,
  so the picks are always the head of the ranking. When none reaches it, the top ``top_k`` are
  sent anyway, with a warning (never an empty list). The default threshold, 0.2, is set for
  all-MiniLM-L6-v2: on BFCL a relevant tool's cosine is often 0.2-0.4 (see the benchmark).
* ``expansion``: the categories of the similarity picks, mapped through ``catalog.expand``, pull
  in every other tool of those categories. Expansions do not count toward ``top_k``: they never
  cut a similarity pick.
* ``always``: named tools, added last when not already there.
* ``fallback``: when the index is empty, the query is empty, or retrieval fails (embedding
  provider or Chroma), every tool is sent, with a warning saying why.

A tool's reason is the first rule that picked it.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Iterable, Mapping, Sequence

from ..errors import CtxlabError
from ..conversation import Conversation, Message, ToolDef
from ..tokens import TokenCounter

REASONS = ("similarity", "expansion", "always", "fallback")
LEXICAL_WEIGHT = 0.15
DEFAULT_THRESHOLD = 0.2
CANDIDATES = 50


class SelectionError(CtxlabError):
    """Bad selection parameters (top_k, threshold, an unknown tool name)."""


class LexicalIndex:
    """BM25 (``bm25s``, English stop words) over the tools' embedding texts."""

    def __init__(self, names: Sequence[str], texts: Sequence[str]) -> None:
        import bm25s
        self._bm25s = bm25s
        self.names = tuple(names)
        self._bm25 = bm25s.BM25()
        self._bm25.index(bm25s.tokenize(list(texts), stopwords="en", show_progress=False), show_progress=False)

    def scores(self, query: str, top: int = CANDIDATES) -> dict[str, float]:
        """The ``top`` best tools for the query: name -> BM25 score / best score (0..1]."""
        tokens = self._bm25s.tokenize([query], stopwords="en", return_ids=False, show_progress=False)[0]
        raw = self._bm25.get_scores(tokens) if tokens else None
        if raw is None or float(raw.max()) <= 0:
            return {}
        best = float(raw.max())
        order = raw.argsort()[::-1][:top]
        return {self.names[i]: float(raw[i]) / best for i in order if raw[i] > 0}


@dataclass(frozen=True)
class Ranked:
    """One ranked tool: its ranking score and its cosine similarity to the query."""

    name: str
    score: float
    similarity: float


@dataclass(frozen=True)
class Ranking:
    """The candidates for one query, best first, with the query vector."""

    query: str
    items: tuple[Ranked, ...]
    vector: tuple[float, ...]
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class SelectedTool:
    """A tool chosen for the request, why (one of ``REASONS``), and what it costs."""

    tool: ToolDef
    reason: str
    similarity: float | None
    tokens: int
    score: float | None = None

    @property
    def name(self) -> str:
        """The tool's name."""
        return self.tool.name


@dataclass(frozen=True)
class Selection:
    """The tools to send, in order, with token costs of all tools vs the selected ones.

    ``fallback`` is None, ``"top_k"`` (nothing reached the threshold) or ``"all_tools"`` (empty
    query, empty index, or retrieval failed); ``warnings`` says why, for the user to read.
    """

    query: str
    tools: tuple[SelectedTool, ...]
    tokens_all: int
    tokens_selected: int
    warnings: tuple[str, ...] = ()
    fallback: str | None = None
    hybrid: bool = True

    @property
    def names(self) -> tuple[str, ...]:
        """Selected tool names, in order."""
        return tuple(t.name for t in self.tools)

    @property
    def tool_defs(self) -> tuple[ToolDef, ...]:
        """The selected definitions, ready to send."""
        return tuple(t.tool for t in self.tools)

    @property
    def saved_ratio(self) -> float:
        """Share of the tool-definition tokens the selection saves (0 when all are sent)."""
        return 1.0 - self.tokens_selected / self.tokens_all if self.tokens_all else 0.0

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (the CLI's ``tools query`` output)."""
        return {"query": self.query, "hybrid": self.hybrid, "fallback": self.fallback,
                "tools": [{"name": t.name, "reason": t.reason, "category": t.tool.category,
                           "similarity": None if t.similarity is None else round(t.similarity, 4),
                           "score": None if t.score is None else round(t.score, 4),
                           "tokens": t.tokens} for t in self.tools],
                "tokens_all": self.tokens_all, "tokens_selected": self.tokens_selected,
                "saved_ratio": round(self.saved_ratio, 4), "warnings": list(self.warnings)}


def query_from_conversation(conv: Conversation | Sequence[Message], previous_turns: int = 0) -> str:
    """The newest user message's text, optionally after the ``previous_turns`` user messages
    before it (oldest first, one per line). Empty when there is no user message."""
    messages = conv.messages if isinstance(conv, Conversation) else tuple(conv)
    users = [m.text.strip() for m in messages if m.role == "user" and m.text.strip()]
    return "\n".join(users[-(max(0, previous_turns) + 1):]) if users else ""


def rank(index: Any, queries: Sequence[str], hybrid: bool = True, candidates: int = CANDIDATES) -> list[Ranking]:
    """Rank the candidates of each query (dense top ``candidates``, plus BM25's when hybrid)."""
    vectors = index.embed_queries(list(queries))
    dense = index.nearest(vectors, candidates)
    warnings: tuple[str, ...] = ()
    lexical = None
    if hybrid:
        try:
            lexical = index.lexical()
        except ImportError:
            warnings = ("hybrid retrieval is off: bm25s is not installed (pip install bm25s)",)
    out = []
    for query, vec, sims in zip(queries, vectors, dense):
        lex = lexical.scores(query, candidates) if lexical else {}
        missing = [n for n in lex if n not in sims]
        sims = {**sims, **index.similarities(vec, missing)} if missing else sims
        items = sorted((Ranked(n, s + LEXICAL_WEIGHT * lex.get(n, 0.0), s) for n, s in sims.items()),
                       key=lambda r: (-r.score, r.name))
        out.append(Ranking(query, tuple(items), tuple(vec), warnings))
    return out


@lru_cache(maxsize=8)
def _func_end(model: str) -> int:
    return TokenCounter(model).spec.tools.func_end


def _check(top_k: int, threshold: float | None, always: Iterable[str], known: Mapping[str, Any]) -> tuple[str, ...]:
    if not isinstance(top_k, int) or top_k < 1:
        raise SelectionError(f"top_k must be a whole number of at least 1, got {top_k!r}", where="top_k")
    if threshold is not None and (not isinstance(threshold, (int, float)) or not -1.0 <= threshold <= 1.0):
        raise SelectionError(f"threshold must be a similarity between -1 and 1, got {threshold!r}",
                             where="threshold", hint="Use None for no threshold")
    always = tuple(dict.fromkeys([always] if isinstance(always, str) else always))
    unknown = [n for n in always if n not in known]
    if unknown:
        raise SelectionError(f"always_include names tools that are not in the catalog: {', '.join(unknown)}",
                             where="always_include", hint="Use names from the catalog")
    return always


def select(index: Any, query: str, top_k: int = 5, threshold: float | None = DEFAULT_THRESHOLD,
           expand_categories: bool = True, always_include: Sequence[str] = (), hybrid: bool = True,
           model: str = "gpt-4o") -> Selection:
    """Choose the tools to send for ``query`` (see the module docstring for the rules)."""
    always = _check(top_k, threshold, always_include, index.tools_by_name)
    reason = None
    if not query.strip():
        reason = "the query is empty"
    elif index.count == 0:
        reason = "the tool index is empty (not built yet); build it with `ctxlab tools index` or ToolIndex.build()"
    if reason is None:
        try:
            ranking = rank(index, [query], hybrid)[0]
            return from_ranking(index, ranking, top_k, threshold, expand_categories, always, hybrid, model)
        except Exception as e:  # a provider or store failure must not leave the agent without tools
            reason = f"tool retrieval failed ({type(e).__name__}: {e})"
    return _all_tools(index, query, hybrid, model, f"{reason}: sending all {len(index.catalog)} tools")


def from_ranking(index: Any, ranking: Ranking, top_k: int = 5, threshold: float | None = DEFAULT_THRESHOLD,
                 expand_categories: bool = True, always: Sequence[str] = (), hybrid: bool = True,
                 model: str = "gpt-4o") -> Selection:
    """The selection for an already ranked query (used by ``select`` and by the evaluation)."""
    warnings, fallback = list(ranking.warnings), None
    picks = [r for r in ranking.items if threshold is None or r.score >= threshold][:top_k]
    if not picks and ranking.items:
        best = ranking.items[0].score
        picks, fallback = list(ranking.items[:top_k]), "top_k"
        warnings.append(f"no tool reached the threshold {threshold:.2f} (best score {best:.2f}): "
                        f"sending the top {len(picks)} without the threshold")
    sims = {r.name: r.similarity for r in ranking.items}
    picked = [r.name for r in picks]
    expanded = _expansions(index, picked) if expand_categories else []
    pinned = [n for n in always if n not in picked and n not in expanded]
    missing = [n for n in expanded + pinned if n not in sims]
    if missing:
        sims.update(index.similarities(ranking.vector, missing))
    expanded.sort(key=lambda n: -sims.get(n, -2.0))
    chosen = [(n, "similarity") for n in picked] + [(n, "expansion") for n in expanded]
    chosen += [(n, "always") for n in pinned]
    pending = index.pending()
    if pending:
        warnings.append(f"{pending} tool(s) changed since the index was built; rebuild it to include them")
    scores = {r.name: r.score for r in ranking.items}
    return _selection(index, ranking.query, [(n, why, sims.get(n), scores.get(n)) for n, why in chosen], warnings,
                      fallback, hybrid, model)


def _expansions(index: Any, picked: Sequence[str]) -> list[str]:
    tools, catalog = index.tools_by_name, index.catalog
    wanted = {c for n in picked if tools[n].category for c in catalog.expand(tools[n].category)}
    return [t.name for t in catalog.tools if t.category in wanted and t.name not in picked] if wanted else []


def _all_tools(index: Any, query: str, hybrid: bool, model: str, warning: str) -> Selection:
    chosen = [(n, "fallback", None, None) for n in index.catalog.names]
    return _selection(index, query, chosen, [warning], "all_tools", hybrid, model)


def _selection(index: Any, query: str, chosen: Sequence[tuple[str, str, float | None, float | None]],
               warnings: list[str],
               fallback: str | None, hybrid: bool, model: str) -> Selection:
    costs = index.token_costs(model)
    end = _func_end(model)
    tools = tuple(SelectedTool(index.tools_by_name[n], why, sim, costs[n], score) for n, why, sim, score in chosen)
    total = sum(costs.values()) + (end if costs else 0)
    selected = sum(t.tokens for t in tools) + (end if tools else 0)
    return Selection(query, tools, total, selected, tuple(warnings), fallback, hybrid)
