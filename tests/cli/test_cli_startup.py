"""The CLI starts light: importing it, and running the commands that need no
strategy engine, loads none of the heavy packages (langchain-core, chromadb, numpy, pandas,
plotly). Each check runs in a fresh interpreter and reads its ``sys.modules``; start-up *time* is
measured by benchmarks/bench_cli.py, not here."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from ctxlab.cli import build_parser, main

from ..conftest import ROOT, SAMPLES

HEAVY = ("langchain_core", "chromadb", "pandas", "plotly", "streamlit", "onnxruntime", "sqlalchemy")


def _loaded_after(code: str) -> dict:
    """Run ``code`` in a fresh interpreter (this checkout first on the path); return which of
    HEAVY (and numpy, the strategy engine) it left in ``sys.modules`` and what it printed."""
    probe = (f"import sys, json\n{code}\n"
             f"print(json.dumps({{'heavy': sorted(m for m in {HEAVY!r} + ('numpy', 'ctxlab.strategies') "
             f"if m in sys.modules)}}))")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, env=env,
                          cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_importing_the_cli_loads_no_heavy_package():
    loaded = _loaded_after("import ctxlab.cli")
    assert loaded["heavy"] == [], loaded


def test_count_and_convert_load_no_strategy_engine_nor_heavy_package():
    sample = SAMPLES / "ecommerce_refund.json"
    loaded = _loaded_after("from ctxlab.cli import main\n"
                           f"assert main(['count', {str(sample)!r}]) == 0\n"
                           f"assert main(['convert', {str(sample)!r}, '--to', 'anthropic']) == 0")
    assert loaded["heavy"] == [], loaded


def test_apply_loads_the_engine_but_not_langchain_or_chromadb():
    sample = SAMPLES / "ecommerce_refund.json"
    loaded = _loaded_after("from ctxlab.cli import main\n"
                           f"assert main(['apply', {str(sample)!r}, '--strategy', 'sliding_window', "
                           "'--max-tokens', '4000']) == 0")
    assert "ctxlab.strategies" in loaded["heavy"]  # it really ran the engine
    assert not set(loaded["heavy"]) & {"langchain_core", "chromadb", "pandas", "plotly", "streamlit"}, loaded


def test_the_langchain_parts_still_work_when_used(tmp_path, capsys):
    """Lazy imports: reading and writing LangChain messages, and the trim_messages baseline, load
    langchain-core when they run."""
    sample = SAMPLES / "ecommerce_refund.json"
    assert main(["convert", str(sample), "--to", "langchain"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["messages"][0]["type"] in ("system", "human")
    path = tmp_path / "lc.json"
    path.write_text(json.dumps(out))
    assert main(["apply", str(path), "--strategy", "langchain_trim", "--max-tokens", "3000"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["stats"]["langchain_core"] and plan["strategy"] == "langchain_trim"
    from ctxlab.strategies.langchain_trim import LANGCHAIN_CORE_VERSION
    assert plan["stats"]["langchain_core"] == LANGCHAIN_CORE_VERSION


def test_the_full_parser_still_lists_every_command_with_its_arguments():
    parser = build_parser()
    subs = next(a for a in parser._actions if a.dest == "command")
    assert {"count", "convert", "validate", "strategies", "apply", "replay", "sweep", "tools", "config",
            "diagnose", "answer", "probe", "sessions"} <= set(subs.choices)
    apply_opts = {o for a in subs.choices["apply"]._actions for o in a.option_strings}
    assert {"--strategy", "--to", "--max-tokens"} <= apply_opts


@pytest.mark.parametrize("argv,needle", [
    (["apply", "--help"], "--strategy"), (["tools", "query", "--help"], "--on-no-match"),
    (["config", "export", "--help"], "anthropic"), (["--help"], "count"),
])
def test_help_of_a_command_built_alone_lists_its_options(capsys, argv, needle):
    with pytest.raises(SystemExit) as done:
        main(argv)
    assert done.value.code == 0
    assert needle in capsys.readouterr().out


def test_a_usage_error_still_names_the_known_commands(capsys):
    assert main(["cuont", "x.json"]) == 2
    err = capsys.readouterr().err
    assert "invalid choice" in err and "count" in err
