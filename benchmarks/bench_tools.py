"""Tool retrieval on real labeled data, and index/query speed at 2,000 tools.

Targets (tool retrieval issue): BFCL multi-turn (128 tools, 731 queries) Recall@5 >= 0.85 with the
default offline setup and tool-definition tokens cut >= 75% at k=5; MetaTool sample Recall@5 >= 0.60;
query p50 < 20 ms on a 2,000-tool index (query embedding included); re-index of an unchanged
2,000-tool catalog < 2 s; cold indexing time stated. Prints figures, ablations and ratios; asserts
nothing (see benchmarks/README.md). Needs ../shared/data; uses a temporary Chroma store.

    python benchmarks/bench_tools.py [--skip-bfcl] [--skip-metatool] [--skip-scale] [--scale-tools 2000]
"""
from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, Sequence

from ctxlab.conversation import ToolDef
from ctxlab.tools.select import DEFAULT_THRESHOLD
from ctxlab.tools import (LexicalIndex, ToolCatalog, ToolIndex, evaluate, get_provider, gold_aliases,
                          load_queries, sweep)

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
BFCL = DATA / "bfcl" / "retrieval_multi_turn"
META = DATA / "metatool"


class CachedProvider:
    """The real provider, remembering vectors by text so ablations embed each query once."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.model_id, self.dimensions = inner, inner.model_id, inner.dimensions
        self.memo: dict[str, list[float]] = {}

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        todo = [t for t in dict.fromkeys(texts) if t not in self.memo]
        for t, v in zip(todo, self.inner.embed(todo) if todo else []):
            self.memo[t] = v
        return [self.memo[t] for t in texts]


def _row(label: str, r: dict[str, Any]) -> None:
    print(f"  {label:<44} R@1 {r['recall@1']:.3f}  R@5 {r['recall@5']:.3f}  R@10 {r['recall@10']:.3f}"
          f"  MRR {r['mrr']:.3f}  sel {r['mean_selected']:5.1f}  sel-recall {r['selection_recall']:.3f}"
          f"  tokens {r['tokens_selected_mean']:7.1f}/{r['tokens_all']} (cut {r['tokens_saved_ratio']:.1%})")


def _bm25(catalog: ToolCatalog, queries: list) -> None:
    from ctxlab.tools import embedding_text
    lex = LexicalIndex(catalog.names, [embedding_text(t) for t in catalog.tools])
    aliases = gold_aliases(catalog)
    out = {}
    for k in (1, 5, 10):
        rec = []
        for q in queries:
            top = list(lex.scores(q.query, k))
            gold = {aliases.get(g, g) for g in q.gold_tools}
            rec.append(len(gold.intersection(top)) / len(gold))
        out[f"recall@{k}"] = statistics.mean(rec)
    print(f"  {'BM25 alone (bm25s)':<44} R@1 {out['recall@1']:.3f}  R@5 {out['recall@5']:.3f}"
          f"  R@10 {out['recall@10']:.3f}")


def _open(catalog: ToolCatalog, provider: Any, store: Path, **kw: Any) -> ToolIndex:
    index = ToolIndex(catalog, provider, path=store, **kw)
    report = index.build()
    print(f"  indexed {report.total} tools in {report.seconds:.1f} s ({report.embedded} embedded)")
    return index


def _variants(title: str, catalog: ToolCatalog, queries: list, provider: Any, store: Path):
    """BM25 alone, then the default and its dense / no-prefix variants; returns (index, default row)."""
    print(f"\n{title}: {len(catalog)} tools, {len(queries)} queries")
    index = _open(catalog, provider, store)
    _bm25(catalog, queries)
    default = evaluate(index, queries)
    _row("DEFAULT: hybrid + query prefix, k=5", default)
    _row("dense only (+ prefix)", evaluate(index, queries, hybrid=False))
    plain = ToolIndex(catalog, provider, path=store, query_prefix="")
    _row("dense only, no prefix (plain MiniLM)", evaluate(plain, queries, hybrid=False))
    _row("hybrid, no prefix", evaluate(plain, queries))
    return index, default


def bench_bfcl(provider: Any, store: Path) -> None:
    catalog = replace(ToolCatalog.load(BFCL / "tools.json"), name="bfcl")
    queries = load_queries(BFCL / "queries.jsonl")
    index, default = _variants("BFCL multi-turn", catalog, queries, provider, store)
    for n in (1, 2):
        _row(f"default + {n} previous user turn(s) joined", evaluate(index, queries, previous_turns=n))
    _row("default + category expansion (selection)", evaluate(index, queries, expand_categories=True))
    _row("select()'s defaults: threshold 0.2, expansion", evaluate(index, queries, threshold=DEFAULT_THRESHOLD,
                                                                   expand_categories=True))
    for t in (0.2, 0.3, 0.4):
        _row(f"default, threshold {t} (selection)", evaluate(index, queries, threshold=t))
    print("  sweep (selection recall / tokens cut), threshold none:")
    for row in sweep(index, queries, ks=(1, 3, 5, 8, 10, 15), thresholds=(None,)):
        print(f"    k={row['k']:<3} recall {row['selection_recall']:.3f}  tokens cut {row['tokens_saved_ratio']:.1%}")
    print(f"  TARGET R@5 >= 0.85: {default['recall@5']:.3f} ({default['recall@5'] / 0.85:.2f}x);"
          f" tokens cut >= 75% at k=5: {default['tokens_saved_ratio']:.1%}")


def bench_metatool(provider: Any, store: Path) -> None:
    catalog = replace(ToolCatalog.load(META / "tools.json"), name="metatool")
    queries = load_queries(META / "queries_single_tool_sample3000.jsonl")
    _, default = _variants("MetaTool sample", catalog, queries, provider, store)
    print(f"  TARGET R@5 >= 0.60: {default['recall@5']:.3f} ({default['recall@5'] / 0.60:.2f}x)")


def synthetic_catalog(n: int) -> ToolCatalog:
    """``n`` tools from BFCL + MetaTool, repeated with numbered names, descriptions and categories
    (BFCL's classes become e.g. ``TravelAPI_3``; MetaTool's tools have none, as in the data)."""
    base = list(ToolCatalog.load(BFCL / "tools.json").tools) + list(ToolCatalog.load(META / "tools.json").tools)
    tools: list[ToolDef] = []
    for i in range(n):
        t, copy = base[i % len(base)], i // len(base)
        tools.append(replace(t, name=f"{t.name}_{copy}", description=f"{t.description} (edition {copy})",
                             category=f"{t.category}_{copy}" if t.category else None))
    return ToolCatalog.from_tools(tools, name=f"synthetic-{n}")


def bench_scale(provider: Any, store: Path, n: int, queries: int) -> None:
    catalog = synthetic_catalog(n)
    print(f"\nScale: {len(catalog)} synthesized tools (BFCL + MetaTool, numbered copies)")
    index = ToolIndex(catalog, provider, path=store)
    start = time.perf_counter()
    cold = index.build()
    print(f"  cold index: {cold.embedded} tools embedded in {time.perf_counter() - start:.1f} s"
          f" ({1000 * cold.seconds / max(cold.embedded, 1):.1f} ms/tool)")
    start = time.perf_counter()
    reopened = ToolIndex(catalog, provider, path=store, query_cache=0)  # every query embedded
    again = reopened.build()
    print(f"  re-index, nothing changed (open + build): {time.perf_counter() - start:.2f} s"
          f" (build alone {again.seconds * 1000:.1f} ms, embedded {again.embedded}); target < 2 s")
    texts = [q.query for q in load_queries(BFCL / "queries.jsonl")][:queries // 2]
    texts += [q.query for q in load_queries(META / "queries_single_tool_sample3000.jsonl")][:queries - len(texts)]
    reopened.select(texts[0])  # loads the model, the BM25 index and the stored vectors once
    cached = ToolIndex(catalog, provider, path=store)
    runs: dict[str, list[float]] = {"query embedding alone": [], "select, default (hybrid, expansion)": [],
                                    "select, dense only, no expansion": [], "select again, same message (cached)": []}
    calls = [lambda q: reopened.embed_queries([q]), lambda q: reopened.select(q),
             lambda q: reopened.select(q, hybrid=False, expand_categories=False),
             lambda q: cached.select(q, top_k=8)]
    for q in texts:
        cached.select(q)
    for q in texts:  # interleaved, so that load from other processes hits all three alike
        for times, call in zip(runs.values(), calls):
            t = time.perf_counter()
            call(q)
            times.append(1000 * (time.perf_counter() - t))
    for label, times in runs.items():
        times.sort()
        print(f"  {label:<38} p50 {statistics.median(times):5.1f} ms  p95 {times[int(0.95 * len(times))]:5.1f} ms")
    print(f"  ({len(texts)} queries, half BFCL, half MetaTool; target select p50 < 20 ms;"
          f" load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--provider", default="local")
    ap.add_argument("--skip-bfcl", action="store_true")
    ap.add_argument("--skip-scale", action="store_true")
    ap.add_argument("--skip-metatool", action="store_true")
    ap.add_argument("--scale-tools", type=int, default=2000)
    ap.add_argument("--scale-queries", type=int, default=200)
    a = ap.parse_args()
    if not BFCL.is_dir():
        raise SystemExit(f"real data not found at {DATA}")
    provider = CachedProvider(get_provider(a.provider))
    with tempfile.TemporaryDirectory() as tmp:
        store = Path(tmp)
        if not a.skip_bfcl:
            bench_bfcl(provider, store)
        if not a.skip_metatool:
            bench_metatool(provider, store)
        if not a.skip_scale:
            bench_scale(get_provider(a.provider), store, a.scale_tools, a.scale_queries)


if __name__ == "__main__":
    main()
