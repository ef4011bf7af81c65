"""The tool-index cache (issue 30): a catalog's index is built once and reused by later processes,
keyed by catalog, model and versions, in a folder the user can list and clear; a corrupt entry is
rebuilt with a note; two processes building at once leave one whole entry."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from ctxlab.formats import tools_to_openai
from ctxlab.tools import ToolCatalog, ToolIndex, cache

from .test_tool_index import CountingProvider, make_catalog

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def cache_dir(tmp_path, monkeypatch) -> Path:
    """A fresh cache folder named by CTXLAB_CACHE_DIR (never the user's own)."""
    monkeypatch.setenv("CTXLAB_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("CTXLAB_CHROMA_HOST", raising=False)
    return tmp_path / "cache" / "tool-index"


@pytest.fixture
def catalog_file(tmp_path) -> Path:
    path = tmp_path / "demo_tools.json"
    path.write_text(json.dumps(tools_to_openai(make_catalog().tools)))
    return path


def _cli(*argv: str, env: dict[str, str]) -> tuple[dict, str]:
    """``python -m ctxlab ...`` in a new process: (its JSON output, its stderr)."""
    done = subprocess.run([sys.executable, "-m", "ctxlab", *argv], capture_output=True, text=True, timeout=300,
                          cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT), **env})
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout), done.stderr


def test_a_second_process_reuses_the_index_the_first_built(cache_dir, catalog_file):
    env = {"CTXLAB_CACHE_DIR": str(cache_dir.parent)}
    first, _ = _cli("tools", "index", "--catalog", str(catalog_file), "--provider", "hash", env=env)
    second, err = _cli("tools", "index", "--catalog", str(catalog_file), "--provider", "hash", env=env)
    assert (first["cache"], first["embedded"]) == ("miss", 8)
    assert (second["cache"], second["embedded"], second["unchanged"]) == ("hit", 0, 8)
    assert "from the cache" in err
    listed = cache.describe(cache_dir)["entries"]
    assert [(e["key"], e["tools"], e["model_id"], e["problem"]) for e in listed] == \
        [(second["status"]["key"], 8, "hash-256", None)]


def test_a_hit_answers_without_opening_chroma_embedding_a_tool_or_cutting_its_text(cache_dir, monkeypatch):
    built = ToolIndex(make_catalog(), CountingProvider())
    built.build()
    from ctxlab.tools import index as index_module
    from ctxlab.tools.lexical import LexicalIndex

    def no_chroma(*args, **kwargs):
        raise AssertionError("Chroma was opened")
    monkeypatch.setattr(index_module, "_client", no_chroma)
    monkeypatch.setattr(LexicalIndex, "__init__", no_chroma)  # the BM25 postings come from the entry
    provider = CountingProvider()
    again = ToolIndex(make_catalog(), provider)
    assert again.cache == "hit" and again.build().embedded == 0
    assert again.select("send an email message", top_k=1, expand_categories=False).names == ("send_email",)
    assert provider.texts == ["Which tool should be used to: send an email message"]  # the query alone
    for query in ("send an email message", "stock price quote", "nothing matches this"):
        assert again.lexical().raw_scores(query).tolist() == built.lexical().raw_scores(query).tolist()


def test_the_key_changes_with_the_catalog_the_model_and_the_versions(cache_dir, monkeypatch):
    base = ToolIndex(make_catalog(), CountingProvider())
    tools = list(make_catalog().tools)
    tools[0] = replace(tools[0], description="Read a file and print it with line numbers.")
    changed = ToolIndex(ToolCatalog.from_tools(tools, name="demo"), CountingProvider())
    other_model = ToolIndex(make_catalog(), CountingProvider(dimensions=32))
    assert len({base.key, changed.key, other_model.key}) == 3
    with monkeypatch.context() as m:
        m.setattr("ctxlab.__version__", "99.0")
        cache.versions.cache_clear()
        upgraded = ToolIndex(make_catalog(), CountingProvider()).key
    cache.versions.cache_clear()
    assert upgraded != base.key and ToolIndex(make_catalog(), CountingProvider()).key == base.key
    base.build()
    provider = CountingProvider()
    grown = ToolIndex(ToolCatalog.from_tools(tools, name="demo"), provider)
    assert grown.cache == "miss" and grown.build().embedded == 1  # Chroma still holds the 7 unchanged tools
    assert len(cache.describe(cache_dir)["entries"]) == 2


