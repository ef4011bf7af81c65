"""Token counts from tiktoken for any text: hostile whitespace runs, and many texts at once.

**Long whitespace runs.** tiktoken splits text into pieces with a regex before BPE. Its
``\\s+(?!\\S)`` branch runs in fancy-regex's backtracking VM, which keeps one backtrack entry per
character and gives up at 1,000,000: a run of 999,999 or more white-space characters with no
``\\r``/``\\n`` in it makes tiktoken raise a Rust ``PanicException`` (a ``BaseException``), e.g. a
tool result of 1 MB of spaces. Measured with tiktoken 0.14 on cl100k_base and o200k_base: runs of
999,998 pass, 999,999 panic; letters, digits, punctuation, CJK, emoji and newline runs of 2 M
characters do not panic (their branches run outside the VM).

We count such a text exactly, as the API would, without asking the regex to match the run.
Both encodings split a maximal stretch ``Q = T[a:e]`` of white space without ``\\r``/``\\n``
the same way: everything before ``a`` ends a piece at ``a`` (nothing but a newline-ended
white-space piece or a non-space character precedes ``Q``, and neither can take a character of
``Q``); when a non-space character follows, ``Q[:-1]`` is one piece and ``Q[-1]`` starts the next
one (it joins the following word); at the end of the text, ``Q`` is one piece. So
``count(T) = count(T[:a]) + bpe(Q[:-1]) + count(T[e-1:])``, where ``bpe`` is tiktoken's own merge
of one piece (``Encoding._encode_single_piece``). Two cases need no split, as tiktoken handles
them (measured with 1.2 M spaces): a stretch followed by ``\\r``/``\\n`` is swallowed by the
``\\s*[\\r\\n]`` branch, and cl100k_base's ``\\s++$`` takes a stretch at the very end.
tests/tokens/test_tokens.py checks the sum against tiktoken's direct count for runs up to 999,998 and
against tiktoken's Python-regex reference (``_encode_only_native_bpe``) beyond. If tiktoken
panics anyway, the reference path counts the text instead.

**Many texts.** ``encode_ordinary_batch`` starts a pool of 8 threads on every call; for a few
small texts that costs more than encoding them. ``count_texts`` encodes serially
below ``BATCH_MIN_CHARS`` and otherwise spreads the texts over a pool kept for the process.
"""
from __future__ import annotations

import bisect
import itertools
import os
import re
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Sequence

import tiktoken

# Unicode White_Space (what \s means in tiktoken's Rust regex) minus \r and \n.
_SPACE_NO_NEWLINE = "\t\x0b\x0c \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
LONG_RUN = 100_000
"""Stretches of white space at least this long are split out of the text. tiktoken panics from
999,999; splitting earlier also avoids its slow backtracking on the run (0.6 s for 800,000
spaces, against 0.3 s for the merge alone)."""
_LONG_STRETCH = re.compile(f"(?<![{_SPACE_NO_NEWLINE}])[{_SPACE_NO_NEWLINE}]{{{LONG_RUN},}}")
_SPLIT_AT_END = {"o200k_base": True, "cl100k_base": False}

BATCH_MIN_CHARS = 64_000
"""Below this many characters in all, texts are encoded one by one in this thread. Read from
``benchmarks/bench_count.py --crossover`` on this 2-core machine while other jobs ran (load 7 to
12, so noisy): up to ~21,000 characters the pool always lost (1.1x to 5x the serial time), at
~50,000 and ~100,000 it won in most runs (0.27x to 0.93x). One tau-bench run (~13,000 characters)
stays serial; the 2,000-message conversation (3.2 M) goes to the pool. Re-read it on a quiet machine."""
_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _is_panic(e: BaseException) -> bool:
    return type(e).__name__ == "PanicException"


def _direct(enc: tiktoken.Encoding, text: str) -> int:
    try:
        return len(enc.encode_ordinary(text))
    except BaseException as e:  # a Rust panic is a BaseException; anything else goes on
        if not _is_panic(e):
            raise
        return len(enc._encode_only_native_bpe(text))


def count_text(enc: tiktoken.Encoding, text: str) -> int:
    """Tokens of ``text`` as ``enc.encode_ordinary`` would give them, for any length of text."""
    if len(text) < LONG_RUN or enc.name not in _SPLIT_AT_END:  # the split follows these two regexes
        return _direct(enc, text)
    total, start = 0, 0
    for m in _LONG_STRETCH.finditer(text):
        a, e = m.span()
        if e < len(text):
            if text[e] in "\r\n":
                continue
            cut = e - 1
        elif _SPLIT_AT_END[enc.name]:
            cut = e
        else:
            continue
        total += _direct(enc, text[start:a]) if a > start else 0
        total += len(enc._encode_single_piece(text[a:cut]))
        start = cut
    return total + (_direct(enc, text[start:]) if start < len(text) else 0)


def _count_serial(enc: tiktoken.Encoding, texts: Sequence[str]) -> list[int]:
    encode = enc.encode_ordinary
    return [len(encode(t)) if len(t) < LONG_RUN else count_text(enc, t) for t in texts]


def _workers() -> int:
    return max(2, min(8, os.cpu_count() or 2))


def _get_pool() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(_workers(), thread_name_prefix="ctxlab-count")
        return _pool


def count_texts(enc: tiktoken.Encoding, texts: Sequence[str]) -> list[int]:
    """Token counts of ``texts``, in order: serial when small, else on a process-wide pool.

    tiktoken releases the GIL while it encodes, so threads give real parallelism. The texts are
    cut into a few runs of about equal size in characters (4 per worker), so one call makes few
    tasks and a long text does not hold up the others' share for long.
    """
    sizes = list(itertools.accumulate(map(len, texts)))
    if not sizes or sizes[-1] < BATCH_MIN_CHARS or len(texts) < 2:
        return _count_serial(enc, texts)
    parts = 4 * _workers()
    cuts = sorted({bisect.bisect_left(sizes, sizes[-1] * k / parts) for k in range(1, parts)} | {len(texts)})
    chunks, start = [], 0
    for cut in cuts:
        if cut > start:
            chunks.append(texts[start:cut])
            start = cut
    counts: list[int] = []
    for part in _get_pool().map(_count_serial, itertools.repeat(enc), chunks):
        counts.extend(part)
    return counts
