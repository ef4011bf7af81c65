"""The package as a newcomer installs it: a NON-editable `pip install` of the
repository into a fresh virtual environment (no system site-packages: the declared dependencies
must be enough), then every CLI command of the README and the exported snippet, run by the
venv's own `ctxlab` from a folder that holds only the sample data (so nothing is imported from
the checkout).

Stage 1, the core install: every engine command works; a command needing an optional part
prints one line naming the extra to install (exit 2), never a traceback. Stage 2, the same venv
with `[all]`: those commands work too (a model through the fake OpenAI server on 127.0.0.1).

Slow (about a minute per stage on the project machine: packages come from the configured
index), so marked `install`: `pytest -m "not install"` leaves it out locally; CI runs it.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import venv
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from .conftest import ROOT

pytestmark = pytest.mark.install

SAMPLE_FILES = ("ecommerce_refund.json", "sql_agent.json", "parallel_travel.json", "tools_ecommerce.json",
                "tool_queries_ecommerce.jsonl")
CONFIG = {"ctxlab_config": 1, "strategy": "clear_tool_results", "model": "gpt-4o", "max_tokens": 8000,
          "params": {"trigger_tokens": 4000, "keep": 2}}
TURN_SAFE = {"ctxlab_config": 1, "strategy": "turn_safe", "model": "gpt-4o", "max_tokens": 8000,
             "params": {"last_n": 12}}  # openai_agents maps turn_safe only


@dataclass
class Venv:
    """A fresh venv holding ctxlab installed from a copy of the repository, and a work folder."""
    root: Path
    source: Path
    work: Path
    extras: set[str] = field(default_factory=set)

    @property
    def bin(self) -> Path:
        return self.root / "bin"

    def env(self, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items()
               if k not in ("PYTHONPATH", "VIRTUAL_ENV", "OPENAI_API_KEY", "OPENAI_BASE_URL", "CTXLAB_LLM_MODEL")}
        env.update(CTXLAB_DATA_DIR=str(self.work / "data"), HOME=str(self.work), **extra)
        return env

    def run(self, *args: str, stdin: str | None = None, env: dict[str, str] | None = None,
            exe: str = "ctxlab") -> subprocess.CompletedProcess:
        return subprocess.run([str(self.bin / exe), *args], cwd=self.work, input=stdin, capture_output=True,
                              text=True, timeout=600, env=env or self.env())

    def pip_install(self, spec: str) -> None:
        done = subprocess.run([str(self.bin / "python"), "-m", "pip", "install", "-q", spec], capture_output=True,
                              text=True, timeout=1800, env=self.env())
        assert done.returncode == 0, done.stderr[-3000:]


def _copy_repository(to: Path) -> Path:
    """The files a checkout holds that the package build reads (no tests, no caches), so the
    build writes nothing into the developer's checkout."""
    ignore = shutil.ignore_patterns(".git", "__pycache__", "*.egg-info", "build", "tests", "benchmarks",
                                    "notebooks", "test-artifacts", ".hypothesis", ".pytest_cache")
    shutil.copytree(ROOT, to, ignore=ignore)
    return to


@pytest.fixture(scope="module")
def fresh(tmp_path_factory) -> Venv:
    """The core install: `python3 -m venv` (no system site-packages) and `pip install <checkout>`."""
    base = tmp_path_factory.mktemp("install")
    venv.EnvBuilder(with_pip=True, system_site_packages=False).create(base / "venv")
    env = Venv(base / "venv", _copy_repository(base / "ctxlab"), base / "work")
    (env.work / "sample_data").mkdir(parents=True)
    for name in SAMPLE_FILES:
        shutil.copy(ROOT / "sample_data" / name, env.work / "sample_data" / name)
    shutil.copytree(ROOT / "sample_data" / "lessons", env.work / "sample_data" / "lessons")
    (env.work / "tuned.yaml").write_text(json.dumps(CONFIG))  # JSON is YAML
    (env.work / "turn_safe.yaml").write_text(json.dumps(TURN_SAFE))
    env.pip_install(str(env.source))
    return env


