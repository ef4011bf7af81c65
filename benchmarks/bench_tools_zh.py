"""Tool retrieval in Chinese, English and mixed text, per embedding model: tuning on one half of
every set, held-out figures on the other, and the time to index and to answer.

Sets (queries split by sha256(qid) parity, as benchmarks/bench_tools.py does):
  bfcl, metatool (a fixed sample of --metatool-queries): English, real (../shared/data)
  dup: BFCL's 128 tools offered by three "servers" (same description, prefixed names) plus
       MetaTool: the near-duplicate catalog; BFCL's queries, any copy of a gold tool counts
  ace-zh, ace-en: ACEBench (MIT) multi-turn, special and agent categories only (benchmarks/acebench.py)
  zh-mixed: this project's own Chinese / mixed catalog and queries (benchmarks/data)
  ecommerce: sample_data, never tuned on (held out whole)
Junk (queries no tool should answer): benchmarks/junk_queries.jsonl for English sets,
benchmarks/data/junk_queries_zh.jsonl and ACEBench's special_irrelevant for the Chinese ones.

    python benchmarks/bench_tools_zh.py --acebench ACEBENCH_CHECKOUT_OR_GIT_DIR \\
        [--providers local,multilingual,use] [--metatool-queries 600] [--timing-queries 30]
        [--context auto|off]   # earlier turns folded into short queries (select()'s default) or not
    python benchmarks/bench_tools_zh.py --acebench DIR --providers use,local --tune-context

Vectors are remembered on disk between runs ($CTXLAB_BENCH_CACHE, default a folder in /tmp) so a
re-run embeds nothing it embedded before; timings always use the model itself. Asserts nothing.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import pickle
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, Sequence

sys.path.insert(0, str(Path(__file__).resolve().parent))
import acebench  # noqa: E402
import tools_context  # noqa: E402
from bench_tools import BFCL, META, ROOT, JUNK, half, synthetic_catalog  # noqa: E402

from ctxlab.retrieval import ToolCatalog, ToolIndex, get_provider, gold_aliases, load_queries  # noqa: E402
from ctxlab.retrieval import confidence  # noqa: E402
from ctxlab.retrieval.confidence import NoMatchRule, TUNED_RULES, TUNED_THRESHOLDS  # noqa: E402
from ctxlab.retrieval.evaluate import parse_query  # noqa: E402
from ctxlab.retrieval.select import copies, from_ranking, rank  # noqa: E402

DATA = Path(__file__).resolve().parent / "data"
TUNED_SETS = ("bfcl", "metatool", "dup", "numbered", "ace-zh", "ace-en", "zh-mixed")
DUP_CANDIDATES = (0.85, 0.88, 0.90, 0.92, 0.94, 0.96, 0.98, 1.01)  # 1.01: copies never collapsed
MAX_FALSE_ALARMS = 0.02
MAX_RECALL_LOSS = 0.01


class DiskMemo:
    """A provider whose vectors are remembered on disk by (model, kind, text)."""

    def __init__(self, inner: Any, folder: Path) -> None:
        self.inner, self.model_id, self.dimensions = inner, inner.model_id, inner.dimensions
        self.query_prefix = getattr(inner, "query_prefix", "")
        self.file = folder / f"{hashlib.sha1(inner.model_id.encode()).hexdigest()[:12]}.pkl"
        self.memo: dict = pickle.loads(self.file.read_bytes()) if self.file.is_file() else {}

    def _get(self, texts: Sequence[str], kind: str, embed: Any) -> list:
        todo = [t for t in dict.fromkeys(texts) if (kind, t) not in self.memo]
        for i in range(0, len(todo), 256):
            chunk = todo[i:i + 256]
            for t, v in zip(chunk, embed(chunk)):
                self.memo[(kind, t)] = list(v)
            self.save()
        return [self.memo[(kind, t)] for t in texts]

    def embed(self, texts: Sequence[str]) -> list:
        return self._get(texts, "p", self.inner.embed)

    def embed_queries(self, texts: Sequence[str]) -> list:
        return self._get(texts, "q", getattr(self.inner, "embed_queries", None) or self.inner.embed)

    def save(self) -> None:
        self.file.parent.mkdir(parents=True, exist_ok=True)
        self.file.write_bytes(pickle.dumps(self.memo))


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def dup_catalog() -> ToolCatalog:
    """BFCL's tools from three servers (``s1__name``...: same description and parameters) + MetaTool."""
    bfcl = ToolCatalog.load(BFCL / "tools.json").tools
    tools = [replace(t, name=f"s{i}__{t.name}") for i in (1, 2, 3) for t in bfcl]
    return ToolCatalog.from_tools(tools + list(ToolCatalog.load(META / "tools.json").tools), name="dup")


