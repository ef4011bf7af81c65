"""ToolIndex: a tool catalog embedded into a Chroma collection, kept in sync incrementally.

Storage is embedded Chroma (``chromadb.PersistentClient``) in the tool-index cache folder
(:mod:`ctxlab.tools.cache`: ``$CTXLAB_CACHE_DIR/tool-index``, else the user cache folder), or a
Chroma server when one is named (``host`` / ``port`` arguments, or ``CTXLAB_CHROMA_HOST`` /
``CTXLAB_CHROMA_PORT``). One collection per catalog and embedding model, cosine space. Each
record is one tool (id = tool name) with its embedding text and metadata: model_id, dimensions,
category, token cost, content hash.

``build()`` embeds only new or changed tools (by content hash) and deletes removed ones, so a
re-run on an unchanged catalog embeds nothing. Opening an index built with another model or
dimension raises :class:`IndexMismatchError` with the rebuild path; it never answers wrongly.
Queries are embedded in the provider's query form (its ``embed_queries``, or its
``query_prefix``; MiniLM's lifts its Recall@5 on both real sets, see ``benchmarks/bench_tools.py``)
and the last few query vectors are cached. Queries never go to Chroma: the stored vectors are kept
as one matrix (:class:`~ctxlab.tools.vectors.VectorTable`). With the embedded store, a built
index is also a cache entry keyed by the catalog's content, the model and the versions
(:mod:`ctxlab.tools.cache`): a later process with the same catalog loads it and neither opens
Chroma nor embeds a tool (``cache == "hit"``); a corrupt entry is removed, noted in ``notes`` and
built again; writes to the store are serialised across processes by a lock. The index also
keeps a BM25 view of the same texts (:class:`~ctxlab.tools.lexical.LexicalIndex`) for hybrid
retrieval, saved in the cache entry too.
"""
from __future__ import annotations

import hashlib
import os
import re
import time
from collections import OrderedDict
from contextlib import nullcontext
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence

from ..errors import CtxlabError
from ..tokens import TokenCounter
from .catalog import ToolCatalog, content_hash, embedding_text
from .embeddings import ChromaEmbeddingFunction, EmbeddingProvider, get_provider
from .cache import CorruptEntry, build_lock, cache_root, entries_dir, index_key, read_arrays, read_entry, \
    remove_entry, tools_cache_dir, write_entry
from .vectors import VectorTable

if TYPE_CHECKING:
    from .select import Selection

HOST_ENV, PORT_ENV = "CTXLAB_CHROMA_HOST", "CTXLAB_CHROMA_PORT"
DEFAULT_PORT = 8000
DEFAULT_QUERY_PREFIX = "Which tool should be used to: "
COST_MODEL = "gpt-4o"  # the model whose token costs are stored with the index
#: tools embedded before they are written to Chroma (and at the end): Chroma's writes run its own
#: threads, which on a small machine slow the model's matrix products beside them; a failure of an
#: API model after this many tools still leaves them stored
WRITE_EVERY = 1024
REBUILD_HINT = "Rebuild it: ToolIndex(..., rebuild=True), or `ctxlab tools index --rebuild`"
Progress = Callable[[int, int, str], None]


class ToolIndexError(CtxlabError):
    """The tool index cannot be opened, built or queried (store unreachable, bad name)."""


class IndexMismatchError(ToolIndexError):
    """The stored index was built with another embedding model or dimension."""


@dataclass(frozen=True)
class BuildReport:
    """What one ``build()`` did: tools embedded, left unchanged, deleted; seconds taken; ``cache``:
    ``"hit"`` when the index came whole from the cache (nothing embedded, Chroma not opened)."""

    embedded: int
    unchanged: int
    deleted: int
    total: int
    seconds: float
    cache: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return asdict(self)


@dataclass(frozen=True)
class IndexStatus:
    """The index as stored: model, dimensions, record count, when it was last built, where."""

    collection: str
    location: str
    model_id: str
    dimensions: int
    count: int
    built_at: str | None
    catalog_tools: int
    pending: int
    cache: str | None = None
    key: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return asdict(self)


def data_dir() -> Path:
    """ctxlab's cache folder (:func:`ctxlab.tools.cache.cache_root`); the tool indexes live in
    its ``tool-index`` folder."""
    return cache_root()


