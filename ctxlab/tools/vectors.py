"""The index's vectors in memory: one matrix, so a query is one matrix product, and a snapshot of
it on disk beside the embedded Chroma store, so a new process answers without opening Chroma.

The snapshot (``<store>/ctxlab-vectors/<collection>.npz``) holds the tool names, their content
hashes, the model id and the matrix. It is written after every build that changed the index and
after the matrix is first read from Chroma; it is used only when its model id and dimensions are
the provider's, and the content hashes tell which tools are stale, exactly as Chroma's do.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Mapping, Sequence

SNAPSHOT_DIR = "ctxlab-vectors"


class VectorTable:
    """Tool names and their unit vectors as one float32 matrix (row i = names[i])."""

    def __init__(self, names: Sequence[str], matrix: Any) -> None:
        import numpy as np
        self.names = tuple(names)
        if not self.names:
            dims = int(np.shape(matrix)[-1]) if matrix is not None and np.ndim(matrix) == 2 else 0
            self.matrix = np.zeros((0, dims), dtype=np.float32)
        else:
            self.matrix = np.ascontiguousarray(matrix, dtype=np.float32).reshape(len(self.names), -1)
        self.row = {n: i for i, n in enumerate(self.names)}

    @property
    def dimensions(self) -> int:
        """Vector size (0 when empty)."""
        return int(self.matrix.shape[1]) if len(self.names) else 0

    def scores(self, vectors: Sequence[Sequence[float]]) -> Any:
        """Cosine similarity of each query vector to every tool: a (queries x tools) array."""
        import numpy as np
        q = np.asarray(vectors, dtype=np.float32).reshape(len(vectors), -1)
        # numpy's own loop, not BLAS: OpenBLAS's threads turn a 1 ms product into 15-50 ms when the
        # cores are busy (measured at 2,000 x 384 on a loaded 2-core machine; einsum stays at 1-2 ms)
        return np.einsum("td,qd->qt", self.matrix, q, optimize=False)

    def updated(self, names: Sequence[str], vectors: Sequence[Sequence[float]], keep: Sequence[str]) -> "VectorTable":
        """A table with ``names`` set to ``vectors`` (added or replaced), holding only ``keep``, in its order."""
        import numpy as np
        fresh = dict(zip(names, np.asarray(vectors, dtype=np.float32).reshape(len(names), -1))) if names else {}
        dims = next(iter(fresh.values())).shape[0] if fresh else self.dimensions
        rows = [fresh[n] if n in fresh else self.matrix[self.row[n]] for n in keep if n in fresh or n in self.row]
        kept = [n for n in keep if n in fresh or n in self.row]
        return VectorTable(kept, np.stack(rows) if rows else np.zeros((0, dims), dtype=np.float32))


def snapshot_path(store: str, collection: str) -> Path:
    """Where the snapshot of a collection of the embedded store at ``store`` lives."""
    return Path(store) / SNAPSHOT_DIR / f"{collection}.npz"


def save_snapshot(path: Path, table: VectorTable, hashes: Mapping[str, str], meta: Mapping[str, Any]) -> None:
    """Write the snapshot atomically (a reader never sees half a file)."""
    import numpy as np
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "wb") as f:
        np.savez(f, names=np.array(table.names, dtype=str), matrix=table.matrix,
                 hashes=np.array([hashes.get(n, "") for n in table.names], dtype=str),
                 meta=np.array(json.dumps(dict(meta))))
    os.replace(tmp, path)


def load_snapshot(path: Path, model_id: str, dimensions: int) -> tuple[VectorTable, dict[str, str], dict] | None:
    """(table, content hashes, meta) when the snapshot exists and was made with this model, else None."""
    if not path.is_file():
        return None
    import numpy as np
    try:
        with np.load(path, allow_pickle=False) as z:
            meta = json.loads(str(z["meta"]))
            names, hashes, matrix = [str(n) for n in z["names"]], [str(h) for h in z["hashes"]], z["matrix"]
    except Exception:  # unreadable or from another version: Chroma answers instead
        return None
    if meta.get("model_id") != model_id or (names and int(matrix.shape[1]) != int(dimensions)):
        return None
    return VectorTable(names, matrix), dict(zip(names, hashes)), meta
