"""The session store the Agents and Chat pages share (``ctxlab.sessions``, the [sessions] extra), opened
once per process: one store (and one migration) per URL for both pages, not one per page."""
from __future__ import annotations

from typing import TYPE_CHECKING

import streamlit as st

if TYPE_CHECKING:
    from ctxlab.sessions import SessionStore


@st.cache_resource(show_spinner=False, max_entries=4)
def open_store(url: str) -> SessionStore:
    """The session store at ``url``, opened (and migrated) once per process."""
    from ctxlab.sessions import SessionStore
    return SessionStore(url)
