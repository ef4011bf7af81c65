"""app.py's navigation, even when a deep link is a server's first request."""
from __future__ import annotations

import streamlit as st


def follow_app_navigation(rerun: bool = True) -> None:
    """Run under app.py's navigation even when a deep link is the server's first request. With a
    ``pages/`` folder beside app.py, Streamlit starts in its old multipage mode until app.py calls
    ``st.navigation``; a first request for ``/chat`` ran pages/chat.py alone, under a navigation of
    file names ("app", "agent loop"), without the tour, and ``/strategy_lab`` was "Page not found".
    Leaving that mode and rerunning runs app.py, which opens the page the link asked for (a page's
    address is the same in both modes). Pages run alone (AppTest, ``streamlit run pages/x.py``) are
    never in that mode. :func:`input_panel` calls it (every page draws the sidebar; a callback
    must not: its rerun would drop the callback's work). app.py itself calls this with
    ``rerun=False`` (it is about to call ``st.navigation``, which leaves the mode too)."""
    from streamlit.runtime.pages_manager import PagesManager
    if not rerun:  # app.py's own run: this session has its navigation
        st.session_state[APP_NAV_SEEN] = True
    if PagesManager.uses_pages_directory:
        PagesManager.uses_pages_directory = False
        if rerun and not st.session_state.get(APP_NAV_SEEN):  # a session app.py never ran for: a deep link
            st.rerun()  # (a session that has it keeps its widget events: a rerun would drop a click)


APP_NAV_SEEN = "_app_navigation_seen"
"""Session-state key app.py sets: the session ran under its navigation at least once."""
