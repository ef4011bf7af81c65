"""The context rule of tool retrieval (ctxlab/retrieval/context.py): tuned on the tuning halves, and
the time a follow-up's query costs. Used by bench_tools_zh.py (``--tune-context``, and the query
times); asserts nothing.

Tuning: every default model on the sets it is the default for (USE multilingual: ACEBench Chinese
and English; MiniLM: BFCL multi-turn, its two near-duplicate catalogs, ACEBench English; the sets
without earlier turns, zh-mixed and MetaTool, cannot change). For each weight and depth, every
tuning query with earlier turns is ranked folded; the word limit then picks which queries use
the folded ranking. The rule kept: the best mean top-5 recall over those sets among the rules
that lower no set's tuning recall below the newest-turn-alone figure.
"""
from __future__ import annotations

import statistics
import time
from pathlib import Path
from typing import Any

from ctxlab.retrieval import ToolIndex, get_provider
from ctxlab.retrieval.context import TUNED_CONTEXT, ContextRule
from ctxlab.retrieval.lexical import tokenize
from ctxlab.retrieval.select import rank

DEFAULT_SETS = {"use": ("ace-zh", "ace-en"), "local": ("bfcl", "dup", "numbered", "ace-en")}
WEIGHTS = tuple(round(0.1 * i, 1) for i in range(1, 11))
WORDS = tuple(range(0, 31, 2)) + (10 ** 6,)
DEPTHS = (1, 2, None)
ANY_COPY = ("dup", "numbered")  # any copy of a gold tool counts, as in bench_tools_zh


def _recall(names: list[str], gold: set[str], any_copy: bool) -> float:
    top = set(names[:5])
    return float(bool(gold & top)) if any_copy else len(gold & top) / len(gold)


def per_query(sets: dict, provider: Any, store: Path, names: tuple[str, ...], gold_of: Any, half: Any,
              which: str) -> dict[str, list[tuple[int, float, dict | None]]]:
    """Per set: for each query of the ``which`` half, (its words, recall@5 alone, recall@5 folded
    per (weight, depth) or None when it has no earlier turn)."""
    out = {}
    for name in names:
        d = sets[name]
        index = ToolIndex(d["catalog"], provider, path=store)
        index.build()
        qs = [q for q in d["queries"] if half(q.qid) == which]
        golds = [gold_of(name, d["catalog"], q.gold_tools) for q in qs]
        alone = rank(index, [q.query for q in qs], context_rule="off")
        folded = {}
        multi = [i for i, q in enumerate(qs) if q.previous_user_turns]
        for w in WEIGHTS:
            for depth in DEPTHS:
                rule = ContextRule(w, 10 ** 6, depth)
                got = rank(index, [qs[i].query for i in multi], contexts=[qs[i].previous_user_turns for i in multi],
                           context_rule=rule)
                folded[(w, depth)] = dict(zip(multi, got))
        rows = []
        for i, (q, g, rk) in enumerate(zip(qs, golds, alone)):
            base = _recall([r.name for r in rk.items], g, name in ANY_COPY)
            fold = {k: _recall([r.name for r in v[i].items], g, name in ANY_COPY) for k, v in folded.items()} \
                if i in folded[(WEIGHTS[0], DEPTHS[0])] else None
            rows.append((len(tokenize(q.query)), base, fold))
        out[name] = rows
    return out


def recall_with(rows: list, w: float, words: int, depth: int | None) -> float:
    """Mean recall@5 of a set when the rule (w, words, depth) decides which queries fold."""
    return statistics.mean(f[(w, depth)] if f is not None and n <= words else b for n, b, f in rows)


