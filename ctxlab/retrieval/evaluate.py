"""How well a ToolIndex retrieves the right tools, and what the selection costs in tokens.

Queries come as JSON Lines: ``{"query": ..., "gold_tools": [...]}`` plus optional
``previous_user_turns`` (older user messages of the same conversation, oldest first) and ``qid``.

Two kinds of figures, kept apart:

* ranking: ``recall@K`` is the share of a query's gold tools found among the K best-ranked tools,
  averaged over queries (no threshold, no expansion: the standard definition); ``mrr`` is the
  mean of 1 / rank of the first gold tool (0 when it is not among the candidates).
* selection: what :func:`~ctxlab.retrieval.select.select` would send with ``top_k``, ``threshold`` and
  ``expand_categories``: mean tools selected, ``selection_recall`` (gold tools inside the
  selection, expansions included), tool-definition tokens of all tools vs the selection (mean),
  and ``unsure``: how many queries the no-match rule (or the threshold) judged unsure.

Each query is ranked as :func:`~ctxlab.retrieval.select.select` ranks it by default: a short query
with its ``previous_user_turns`` folded in (``context_rule="auto"``, :mod:`ctxlab.retrieval.context`);
``previous_turns=N`` instead joins the N earlier turns to the text, and ``context_rule="off"``
ranks the newest message alone.

Gold names that are not tool names are looked up in the tools' ``x_*_name`` fields (MetaTool's
``x_metatool_name`` keeps names such as ``PDF&URLTool``); the rest count as misses and are
reported as ``unknown_gold``.
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from ..errors import CtxlabError
from .catalog import ToolCatalog
from .context import context_rule_for as context_for
from .select import Ranking, from_ranking, rank


class QueriesError(CtxlabError):
    """A queries file that cannot be read as labeled queries."""


@dataclass(frozen=True)
class EvalQuery:
    """One labeled query: the text, the tools that should be retrieved, the earlier user turns."""

    query: str
    gold_tools: tuple[str, ...]
    previous_user_turns: tuple[str, ...] = ()
    qid: str = ""

    def text(self, previous_turns: int = 0) -> str:
        """The query, after up to ``previous_turns`` earlier user turns (one per line)."""
        prev = list(self.previous_user_turns[-previous_turns:]) if previous_turns > 0 else []
        return "\n".join(prev + [self.query])


def parse_query(obj: Any, where: str) -> EvalQuery:
    """One query object, checked; errors name the line."""
    if not isinstance(obj, Mapping):
        raise QueriesError("a query must be a JSON object", where=where)
    query, gold = obj.get("query"), obj.get("gold_tools")
    if not isinstance(query, str) or not query.strip():
        raise QueriesError("'query' must be a non-empty string", where=where)
    if not isinstance(gold, list) or not gold or not all(isinstance(g, str) for g in gold):
        raise QueriesError("'gold_tools' must be a non-empty list of tool names", where=where)
    prev = obj.get("previous_user_turns") or []
    if not isinstance(prev, list) or not all(isinstance(p, str) for p in prev):
        raise QueriesError("'previous_user_turns' must be a list of strings", where=where)
    return EvalQuery(query, tuple(gold), tuple(prev), str(obj.get("qid", "")))


def load_queries(path: str | Path) -> list[EvalQuery]:
    """Labeled queries from a JSONL file (blank lines skipped)."""
    p = Path(path)
    if not p.is_file():
        raise QueriesError(f"no such file: {path}", where="queries", hint="Give a .jsonl file of labeled queries")
    out = []
    for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            raise QueriesError(f"not JSON ({e.msg})", where=f"{p.name} line {n}") from None
        out.append(parse_query(obj, f"{p.name} line {n}"))
    if not out:
        raise QueriesError("the file holds no queries", where=p.name)
    return out


def gold_aliases(catalog: ToolCatalog) -> dict[str, str]:
    """Other names of tools, from their ``x_*_name`` fields: alias -> tool name."""
    return {v: t.name for t in catalog.tools for k, v in t.extra.items()
            if k.startswith("x_") and k.endswith("_name") and isinstance(v, str) and v != t.name}


def _as_queries(queries: Iterable[EvalQuery | Mapping[str, Any]]) -> list[EvalQuery]:
    out = [q if isinstance(q, EvalQuery) else parse_query(q, f"queries[{i}]") for i, q in enumerate(queries)]
    if not out:
        raise QueriesError("no queries to evaluate", where="queries")
    return out


def _rankings(index: Any, queries: Sequence[EvalQuery], hybrid: bool, previous_turns: int,
              depth: int, context_rule: Any = "auto") -> tuple[list[Ranking], list[set[str]], int]:
    if index.count == 0:
        raise QueriesError("the tool index is empty", where=index.name, hint="Build it first (ctxlab tools index)")
    aliases = gold_aliases(index.catalog)
    known = set(index.catalog.names)
    golds = [{aliases.get(g, g) for g in q.gold_tools} for q in queries]
    unknown = sum(g not in known for gs in golds for g in gs)
    contexts = None if previous_turns > 0 else [q.previous_user_turns for q in queries]  # joined: no folding
    rankings = rank(index, [q.text(previous_turns) for q in queries], hybrid, max(depth, 50), contexts, context_rule)
    return rankings, golds, unknown


def _recall(names: Sequence[str], gold: set[str]) -> float:
    return len(gold.intersection(names)) / len(gold)


def _mean(xs: Sequence[float]) -> float:
    return sum(xs) / len(xs) if xs else 0.0


def evaluate(index: Any, queries: Iterable[EvalQuery | Mapping[str, Any]], ks: Sequence[int] = (1, 5, 10),
             threshold: float | None = None, hybrid: bool = True, previous_turns: int = 0, top_k: int = 5,
             expand_categories: bool = False, model: str = "gpt-4o", *, max_expansion: int | None = None,
             on_no_match: str = "all", no_match: Any = "off", context_rule: Any = "auto") -> dict[str, Any]:
    """Ranking figures (``recall@K``, ``mrr``) and selection figures (see the module docstring).
    ``no_match`` is off by default (the figures of the ranking itself); ``"auto"`` applies the
    tuned no-match rule, and ``on_no_match`` then says what the unsure queries send.
    ``context_rule``: how earlier turns fold into short queries (``"off"``: the newest alone)."""
    qs = _as_queries(queries)
    start = time.perf_counter()
    rankings, golds, unknown = _rankings(index, qs, hybrid, previous_turns, max(ks), context_rule)
    out: dict[str, Any] = {"queries": len(qs)}
    for k in ks:
        out[f"recall@{k}"] = round(_mean([_recall([r.name for r in rk.items[:k]], g)
                                          for rk, g in zip(rankings, golds)]), 4)
    out["mrr"] = round(_mean([_reciprocal_rank(rk, g) for rk, g in zip(rankings, golds)]), 4)
    opts = dict(max_expansion=max_expansion, on_no_match=on_no_match, no_match=no_match)
    sels = [from_ranking(index, rk, top_k, threshold, expand_categories, (), hybrid, model, **opts) for rk in rankings]
    out.update(_selection_figures(sels, golds))
    seconds = time.perf_counter() - start
    out.update(unknown_gold=unknown, top_k=top_k, threshold=threshold, hybrid=hybrid,
               expand_categories=expand_categories, max_expansion=max_expansion, on_no_match=on_no_match,
               no_match=no_match if isinstance(no_match, (str, type(None))) else no_match.to_dict(),
               previous_turns=previous_turns, model_id=index.provider.model_id,
               context_rule=getattr(context_for(context_rule), "to_dict", lambda: None)(),
               folded=sum(bool(rk.context) for rk in rankings),
               seconds=round(seconds, 2), ms_per_query=round(1000 * seconds / len(qs), 2))
    return out


def _reciprocal_rank(ranking: Ranking, gold: set[str]) -> float:
    for i, r in enumerate(ranking.items, 1):
        if r.name in gold:
            return 1.0 / i
    return 0.0


def _selection_figures(sels: Sequence[Any], golds: Sequence[set[str]]) -> dict[str, Any]:
    tokens_all = sels[0].tokens_all if sels else 0
    tokens_selected = _mean([s.tokens_selected for s in sels])
    return {"mean_selected": round(_mean([len(s.tools) for s in sels]), 2),
            "selection_recall": round(_mean([_recall(s.names, g) for s, g in zip(sels, golds)]), 4),
            "tokens_all": tokens_all, "tokens_selected_mean": round(tokens_selected, 1),
            "tokens_saved_ratio": round(1 - tokens_selected / tokens_all, 4) if tokens_all else 0.0,
            "unsure": sum(not s.confident for s in sels)}


def sweep(index: Any, queries: Iterable[EvalQuery | Mapping[str, Any]], ks: Sequence[int] = (1, 2, 3, 5, 8, 10, 15, 20),
          thresholds: Sequence[float | None] = (None, 0.2, 0.3, 0.4, 0.5), hybrid: bool = True,
          previous_turns: int = 0, expand_categories: bool = False, model: str = "gpt-4o", *,
          max_expansion: int | None = None, on_no_match: str = "all", no_match: Any = "off",
          context_rule: Any = "auto") -> list[dict[str, Any]]:
    """Selection recall and tokens for every (k, threshold): one row each, for a chart.
    The queries are embedded and ranked once."""
    opts = dict(max_expansion=max_expansion, on_no_match=on_no_match, no_match=no_match)
    qs = _as_queries(queries)
    rankings, golds, _ = _rankings(index, qs, hybrid, previous_turns, max(ks), context_rule)
    rows = []
    for threshold in thresholds:
        for k in ks:
            sels = [from_ranking(index, rk, k, threshold, expand_categories, (), hybrid, model, **opts)
                    for rk in rankings]
            rows.append({"k": k, "threshold": threshold, **_selection_figures(sels, golds)})
    return rows
