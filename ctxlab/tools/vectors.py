"""The index's vectors in memory: one matrix, so a query is one matrix product. On disk they are
a cache entry (:mod:`ctxlab.tools.cache`), so a new process answers without opening Chroma.
"""
from __future__ import annotations

from typing import Any, Sequence


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

