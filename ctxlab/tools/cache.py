"""The tool-index cache: a catalog's vectors built once and reused by every later process.

Folder: ``$CTXLAB_CACHE_DIR``, else ``$CTXLAB_DATA_DIR`` (the older name, still honoured), else the
user cache folder of the platform (``platformdirs.user_cache_dir("ctxlab")``: ``~/.cache/ctxlab``
on Linux), then ``tool-index/`` inside it. That folder is the embedded Chroma store, and
``entries/`` in it holds one folder per built index, named by its key::

    key = sha256(collection name, tool names and content hashes in catalog order, model id,
                 dimensions, ctxlab version, chromadb version, entry format)

so a changed catalog, another model, or an upgrade of ctxlab or chromadb never reads an old entry.
An entry is ``vectors.npz`` (names, content hashes, the matrix), ``lexical.npz`` (the BM25
postings, so a later process does not cut every tool text into words again) and ``entry.json``
(what it is for, the token cost of each tool, and the sha256 of each file). It is written in a temporary
folder and renamed into place, so a reader sees a whole entry or none, and two processes building
the same index at once leave one whole entry. An entry that does not read back as written
(checksum, names, model, dimensions) is :class:`CorruptEntry`: the index removes it, says so in a
note, and builds it again. Writes to the Chroma store itself are serialised by :func:`build_lock`.

``ctxlab tools cache`` lists the entries and their sizes; ``--clear`` removes the folder.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterator, Mapping

from .vectors import VectorTable

CACHE_ENV, LEGACY_ENV = "CTXLAB_CACHE_DIR", "CTXLAB_DATA_DIR"
SUBDIR, ENTRIES, LOCK = "tool-index", "entries", ".build.lock"
VECTORS, META = "vectors.npz", "entry.json"
FORMAT = 1  # bump when the entry's files change shape


class CorruptEntry(Exception):
    """A cache entry that exists but does not read back as written (the message says what)."""


def cache_root() -> Path:
    """ctxlab's cache folder: ``$CTXLAB_CACHE_DIR``, else ``$CTXLAB_DATA_DIR``, else the platform's
    user cache folder for ctxlab."""
    env = os.environ.get(CACHE_ENV) or os.environ.get(LEGACY_ENV)
    if env:
        return Path(env)
    import platformdirs
    return Path(platformdirs.user_cache_dir("ctxlab", appauthor=False))


def tools_cache_dir() -> Path:
    """The tool-index cache folder (the embedded Chroma store, and ``entries/``)."""
    return cache_root() / SUBDIR


@lru_cache(maxsize=1)
def versions() -> dict[str, Any]:
    """The versions an entry is keyed by (read without importing chromadb)."""
    from importlib.metadata import PackageNotFoundError, version
    from .. import __version__
    try:
        chroma = version("chromadb")
    except PackageNotFoundError:
        chroma = "none"
    return {"ctxlab": __version__, "chromadb": chroma, "format": FORMAT}


def index_key(collection: str, hashes: Mapping[str, str], model_id: str, dimensions: int) -> str:
    """The key of a catalog's index: its collection (the Chroma records the entry mirrors), its
    tools (names and content hashes, in order), the model, its dimensions and the versions."""
    payload = json.dumps([collection, list(hashes.items()), model_id, int(dimensions), versions()],
                         ensure_ascii=False)
    return hashlib.sha256(payload.encode()).hexdigest()[:32]


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _checksums(folder: Path, meta: Any) -> str | None:
    """What does not match the checksums ``entry.json`` holds (None: every file does)."""
    if not isinstance(meta, dict):
        return "its entry.json is not an object"
    for name, digest in {VECTORS: meta.get("sha256"), **(meta.get("files") or {})}.items():
        if _sha256(folder / name) != digest:
            return f"its {name} does not match the checksum written with it"
    return None


def read_entry(entries: Path, key: str, hashes: Mapping[str, str],
               model_id: str) -> tuple[VectorTable, dict[str, Any]] | None:
    """(vectors, meta) of the entry ``key``; None when there is none; :class:`CorruptEntry` when
    there is one that is not whole or not what its key says."""
    folder = entries / key
    if not folder.exists():
        return None
    import numpy as np
    try:
        meta = json.loads((folder / META).read_text(encoding="utf-8"))
        problem = _checksums(folder, meta)
        if problem:
            raise CorruptEntry(problem)
        with np.load(folder / VECTORS, allow_pickle=False) as z:
            names, stored, matrix = [str(n) for n in z["names"]], [str(h) for h in z["hashes"]], z["matrix"]
    except CorruptEntry:
        raise
    except Exception as e:  # a missing file, bad JSON, a truncated npz
        raise CorruptEntry(f"it cannot be read ({type(e).__name__}: {e})") from None
    if meta.get("model_id") != model_id or dict(zip(names, stored)) != dict(hashes) or names != list(hashes):
        raise CorruptEntry("it holds other tools or another model than its key says")
    dims = int(meta.get("dimensions") or 0)
    if matrix.ndim != 2 or matrix.shape[0] != len(names) or (names and matrix.shape[1] != dims):
        raise CorruptEntry(f"its matrix has the shape {tuple(matrix.shape)}, not ({len(names)}, {dims})")
    return VectorTable(names, matrix), meta


def read_arrays(entries: Path, key: str, name: str) -> dict[str, Any] | None:
    """The arrays of an extra file of an entry (``lexical``: checked with the entry), None if absent."""
    import numpy as np
    path = entries / key / f"{name}.npz"
    if not path.is_file():
        return None
    with np.load(path, allow_pickle=False) as z:
        return {k: z[k] for k in z.files}


def write_entry(entries: Path, key: str, table: VectorTable, hashes: Mapping[str, str],
                meta: Mapping[str, Any], extra: Mapping[str, Mapping[str, Any]] | None = None) -> Path:
    """Write the entry ``key`` (and ``extra``: name -> arrays, one ``.npz`` each) in a temporary
    folder, then rename it into place (atomic: a reader sees a whole entry or none; when another
    process got there first, its entry stays)."""
    import numpy as np
    entries.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{key}.", dir=entries))
    try:
        with open(tmp / VECTORS, "wb") as f:
            np.savez(f, names=np.array(table.names, dtype=str), matrix=table.matrix,
                     hashes=np.array([hashes.get(n, "") for n in table.names], dtype=str))
            f.flush()
            os.fsync(f.fileno())
        files = {}
        for name, arrays in (extra or {}).items():
            with open(tmp / f"{name}.npz", "wb") as f:
                np.savez(f, **arrays)
                f.flush()
                os.fsync(f.fileno())
            files[f"{name}.npz"] = _sha256(tmp / f"{name}.npz")
        full = {**meta, "key": key, "versions": versions(), "tools": len(table.names),
                "dimensions": table.dimensions, "sha256": _sha256(tmp / VECTORS), "files": files}
        (tmp / META).write_text(json.dumps(full, ensure_ascii=False), encoding="utf-8")
        final = entries / key
        shutil.rmtree(final, ignore_errors=True)  # a corrupt entry being replaced
        try:
            os.rename(tmp, final)
        except OSError:  # another process renamed its whole entry into place first
            pass
        return final
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def remove_entry(entries: Path, key: str) -> None:
    """Remove an entry (a corrupt one, before building it again)."""
    shutil.rmtree(entries / key, ignore_errors=True)


@contextmanager
def build_lock(folder: Path) -> Iterator[None]:
    """Hold the store's build lock (one process writes to the embedded Chroma store at a time;
    others wait). A no-op where ``fcntl`` is missing: entries stay atomic there all the same."""
    try:
        import fcntl
    except ImportError:  # Windows
        yield
        return
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / LOCK, "a+") as f:
        fcntl.flock(f.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f.fileno(), fcntl.LOCK_UN)


@dataclass(frozen=True)
class CacheEntry:
    """One cached index as listed: its key, catalog, model, tools, size on disk, and whether it
    reads back whole (``problem`` says why not)."""

    key: str
    catalog: str
    model_id: str
    tools: int
    bytes: int
    built_at: str | None
    problem: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return asdict(self)


def _size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.is_dir() else 0


def list_entries(folder: Path) -> list[CacheEntry]:
    """The entries under ``folder/entries`` (temporary folders of a build under way left out)."""
    entries = folder / ENTRIES
    out = []
    for d in sorted(entries.iterdir()) if entries.is_dir() else []:
        if d.name.startswith(".") or not d.is_dir():
            continue
        try:
            meta = json.loads((d / META).read_text(encoding="utf-8"))
            problem = _checksums(d, meta)
        except Exception as e:
            meta, problem = {}, f"unreadable ({type(e).__name__})"
        out.append(CacheEntry(d.name, str(meta.get("catalog", "?")), str(meta.get("model_id", "?")),
                              int(meta.get("tools") or 0), _size(d), meta.get("built_at"), problem))
    return out


def describe(folder: Path | None = None) -> dict[str, Any]:
    """The cache folder, its entries, the Chroma store's size and the total, JSON-ready."""
    folder = folder or tools_cache_dir()
    entries = list_entries(folder)
    total = _size(folder)
    in_entries = sum(e.bytes for e in entries)
    return {"folder": str(folder), "exists": folder.is_dir(), "entries": [e.to_dict() for e in entries],
            "entries_bytes": in_entries, "store_bytes": total - in_entries, "total_bytes": total}


def clear(folder: Path | None = None) -> dict[str, Any]:
    """Remove the cache folder (entries and the embedded Chroma store); what was removed."""
    folder = folder or tools_cache_dir()
    before = describe(folder)
    if folder.is_dir():
        shutil.rmtree(folder)
        _forget_chroma_clients()
    return {"folder": str(folder), "removed_entries": len(before["entries"]), "removed_bytes": before["total_bytes"]}


def _forget_chroma_clients() -> None:
    """Chroma keeps one client per store path in a process: after the folder is gone, a new
    client must open a new store, not the deleted one."""
    import sys
    if "chromadb" in sys.modules:
        from chromadb.api.client import SharedSystemClient
        SharedSystemClient.clear_system_cache()


def entries_dir(store: str | Path) -> Path:
    """Where the entries of the embedded store at ``store`` live."""
    return Path(store) / ENTRIES

