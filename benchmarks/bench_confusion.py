"""Tune the look-alike threshold of ctxlab.diagnostics.confusion on one part of a labelled set of
tool pairs and report it on another.

Positives (two definitions of one job): the generator's hand-written look-alikes
(ctxlab._domains.lookalikes) and the tools tau-bench's airline and retail catalogs share by name.
Negatives (different jobs): every pair of distinct tools within one catalog.

    tune:   look-alikes of ecommerce and sql, the tau-bench shared tools;
            pairs within the bundled ecommerce catalog, the three worlds' own tools, tau airline
    report: look-alikes of travel; pairs within the filler tools, tau retail, fillers x world tools

The threshold maximises F1 on the tuning part (grid 0.50-0.99 by 0.01; ties go to the higher
threshold), and is printed with recall, false positives and F1 on both parts, and the negatives at
or above it by name. Run: python benchmarks/bench_confusion.py [provider]
"""
from __future__ import annotations

import json
import sys
from itertools import combinations, product
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ctxlab.formats import parse_tools  # noqa: E402
from ctxlab.generate import WORLDS  # noqa: E402
from ctxlab.retrieval import ToolCatalog, embedding_text, get_provider  # noqa: E402
from ctxlab._domains.lookalikes import FILLERS, lookalike_of  # noqa: E402

SHARED = ROOT.parent / "shared" / "data"


def tau(name: str):
    return parse_tools(json.loads((SHARED / "tau-bench" / f"tools_{name}.json").read_text()), "$")


def pairs_within(tools):
    return list(combinations(tools, 2))


def main(provider_name: str = "local") -> None:
    import numpy as np
    provider = get_provider(provider_name)

    def sim(pairs):
        texts = sorted({embedding_text(t) for p in pairs for t in p})
        vec = dict(zip(texts, np.asarray(provider.embed(texts))))
        return np.array([float(vec[embedding_text(a)] @ vec[embedding_text(b)]) for a, b in pairs]), pairs

    def lookalikes(domain):
        return [(t, lookalike_of(t)) for t in WORLDS[domain].tools if lookalike_of(t)]
    airline, retail = tau("airline"), tau("retail")
    shared = [(a, r) for a in airline for r in retail if a.name == r.name]
    own = [t for d in WORLDS for t in WORLDS[d].tools]
    catalog = ToolCatalog.load(ROOT / "sample_data" / "tools_ecommerce.json").tools
    parts = {
        "tune": (sim(lookalikes("ecommerce") + lookalikes("sql") + shared),
                 sim(pairs_within(catalog) + [p for d in WORLDS for p in pairs_within(WORLDS[d].tools)]
                     + pairs_within(airline))),
        "report": (sim(lookalikes("travel")),
                   sim(pairs_within(FILLERS) + pairs_within(retail) + list(product(FILLERS, own)))),
    }

    def f1(pos, neg, t):
        tp, fp = float(np.sum(pos >= t)), float(np.sum(neg >= t))
        return 2 * tp / (2 * tp + fp + (len(pos) - tp)) if tp else 0.0
    (pos, _), (neg, _) = parts["tune"]
    grid = [round(0.5 + 0.01 * k, 2) for k in range(50)]
    threshold = max(grid, key=lambda t: (f1(pos, neg, t), t))
    print(f"provider {provider.model_id}; threshold (best F1 on the tuning part) = {threshold}")
    for name, ((pos, _), (neg, neg_pairs)) in parts.items():
        print(f"{name:6}: positives {len(pos):3} recall {np.mean(pos >= threshold):.2f} (min {pos.min():.3f}); "
              f"negatives {len(neg):5} false positives {int(np.sum(neg >= threshold))}; F1 {f1(pos, neg, threshold):.2f}")
        for s, (a, b) in sorted(zip(neg, neg_pairs), key=lambda x: -x[0]):
            if s < threshold:
                break
            print(f"        false positive {s:.3f} {a.name} ~ {b.name}")


if __name__ == "__main__":
    main(*sys.argv[1:2])
