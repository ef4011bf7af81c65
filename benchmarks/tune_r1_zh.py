"""R@1 of Chinese tool retrieval: the weight of the BM25 bonus in the hybrid score, tuned
for R@1 on the tuning half of ACEBench Chinese (709 tools, benchmarks/acebench.py) and reported on the
held-out half beside R@5, per model. Vectors come from bench_tools_zh.py's disk cache, so after that
benchmark ran once for a model this re-embeds nothing. Asserts nothing.

    python benchmarks/tune_r1_zh.py --acebench DIR [--providers use] [--sets ace-zh]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_tools_zh as bz  # noqa: E402

from ctxlab.retrieval import get_provider  # noqa: E402

select_module = sys.modules["ctxlab.retrieval.select"]  # the module (ctxlab.retrieval.select is also a function's name)

WEIGHTS = (0.0, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.7)


def recalls(scored: dict, part: str) -> tuple[float, float]:
    """(R@1, R@5) over the ``part`` half ("tune" or "held") of every set scored."""
    rows = [r for d in scored.values() for r in d["real"] if r[0] == part]
    return bz._recall(rows, 1), bz._recall(rows, 5)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--acebench", required=True)
    ap.add_argument("--providers", default="use")
    ap.add_argument("--sets", default="ace-zh")
    a = ap.parse_args()
    sets = {n: d for n, d in bz.load_sets(Path(a.acebench), 10).items() if n in a.sets.split(",")}
    cache = Path(os.environ.get("CTXLAB_BENCH_CACHE") or Path(tempfile.gettempdir()) / "ctxlab-bench-cache")
    named = ", ".join(f"{n} ({len(d['catalog'])} tools)" for n, d in sets.items())
    print(f"load {os.getloadavg()[0]:.1f}; sets: {named}")
    default = select_module.LEXICAL_WEIGHT
    for name in a.providers.split(","):
        provider = bz.DiskMemo(get_provider(name), cache)
        results = {}
        with tempfile.TemporaryDirectory() as tmp:
            for w in WEIGHTS:
                select_module.LEXICAL_WEIGHT = w
                scored = bz.score_sets(sets, provider, Path(tmp))
                results[w] = (recalls(scored, "tune"), recalls(scored, "held"))
        select_module.LEXICAL_WEIGHT = default
        best = max(WEIGHTS, key=lambda w: (results[w][0][0], results[w][0][1], w == default))
        print(f"\n{name} ({provider.model_id}): BM25 weight -> tuning R@1 / R@5, held-out R@1 / R@5")
        for w in WEIGHTS:
            (t1, t5), (h1, h5) = results[w]
            mark = " <- library" if w == default else ""
            mark += " <- best R@1 on the tuning half" if w == best else ""
            print(f"  {w:4.2f}   {t1:.3f} / {t5:.3f}   {h1:.3f} / {h5:.3f}{mark}")


if __name__ == "__main__":
    main()
