"""Fixtures the AppTest files share."""
from __future__ import annotations

import pytest
from streamlit.runtime.memory_media_file_storage import MemoryMediaFileStorage


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
