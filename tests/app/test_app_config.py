"""The app's Streamlit settings (.streamlit/config.toml): magic is off, so a bare expression on a
page would show nothing; no page has one (each shows what it shows through an st call)."""
from __future__ import annotations

import ast
import tomllib

from ..conftest import ROOT


def _bare_expressions(path) -> list[str]:
    """Statements that are an expression but neither a call nor a docstring: what magic would show."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        for field in ("body", "orelse", "finalbody"):
            seq = getattr(node, field, None)
            if not isinstance(seq, list):
                continue
            for i, stmt in enumerate(seq):
                if not isinstance(stmt, ast.Expr) or isinstance(stmt.value, (ast.Call, ast.Await, ast.Yield)):
                    continue
                doc = i == 0 and isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                if doc and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str):
                    continue
                found.append(f"{path.name}:{stmt.lineno}: {ast.unparse(stmt)[:60]}")
    return found


def test_magic_is_off_and_no_page_relies_on_it():
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text(encoding="utf-8"))
    assert config["runner"]["magicEnabled"] is False
    assert config["browser"]["gatherUsageStats"] is False
    scripts = [ROOT / "app.py", *sorted((ROOT / "pages").glob("*.py"))]
    assert len(scripts) > 5
    assert [found for path in scripts for found in _bare_expressions(path)] == []


def test_the_check_finds_a_bare_expression(tmp_path):
    page = tmp_path / "page.py"
    page.write_text('"""doc"""\nimport streamlit as st\nx = 1\nx\n"a bare string"\nst.write(x)\n', encoding="utf-8")
    assert [f.split(": ", 1)[1] for f in _bare_expressions(page)] == ["x", "'a bare string'"]