def tune_context(sets: dict, providers: list[str], store: Path, memo: Any, gold_of: Any, half: Any) -> None:
    """Print the rule tuned on the tuning halves, its held-out figures, and the library's."""
    tables = {}
    for p in providers:
        if p in DEFAULT_SETS:
            prov = memo(get_provider(p))
            names = tuple(n for n in DEFAULT_SETS[p] if n in sets)
            tables[p] = {h: per_query(sets, prov, store, names, gold_of, half, h) for h in ("tune", "held")}
    tune = {(p, n): rows for p, t in tables.items() for n, rows in t["tune"].items()}
    base = {k: statistics.mean(b for _, b, _ in rows) for k, rows in tune.items()}
    best = None
    for w in WEIGHTS:
        for depth in DEPTHS:
            for words in WORDS:
                r = {k: recall_with(rows, w, words, depth) for k, rows in tune.items()}
                if any(r[k] < base[k] - 1e-9 for k in r):
                    continue
                key = (statistics.mean(r.values()), -words, -w)
                if best is None or key > best[0]:
                    best = (key, ContextRule(w, words, depth), r)
    print(f"  sets: " + ", ".join(f"{p}:{n} ({sum(f is not None for _, _, f in rows)} of {len(rows)} tuning "
                                 f"queries with earlier turns)" for (p, n), rows in tune.items()))
    print("  tuning halves, R@5 newest turn alone: " + ", ".join(f"{p}:{n} {v:.3f}" for (p, n), v in base.items()))
    if best is None:
        print("  no rule keeps every set at its newest-turn-alone recall")
        return
    rule = best[1]
    print(f"  tuned: weight {rule.weight}, max_words {rule.max_words}, depth {rule.depth}: "
          + ", ".join(f"{p}:{n} {v:.3f}" for (p, n), v in best[2].items()))
    print(f"  library (TUNED_CONTEXT): {TUNED_CONTEXT.to_dict()}" + ("  SAME" if rule == TUNED_CONTEXT else "  DIFFERS"))
    held = {(p, n): rows for p, t in tables.items() for n, rows in t["held"].items()}
    print("  held out, R@5 alone -> with the tuned rule (no threshold, no expansion):")
    for (p, n), rows in held.items():
        a = statistics.mean(b for _, b, _ in rows)
        f = recall_with(rows, rule.weight, rule.max_words, rule.depth)
        changed = [(fo[(rule.weight, rule.depth)] - b) for nw, b, fo in rows if fo is not None and nw <= rule.max_words]
        print(f"    {p}:{n:<9} {a:.3f} -> {f:.3f}  ({len(changed)} of {len(rows)} folded: "
              f"{sum(c > 0 for c in changed)} better, {sum(c < 0 for c in changed)} worse)")


def conversation_times(d: dict, provider: Any, store: Path, n: int, half: Any) -> str:
    """A follow-up's select() time as an agent loop pays it (the previous turn was selected for
    just before, so its vector is in the query cache) and from a cold cache, against embedding
    the newest turn alone; medians over ``n`` held-out follow-ups the rule folds."""
    warm = ToolIndex(d["catalog"], provider, path=store)
    qs = [q for q in d["queries"] if half(q.qid) == "held" and q.previous_user_turns
          and TUNED_CONTEXT.weights(q.query, q.previous_user_turns)][:n]
    if not qs:
        return "no held-out follow-up is folded"
    warm.select(qs[0].query)
    embed = getattr(provider, "embed_queries", None) or provider.embed
    sel, cold, emb = [], [], []
    for q in qs:
        for earlier in q.previous_user_turns:
            warm.select(earlier)  # the earlier turns, as the loop selected for them
        t = time.perf_counter()
        embed([warm.query_prefix + q.query])
        emb.append(time.perf_counter() - t)
        t = time.perf_counter()
        warm.select(q.query, context=q.previous_user_turns)
        sel.append(time.perf_counter() - t)
        warm._query_cache.clear()  # noqa: SLF001 -- the cold case: nothing embedded before
        t = time.perf_counter()
        warm.select(q.query, context=q.previous_user_turns)
        cold.append(time.perf_counter() - t)
    s, c, e = (statistics.median(x) for x in (sel, cold, emb))
    return (f"{len(qs)} folded follow-ups: select {1000 * s:.1f} ms (earlier turns cached), {1000 * c:.1f} ms "
            f"(cold), embedding the newest turn alone {1000 * e:.1f} ms: ratio {s / e:.2f}x (cold {c / e:.2f}x)")