def test_clear_empties_the_folder_and_the_next_index_embeds_again(cache_dir, catalog_file, capsys):
    from ctxlab.cli import main
    provider = CountingProvider()
    ToolIndex(make_catalog(), provider).build()
    assert main(["tools", "cache"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["folder"] == str(cache_dir) and len(shown["entries"]) == 1 and shown["total_bytes"] > 0
    assert main(["tools", "cache", "--clear"]) == 0
    cleared = json.loads(capsys.readouterr().out)
    assert (cleared["removed_entries"], cleared["removed_bytes"]) == (1, shown["total_bytes"])
    assert not cache_dir.exists() and cache.describe(cache_dir)["entries"] == []
    again = ToolIndex(make_catalog(), provider)
    assert again.cache == "miss" and again.build().embedded == 8


@pytest.mark.parametrize("damage", ["truncate vectors", "garbage meta", "missing vectors", "other tools",
                                    "truncate postings"])
def test_a_corrupt_entry_is_rebuilt_with_a_note(cache_dir, damage):
    built = ToolIndex(make_catalog(), CountingProvider())
    built.build()
    entry = cache_dir / "entries" / built.key
    if damage == "truncate vectors":
        data = (entry / "vectors.npz").read_bytes()
        (entry / "vectors.npz").write_bytes(data[: len(data) // 2])
    elif damage == "garbage meta":
        (entry / "entry.json").write_text("{not json")
    elif damage == "missing vectors":
        (entry / "vectors.npz").unlink()
    elif damage == "truncate postings":
        (entry / "lexical.npz").write_bytes((entry / "lexical.npz").read_bytes()[:100])
    else:  # a whole, checksummed entry whose tools are not its key's
        import numpy as np
        with np.load(entry / "vectors.npz") as z:
            names, matrix, hashes = list(z["names"]), z["matrix"], list(z["hashes"])
        cache.write_entry(cache_dir / "entries", built.key, cache.VectorTable(names[:-1], matrix[:-1]),
                          dict(zip(names, hashes)), {"model_id": "hash-64"})
    assert cache.describe(cache_dir)["entries"][0]["problem"] or damage == "other tools"
    index = ToolIndex(make_catalog(), CountingProvider())
    assert index.cache == "rebuilt" and "was corrupt" in index.notes[0] and built.key in index.notes[0]
    assert index.build().embedded == 0  # the vectors come back from the Chroma store, nothing re-embedded
    assert ToolIndex(make_catalog(), CountingProvider()).cache == "hit"
    assert index.select("send an email message", top_k=1, expand_categories=False).names == ("send_email",)


def test_the_cli_prints_the_note_of_a_corrupt_entry(cache_dir, catalog_file, capsys):
    from ctxlab.cli import main
    assert main(["tools", "index", "--catalog", str(catalog_file), "--provider", "hash"]) == 0
    key = json.loads(capsys.readouterr().out)["status"]["key"]
    (cache_dir / "entries" / key / "entry.json").write_text("")
    assert main(["tools", "query", "--catalog", str(catalog_file), "--provider", "hash", "send an email"]) == 0
    out, err = capsys.readouterr()
    assert "ctxlab: note: the cached index" in err and "was corrupt" in err and json.loads(out)["tools"]


BUILD_SCRIPT = """
import json, sys, time
from ctxlab.tools import HashEmbeddings, ToolIndex
from tests.retrieval.test_tool_index import make_catalog

class Slow(HashEmbeddings):
    def embed(self, texts):
        time.sleep(0.2)  # long enough for the other process to arrive while this one builds
        return super().embed(texts)

index = ToolIndex(make_catalog(), Slow(64), batch_size=2)
report = index.build()
print(json.dumps({"cache": report.cache, "embedded": report.embedded}))
"""


def test_two_processes_building_the_same_index_at_once_leave_one_whole_entry(cache_dir):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "CTXLAB_CACHE_DIR": str(cache_dir.parent)}
    procs = [subprocess.Popen([sys.executable, "-c", BUILD_SCRIPT], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert all(p.returncode == 0 for p in procs), [e for _, e in outs]
    reports = sorted((json.loads(o)["cache"], json.loads(o)["embedded"]) for o, _ in outs)
    assert reports == [("hit", 0), ("miss", 8)]  # one built, the other waited and reused it
    entries = cache.describe(cache_dir)["entries"]
    assert len(entries) == 1 and entries[0]["problem"] is None and entries[0]["tools"] == 8
    assert not [p for p in (cache_dir / "entries").iterdir() if p.name.startswith(".")]  # no temporary folder left
    index = ToolIndex(make_catalog(), CountingProvider(64))
    assert index.cache == "hit" and index.count == 8


def test_the_cache_folder_follows_the_environment(tmp_path, monkeypatch):
    monkeypatch.delenv("CTXLAB_CACHE_DIR", raising=False)
    monkeypatch.delenv("CTXLAB_DATA_DIR", raising=False)
    import platformdirs
    assert cache.tools_cache_dir() == Path(platformdirs.user_cache_dir("ctxlab", appauthor=False)) / "tool-index"
    monkeypatch.setenv("CTXLAB_DATA_DIR", str(tmp_path / "data"))
    assert cache.tools_cache_dir() == tmp_path / "data" / "tool-index"
    monkeypatch.setenv("CTXLAB_CACHE_DIR", str(tmp_path / "cache"))
    assert cache.tools_cache_dir() == tmp_path / "cache" / "tool-index"
