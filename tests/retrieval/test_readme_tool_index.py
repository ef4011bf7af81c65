"""The README's tool-retrieval example, as written: `ToolIndex(ToolCatalog.load(...))`
with no provider failed with "unknown embedding provider None"; it means the default, offline
local provider."""
from __future__ import annotations

from ctxlab.tools import ToolCatalog, ToolIndex

from ..conftest import SAMPLES


def test_the_readme_example_builds_and_selects_with_the_default_provider(shared_tool_cache, monkeypatch):
    monkeypatch.setenv("CTXLAB_CACHE_DIR", str(shared_tool_cache))  # the sample's MiniLM index, built once per run
    monkeypatch.chdir(SAMPLES.parent)
    index = ToolIndex(ToolCatalog.load("sample_data/tools_ecommerce.json"))   # provider "local": offline MiniLM
    seen: list[str] = []
    index.build(progress=lambda done, total, msg: seen.append(msg))
    sel = index.select("I want my money back, the order arrived broken", top_k=5)
    assert "local" in index.provider.model_id.lower() or "minilm" in index.provider.model_id.lower()
    names = [t.name for t in sel.tools]
    assert names and sel.tokens_selected < sel.tokens_all
    assert any("refund" in n for n in names), names