def load_sets(ace_source: Path, metatool_n: int) -> dict[str, dict[str, Any]]:
    """name -> {catalog, queries, junk, lang}."""
    en_junk = _jsonl(JUNK)
    zh_junk = _jsonl(DATA / "junk_queries_zh.jsonl")
    meta_q = sorted(load_queries(META / "queries_single_tool_sample3000.jsonl"),
                    key=lambda q: hashlib.sha256(q.qid.encode()).hexdigest())[:metatool_n]
    bfcl_q = load_queries(BFCL / "queries.jsonl")
    sets = {
        "bfcl": dict(catalog=replace(ToolCatalog.load(BFCL / "tools.json"), name="bfcl"), queries=bfcl_q, junk=en_junk),
        "metatool": dict(catalog=replace(ToolCatalog.load(META / "tools.json"), name="metatool"), queries=meta_q,
                         junk=[j for j in en_junk if j["kind"] != "offtopic"]),
        "dup": dict(catalog=dup_catalog(), queries=bfcl_q, junk=[j for j in en_junk if j["kind"] != "offtopic"]),
        "numbered": dict(catalog=synthetic_catalog(654), queries=bfcl_q,
                         junk=[j for j in en_junk if j["kind"] != "offtopic"]),
        "zh-mixed": dict(catalog=ToolCatalog.load(DATA / "tools_zh_mixed.json"),
                         queries=load_queries(DATA / "tool_queries_zh_mixed.jsonl"), junk=zh_junk),
        "ecommerce": dict(catalog=replace(ToolCatalog.load(ROOT / "sample_data" / "tools_ecommerce.json"), name="ecommerce"),
                          queries=load_queries(ROOT / "sample_data" / "tool_queries_ecommerce.jsonl"), junk=en_junk),
    }
    for lang in ("zh", "en"):
        tools, queries, junk = acebench.convert(ace_source, lang)
        sets[f"ace-{lang}"] = dict(catalog=ToolCatalog.from_data(tools, name=f"acebench-{lang}"),
                                   queries=[parse_query(q, q["qid"]) for q in queries],
                                   junk=junk + (zh_junk if lang == "zh" else en_junk))
    # the first 150 ACEBench Chinese tools and the queries answered inside them: a set small enough
    # to compare slow models on (never tuned on: all of it is reported)
    small = sets["ace-zh"]["catalog"].names[:150]
    sets["ace-zh-small"] = dict(catalog=ToolCatalog.from_tools(
        [t for t in sets["ace-zh"]["catalog"].tools if t.name in small], name="acebench-zh-small"),
        queries=[q for q in sets["ace-zh"]["queries"] if set(q.gold_tools) <= set(small)], junk=zh_junk)
    return sets


def _gold(name: str, catalog: ToolCatalog, gold: Sequence[str]) -> set[str]:
    aliases = gold_aliases(catalog)
    names = {aliases.get(g, g) for g in gold}
    if name == "dup":
        return {f"s{i}__{g}" for g in names for i in (1, 2, 3)}
    if name == "numbered":  # synthetic_catalog(654): every BFCL + MetaTool tool twice, _0 and _1
        return {f"{g}_{i}" for g in names for i in (0, 1)}
    return names