# the README's CLI section, with its placeholders filled (FILE = a sample)
CORE_COMMANDS = [
    ["count", "sample_data/ecommerce_refund.json", "--model", "gpt-4o"],
    ["count", "sample_data/ecommerce_refund.json", "--model", "deepseek-chat"],   # its own tokenizer package
    ["count", "sample_data/ecommerce_refund.json", "--model", "qwen3-235b"],
    ["convert", "sample_data/sql_agent.json", "--to", "anthropic"],
    ["validate", "sample_data/parallel_travel.json", "--rules", "anthropic"],
    ["strategies"],
    ["apply", "sample_data/ecommerce_refund.json", "--strategy", "tool_rounds", "--max-tokens", "16000"],
    ["apply", "sample_data/ecommerce_refund.json", "--strategy", "tool_rounds >> sliding_window",
     "--param", "sliding_window.buffer_ratio=0.2"],
    ["apply", "sample_data/ecommerce_refund.json", "--config", "tuned.yaml"],
    ["replay", "sample_data/sql_agent.json", "--strategy", "summarize", "--max-tokens", "8000"],
    ["replay", "sample_data/ecommerce_refund.json", "--strategy", "sliding_window", "--max-tokens", "4000"],
    ["sweep", "sample_data/ecommerce_refund.json", "sample_data/sql_agent.json", "--strategy", "sliding_window",
     "--strategy", "tool_rounds", "--grid", "sliding_window.buffer_ratio=0.1,0.2",
     "--grid", "tool_rounds.keep_rounds=0,1", "--max-tokens", "3000,6000", "--workers", "1"],
    ["config", "export", "tuned.yaml", "--to", "anthropic"],
    ["config", "export", "tuned.yaml", "--to", "langchain", "--format", "python"],
    ["config", "export", "turn_safe.yaml", "--to", "openai_agents"],
    ["diagnose", "sample_data/lessons/poisoning.json", "--modes", "poisoning,distraction,clash"],
]
# commands that need an optional part, and the extra the core install must name
OPTIONAL_COMMANDS = [
    (["sessions", "list"], "sessions"),
    (["tools", "query", "--catalog", "sample_data/tools_ecommerce.json", "I want my money back"], "retrieval"),
    (["tools", "index", "--catalog", "sample_data/tools_ecommerce.json"], "retrieval"),
    (["tools", "eval", "--catalog", "sample_data/tools_ecommerce.json", "--queries",
      "sample_data/tool_queries_ecommerce.jsonl", "--k", "1,5"], "retrieval"),
    (["diagnose", "sample_data/lessons/confusion.json"], "retrieval"),
]
MODEL_COMMANDS = [
    ["answer", "sample_data/ecommerce_refund.json", "--strategy", "sliding_window", "--strategy", "summarize",
     "--question", "What refund did we agree on?", "--max-tokens", "3000"],
    ["probe", "sample_data/ecommerce_refund.json", "--strategy", "sliding_window", "--strategy", "tool_rounds",
     "--n", "2"],
]
SNIPPET = """
import json, ctxlab
from ctxlab.snippets import python_snippet
config = json.load(open("tuned.yaml"))
code = python_snippet(config, langgraph={langgraph})
namespace = {{}}
exec(compile(code, "snippet.py", "exec"), namespace)
conv = ctxlab.load("sample_data/ecommerce_refund.json")
messages = ctxlab.export(conv, "openai").data["messages"]
sent = namespace["manage_context"](messages)
assert 0 < len(sent) <= len(messages), len(sent)
print(len(json.dumps(messages)), len(json.dumps(sent)))
"""


def _one_clean_line(done: subprocess.CompletedProcess) -> str:
    lines = done.stderr.strip().splitlines()
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr, done.stderr[-2000:]
    assert len(lines) == 1, done.stderr[-2000:]
    return lines[0]