def collection_name(catalog_name: str, model_id: str) -> str:
    """A Chroma-legal collection name (3-63 chars of ``[a-zA-Z0-9._-]``, alphanumeric ends)
    from the catalog name and model id, with a short hash so truncation never collides."""
    def slug(text: str, n: int) -> str:
        s = re.sub(r"[^a-zA-Z0-9_-]+", "-", text)[:n]
        return re.sub(r"^[^a-zA-Z0-9]+|[^a-zA-Z0-9]+$", "", s)
    digest = hashlib.sha1(f"{catalog_name}\0{model_id}".encode()).hexdigest()[:8]
    return f"{slug(catalog_name, 24) or 'catalog'}-{slug(model_id, 24) or 'model'}-{digest}"


def _location(path: str | Path | None, host: str | None, port: int | None) -> tuple[str | None, int | None, str]:
    """(host, port, location in words) of the store, without connecting: host None = embedded."""
    host = host or os.environ.get(HOST_ENV)
    if host:
        raw_port = port or os.environ.get(PORT_ENV) or DEFAULT_PORT
        try:
            port = int(raw_port)
        except ValueError:
            raise ToolIndexError(f"the Chroma port {raw_port!r} is not a number", where=PORT_ENV) from None
        return host, port, f"http://{host}:{port}"
    return None, None, str(Path(path) if path else tools_cache_dir())


def _client(host: str | None, port: int | None, location: str) -> Any:
    import chromadb
    from chromadb.config import Settings
    settings = Settings(anonymized_telemetry=False)
    if host:
        try:
            return chromadb.HttpClient(host=host, port=port, settings=settings)
        except Exception as e:
            raise ToolIndexError(f"cannot reach the Chroma server at {host}:{port} ({type(e).__name__})",
                                 where="chroma", hint="Start one with `chroma run --path DIR --port N`, "
                                 "or leave out --host to use the embedded store") from None
    Path(location).mkdir(parents=True, exist_ok=True)
    return chromadb.PersistentClient(path=location, settings=settings)


