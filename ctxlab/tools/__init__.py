"""Tool retrieval: a catalog of tool definitions, embedding providers, a Chroma-backed index,
selection of the tools to send for a turn, and the evaluation of that selection.

    >>> from ctxlab.tools import ToolCatalog, ToolIndex
    >>> index = ToolIndex(ToolCatalog.load("tools.json"))          # doctest: +SKIP
    >>> index.build(progress=print)                                 # doctest: +SKIP
    >>> index.select("refund order 1234", top_k=5).names            # doctest: +SKIP

Importing this package loads neither chromadb nor a model; they load on first use. Queries are
answered from the vectors in memory, never through Chroma; a built index is a cache entry that
later processes load (:mod:`ctxlab.tools.cache`; ``ctxlab tools cache`` lists and clears them).
"""
from .catalog import ToolCatalog, content_hash, embedding_text
from .embeddings import (DEFAULT_PROVIDER, PROVIDER_NAMES, PROVIDERS, ChromaEmbeddingFunction, EmbeddingError,
                         EmbeddingProvider, HashEmbeddings, LocalEmbeddings, MultilingualEmbeddings,
                         OpenAIEmbeddings, UseEmbeddings, default_provider_for, get_provider)
from .evaluate import EvalQuery, QueriesError, evaluate, gold_aliases, load_queries, sweep
from .index import (BuildReport, IndexMismatchError, IndexStatus, ToolIndex, ToolIndexError, collection_name,
                    data_dir)
from .context import TUNED_CONTEXT, ContextError, ContextRule
from .confidence import DEFAULT_ON_NO_MATCH, ON_NO_MATCH, TUNED_RULES, ConfidenceError, NoMatchRule
from .lexical import LexicalIndex
from .select import (REASONS, Ranked, Ranking, SelectedTool, Selection, SelectionError,
                     conversation_query, query_from_conversation, rank, select)

__all__ = [
    "DEFAULT_ON_NO_MATCH", "DEFAULT_PROVIDER", "ON_NO_MATCH", "PROVIDERS", "PROVIDER_NAMES",
    "MultilingualEmbeddings", "UseEmbeddings", "default_provider_for", "REASONS", "TUNED_RULES",
    "ConfidenceError", "NoMatchRule", "TUNED_CONTEXT", "ContextError", "ContextRule", "conversation_query", "BuildReport", "ChromaEmbeddingFunction", "EmbeddingError",
    "EmbeddingProvider", "EvalQuery", "HashEmbeddings", "IndexMismatchError", "IndexStatus", "LexicalIndex",
    "LocalEmbeddings", "OpenAIEmbeddings", "QueriesError", "Ranked", "Ranking", "SelectedTool", "Selection",
    "SelectionError", "ToolCatalog", "ToolIndex", "ToolIndexError", "collection_name", "content_hash", "data_dir",
    "embedding_text", "evaluate", "get_provider", "gold_aliases", "load_queries", "query_from_conversation",
    "rank", "select", "sweep",
]
