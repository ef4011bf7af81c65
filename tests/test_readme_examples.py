"""Every Python example of the README runs as written. The test reads README.md
itself, so an example changed there is the example tested: each ```python block is executed in
order in one namespace (later blocks use the ``conv`` of earlier ones), from a scratch folder that
holds the sample data, with the tool index and the session store in that folder."""
from __future__ import annotations

import contextlib
import io
import os
import re

import pytest

from .conftest import ROOT

BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def python_blocks() -> list[tuple[int, str]]:
    """(line number, code) of each ```python block of README.md."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    return [(text.count("\n", 0, m.start()) + 1, m.group(1)) for m in BLOCK.finditer(text)]


def test_the_readme_has_python_examples():
    blocks = python_blocks()
    assert len(blocks) >= 5, blocks
    assert any("ToolIndex(ToolCatalog.load(" in code for _, code in blocks)


def test_every_python_example_of_the_readme_runs(tmp_path, monkeypatch):
    (tmp_path / "sample_data").symlink_to(ROOT / "sample_data")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CTXLAB_DATA_DIR", str(tmp_path / "data"))
    namespace: dict = {"__name__": "readme"}
    for line, code in python_blocks():
        out = io.StringIO()
        try:
            with contextlib.redirect_stdout(out):
                exec(compile(code, f"README.md:{line}", "exec"), namespace)  # noqa: S102 (the README's own code)
        except Exception as e:  # noqa: BLE001 - the failure names the block
            pytest.fail(f"the README example at line {line} fails: {type(e).__name__}: {e}")
    assert "conv" in namespace and len(namespace["conv"]) > 0
    if "sel" in namespace:  # the tool-retrieval example selected tools offline
        assert namespace["sel"].tools and namespace["sel"].tokens_selected < namespace["sel"].tokens_all
    assert not os.path.exists(ROOT / "agents.db")  # the session example wrote into the scratch folder


def test_the_set_up_commands_near_the_top_make_a_venv_name_the_url_and_the_plain_test_command():
    """a newcomer found no venv step, no URL to open, and the plain test command at line 152."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index("## Two commands")
    block = text[start:text.index("### Install", start)]
    assert "python3 -m venv" in block and "activate" in block
    assert "http://localhost:8501" in block
    assert 'python3 -m pytest -m "not install"' in block
    assert block.index("python3 -m venv") < block.index("python3 -m pip install")  # the venv comes first