class ToolIndex:
    """A catalog's tools in one Chroma collection, for one embedding provider, with the vectors
    kept in memory (one matrix) for queries. ``cache``: ``"hit"`` (opened from the cache entry
    of this very catalog and model), ``"miss"``, ``"rebuilt"`` (an entry was corrupt: ``notes``
    says so) or None (a Chroma server or client: no entries); ``key``: the entry's key."""

    def __init__(self, catalog: ToolCatalog, provider: EmbeddingProvider | str | None = None, *,
                 path: str | Path | None = None, host: str | None = None, port: int | None = None,
                 collection: str | None = None, rebuild: bool = False, batch_size: int = 64,
                 query_prefix: str | None = None, query_cache: int = 256, client: Any = None) -> None:
        self.catalog = catalog
        self._texts = {t.name: embedding_text(t) for t in catalog.tools}
        self._hashes = {t.name: content_hash(t) for t in catalog.tools}
        self.tools_by_name = {t.name: t for t in catalog.tools}
        self.provider = (provider if not (isinstance(provider, str) or provider is None)
                         else get_provider(provider, texts=list(self._texts.values())))
        self.batch_size = max(1, batch_size)
        self.query_prefix = (query_prefix if query_prefix is not None
                             else getattr(self.provider, "query_prefix", DEFAULT_QUERY_PREFIX))
        self._host, self._port, self.location = (None, None, "client") if client is not None else _location(path, host, port)
        self.client = client
        self.name = collection or collection_name(catalog.name, self.provider.model_id)
        self._entries = entries_dir(self.location) if client is None and not self._host else None
        self.key = index_key(self.name, self._hashes, self.provider.model_id, self.provider.dimensions)
        self.cache: str | None = None
        self.notes: list[str] = []
        self._costs: dict[str, dict[str, int]] = {}
        self._pending: int | None = None
        self._table: VectorTable | None = None
        self._lexical: Any = None
        self._lex_rows: Any = None
        self._collection: Any = None
        self._meta: dict[str, Any] = {}
        self._query_cache: OrderedDict[str, list[float]] = OrderedDict()
        self.query_cache = max(0, query_cache)
        if rebuild and self._entries:
            remove_entry(self._entries, self.key)
        if rebuild or not self._load_entry():
            with self._lock():
                self._open(rebuild)

    def _lock(self) -> Any:
        """The store's build lock (embedded store only: a server serialises its own writes)."""
        return build_lock(Path(self.location)) if self._entries else nullcontext()

    def _load_entry(self) -> bool:
        """Open from the cache entry of this catalog and model; False (and ``cache`` says why) if none."""
        if not self._entries:
            return False
        try:
            got = read_entry(self._entries, self.key, self._hashes, self.provider.model_id)
        except CorruptEntry as e:
            remove_entry(self._entries, self.key)
            self.cache = "rebuilt"
            self.notes.append(f"the cached index {self.key} in {self._entries} was corrupt ({e}): "
                              "it was removed and is built again")
            return False
        if got is None:
            self.cache = self.cache or "miss"
            return False
        self._table, self._meta = got
        self._stored, self._pending, self.cache = dict(self._hashes), 0, "hit"
        costs = self._meta.get("tokens") or {}
        if all(n in costs for n in self._hashes):  # saves loading a tokenizer
            self._costs[COST_MODEL] = {n: int(costs[n]) for n in self._hashes}
        return True

    @property
    def collection(self) -> Any:
        """The Chroma collection (opened on first use: a cache entry answers queries without it)."""
        if self._collection is None:
            self._open(False)
        return self._collection

    def _open(self, rebuild: bool) -> None:
        ef = ChromaEmbeddingFunction(self.provider)
        try:
            if self.client is None:
                self.client = _client(self._host, self._port, self.location)
            if rebuild and self.name in {getattr(c, "name", c) for c in self.client.list_collections()}:
                self.client.delete_collection(self.name)
            self._collection = self.client.get_or_create_collection(
                self.name, embedding_function=ef, configuration={"hnsw": {"space": "cosine"}},
                metadata={"ctxlab": 1, "catalog": self.catalog.name, "model_id": self.provider.model_id,
                          "dimensions": int(self.provider.dimensions)})
        except (ToolIndexError, ModuleNotFoundError):
            raise  # a missing optional package: the CLI names the extra that brings it
        except Exception as e:
            raise ToolIndexError(f"cannot open the Chroma collection {self.name!r} ({type(e).__name__}: {e})",
                                 where=self.location) from None
        self._check_model()
        stored = self._read_hashes()
        if self._table is not None and stored != self._stored:
            self._table = None  # the store changed under the vectors held: read them again
        self._stored, self._pending, self._lex_rows = stored, None, None
        self._meta = dict(self._collection.metadata or {})

    def _check_model(self, dims: int | None = None) -> None:
        meta = self.collection.metadata or {}
        stored_model, stored_dims = meta.get("model_id"), meta.get("dimensions")
        dims = int(dims if dims is not None else self.provider.dimensions)
        if stored_model != self.provider.model_id or (stored_dims is not None and int(stored_dims) != dims):
            raise IndexMismatchError(
                f"the index {self.name!r} was built with {stored_model} ({stored_dims} dimensions), "
                f"not {self.provider.model_id} ({dims} dimensions)", where=self.location, hint=REBUILD_HINT)

    def _read_hashes(self) -> dict[str, str]:
        got = self._collection.get(include=["metadatas"])
        return {i: str((m or {}).get("content_hash", "")) for i, m in zip(got["ids"], got["metadatas"] or [])}

    @property
    def count(self) -> int:
        """Tools stored in the index."""
        return len(self._stored)

    def pending(self) -> int:
        """Tools a ``build()`` would embed or delete (0 when the index matches the catalog)."""
        if self._pending is None:
            changed = sum(self._stored.get(n) != h for n, h in self._hashes.items())
            self._pending = changed + sum(n not in self._hashes for n in self._stored)
        return self._pending

    def build(self, progress: Progress | None = None) -> BuildReport:
        """Embed new and changed tools, delete removed ones; ``progress(done, total, message)``
        is called once per batch. Idempotent: an unchanged catalog embeds nothing (and, when its
        cache entry is current, does not even open Chroma). Another process building the same
        index at the same time is waited for, and its entry used."""
        start = time.perf_counter()
        if self.cache != "hit":
            with self._lock():
                if not self._load_entry():  # another process may have built it while this one waited
                    return self._build_locked(progress, start)
        self.lexical()
        if progress:
            progress(0, 0, "up to date (from the cache)")
        n = len(self._hashes)
        return BuildReport(0, n, 0, n, time.perf_counter() - start, "hit")

    def _build_locked(self, progress: Progress | None, start: float) -> BuildReport:
        if self._entries and self._collection is not None:
            stored = self._read_hashes()  # what another process wrote since this one opened
            if stored != self._stored:
                self._stored, self._table, self._lex_rows = stored, None, None
        todo = [t for t in self.catalog.tools if self._stored.get(t.name) != self._hashes[t.name]]
        todo.sort(key=lambda t: len(self._texts[t.name]))  # similar lengths per batch: less padding
        removed = [n for n in self._stored if n not in self._hashes]
        if todo or removed or not self._meta.get("built_at"):
            self._write(todo, removed, progress)
        self._stored, self._pending = dict(self._hashes), 0
        self._save_entry()
        self.lexical()  # BM25 precomputed here, not on the first query
        if progress and not todo:
            progress(0, 0, f"up to date ({len(removed)} deleted)" if removed else "up to date")
        return BuildReport(len(todo), len(self._hashes) - len(todo), len(removed), len(self._hashes),
                           time.perf_counter() - start, self.cache)

    def _write(self, todo: Sequence[Any], removed: Sequence[str], progress: Progress | None) -> None:
        """Embed ``todo`` batch by batch into the in-memory table, writing to Chroma every
        ``WRITE_EVERY`` tools and at the end; delete ``removed``."""
        table = self.table if self._stored else VectorTable([], None)
        names: list[str] = []
        vectors: list[Any] = []
        written = 0
        for i in range(0, len(todo), self.batch_size):
            batch = todo[i:i + self.batch_size]
            vectors += self._embed(batch, first=not i)
            names += [t.name for t in batch]
            if len(names) - written >= WRITE_EVERY:
                self._upsert(todo[written:len(names)], vectors[written:])
                written = len(names)
            if progress:
                progress(i + len(batch), len(todo), f"embedded {i + len(batch)}/{len(todo)} tools")
        if len(names) > written:
            self._upsert(todo[written:], vectors[written:])
        if removed:
            self.collection.delete(ids=list(removed))
        self._stamp()
        self._table = table.updated(names, vectors, self.catalog.names)
        self._lex_rows = None

    def _embed(self, tools: Sequence[Any], first: bool = False) -> list[list[float]]:
        """The tools' vectors, their size checked against the index's before anything is written."""
        vectors = self.provider.embed([self._texts[t.name] for t in tools])
        if vectors and first and not self._stored and self.collection.count() == 0:
            self._set_meta(dimensions=len(vectors[0]))  # an API model tells its size on first use
        if vectors:
            self._check_model(len(vectors[0]))
        return vectors

    def _upsert(self, tools: Sequence[Any], vectors: Sequence[Sequence[float]]) -> None:
        costs = self.token_costs()
        metas = [{"model_id": self.provider.model_id, "dimensions": len(v), "category": t.category or "",
                  "tokens": costs[t.name], "content_hash": self._hashes[t.name]} for t, v in zip(tools, vectors)]
        self.collection.upsert(ids=[t.name for t in tools], embeddings=list(vectors), metadatas=metas,
                               documents=[self._texts[t.name] for t in tools])

    def _stamp(self) -> None:
        self._set_meta(built_at=datetime.now(timezone.utc).isoformat(timespec="seconds"), tools=len(self._hashes))

    def _set_meta(self, **values: Any) -> None:
        meta = {k: v for k, v in (self.collection.metadata or {}).items() if not k.startswith("hnsw:")}
        self.collection.modify(metadata={**meta, **values})
        self._meta = {**meta, **values}

    def _save_entry(self) -> None:
        """Write this catalog's cache entry (embedded store, index complete: nothing pending)."""
        if not self._entries or self.pending():
            return
        if self._table is None:
            self.table  # noqa: B018 - reading the vectors from Chroma writes the entry
            return
        table = self._table
        if table.names != self.catalog.names:  # rows as Chroma returned them: put them in catalog order
            if set(table.names) != set(self.catalog.names):
                return
            table = VectorTable(self.catalog.names, table.matrix[[table.row[n] for n in self.catalog.names]])
        from .lexical import cutter
        write_entry(self._entries, self.key, table, self._hashes,
                    {"catalog": self.catalog.name, "model_id": self.provider.model_id,
                     "built_at": self._meta.get("built_at"), "tokens": self.token_costs(), "cutter": cutter()},
                    {"lexical": self.lexical().to_arrays()})

    def status(self) -> IndexStatus:
        """Model, dimensions, count and build time as stored."""
        meta = self.collection.metadata or {}
        return IndexStatus(self.name, self.location, str(meta.get("model_id")), int(meta.get("dimensions") or 0),
                           self.collection.count(), meta.get("built_at"), len(self.catalog), self.pending(),
                           self.cache, self.key if self._entries else None)

    def token_costs(self, model: str = COST_MODEL) -> dict[str, int]:
        """Tokens each tool's definition costs for ``model`` (cached per model)."""
        if model not in self._costs:
            self._costs[model] = self.catalog.token_costs(TokenCounter(model))
        return self._costs[model]

    @property
    def table(self) -> VectorTable:
        """The stored vectors as one matrix (read from Chroma once per index object, then kept
        and saved as the cache entry; a build updates it in place)."""
        if self._table is None:
            import numpy as np
            got = self.collection.get(include=["embeddings"])
            ids, embs = list(got["ids"]), got["embeddings"]
            dims = int(self._meta.get("dimensions") or self.provider.dimensions)
            self._table = VectorTable(ids, np.asarray(embs, dtype=np.float32) if len(ids) else np.zeros((0, dims)))
            self._lex_rows = None
            if ids:
                self._save_entry()
        return self._table

    def embed_queries(self, texts: Sequence[str]) -> list[list[float]]:
        """Query vectors (the provider's query form, or the instruction prefix), embedded shortest
        first to limit padding. The last ``query_cache`` vectors are remembered, so selecting
        again for the same message (a slider moved) does not embed it again."""
        keys = [self.query_prefix + t for t in texts]
        cache = self._query_cache
        todo = sorted({k for k in keys if k not in cache}, key=len)
        embed = getattr(self.provider, "embed_queries", None) or self.provider.embed
        vecs = embed(todo) if todo else []
        dims = self.table.dimensions if self.count else 0
        if vecs and dims and len(vecs[0]) != dims:
            self._check_model(len(vecs[0]))
        fresh = {k: list(v) for k, v in zip(todo, vecs)}
        out = [fresh[k] if k in fresh else cache[k] for k in keys]
        for k in keys:
            cache[k] = fresh.get(k) or cache[k]
            cache.move_to_end(k)
        while len(cache) > self.query_cache:
            cache.popitem(last=False)
        return out

    def nearest(self, vectors: Sequence[Sequence[float]], n: int) -> list[dict[str, float]]:
        """For each query vector, the ``n`` nearest tools of the catalog: name -> cosine similarity."""
        import numpy as np
        n = min(n, len(self.table.names))
        if n <= 0 or not vectors:
            return [{} for _ in vectors]
        scores = self.table.scores(vectors)
        out = []
        for row in scores:
            top = np.argpartition(-row, n - 1)[:n]
            out.append({self.table.names[i]: float(row[i]) for i in top[np.argsort(-row[top])]
                        if self.table.names[i] in self._hashes})
        return out

    def similarities(self, vector: Sequence[float], names: Sequence[str]) -> dict[str, float]:
        """Cosine similarity of the query vector to the named (indexed) tools."""
        if not names:
            return {}
        table = self.table
        rows = [(n, table.row[n]) for n in names if n in table.row]
        if not rows:
            return {}
        sims = table.matrix[[i for _, i in rows]] @ self._np_vector(vector)
        return {n: float(s) for (n, _), s in zip(rows, sims)}

    @staticmethod
    def _np_vector(vector: Sequence[float]) -> Any:
        import numpy as np
        return np.asarray(vector, dtype=np.float32)

    def lexical(self) -> Any:
        """The BM25 index of the same tool texts (built once, on first use or by a build)."""
        if self._lexical is None:
            from .lexical import LexicalIndex, cutter
            if self.cache == "hit" and self._meta.get("cutter") == cutter():  # saved with the entry
                try:
                    arrays = read_arrays(self._entries, self.key, "lexical")
                    self._lexical = arrays and LexicalIndex.from_arrays(self.catalog.names, arrays)
                except Exception:  # checked with the entry; gone or unreadable since: cut the texts again
                    self._lexical = None
            if self._lexical is None:
                self._lexical = LexicalIndex(self.catalog.names, [self._texts[n] for n in self.catalog.names])
        return self._lexical

    def live_rows(self) -> Any:
        """For each row of :attr:`table`, whether the tool is still in the catalog (cached with the rows)."""
        self.lexical_rows()
        return self._live

    def lexical_rows(self) -> Any:
        """For each row of :attr:`table`, its position in :meth:`lexical`'s tools (-1 if none)."""
        if self._lex_rows is None:
            import numpy as np
            where = {n: i for i, n in enumerate(self.lexical().names)}
            self._lex_rows = np.array([where.get(n, -1) for n in self.table.names], dtype=np.int64)
            self._live = np.array([n in self._hashes for n in self.table.names], dtype=bool)
        return self._lex_rows

    def select(self, query: str, **kwargs: Any) -> "Selection":
        """Shortcut for :func:`ctxlab.tools.select.select` on this index."""
        from .select import select
        return select(self, query, **kwargs)