def test_core_install_is_not_editable_and_isolated(fresh):
    done = fresh.run("-c", "import ctxlab, sys; print(ctxlab.__file__); print(sys.prefix)", exe="python")
    where, prefix = done.stdout.split()
    assert where.startswith(str(fresh.root)) and prefix == str(fresh.root), done.stdout  # not the checkout
    done = fresh.run("-c", "import chromadb", exe="python")
    assert done.returncode != 0, "the core install must not bring the optional parts"


def test_core_install_help(fresh):
    done = fresh.run("--help")
    assert done.returncode == 0 and "usage: ctxlab" in done.stdout, done.stderr[-2000:]


@pytest.mark.parametrize("args", CORE_COMMANDS, ids=lambda a: " ".join(a[:2]))
def test_core_install_runs_every_engine_command(fresh, args):
    assert not fresh.extras
    done = fresh.run(*args)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    if args[0] != "config" or "--format" not in args:
        json.loads(done.stdout.splitlines()[0] if args[0] == "sweep" and "\n{" in done.stdout else done.stdout)


def test_core_install_reads_standard_input(fresh):
    text = (ROOT / "sample_data" / "sql_agent.json").read_text()
    done = fresh.run("-m", "ctxlab", "count", "-", stdin=text, exe="python")
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout)["total_tokens"] > 0


@pytest.mark.parametrize("args,extra", OPTIONAL_COMMANDS, ids=lambda a: " ".join(a[:2]) if isinstance(a, list) else a)
def test_core_install_names_the_extra_a_command_needs(fresh, args, extra):
    assert not fresh.extras
    done = fresh.run(*args)
    assert done.returncode == 2
    line = _one_clean_line(done)
    assert f"[{extra}]" in line and "pip install" in line, line


def test_core_install_a_model_command_names_the_llm_extra(fresh):
    env = fresh.env(OPENAI_BASE_URL="http://127.0.0.1:9/v1", CTXLAB_LLM_MODEL="fake-model")
    done = fresh.run(*MODEL_COMMANDS[0], env=env)
    assert done.returncode == 2
    assert "[llm]" in _one_clean_line(done)


def test_core_install_runs_the_exported_snippet(fresh):
    done = fresh.run("-c", SNIPPET.format(langgraph=False), exe="python")
    assert done.returncode == 0, done.stderr[-2000:]
    before, after = map(int, done.stdout.split())
    assert after < before  # the tuned strategy cleared old tool results: it really ran


@pytest.fixture(scope="module")
def full(fresh) -> Venv:
    """The same venv after `pip install "<checkout>[all]"` (and langgraph, which the snippet's
    LangGraph node says to install)."""
    fresh.pip_install(f"{fresh.source}[all]")
    fresh.pip_install("langgraph>=0.3")
    fresh.extras.add("all")
    return fresh


@pytest.mark.parametrize("args,extra", OPTIONAL_COMMANDS, ids=lambda a: " ".join(a[:2]) if isinstance(a, list) else a)
def test_all_install_runs_the_optional_commands(full, args, extra):
    done = full.run(*args)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    json.loads(done.stdout)


@pytest.mark.parametrize("args", MODEL_COMMANDS, ids=lambda a: a[0])
def test_all_install_runs_the_model_commands_against_a_server(full, args):
    from .openai_fake import FakeOpenAI
    with FakeOpenAI() as api:
        api.default_reply = "The refund of KC-482193 is agreed."
        env = full.env(OPENAI_BASE_URL=api.base_url, CTXLAB_LLM_MODEL="fake-model")
        done = full.run(*args, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout) and api.chat_requests()


def test_all_install_runs_the_exported_snippet_with_its_langgraph_node(full):
    done = full.run("-c", SNIPPET.format(langgraph=True) + "\nassert 'context_node' in namespace\n", exe="python")
    assert done.returncode == 0, done.stderr[-2000:]