def score_sets(sets: dict, provider: Any, store: Path, context_rule: Any = "auto") -> dict[str, dict[str, Any]]:
    """Per set: its index, the rankings of its real queries (half, gold, ranking) and of its junk.
    Real queries are ranked as select() ranks them: the newest user turn, with the earlier ones
    folded in by ``context_rule`` (the library's by default; "off": the newest turn alone)."""
    out = {}
    for name, d in sets.items():
        index = ToolIndex(d["catalog"], provider, path=store)
        before = len(provider.memo)
        report = index.build()
        fresh = len(provider.memo) - before
        print(f"  {name}: indexed {report.total} tools in {report.seconds:.1f} s ({fresh} embedded by the model,"
              f" the rest from the vector cache; load {os.getloadavg()[0]:.1f})", flush=True)
        real = rank(index, [q.query for q in d["queries"]], contexts=[q.previous_user_turns for q in d["queries"]],
                    context_rule=context_rule)
        junk = rank(index, [j["query"] for j in d["junk"]])
        tuned = name in TUNED_SETS
        out[name] = {"index": index,
                     "real": [(half(q.qid) if tuned else "held", _gold(name, d["catalog"], q.gold_tools), r)
                              for q, r in zip(d["queries"], real)],
                     "junk": [(half(j["qid"]) if tuned else "held", r) for j, r in zip(d["junk"], junk)]}
    return out


def _recall(rows: list, k: int, threshold: float | None = None, dup: bool = False) -> float:
    def hit(g: set, rk: Any) -> float:
        top = {r.name for r in rk.items[:k] if threshold is None or r.score >= threshold}
        return float(bool(g & top)) if dup else len(g & top) / len(g)
    return statistics.mean(hit(g, rk) for _, g, rk in rows) if rows else float("nan")


def tune(scored: dict) -> tuple[float, NoMatchRule, dict]:
    """Threshold: the highest (0.00-0.95) costing at most MAX_RECALL_LOSS of top-5 recall on each
    tuning half. Rule: the floor / gap that flags the most tuning junk with at most
    MAX_FALSE_ALARMS of each set's real tuning queries flagged."""
    tuned = [n for n in TUNED_SETS if n in scored]
    tuning = {n: [r for r in scored[n]["real"] if r[0] == "tune"] for n in tuned}
    base = {n: _recall(rows, 5, dup=n in ("dup", "numbered")) for n, rows in tuning.items()}
    threshold = 0.0
    for step in range(96):
        t = step / 100
        if all(base[n] - _recall(rows, 5, t, n in ("dup", "numbered")) <= MAX_RECALL_LOSS for n, rows in tuning.items()):
            threshold = t
    junk = [(scored[n]["index"], rk) for n in tuned for h, rk in scored[n]["junk"] if h == "tune"]
    real = {n: [(scored[n]["index"], rk) for _, _, rk in rows] for n, rows in tuning.items()}
    best = None
    for dup in DUP_CANDIDATES:
        heads = {n: _heads(rows, dup) for n, rows in real.items()}
        jb, js = _heads(junk, dup)
        for f in range(0, 96):
            for g in [None] + [0.01 + 0.005 * i for i in range(30)]:
                alarms = {n: float(_flags(b, s10, f / 100, g).mean()) for n, (b, s10) in heads.items()}
                if max(alarms.values()) > MAX_FALSE_ALARMS:
                    continue
                caught = float(_flags(jb, js, f / 100, g).mean())
                key = (caught, -sum(alarms.values()), -f, -(g or 0), -dup)
                if best is None or key > best[0]:
                    best = (key, NoMatchRule(f / 100, g, 10), {"junk_caught": caught, "false_alarms": alarms,
                                                                "duplicate_cosine": dup})
    assert best is not None, "no rule keeps false alarms under the cap"
    return threshold, best[1], best[2]


def _heads(rows: list, dup: float) -> tuple[Any, Any]:
    """Per ranking: the best score and the score at distinct rank 10 (nan when fewer), with the
    copies (vectors at least ``dup`` alike) collapsed as select() does."""
    import numpy as np
    best, tenth = [], []
    for index, rk in rows:
        scores = [r.score for r in rk.items]
        if dup <= 1.0 and rk.items:
            vecs = index.table.matrix[[index.table.row[r.name] for r in rk.items]]
            scores = [s for s, c in zip(scores, copies(vecs, dup)) if c < 0]
        best.append(scores[0] if scores else -9.0)
        tenth.append(scores[9] if len(scores) >= 10 else np.nan)
    return np.array(best), np.array(tenth)


def _flags(best: Any, tenth: Any, floor: float, gap: float | None) -> Any:
    """NoMatchRule.judge over arrays: unsure when best < floor, or best - rank 10 < gap."""
    import numpy as np
    out = best < floor
    if gap is not None:
        out |= ~np.isnan(tenth) & (best - np.nan_to_num(tenth, nan=-9.0) < gap)
    return out


