"""The shape of the codebase, checked: the public API is what the README and docs/ import, no module
imports in a loop (at import time or through a function-level import), and the version agrees with
pyproject.toml."""
from __future__ import annotations

import ast
import importlib
import re
import tomllib
from pathlib import Path

import pytest

import ctxlab

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "ctxlab"
PRIVATE_PACKAGES = {"incremental", "migrations", "locale"}
"""Subpackages a user never imports (the re-plan fast paths, the store's migrations)."""


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def public_modules() -> list[str]:
    """``ctxlab``, every ``ctxlab/<name>.py`` not named with a leading underscore, and every
    subpackage's ``__init__`` (the modules inside a subpackage are reached through it)."""
    out = ["ctxlab"]
    for path in sorted(PACKAGE.iterdir()):
        if path.name.startswith("_") or path.name in PRIVATE_PACKAGES:
            continue
        if path.suffix == ".py":
            out.append(f"ctxlab.{path.stem}")
        elif (path / "__init__.py").exists():
            out.append(f"ctxlab.{path.name}")
            out += [f"ctxlab.{path.name}.{sub.name}" for sub in sorted(path.iterdir())
                    if (sub / "__init__.py").exists() and sub.name not in PRIVATE_PACKAGES]
    return out


@pytest.mark.parametrize("name", public_modules())
def test_every_public_module_says_what_it_exports_and_has_it(name):
    module = importlib.import_module(name)
    assert hasattr(module, "__all__"), f"{name} has no __all__"
    missing = [n for n in module.__all__ if not hasattr(module, n)]
    assert not missing, f"{name}.__all__ names what it does not have: {missing}"


def _documented_imports() -> list[tuple[str, str, int, str, list[str]]]:
    """(file, module, line, statement, names) of every ctxlab import in the README's and docs/'s
    Python blocks."""
    out = []
    for doc in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        text = doc.read_text()
        for block in re.finditer(r"```python\n(.*?)```", text, re.S):
            start = text[:block.start()].count("\n") + 2
            for k, line in enumerate(block.group(1).splitlines()):
                m = re.match(r"\s*from (ctxlab[\w.]*) import \(?([\w, ]+)\)?", line)
                if m:
                    names = [n.strip().split(" as ")[0] for n in m.group(2).split(",") if n.strip()]
                    out.append((doc.name, m.group(1), start + k, line.strip(), names))
    return out


def test_the_readme_and_docs_import_only_public_names():
    found = _documented_imports()
    assert found, "no ctxlab import found in the README's Python blocks"
    public = set(public_modules())
    wrong = []
    for doc, name, line, statement, names in found:
        module = importlib.import_module(name)
        if name not in public:
            wrong.append(f"{doc}:{line}: {name} is not a public module ({statement})")
            continue
        for n in names:
            if n not in module.__all__:
                wrong.append(f"{doc}:{line}: {name}.{n} is not in {name}.__all__ ({statement})")
    assert not wrong, "\n".join(wrong)


def _is_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:
        return False


def _imports(path: Path) -> set[str]:
    """The ctxlab modules ``path`` imports anywhere in it (function-level imports included; not under
    ``if TYPE_CHECKING``). ``from X import y`` is an import of module ``X.y`` when that is a module,
    else of ``X`` itself (a package's ``__init__`` when X is a package)."""
    me = _module_name(path)
    package = me if path.name == "__init__.py" else me.rpartition(".")[0]
    tree = ast.parse(path.read_text())
    typing_only = {id(n) for node in ast.walk(tree)
                   if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test) for n in ast.walk(node)}
    out: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.split(".")[0] == "ctxlab"}
        elif isinstance(node, ast.ImportFrom):
            parts = package.split(".")
            base = parts[: len(parts) - node.level + 1] if node.level else []
            target = ".".join(base + ([node.module] if node.module else []))
            if target.split(".")[0] != "ctxlab":
                continue
            for a in node.names:
                out.add(f"{target}.{a.name}" if _is_module(f"{target}.{a.name}") else target)
    return out - {me}


def test_no_module_imports_in_a_loop():
    """No cycle among ctxlab's modules, function-level imports included (Python runs a package's
    ``__init__`` before its modules, so a module that imports its own package's names is in a loop
    with it when the package imports that module)."""
    graph = {_module_name(p): _imports(p) for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    loops: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph.get(v, ()):
            if w not in graph:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            part = []
            while True:
                w = stack.pop()
                part.append(w)
                if w == v:
                    break
            if len(part) > 1:
                loops.append(sorted(part))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    assert not loops, "modules that import each other: " + "; ".join(" <-> ".join(p) for p in loops)


def test_the_version_is_the_one_pyproject_declares():
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert ctxlab.__version__ == declared
