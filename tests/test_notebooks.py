"""Every notebook runs as a user runs it: `jupyter nbconvert --execute` from the
repository root, in a real Jupyter kernel. Jupyter starts that kernel in the notebook's folder
(notebooks/), so a notebook that opened `sample_data/...` relative to the root failed there
while a loop exec'ing its cells from the root passed. An exception or a failed assert in a cell
fails nbconvert, and so the test."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from .conftest import ROOT

NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))

pytest.importorskip("nbconvert", reason="jupyter nbconvert and ipykernel come with requirements.txt (tests)")
pytest.importorskip("ipykernel", reason="jupyter nbconvert and ipykernel come with requirements.txt (tests)")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_runs_under_jupyter_nbconvert_from_the_root(path, tmp_path):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
           "CTXLAB_DATA_DIR": str(tmp_path / "data")}
    done = subprocess.run(
        [sys.executable, "-m", "jupyter", "nbconvert", "--to", "notebook", "--execute",
         "--ExecutePreprocessor.timeout=600", "--output-dir", str(tmp_path), str(path.relative_to(ROOT))],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    executed = json.loads((tmp_path / path.name).read_text())
    code = [c for c in executed["cells"] if c["cell_type"] == "code"]
    assert code and all(c["execution_count"] for c in code)  # every cell ran
    printed = "".join("".join(o.get("text", "")) for c in code for o in c["outputs"] if o["output_type"] == "stream")
    assert printed.strip(), "the notebook printed nothing"


def test_there_is_a_notebook():
    assert NOTEBOOKS
