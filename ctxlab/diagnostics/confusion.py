"""Context confusion: tool definitions that crowd or blur the model's choice of tool.

* ``too_many_tools``: more than ``MAX_TOOLS`` tool definitions are offered.
* ``overlapping_tools``: groups of tools whose definitions (name, description, parameters, as
  ``ctxlab.retrieval.embedding_text`` writes them) are at least ``OVERLAP_THRESHOLD`` cosine-similar
  with the embedding provider (``local``: all-MiniLM-L6-v2 offline), joined into clusters.
* ``irrelevant_tools``: definitions whose similarity to the current query is under
  ``RELEVANCE_THRESHOLD`` (the selection threshold ``ctxlab.retrieval`` uses for this model).
* ``lookalike_switch``: a call to one tool fails and the next call goes to a look-alike of it.

``OVERLAP_THRESHOLD`` was tuned on one part of a labelled set of tool pairs and reported on
another (``benchmarks/bench_confusion.py``; figures beside the constant).
"""
from __future__ import annotations

from itertools import combinations
from typing import Sequence

from ..conversation import ToolDef
from ..i18n import _
from .base import Finding, Inputs, Mitigation, detector

MAX_TOOLS = 30
OVERLAP_THRESHOLD = 0.80
"""Tuned for all-MiniLM-L6-v2 by ``benchmarks/bench_confusion.py``: best F1 on the tuning part (the
ecommerce and sql look-alikes, the tools tau-bench's two catalogs share, against 1,000 pairs of
distinct tools) is 0.91 at 0.80; on the held-out part (the travel look-alikes against 4,338 pairs)
recall is 1.00 with 3 false positives, all tau-bench retail tools whose definitions really are
near-duplicates (exchange_ / return_ / modify_pending_order_items)."""
RELEVANCE_THRESHOLD = 0.2
RETRIEVAL_K = 5
"""Tools a retrieval mitigation sends: ctxlab.retrieval' default top_k (BFCL Recall@5 .865, README)."""

_CACHE: dict[tuple[str, str], list[float]] = {}


def embed(inp: Inputs, texts: Sequence[str]) -> list[list[float]]:
    """Unit vectors of ``texts`` with the inputs' provider, each text embedded once per process."""
    model = inp.embedder.model_id
    missing = list(dict.fromkeys(t for t in texts if (model, t) not in _CACHE))
    if missing:
        for t, v in zip(missing, inp.embedder.embed(missing)):
            _CACHE[(model, t)] = v
    return [_CACHE[(model, t)] for t in texts]


def similarity_matrix(inp: Inputs, tools: Sequence[ToolDef]):
    """Pairwise cosine similarity of the tools' definitions (a numpy array)."""
    import numpy as np
    from ..retrieval.catalog import embedding_text
    vectors = np.asarray(embed(inp, [embedding_text(t) for t in tools]), dtype=np.float32)
    return vectors @ vectors.T


def _retrieval(label: str = "") -> Mitigation:
    return Mitigation("tool_retrieval", label or _("Send only the tools retrieved for the query (top {k})").format(
        k=RETRIEVAL_K),
                      k=RETRIEVAL_K)


@detector("confusion", "too_many_tools")
def too_many_tools(inp: Inputs) -> list[Finding]:
    """More than MAX_TOOLS definitions offered."""
    n = len(inp.catalog)
    if n <= MAX_TOOLS:
        return []
    return [Finding("confusion", "too_many_tools", "warning",
                    _("{n} tool definitions ({tokens} tokens) are offered, over {max}: the more tools, the more "
                      "likely the model calls the wrong one or invents arguments.").format(
                        n=n, tokens=f"{inp.tool_tokens:,}", max=MAX_TOOLS),
                    tools=tuple(t.name for t in inp.catalog), mitigation=_retrieval())]


def overlap_clusters(inp: Inputs) -> list[tuple[tuple[str, ...], float]]:
    """Clusters of look-alike tools (names in catalog order) with the highest similarity in each."""
    tools = inp.catalog
    if len(tools) < 2:
        return []
    sims = similarity_matrix(inp, tools)
    parent = list(range(len(tools)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i
    best: dict[int, float] = {}
    for i, j in combinations(range(len(tools)), 2):
        if sims[i, j] >= OVERLAP_THRESHOLD:
            a, b = root(i), root(j)
            parent[b] = a
    for i, j in combinations(range(len(tools)), 2):
        if sims[i, j] >= OVERLAP_THRESHOLD:
            r = root(i)
            best[r] = max(best.get(r, -1.0), float(sims[i, j]))
    groups: dict[int, list[str]] = {}
    for i, t in enumerate(tools):
        groups.setdefault(root(i), []).append(t.name)
    return [(tuple(names), best[r]) for r, names in groups.items() if len(names) > 1]


@detector("confusion", "overlapping_tools")
def overlapping_tools(inp: Inputs) -> list[Finding]:
    """Clusters of tools whose definitions say nearly the same thing."""
    return [Finding("confusion", "overlapping_tools", "warning",
                    _("{names} have look-alike definitions (cosine similarity up to {top}, threshold {threshold}): "
                      "the model may pick the wrong one.").format(names=", ".join(names), top=f"{top:.2f}",
                                                                  threshold=f"{OVERLAP_THRESHOLD:.2f}"),
                    tools=names, mitigation=_retrieval())
            for names, top in overlap_clusters(inp)]


@detector("confusion", "irrelevant_tools")
def irrelevant_tools(inp: Inputs) -> list[Finding]:
    """Definitions unrelated to the current query."""
    tools, query = inp.catalog, inp.current_query.strip()
    if len(tools) < 10 or not query:
        return []
    import numpy as np
    from ..retrieval.catalog import embedding_text
    from ..retrieval.index import DEFAULT_QUERY_PREFIX
    vectors = np.asarray(embed(inp, [embedding_text(t) for t in tools] + [DEFAULT_QUERY_PREFIX + query]))
    sims = vectors[:-1] @ vectors[-1]
    far = [t for t, s in zip(tools, sims) if s < RELEVANCE_THRESHOLD]
    if not far:
        return []
    tokens = inp.counter.tools(far)
    share = len(far) / len(tools)
    return [Finding("confusion", "irrelevant_tools", "warning" if share >= 0.5 else "info",
                    (_("{n} tool definition of {total} ({tokens} tokens) are unrelated to the current query "
                       "(similarity under {threshold}).") if len(far) == 1 else
                     _("{n} tool definitions of {total} ({tokens} tokens) are unrelated to the current query "
                       "(similarity under {threshold}).")).format(
                        n=f"{len(far):,}", total=len(tools), tokens=f"{tokens:,}", threshold=RELEVANCE_THRESHOLD),
                    tools=tuple(t.name for t in far), mitigation=_retrieval())]


@detector("confusion", "lookalike_switch")
def lookalike_switch(inp: Inputs) -> list[Finding]:
    """A failed call to one tool followed by a call to its look-alike."""
    clusters = {name: names for names, _ in overlap_clusters(inp) for name in names}
    calls = inp.observations.calls
    out = []
    for a, b in zip(calls, calls[1:]):
        if a.failed and a.name != b.name and b.name in clusters.get(a.name, ()):
            out.append(Finding(
                "confusion", "lookalike_switch", "warning",
                _("{tool} failed in message {at} and the agent switched to its look-alike {other} in message "
                  "{index}: it could not tell them apart.").format(tool=a.name, at=a.result_index, other=b.name,
                                                                  index=b.index),
                tuple(i for i in (a.index, a.result_index, b.index) if i is not None), (a.name, b.name),
                _retrieval()))
    return out
