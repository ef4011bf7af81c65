"""Token counting speed: cold count vs tiktoken's own batch encode, and recount after one edit.

Targets: cold count of a ~2,000-message, ~1M-token conversation at most 1.3x the time
of tiktoken encoding the same texts as one batch; recount after editing one message under 5% of
the cold time. Prints figures and ratios; asserts nothing (see benchmarks/README.md).

Then the two encoding paths on the same texts: tiktoken's encode_ordinary_batch
(a new pool per call) against a serial encode_ordinary loop, and ctxlab's count_texts, which
picks serial below BATCH_MIN_CHARS and its own kept pool above. ``--crossover`` prints the
table of sizes the threshold was read from.

    python benchmarks/bench_count.py [--turns 200] [--result-tokens 1000] [--repeat 5] [--crossover]
"""
from __future__ import annotations

import argparse
import statistics
import time

from ctxlab import TokenCounter
from ctxlab import _bpe_count
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
    ap.add_argument("--crossover", action="store_true", help="also print serial vs threads by total size")
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
    paths(enc, unique, a.repeat)
    if a.crossover:
        crossover(enc, unique, a.repeat)


def _median(fn, repeat: int) -> float:
    out = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return statistics.median(out)


def paths(enc, texts: list[str], repeat: int) -> None:
    """The conversation's distinct texts through each path."""
    serial = _median(lambda: [len(enc.encode_ordinary(t)) for t in texts], repeat)
    batch = _median(lambda: enc.encode_ordinary_batch(texts), repeat)
    ours = _median(lambda: _bpe_count.count_texts(enc, texts), repeat)
    chosen = "threads" if sum(map(len, texts)) >= _bpe_count.BATCH_MIN_CHARS else "serial"
    print(f"\n{len(texts)} texts, {sum(map(len, texts)):,} characters:")
    print(f"  serial encode_ordinary        {serial * 1000:8.1f} ms")
    print(f"  encode_ordinary_batch         {batch * 1000:8.1f} ms   batch / serial {batch / serial:.2f}x")
    print(f"  ctxlab count_texts ({chosen:7})  {ours * 1000:8.1f} ms   / serial {ours / serial:.2f}x")


def crossover(enc, texts: list[str], repeat: int) -> None:
    """Serial against threads for growing prefixes of the texts (the BATCH_MIN_CHARS reading)."""
    print(f"\ncrossover (BATCH_MIN_CHARS = {_bpe_count.BATCH_MIN_CHARS:,}):")
    print("   texts   characters   serial ms   batch/serial   kept-pool/serial")
    threads = _bpe_count.BATCH_MIN_CHARS
    _bpe_count.BATCH_MIN_CHARS = 0  # force the pool path
    try:
        for n in (2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, len(texts)):
            part = texts[:n]
            s = _median(lambda: [len(enc.encode_ordinary(t)) for t in part], repeat)
            b = _median(lambda: enc.encode_ordinary_batch(part), repeat)
            p = _median(lambda: _bpe_count.count_texts(enc, part), repeat)
            print(f"  {len(part):6} {sum(map(len, part)):12,} {s * 1000:11.2f} {b / s:14.2f} {p / s:18.2f}")
    finally:
        _bpe_count.BATCH_MIN_CHARS = threads


if __name__ == "__main__":
    main()
