"""Shared test fixtures: where the real public data lives, and the sample conversations."""
from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# No property test's outcome depends on the machine's load: no deadline per example and no "too
# slow" health check (a test that sets its own settings keeps them; these are the defaults).
settings.register_profile("ctxlab", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("ctxlab")

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "data"
SAMPLES = ROOT / "sample_data"

needs_shared = pytest.mark.skipif(not SHARED.is_dir(), reason=f"real public data not found at {SHARED}")


@pytest.fixture(scope="session")
def shared_tool_cache(tmp_path_factory) -> Path:
    """One tool-index cache folder (CTXLAB_CACHE_DIR) for the tests that embed a catalog with a
    real model: the index of one catalog and model is built once per run, not once per test.
    Entries are keyed by the catalog's content and the model, so sharing changes no answer."""
    return tmp_path_factory.mktemp("shared-tool-cache")


@pytest.fixture(autouse=True)
def _no_real_model(monkeypatch):
    """No test reaches a real model: the developer's model settings are hidden from every test;
    tests that need a model point ctxlab at the fake server on 127.0.0.1 themselves. Nor the
    developer's cache folder: CTXLAB_CACHE_DIR would win over the CTXLAB_DATA_DIR a test sets."""
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "CTXLAB_LLM_MODEL", "CTXLAB_LLM_CACHE", "CTXLAB_CACHE_DIR"):
        monkeypatch.delenv(name, raising=False)
