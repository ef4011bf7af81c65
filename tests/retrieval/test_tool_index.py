"""ToolIndex: an embedded Chroma store under the data dir, incremental builds, model checks, and a
real `chroma run` server on 127.0.0.1."""
from __future__ import annotations

import json
import shutil
import socket
import subprocess
import time
import urllib.request
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxlab.conversation import ToolDef
from ctxlab.tokens import TokenCounter
from ctxlab.tools import (HashEmbeddings, IndexMismatchError, ToolCatalog, ToolIndex, ToolIndexError, collection_name,
                          content_hash, embedding_text)


def _tool(name: str, description: str, category: str, **params: str) -> ToolDef:
    props = {k: {"type": "string", "description": v} for k, v in params.items()}
    return ToolDef(name, description, {"type": "object", "properties": props}, category)


def make_catalog(name: str = "demo") -> ToolCatalog:
    """Eight tools in four categories, for tests."""
    return ToolCatalog.from_tools([
        _tool("read_file", "Read the contents of a file.", "files", path="Path of the file to read"),
        _tool("write_file", "Write text to a file.", "files", path="Path of the file", text="Text to write"),
        _tool("list_dir", "List the files in a directory.", "files", path="Directory to list"),
        _tool("send_email", "Send an email message to a recipient.", "mail", to="Recipient address", body="Body"),
        _tool("read_inbox", "Read the emails in the inbox.", "mail"),
        _tool("get_weather", "Get the current weather forecast for a city.", "weather", city="City name"),
        _tool("buy_stock", "Buy shares of a stock at the market price.", "trading", symbol="Stock symbol"),
        _tool("get_quote", "Get the latest price quote of a stock symbol.", "trading", symbol="Stock symbol"),
    ], name=name)


class CountingProvider:
    """A real hash provider that counts the texts it embeds (a fake, not a mock)."""

    def __init__(self, dimensions: int = 64, model_id: str | None = None) -> None:
        self.inner = HashEmbeddings(dimensions)
        self.model_id = model_id or self.inner.model_id
        self.dimensions = dimensions
        self.texts: list[str] = []

    def embed(self, texts):
        self.texts.extend(texts)
        return self.inner.embed(texts)


@pytest.fixture
def store(tmp_path, monkeypatch):
    """A fresh ctxlab data dir; no Chroma server configured."""
    monkeypatch.setenv("CTXLAB_DATA_DIR", str(tmp_path))
    monkeypatch.delenv("CTXLAB_CHROMA_HOST", raising=False)
    monkeypatch.delenv("CTXLAB_CHROMA_PORT", raising=False)
    return tmp_path


def test_the_store_lives_under_the_data_dir_and_a_second_build_embeds_nothing(store):
    provider = CountingProvider()
    index = ToolIndex(make_catalog(), provider)
    assert index.status().location.startswith(str(store)) and index.status().built_at is None
    first = index.build()
    assert (first.embedded, first.unchanged, first.deleted, first.total) == (8, 0, 0, 8)
    assert len(provider.texts) == 8
    again = ToolIndex(make_catalog(), provider).build()  # a new object on the persisted store
    assert (again.embedded, again.unchanged, again.deleted) == (0, 8, 0)
    assert len(provider.texts) == 8


def test_a_changed_tool_is_re_embedded_and_a_removed_one_deleted(store):
    provider = CountingProvider()
    ToolIndex(make_catalog(), provider).build()
    tools = list(make_catalog().tools)
    tools[0] = replace(tools[0], description="Read a file and print it with line numbers.")
    del tools[-1]
    index = ToolIndex(ToolCatalog.from_tools(tools, name="demo"), provider)
    assert index.pending() == 2
    provider.texts.clear()
    report = index.build()
    assert (report.embedded, report.unchanged, report.deleted) == (1, 6, 1)
    assert provider.texts == [embedding_text(tools[0])]
    got = index.collection.get(include=["metadatas", "documents"])
    assert sorted(got["ids"]) == sorted(t.name for t in tools) and index.status().count == 7
    meta = dict(zip(got["ids"], got["metadatas"]))["read_file"]
    assert meta["content_hash"] == content_hash(tools[0])
    assert "line numbers" in dict(zip(got["ids"], got["documents"]))["read_file"]
    assert index.pending() == 0


