"""Which tools to send for this turn: rank the catalog against the query, keep the top k over a
similarity threshold, pull in their categories, add the always-included tools; count what it saves.

Ranking is dense (cosine similarity from the :class:`~ctxlab.tools.index.ToolIndex`'s vectors,
one matrix product per query) or hybrid: cosine plus ``LEXICAL_WEIGHT`` times the tool's BM25
score (:mod:`ctxlab.tools.lexical`, Chinese-aware) divided by the best BM25
score for that query, so a tool that shares rare words with the query moves up by at most
``LEXICAL_WEIGHT``. Hybrid is the default because it wins on both real sets measured
(``benchmarks/bench_tools.py``, ``benchmarks/bench_tools_zh.py``).

Rules, in order:

* ``unsure``: when the query matches nothing well (the no-match rule of
  :mod:`ctxlab.tools.confidence`: the best score under a floor, or no tool standing out of the
  head of the ranking; or no tool reaching ``threshold``) the selection is marked unsure, with
  the reason, and sends what ``on_no_match`` says: ``"all"`` (every tool, the default: a real
  query wrongly judged unsure still gets its tool) or ``"none"`` (only the always-included tools).
  It never sends a confident-looking list.
* ``similarity`` picks: the best ``top_k`` tools whose ranking score reaches ``threshold``
  (``None``: no threshold). The score is the cosine similarity, plus the lexical bonus when
  hybrid, so the picks are always the head of the ranking. The default, ``"auto"``, is the
  threshold tuned for the index's model on held-apart data (``confidence.TUNED_THRESHOLDS``).
* ``expansion``: the categories of the similarity picks, mapped through ``catalog.expand``, pull
  in other tools of those categories, most similar first, at most ``max_expansion`` of them
  (default: ``top_k``); how many the cap left out is reported. Expansions never cut a pick.
* ``always``: named tools, added last when not already there.
* ``fallback``: when the index is empty, the query is empty, or retrieval fails (embedding
  provider or Chroma), every tool is sent, with a warning saying why (also marked unsure).

``context``: the earlier user messages of the conversation (oldest first). By default
(``context_rule="auto"``) a short newest message is ranked with them folded in
(:mod:`ctxlab.tools.context`); :func:`conversation_query` gives both from a conversation.

A tool's reason is the first rule that picked it.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Iterable, Mapping, Sequence

from ..errors import CtxlabError
from ..i18n import T
from ..conversation import Conversation, Message, ToolDef
from .confidence import (DEFAULT_ON_NO_MATCH, NoMatchRule, check_policy, duplicate_cosine, rule_for,
                         threshold_for)
from .context import ContextRule, context_rule_for
from .lexical import CANDIDATES
from .embeddings import ProviderNotInstalled

REASONS = ("similarity", "expansion", "always", "fallback")
LEXICAL_WEIGHT = 0.15
DEFAULT_THRESHOLD = 0.26  # all-MiniLM-L6-v2's, tuned by benchmarks/bench_tools.py (confidence.TUNED_THRESHOLDS)


class SelectionError(CtxlabError):
    """Bad selection parameters (top_k, threshold, an unknown tool name)."""


@dataclass(frozen=True)
class Ranked:
    """One ranked tool: its ranking score, its cosine similarity to the query, and ``copy_of``:
    the better-ranked tool it nearly duplicates (vectors at least ``confidence.duplicate_cosine``
    alike for the index's model), if any."""

    name: str
    score: float
    similarity: float
    copy_of: str | None = None


@dataclass(frozen=True)
class Ranking:
    """The candidates for one query, best first, with the query vector; ``context``: the earlier
    user messages folded into it with their weights, most recent first (empty: the query alone)."""

    query: str
    items: tuple[Ranked, ...]
    vector: tuple[float, ...]
    warnings: tuple[str, ...] = ()
    context: tuple[tuple[str, float], ...] = ()


@dataclass(frozen=True)
class SelectedTool:
    """A tool chosen for the request, why (one of ``REASONS``, and ``detail`` in words with the
    figures), and what it costs."""

    tool: ToolDef
    reason: str
    similarity: float | None
    tokens: int
    score: float | None = None
    detail: str = ""

    @property
    def name(self) -> str:
        """The tool's name."""
        return self.tool.name


@dataclass(frozen=True)
class Selection:
    """The tools to send, in order, with token costs of all tools vs the selected ones.

    ``confident`` is False when retrieval is unsure, and ``unsure_reason`` says why (which score,
    which floor); ``fallback`` is None, ``"no_match"`` (the query matched nothing well: the
    ``on_no_match`` policy decided what is sent) or ``"all_tools"`` (empty query, empty index, or
    retrieval failed). ``expansion_left_out`` counts the category tools the cap kept out.
    """

    query: str
    tools: tuple[SelectedTool, ...]
    tokens_all: int
    tokens_selected: int
    warnings: tuple[str, ...] = ()
    fallback: str | None = None
    hybrid: bool = True
    confident: bool = True
    unsure_reason: str | None = None
    on_no_match: str = DEFAULT_ON_NO_MATCH
    no_match_rule: NoMatchRule | None = None
    best_score: float | None = None
    expansion_cap: int | None = None
    expansion_left_out: int = 0
    context: tuple[tuple[str, float], ...] = ()

    @property
    def status(self) -> str:
        """``"confident"`` or ``"unsure"``."""
        return "confident" if self.confident else "unsure"

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
        return {"query": self.query, "status": self.status, "confident": self.confident,
                "unsure_reason": self.unsure_reason, "on_no_match": self.on_no_match,
                "no_match_rule": self.no_match_rule.to_dict() if self.no_match_rule else None,
                "best_score": None if self.best_score is None else round(self.best_score, 4),
                "hybrid": self.hybrid, "fallback": self.fallback,
                "tools": [{"name": t.name, "reason": t.reason, "detail": t.detail, "category": t.tool.category,
                           "similarity": None if t.similarity is None else round(t.similarity, 4),
                           "score": None if t.score is None else round(t.score, 4),
                           "tokens": t.tokens} for t in self.tools],
                "context": [{"text": t, "weight": round(w, 4)} for t, w in self.context],
                "expansion_cap": self.expansion_cap, "expansion_left_out": self.expansion_left_out,
                "tokens_all": self.tokens_all, "tokens_selected": self.tokens_selected,
                "saved_ratio": round(self.saved_ratio, 4), "warnings": list(self.warnings)}


def query_from_conversation(conv: Conversation | Sequence[Message], previous_turns: int = 0) -> str:
    """The newest user message's text, optionally after the ``previous_turns`` user messages
    before it (oldest first, one per line). Empty when there is no user message."""
    messages = conv.messages if isinstance(conv, Conversation) else tuple(conv)
    users = [m.text.strip() for m in messages if m.role == "user" and m.text.strip()]
    return "\n".join(users[-(max(0, previous_turns) + 1):]) if users else ""


def conversation_query(conv: Conversation | Sequence[Message]) -> tuple[str, tuple[str, ...]]:
    """(the newest user message's text, the earlier user messages oldest first): the query and
    the ``context`` of :func:`select` for the conversation's next call. ("", ()) without a user message."""
    messages = conv.messages if isinstance(conv, Conversation) else tuple(conv)
    users = [m.text.strip() for m in messages if m.role == "user" and m.text.strip()]
    return (users[-1], tuple(users[:-1])) if users else ("", ())


def _folded(index: Any, queries: Sequence[str], contexts: Sequence[Sequence[str]] | None,
            rule: ContextRule | None) -> tuple[Any, list[list[tuple[str, float]]]]:
    """The query vectors, each with its earlier messages folded in where the rule says so, and
    the (message, weight) pairs folded per query. One embedding call: every text is embedded on
    its own, so an earlier message the index saw as a query comes from its cache."""
    import numpy as np
    folds = [rule.weights(q, c) if rule is not None else [] for q, c in zip(queries, contexts)] \
        if contexts is not None else [[] for _ in queries]
    extra = list(dict.fromkeys(t for f in folds for t, _ in f))
    got = index.embed_queries(list(queries) + extra)
    vectors = np.asarray(got[:len(queries)], dtype=np.float32).reshape(len(queries), -1)
    earlier = dict(zip(extra, got[len(queries):]))
    for i, fold in enumerate(folds):
        if fold:
            v = vectors[i] + sum(w * np.asarray(earlier[t], dtype=np.float32) for t, w in fold)
            vectors[i] = v / (np.linalg.norm(v) or 1.0)
    return vectors, folds


def rank(index: Any, queries: Sequence[str], hybrid: bool = True, candidates: int = CANDIDATES,
         contexts: Sequence[Sequence[str]] | None = None,
         context_rule: ContextRule | str | None = "auto") -> list[Ranking]:
    """Rank every indexed tool for each query by cosine (one matrix product over the index's
    vectors) plus, when hybrid, the lexical bonus; keep the best ``candidates``, each marked
    when it nearly duplicates a better-ranked one. ``contexts``: per query, the earlier user
    messages (oldest first), folded in as ``context_rule`` says (:mod:`ctxlab.tools.context`)."""
    import numpy as np
    if contexts is not None and len(contexts) != len(queries):
        raise SelectionError(f"{len(contexts)} contexts for {len(queries)} queries", where="contexts")
    if not queries:
        return []
    vectors, folds = _folded(index, queries, contexts, context_rule_for(context_rule))
    table = index.table
    warnings: tuple[str, ...] = ()
    lexical = rows = None
    if hybrid:
        try:
            lexical, rows = index.lexical(), index.lexical_rows()
        except ImportError as e:
            warnings = (f"hybrid retrieval is off: {e.name} is not installed",)
    dense = table.scores(vectors) if table.names else np.zeros((len(queries), 0), dtype=np.float32)
    live = index.live_rows()
    dup = duplicate_cosine(index.provider.model_id)
    out = []
    for query, vec, sims, fold in zip(queries, vectors, dense, folds):
        score = sims.copy()
        if lexical is not None and len(score):
            raw = lexical.raw_scores(query)
            for text, w in fold:
                raw = raw + w * lexical.raw_scores(text)
            best = float(raw.max()) if len(raw) else 0.0
            if best > 0:
                score += np.where(rows >= 0, raw[np.maximum(rows, 0)], 0.0).astype(np.float32) * (LEXICAL_WEIGHT / best)
        score[~live] = -np.inf  # a tool removed from the catalog but not yet from the index
        n = min(candidates, int(live.sum()))
        top = np.argpartition(-score, n - 1)[:n] if n else np.zeros(0, dtype=np.int64)
        top = sorted(top.tolist(), key=lambda i: (-float(score[i]), table.names[i]))
        marks = copies(table.matrix[top], dup) if top else []
        items = tuple(Ranked(table.names[i], float(score[i]), float(sims[i]),
                             None if c < 0 else table.names[top[c]]) for i, c in zip(top, marks))
        out.append(Ranking(query, items, tuple(float(x) for x in vec), warnings, tuple(fold)))
    return out


def copies(vectors: Any, at: float) -> list[int]:
    """For each vector (best-ranked first), the position of the first earlier distinct vector it
    nearly duplicates (cosine >= ``at``), or -1."""
    import numpy as np
    close = (np.einsum("id,jd->ij", vectors, vectors, optimize=False) >= at).tolist()  # no BLAS: see VectorTable
    out: list[int] = []
    for i, row in enumerate(close):
        out.append(next((j for j in range(i) if row[j] and out[j] < 0), -1))
    return out


@lru_cache(maxsize=8)
def _func_end(model: str) -> int:
    from ..model_specs import resolve_model
    return resolve_model(model).tools.func_end  # the spec alone: no tokenizer to load


def _check(top_k: int, threshold: float | None, always: Iterable[str], known: Mapping[str, Any],
           max_expansion: int | None = None, on_no_match: str = DEFAULT_ON_NO_MATCH) -> tuple[str, ...]:
    """The parameters checked (one clear error each); returns the always-included names, deduplicated."""
    if not isinstance(top_k, int) or top_k < 1:
        raise SelectionError(f"top_k must be a whole number of at least 1, got {top_k!r}", where="top_k")
    if threshold is not None and (not isinstance(threshold, (int, float)) or not -1.0 <= threshold <= 1.0):
        raise SelectionError(f"threshold must be a similarity between -1 and 1, got {threshold!r}",
                             where="threshold", hint="Use None for no threshold")
    if max_expansion is not None and (not isinstance(max_expansion, int) or max_expansion < 0):
        raise SelectionError(f"max_expansion must be a whole number of 0 or more, got {max_expansion!r}",
                             where="max_expansion", hint="Use None for 'as many as top_k'")
    check_policy(on_no_match)
    always = tuple(dict.fromkeys([always] if isinstance(always, str) else always))
    unknown = [n for n in always if n not in known]
    if unknown:
        raise SelectionError(f"always_include names tools that are not in the catalog: {', '.join(unknown)}",
                             where="always_include", hint="Use names from the catalog")
    return always


def select(index: Any, query: str, top_k: int = 5, threshold: float | str | None = "auto",
           expand_categories: bool = True, always_include: Sequence[str] = (), hybrid: bool = True,
           model: str = "gpt-4o", *, max_expansion: int | None = None, on_no_match: str = DEFAULT_ON_NO_MATCH,
           no_match: NoMatchRule | str | None = "auto", context: Sequence[str] = (),
           context_rule: ContextRule | str | None = "auto") -> Selection:
    """Choose the tools to send for ``query`` (see the module docstring for the rules).

    ``max_expansion``: at most this many tools added by category expansion (None: ``top_k``).
    ``on_no_match``: ``"all"`` or ``"none"``, what an unsure selection sends. ``no_match``: the
    rule that judges a query unsure (``"auto"``: the one tuned for the index's model, if any).
    ``context``: the earlier user messages, oldest first (:func:`conversation_query`), folded into
    a short query as ``context_rule`` says (``"auto"``: the tuned rule; ``"off"``: the query alone)."""
    if isinstance(context, str):
        raise SelectionError("context must be a list of earlier user messages, not one string", where="context",
                             hint="Pass [message, ...] (oldest first), or use conversation_query(conv)")
    context_rule = context_rule_for(context_rule)
    threshold = threshold_for(threshold, index.provider.model_id)
    always = _check(top_k, threshold, always_include, index.tools_by_name, max_expansion, on_no_match)
    rule = rule_for(no_match, index.provider.model_id, hybrid)
    reason = None
    if not query.strip():
        reason = "the query is empty"
    elif index.count == 0:
        reason = "the tool index is empty (not built yet); build it with `ctxlab tools index` or ToolIndex.build()"
    if reason is None:
        try:
            ranking = rank(index, [query], hybrid, contexts=[tuple(context)], context_rule=context_rule)[0]
            return from_ranking(index, ranking, top_k, threshold, expand_categories, always, hybrid, model,
                                max_expansion=max_expansion, on_no_match=on_no_match, no_match=rule)
        except ProviderNotInstalled:  # a set-up problem: said once, not hidden behind "every tool is sent"
            raise
        except Exception as e:  # a provider or store failure must not leave the agent without tools
            reason = f"tool retrieval failed ({type(e).__name__}: {e})"
    warning = f"{reason}: sending all {len(index.catalog)} tools"
    chosen = [(n, "fallback", None, None, "retrieval did not run (see unsure_reason): every tool is sent")
              for n in index.catalog.names]
    return _selection(index, query, chosen, [warning], model,
                      dict(fallback="all_tools", hybrid=hybrid, confident=False, unsure_reason=reason,
                           on_no_match=on_no_match, no_match_rule=rule))


def from_ranking(index: Any, ranking: Ranking, top_k: int = 5, threshold: float | str | None = "auto",
                 expand_categories: bool = True, always: Sequence[str] = (), hybrid: bool = True,
                 model: str = "gpt-4o", *, max_expansion: int | None = None,
                 on_no_match: str = DEFAULT_ON_NO_MATCH, no_match: NoMatchRule | str | None = "auto") -> Selection:
    """The selection for an already ranked query (used by ``select`` and by the evaluation)."""
    rule = rule_for(no_match, index.provider.model_id, hybrid)
    threshold = threshold_for(threshold, index.provider.model_id)
    warnings = list(ranking.warnings)
    pending = index.pending()
    if pending:
        warnings.append(f"{pending} tool(s) changed since the index was built; rebuild it to include them")
    items = ranking.items
    best = items[0].score if items else None
    picks = [r for r in items if threshold is None or r.score >= threshold][:top_k]
    unsure = rule.judge([r.score for r in items if r.copy_of is None]) if rule else None  # distinct tools
    if unsure is None and not picks:
        unsure = (T("no tool reached the threshold {threshold:.2f} (best score {best:.3f})", threshold=threshold, best=best) if items
                  else T("no tool was ranked"))
    sims = {r.name: r.similarity for r in items}
    scores = {r.name: r.score for r in items}
    meta = dict(hybrid=hybrid, on_no_match=on_no_match, no_match_rule=rule, best_score=best, context=ranking.context)
    if unsure:
        return _no_match(index, ranking, always, model, warnings, unsure, sims, scores, meta)
    chosen = [(r.name, "similarity", r.similarity, r.score, _pick_detail(i, r, threshold, hybrid))
              for i, r in enumerate(picks, 1)]
    picked = [r.name for r in picks]
    cap = top_k if max_expansion is None else max_expansion
    found = _expansions(index, picked) if expand_categories else []
    _fill(index, ranking, sims, [n for n, _, _ in found] + [n for n in always if n not in picked])
    found.sort(key=lambda x: -sims.get(x[0], -2.0))
    kept, left_out = found[:cap], max(0, len(found) - cap)
    chosen += [(n, "expansion", sims.get(n), scores.get(n), f"category {cat!r} of the pick {src}")
               for n, src, cat in kept]
    have = {c[0] for c in chosen}
    chosen += [(n, "always", sims.get(n), scores.get(n), "always included") for n in always if n not in have]
    return _selection(index, ranking.query, chosen, warnings, model,
                      dict(meta, expansion_cap=cap if expand_categories else None, expansion_left_out=left_out))


def _pick_detail(rank_no: int, r: Ranked, threshold: float | None, hybrid: bool) -> str:
    score = (f"score {r.score:.3f} (cosine {r.similarity:.3f} + lexical {r.score - r.similarity:.3f})"
             if hybrid else f"cosine {r.similarity:.3f}")
    cut = "no threshold" if threshold is None else f"threshold {threshold:.2f} reached"
    return f"rank {rank_no}: {score}, {cut}"


def _no_match(index: Any, ranking: Ranking, always: Sequence[str], model: str, warnings: list[str], unsure: str,
              sims: dict[str, float], scores: dict[str, float], meta: dict[str, Any]) -> Selection:
    """The selection of a query that matched nothing well: what ``on_no_match`` says, and why."""
    if meta["on_no_match"] == "all":
        names = list(index.catalog.names)
        _fill(index, ranking, sims, names)
        names.sort(key=lambda n: -scores.get(n, sims.get(n, -2.0)))
        chosen = [(n, "fallback", sims.get(n), scores.get(n), f"unsure ({unsure}): on_no_match='all' sends every tool")
                  for n in names]
        sent = f"sending all {len(names)} tools (on_no_match='all')"
    else:
        _fill(index, ranking, sims, always)
        chosen = [(n, "always", sims.get(n), scores.get(n), "always included, even when unsure") for n in always]
        sent = "sending no tools (on_no_match='none')" + (
            f" except the {len(always)} always included" if always else "")
    warnings.append(f"unsure: the query matches no tool well ({unsure}); {sent}")
    return _selection(index, ranking.query, chosen, warnings, model,
                      dict(meta, fallback="no_match", confident=False, unsure_reason=unsure))


def _fill(index: Any, ranking: Ranking, sims: dict[str, float], names: Iterable[str]) -> None:
    """Add the cosine similarity of tools outside the ranked candidates."""
    missing = [n for n in names if n not in sims]
    if missing:
        sims.update(index.similarities(ranking.vector, missing))


def _expansions(index: Any, picked: Sequence[str]) -> list[tuple[str, str, str]]:
    """(tool, the pick whose category pulled it in, the category) for every other tool of the
    categories the picks map to."""
    tools, catalog = index.tools_by_name, index.catalog
    source: dict[str, str] = {}
    for n in picked:
        if tools[n].category:
            for c in catalog.expand(tools[n].category):
                source.setdefault(c, n)
    return [(t.name, source[t.category], t.category) for t in catalog.tools
            if t.category in source and t.name not in picked]


def _selection(index: Any, query: str, chosen: Sequence[tuple[str, str, float | None, float | None, str]],
               warnings: list[str], model: str, fields: dict[str, Any]) -> Selection:
    costs = index.token_costs(model)
    end = _func_end(model)
    tools = tuple(SelectedTool(index.tools_by_name[n], why, sim, costs[n], score, detail)
                  for n, why, sim, score, detail in chosen)
    total = sum(costs.values()) + (end if costs else 0)
    selected = sum(t.tokens for t in tools) + (end if tools else 0)
    return Selection(query, tools, total, selected, tuple(warnings), **fields)
