"""The app's layout (issue 29.5): app.py is the only Python file at the repository's root, the app's
helpers live in the playground package, each of its modules imports without a running Streamlit
server, and no page puts a folder on sys.path to find them."""
from __future__ import annotations

import ast
import os
import subprocess
import sys

import pytest

from ..conftest import ROOT

SCRIPTS = [ROOT / "app.py", *sorted((ROOT / "pages").glob("*.py"))]
MODULES = sorted(p.stem for p in (ROOT / "playground").glob("*.py") if p.stem != "__init__")


def test_the_root_holds_only_app_py():
    assert sorted(p.name for p in ROOT.glob("*.py")) == ["app.py"]


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_no_page_touches_sys_path(script):
    tree = ast.parse(script.read_text(encoding="utf-8"))
    touches = [node.lineno for node in ast.walk(tree) if isinstance(node, ast.Attribute) and node.attr == "path"
               and isinstance(node.value, ast.Name) and node.value.id == "sys"]
    assert not touches, f"{script.name} uses sys.path at line(s) {touches}: import from the playground package"


def test_the_package_holds_the_helpers():
    assert {"state", "input_panel", "widgets", "lab_cache", "lab_table", "tune_job", "tour"} <= set(MODULES)


def test_each_module_imports_without_a_running_server():
    """In a fresh interpreter (nothing imported before, no script run context), from the repository's root."""
    code = "import importlib, sys\nfor name in sys.argv[1:]:\n    importlib.import_module('playground.' + name)\n"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", code, *MODULES], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]


def test_the_package_itself_imports_nothing():
    """`import playground` (the Tune page's sweep child does it) loads no streamlit and no module of its own."""
    code = ("import sys, playground\n"
            "loaded = [m for m in sys.modules if m == 'streamlit' or m.startswith('playground.')]\n"
            "assert not loaded, loaded\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