def test_each_record_carries_model_dimensions_category_tokens_and_hash(store):
    catalog = make_catalog()
    index = ToolIndex(catalog, CountingProvider(dimensions=32))
    index.build()
    got = index.collection.get(include=["metadatas"])
    counter = TokenCounter("gpt-4o")
    for name, meta in zip(got["ids"], got["metadatas"]):
        tool = catalog.get(name)
        assert meta == {"model_id": "hash-32", "dimensions": 32, "category": tool.category,
                        "tokens": counter.tool(tool), "content_hash": content_hash(tool)}
    vector = index.provider.embed([embedding_text(catalog.get("get_weather"))])[0]
    nearest = index.nearest([vector], 1)[0]  # cosine space: the same text is at similarity 1
    assert list(nearest) == ["get_weather"] and nearest["get_weather"] == pytest.approx(1.0, abs=1e-4)


def test_progress_is_reported_once_per_batch(store):
    calls = []
    ToolIndex(make_catalog(), CountingProvider(), batch_size=3).build(progress=lambda *a: calls.append(a))
    assert [(d, t) for d, t, _ in calls] == [(3, 8), (6, 8), (8, 8)]
    assert all(isinstance(m, str) and m for _, _, m in calls)


def test_status_reports_model_count_and_build_time(store):
    index = ToolIndex(make_catalog(), CountingProvider(dimensions=48))
    before = index.status()
    assert (before.count, before.built_at, before.pending) == (0, None, 8)
    index.build()
    after = index.status()
    assert (after.model_id, after.dimensions, after.count, after.pending) == ("hash-48", 48, 8, 0)
    assert after.built_at and after.built_at[:4].isdigit() and "T" in after.built_at


def test_another_dimension_under_the_same_model_id_is_caught_with_the_rebuild_path(store):
    ToolIndex(make_catalog(), CountingProvider(dimensions=64, model_id="fake-model")).build()
    with pytest.raises(IndexMismatchError) as e:
        ToolIndex(make_catalog(), CountingProvider(dimensions=32, model_id="fake-model"))
    assert "fake-model (64 dimensions)" in str(e.value) and "--rebuild" in str(e.value)
    rebuilt = ToolIndex(make_catalog(), CountingProvider(dimensions=32, model_id="fake-model"), rebuild=True)
    assert rebuilt.count == 0 and rebuilt.build().embedded == 8
    assert rebuilt.status().dimensions == 32


def test_another_model_on_a_named_collection_is_caught(store):
    ToolIndex(make_catalog(), CountingProvider(), collection="shared-tools").build()
    assert ToolIndex(make_catalog(), HashEmbeddings(64), collection="shared-tools").count == 8  # same model
    with pytest.raises(IndexMismatchError, match="rebuild=True"):
        ToolIndex(make_catalog(), HashEmbeddings(128), collection="shared-tools")


def test_a_provider_whose_vectors_change_size_is_caught_before_writing(store):
    provider = CountingProvider(dimensions=64, model_id="drifting")
    ToolIndex(make_catalog(), provider).build()
    tools = list(make_catalog().tools)
    tools[0] = replace(tools[0], description="Read a whole file.")
    index = ToolIndex(ToolCatalog.from_tools(tools, name="demo"), provider)
    provider.inner = HashEmbeddings(16)  # e.g. an API model that now returns another size
    with pytest.raises(IndexMismatchError, match="64 dimensions"):
        index.build()
    got = index.collection.get(ids=["read_file"], include=["metadatas"])
    assert got["metadatas"][0]["content_hash"] == content_hash(make_catalog().get("read_file"))  # untouched


