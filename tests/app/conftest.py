"""Fixtures the AppTest files share."""
from __future__ import annotations

import pytest
import streamlit as st
from streamlit.runtime.memory_media_file_storage import MemoryMediaFileStorage


@pytest.fixture
def data_dir(tmp_path, monkeypatch):
    """The app's data (session store, caches) in a fresh temporary folder, with Streamlit's
    cached resources (the open store) cleared before and after."""
    monkeypatch.delenv("CTXLAB_SESSIONS_URL", raising=False)
    monkeypatch.setenv("CTXLAB_DATA_DIR", str(tmp_path))
    st.cache_resource.clear()
    yield tmp_path
    st.cache_resource.clear()


@pytest.fixture
def downloads(monkeypatch) -> dict[str, bytes]:
    """What every st.download_button would hand the browser, by file name."""
    got: dict[str, bytes] = {}
    original = MemoryMediaFileStorage.load_and_get_id

    def record(self, data, mimetype, kind, filename=None):
        got[filename] = data if isinstance(data, bytes) else str(data).encode()
        return original(self, data, mimetype, kind, filename)

    monkeypatch.setattr(MemoryMediaFileStorage, "load_and_get_id", record)
    return got
