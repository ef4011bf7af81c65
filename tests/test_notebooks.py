"""Every notebook runs top to bottom from the repository root (its code cells in one namespace,
as a kernel would run them); an exception or a failed assert in a cell fails the test."""
from __future__ import annotations

import contextlib
import io
import json

import pytest

from .conftest import ROOT

NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_runs(path, monkeypatch):
    monkeypatch.chdir(ROOT)
    cells = [c for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"]
    assert cells, "a notebook without code"
    namespace: dict = {"__name__": "__main__"}
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        for k, cell in enumerate(cells):
            source = "".join(cell["source"])
            exec(compile(source, f"{path.name}[cell {k}]", "exec"), namespace)
    assert out.getvalue().strip()


def test_there_is_a_notebook():
    assert NOTEBOOKS