def test_an_empty_index_takes_the_size_the_model_reports_on_first_use(store):
    provider = CountingProvider(dimensions=64, model_id="api-model")
    index = ToolIndex(make_catalog(), provider)
    provider.inner = HashEmbeddings(24)  # the provider guessed 64; the API answers with 24
    assert index.build().embedded == 8 and index.status().dimensions == 24
    s = index.select("send an email", top_k=1, expand_categories=False)
    assert s.fallback is None and s.names == ("send_email",)


def test_one_collection_per_catalog_and_model(store):
    a = ToolIndex(make_catalog("alpha"), CountingProvider(dimensions=64))
    b = ToolIndex(make_catalog("alpha"), CountingProvider(dimensions=32))
    c = ToolIndex(make_catalog("beta"), CountingProvider(dimensions=64))
    assert len({a.name, b.name, c.name}) == 3
    a.build()
    assert b.count == 0 and c.count == 0


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=80), st.text(max_size=80))
def test_collection_names_follow_chromas_rules(catalog_name, model_id):
    from chromadb.api.segment import check_index_name
    name = collection_name(catalog_name, model_id)
    check_index_name(name)  # raises ValueError when Chroma would refuse it
    assert name == collection_name(catalog_name, model_id)


def test_names_differ_even_when_truncation_makes_them_look_alike():
    long = "x" * 40
    assert collection_name(long + "a", "m") != collection_name(long + "b", "m")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_an_unreachable_server_is_one_clear_error(store):
    with pytest.raises(ToolIndexError, match="chroma run"):
        ToolIndex(make_catalog(), CountingProvider(), host="127.0.0.1", port=_free_port())


@pytest.fixture(scope="module")
def chroma_server(tmp_path_factory):
    """A real `chroma run` on 127.0.0.1 and a free port, stopped after the module."""
    exe = shutil.which("chroma")
    if exe is None:
        pytest.skip("the `chroma` executable (installed with chromadb) is not on PATH")
    port = _free_port()
    path = tmp_path_factory.mktemp("chroma-server")
    proc = subprocess.Popen([exe, "run", "--path", str(path), "--port", str(port), "--host", "127.0.0.1"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v2/heartbeat", timeout=1) as r:
                    if r.status == 200:
                        break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"chroma run did not answer its heartbeat on port {port}")
                time.sleep(0.2)
        yield port
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()


def test_a_real_chroma_server_indexes_and_answers(store, chroma_server, monkeypatch):
    provider = CountingProvider()
    index = ToolIndex(make_catalog(), provider, host="127.0.0.1", port=chroma_server)
    assert index.build().embedded == 8
    assert index.status().location == f"http://127.0.0.1:{chroma_server}"
    picked = index.select("send an email message to Bob", top_k=2, expand_categories=False)
    assert picked.names[0] == "send_email" and picked.fallback is None
    monkeypatch.setenv("CTXLAB_CHROMA_HOST", "127.0.0.1")
    monkeypatch.setenv("CTXLAB_CHROMA_PORT", str(chroma_server))
    again = ToolIndex(make_catalog(), provider)  # the environment points at the same server
    assert again.build().embedded == 0 and again.status().count == 8
    assert not (store / "tool-index").exists()  # nothing went to the embedded store


def test_the_cli_indexes_on_a_real_chroma_server(store, chroma_server, capsys):
    from ctxlab.cli import main
    from ctxlab.formats import tools_to_openai
    path = store / "server_tools.json"
    path.write_text(json.dumps(tools_to_openai(make_catalog().tools)))
    argv = ["tools", "index", "--catalog", str(path), "--provider", "hash", "--host", "127.0.0.1",
            "--port", str(chroma_server)]
    assert main(argv) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["status"]["location"] == f"http://127.0.0.1:{chroma_server}"
    assert "embedded 8/8" in err
    assert main(argv[:-4] + ["--host", "127.0.0.1", "--port", str(_free_port())]) == 2
    assert "cannot reach the Chroma server" in capsys.readouterr().err
