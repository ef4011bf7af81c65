"""Token counting speed: cold count vs tiktoken's own batch encode, and recount after one edit.

Targets (issue 2): cold count of a ~2,000-message, ~1M-token conversation at most 1.3x the time
of tiktoken encoding the same texts as one batch; recount after editing one message under 5% of
the cold time. Prints figures and ratios; asserts nothing (see benchmarks/README.md).

    python benchmarks/bench_count.py [--turns 200] [--result-tokens 1000] [--repeat 5]
"""
from __future__ import annotations

import argparse
import statistics
import time

from ctxlab import TokenCounter
from ctxlab import tokens as tokens_mod
from ctxlab.generate import generate


def _texts(conv):
    return list(tokens_mod._texts(conv.messages))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--turns", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--result-tokens", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--model", default="gpt-4o")
    a = ap.parse_args()

    conv = generate("ecommerce", turns=a.turns, rounds_per_turn=a.rounds, result_tokens=a.result_tokens, seed=1)
    counter = TokenCounter(a.model)
    enc = counter._enc
    texts = _texts(conv)
    unique = list(dict.fromkeys(texts))

    base, cold, warm, edit = [], [], [], []
    for r in range(a.repeat):
        t = time.perf_counter(); enc.encode_ordinary_batch(unique); base.append(time.perf_counter() - t)
        tokens_mod._CACHES.clear()
        counter = TokenCounter(a.model)
        t = time.perf_counter(); result = counter.count(conv); cold.append(time.perf_counter() - t)
        t = time.perf_counter(); counter.count(conv); warm.append(time.perf_counter() - t)
        k = len(conv.messages) // 2 + r
        edited = conv.with_messages(conv.messages[:k] + (conv.messages[k].with_content(f"edited #{r}: " + conv.messages[k].text),) + conv.messages[k + 1:])
        t = time.perf_counter(); counter.count(edited); edit.append(time.perf_counter() - t)

    b, c, w, e = (statistics.median(x) for x in (base, cold, warm, edit))
    print(f"conversation: {len(conv.messages)} messages, {result.total:,} tokens ({a.model}, {counter.encoding}), "
          f"{len(unique)} distinct texts")
    print(f"tiktoken encode_ordinary_batch of the same texts: {b * 1000:8.1f} ms (median of {a.repeat})")
    print(f"ctxlab cold count:                                {c * 1000:8.1f} ms   ratio {c / b:.2f}x  (target <= 1.3x)")
    print(f"ctxlab warm recount (nothing changed):            {w * 1000:8.1f} ms   {w / c:.1%} of cold")
    print(f"ctxlab recount after editing one message:         {e * 1000:8.1f} ms   {e / c:.1%} of cold (target < 5%)")


if __name__ == "__main__":
    main()