def _rerank(d: dict, key: str) -> list:
    """The rows with their rankings marked again for copies at the tuned cosine (scores unchanged)."""
    index, out = d["index"], []
    at = confidence.duplicate_cosine(index.provider.model_id)
    for row in d[key]:
        rk = row[-1]
        if rk.items:
            vecs = index.table.matrix[[index.table.row[r.name] for r in rk.items]]
            marks = copies(vecs, at)
            rk = replace(rk, items=tuple(replace(r, copy_of=None if c < 0 else rk.items[c].name)
                                         for r, c in zip(rk.items, marks)))
        out.append((*row[:-1], rk))
    return out


def held_out(scored: dict, threshold: float, rule: NoMatchRule) -> None:
    print("  held out (k=5, expansion on, on_no_match=all):"
          "   R@1    R@5   sel-recall  sent  unsure-real  unsure-junk  folded")
    for n, d in scored.items():
        rows = [r for r in d["real"] if r[0] == "held"]
        junk = [rk for h, rk in d["junk"] if h == "held"]
        sels = [from_ranking(d["index"], rk, 5, threshold, True, (), True, no_match=rule) for _, _, rk in rows]
        jsel = [from_ranking(d["index"], rk, 5, threshold, True, (), True, no_match=rule) for rk in junk]
        dup = n in ("dup", "numbered")
        rec = statistics.mean((float(bool(g & set(s.names))) if dup else len(g & set(s.names)) / len(g))
                              for (_, g, _), s in zip(rows, sels))
        print(f"    {n:<10} ({len(rows):4d} real, {len(junk):3d} junk)"
              f"  {_recall(rows, 1, dup=dup):.3f}  {_recall(rows, 5, dup=dup):.3f}  {rec:9.3f}"
              f"  {statistics.mean(len(s.tools) for s in sels):5.1f}  {statistics.mean(not s.confident for s in sels):10.1%}"
              f"  {statistics.mean(not s.confident for s in jsel):10.1%}  {sum(bool(rk.context) for _, _, rk in rows):4d}")
        if dup:
            flat = statistics.mean(rule.judge([r.score for r in rk.items]) is not None for _, _, rk in rows)
            print(f"    {'':<10} the same rule judging every ranked tool (copies counted): {flat:.1%} of real queries unsure")


def query_times(sets: dict, name: str, store: Path, n: int) -> None:
    """Median select() time per set with the model itself (query cache off), and the query
    embedding alone, interleaved so load hits both alike."""
    provider = get_provider(name)
    print(f"  query time, {name} (median of {n} held-out queries, embedding included; load {os.getloadavg()[0]:.1f}):")
    for set_name, d in sets.items():
        index = ToolIndex(d["catalog"], provider, path=store, query_cache=0)
        qs = [q.query for q in d["queries"] if half(q.qid) == "held"][:n]
        index.select(qs[0])
        sel, emb = [], []
        for q in qs:
            t = time.perf_counter()
            index.embed_queries([q])
            emb.append(time.perf_counter() - t)
            t = time.perf_counter()
            index.select(q)
            sel.append(time.perf_counter() - t)
        s, e = statistics.median(sel), statistics.median(emb)
        print(f"    {set_name:<10} {len(index.catalog):5d} tools  select {1000 * s:7.1f} ms   embedding alone"
              f" {1000 * e:7.1f} ms   ratio {s / e:.2f}x")
        if any(q.previous_user_turns for q in d["queries"]):
            print(f"    {'':<10} follow-ups: {tools_context.conversation_times(d, provider, store, n, half)}")


