"""BM25 over tool texts, for Chinese, English and mixed text, precomputed at build time.

Words: Latin-script text is lower-cased and split into runs of letters and digits (``get_weather``
gives ``get`` and ``weather``; camelCase is split too); runs of Chinese characters are cut into
words with ``jieba`` (search mode, which also yields the shorter words inside long ones), or into
overlapping character pairs when jieba is not installed. English and Chinese stop words are left out.

The index keeps, per word, the tools that contain it and their BM25 weight (Lucene's idf, k1 1.5,
b 0.75), so a query costs one sum per query word over numpy arrays; nothing is computed per tool
at query time. Only numpy is needed (jieba for Chinese).
"""
from __future__ import annotations

import math
import re
from collections import Counter
from functools import lru_cache
from typing import Any, Mapping, Sequence

CANDIDATES = 50
K1, B = 1.5, 0.75

STOP_EN = frozenset("""a about above after again against all am an and any are as at be because been before being
below between both but by can could did do does doing down during each few for from further had has have having he
her here hers herself him himself his how i if in into is it its itself just me more most my myself no nor not now
of off on once only or other our ours ourselves out over own same she should so some such than that the their theirs
them themselves then there these they this those through to too under until up very was we were what when where which
while who whom why will with would you your yours yourself yourselves please want need like""".split())
STOP_ZH = frozenset("的 了 是 我 你 他 她 它 们 在 和 与 及 或 就 都 也 而 并 吗 呢 吧 啊 把 被 给 让 请 帮 帮我 一个 一下 这个 "
                    "那个 这 那 有 要 想 能 可以 需要 我们 你们 什么 怎么 如何 为 对 从 到 中 上 下 个 之 以 等".split())
_CJK_RUN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
_WORD = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|[0-9]+|[^\W\d_A-Za-z\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")


@lru_cache(maxsize=1)
def _jieba():
    try:
        import jieba
    except ImportError:
        return None
    jieba.setLogLevel(60)  # its dictionary-loading messages are not ours to print
    return jieba


def _cut_cjk(run: str) -> list[str]:
    jieba = _jieba()
    if jieba is not None:
        return [w for w in jieba.lcut_for_search(run) if w.strip()]
    return [run] if len(run) == 1 else [run[i:i + 2] for i in range(len(run) - 1)]


def cutter() -> str:
    """How Chinese text is cut into words here: ``jieba``, or ``pairs`` when it is not installed
    (postings saved with one are not read with the other)."""
    from importlib.util import find_spec
    return "jieba" if find_spec("jieba") is not None else "pairs"


def tokenize(text: str) -> list[str]:
    """The words of a text, stop words left out (see the module docstring)."""
    out: list[str] = []
    pos = 0
    for m in _CJK_RUN.finditer(text):
        out += [w.lower() for w in _WORD.findall(text[pos:m.start()])]
        out += _cut_cjk(m.group())
        pos = m.end()
    out += [w.lower() for w in _WORD.findall(text[pos:])]
    return [w for w in out if w not in STOP_EN and w not in STOP_ZH and (len(w) > 1 or not w.isascii())]


class LexicalIndex:
    """BM25 over the tools' texts, with each word's postings and weights precomputed."""

    def __init__(self, names: Sequence[str], texts: Sequence[str]) -> None:
        import numpy as np
        self._np = np
        self.names = tuple(names)
        docs = [Counter(tokenize(t)) for t in texts]
        lengths = np.array([sum(d.values()) for d in docs], dtype=np.float32)
        avg = float(lengths.mean()) if len(docs) and lengths.mean() > 0 else 1.0
        norm = K1 * (1 - B + B * lengths / avg)
        postings: dict[str, tuple[list[int], list[float]]] = {}
        for i, doc in enumerate(docs):
            for word, tf in doc.items():
                ids, tfs = postings.setdefault(word, ([], []))
                ids.append(i)
                tfs.append(tf)
        n = len(docs)
        self._postings = {}
        for word, (ids, tfs) in postings.items():
            idf = math.log(1 + (n - len(ids) + 0.5) / (len(ids) + 0.5))
            tf = np.array(tfs, dtype=np.float32)
            idx = np.array(ids, dtype=np.int32)
            self._postings[word] = (idx, (idf * tf * (K1 + 1) / (tf + norm[idx])).astype(np.float32))

    def to_arrays(self) -> dict[str, Any]:
        """The postings as four flat arrays (words as UTF-8 text, one per line; offsets; tool rows;
        weights), for the index's cache entry: a later process loads them instead of cutting
        every tool text into words again."""
        np = self._np
        words = list(self._postings)
        offsets = np.zeros(len(words) + 1, dtype=np.int64)
        np.cumsum([len(self._postings[w][0]) for w in words], out=offsets[1:])
        parts = [self._postings[w] for w in words]
        return {"words": np.frombuffer("\n".join(words).encode("utf-8"), dtype=np.uint8), "offsets": offsets,
                "rows": np.concatenate([p[0] for p in parts]).astype(np.int32) if parts else np.zeros(0, np.int32),
                "weights": np.concatenate([p[1] for p in parts]).astype(np.float32) if parts else np.zeros(0, np.float32)}

    @classmethod
    def from_arrays(cls, names: Sequence[str], arrays: Mapping[str, Any]) -> "LexicalIndex":
        """The index :meth:`to_arrays` wrote, for the same tools in the same order."""
        import numpy as np
        self = cls.__new__(cls)
        self._np, self.names = np, tuple(names)
        text = bytes(arrays["words"]).decode("utf-8")
        words = text.split("\n") if text else []
        off, rows, weights = arrays["offsets"], arrays["rows"], arrays["weights"]
        if len(off) != len(words) + 1 or int(off[-1]) != len(rows) or len(rows) != len(weights):
            raise ValueError("the postings arrays do not fit together")
        self._postings = {w: (rows[off[i]:off[i + 1]], weights[off[i]:off[i + 1]]) for i, w in enumerate(words)}
        return self

    def raw_scores(self, query: str):
        """BM25 score of every tool (catalog order) for the query, as one numpy array."""
        scores = self._np.zeros(len(self.names), dtype=self._np.float32)
        for word in set(tokenize(query)):
            hit = self._postings.get(word)
            if hit is not None:
                scores[hit[0]] += hit[1]
        return scores

    def scores(self, query: str, top: int = CANDIDATES) -> dict[str, float]:
        """The ``top`` best tools for the query: name -> BM25 score / best score (0..1]."""
        raw = self.raw_scores(query)
        best = float(raw.max()) if len(raw) else 0.0
        if best <= 0:
            return {}
        order = raw.argsort()[::-1][:top]
        return {self.names[i]: float(raw[i]) / best for i in order if raw[i] > 0}