def index_n(sets: dict, lang: str, n: int) -> None:
    """Index ``n`` tools of one language (ACEBench's pool, then the other sets of that language)
    with the default provider (``auto``) in a fresh store, then answer queries: the time a user waits."""
    names = ("ace-zh", "zh-mixed", "ace-en") if lang == "zh" else ("ace-en", "bfcl", "metatool", "ecommerce")
    tools, seen = [], set()
    for name in names:
        for t in sets[name]["catalog"].tools:
            if t.name not in seen and len(tools) < n:
                tools.append(t)
                seen.add(t.name)
    catalog = ToolCatalog.from_tools(tools, name=f"index-{lang}-{len(tools)}")
    queries = [q.query for name in names for q in sets[name]["queries"]][:11]
    with tempfile.TemporaryDirectory() as tmp:
        t = time.perf_counter()
        index = ToolIndex(catalog, path=tmp)  # the default provider for this catalog
        index.build()
        built = time.perf_counter() - t
        t = time.perf_counter()
        index.select(queries[0])
        first = time.perf_counter() - t
        times = []
        for q in queries[1:]:
            t = time.perf_counter()
            index.select(q)
            times.append(time.perf_counter() - t)
    print(f"index {len(tools)} {lang} tools with the default ({index.provider.model_id}): {built:.1f} s"
          f" ({1000 * built / len(tools):.0f} ms/tool); first query {1000 * first:.0f} ms, then median"
          f" {1000 * statistics.median(times):.0f} ms over {len(times)} (load {os.getloadavg()[0]:.1f})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--acebench", required=True, help="ACEBench checkout, or its git directory")
    ap.add_argument("--providers", default="local,multilingual,use")
    ap.add_argument("--metatool-queries", type=int, default=600)
    ap.add_argument("--timing-queries", type=int, default=30)
    ap.add_argument("--skip-timing", action="store_true")
    ap.add_argument("--sets", default="", help="comma-separated subset of the sets (default: all)")
    ap.add_argument("--context", default="auto", choices=("auto", "off"),
                    help="earlier user turns folded into short queries as select() does (auto), or the newest turn alone")
    ap.add_argument("--tune-context", action="store_true",
                    help="only tune the context rule on the tuning halves (each provider's default sets) and report it")
    ap.add_argument("--index", default="", metavar="LANG:N", help="only time indexing N tools of LANG (zh or en)"
                    " with the default provider and answering queries, e.g. en:1000")
    a = ap.parse_args()
    sets = load_sets(Path(a.acebench), a.metatool_queries)
    if a.index:
        lang, n = a.index.split(":")
        index_n(sets, lang, int(n))
        return
    if a.sets:
        sets = {n: d for n, d in sets.items() if n in a.sets.split(",")}
    cache = Path(os.environ.get("CTXLAB_BENCH_CACHE") or Path(tempfile.gettempdir()) / "ctxlab-bench-cache")
    if a.tune_context:
        with tempfile.TemporaryDirectory() as tmp:
            print("context rule (ctxlab/retrieval/context.py), tuned on the tuning halves:")
            tools_context.tune_context(sets, a.providers.split(","), Path(tmp), lambda p: DiskMemo(p, cache), _gold, half)
        return
    print("sets: " + "; ".join(f"{n} {len(d['catalog'])} tools / {len(d['queries'])} queries / {len(d['junk'])} junk"
                               for n, d in sets.items()))
    with tempfile.TemporaryDirectory() as tmp:
        for name in a.providers.split(","):
            provider = DiskMemo(get_provider(name), cache)
            t = time.perf_counter()
            print(f"\n{name} ({provider.model_id}):", flush=True)
            scored = score_sets(sets, provider, Path(tmp), a.context)
            print(f"  scored in {time.perf_counter() - t:.0f} s (cached vectors reused)")
            threshold, rule, fit = tune(scored)
            print(f"  tuned on the tuning halves: threshold {threshold:.2f}; rule floor {rule.floor} gap {rule.gap}"
                  f" (rank {rule.gap_rank}, copies at cosine >= {fit['duplicate_cosine']} collapsed): flags {fit['junk_caught']:.0%} of tuning junk, real: "
                  + ", ".join(f"{n} {v:.1%}" for n, v in fit["false_alarms"].items()))
            lib = TUNED_RULES.get((provider.model_id, True))
            print(f"  library: threshold {TUNED_THRESHOLDS.get(provider.model_id)}, rule {lib and lib.to_dict()}")
            confidence.TUNED_DUPLICATE_COSINE[provider.model_id] = fit["duplicate_cosine"]  # as select() would apply it
            scored = {n: {**d, "real": _rerank(d, "real"), "junk": _rerank(d, "junk")} for n, d in scored.items()}
            held_out(scored, threshold, rule)
            if not a.skip_timing:
                query_times(sets, name, Path(tmp), a.timing_queries)


if __name__ == "__main__":
    main()
