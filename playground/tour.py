"""A guided first visit: a short numbered tour (Strategy Lab, a Failure Modes lesson, Compare) shown
above the page until it is dismissed, and a sidebar button that shows it again."""
from __future__ import annotations

from typing import Sequence

import streamlit as st

from ctxlab.i18n import N_, _

TOUR_KEY = "tour_open"
"""Session-state flag: True while the tour is shown (it is, on a first visit)."""

STEPS: tuple[tuple[str, str, str], ...] = (
    ("pages/strategy_lab.py", N_("Strategy Lab"),
     N_("the sample conversation after the default strategy: which messages are kept, cleared or dropped, and what "
        "that saves. Change the strategy on the left and watch the timeline.")),
    ("pages/failure_modes.py", N_("Failure Modes"),
     N_("a lesson per way a context fails: the detector marks the messages at fault; one click applies the fix and "
        "shows before and after.")),
    ("pages/compare.py", N_("Compare"),
     N_("two strategies side by side on the same conversation and budget, with a verdict.")),
)
"""(page path, title, what to look at there), in the order of the tour."""


def _set_open(value: bool) -> None:
    st.session_state[TOUR_KEY] = value


def show_tour(pages: Sequence[str]) -> None:
    """Draw the tour above the page while it is open, else a "Show the tour" button in the
    sidebar. ``pages`` are the paths the navigation has (a step whose page is absent is left out)."""
    st.session_state.setdefault(TOUR_KEY, True)
    if not st.session_state[TOUR_KEY]:
        st.sidebar.button(_("Show the tour"), key="tour_show", on_click=_set_open, args=(True,),
                          help=_("Where to look first, in three steps"))
        return
    steps = [s for s in STEPS if s[0] in pages]
    with st.container(border=True, key="tour_box"):
        st.markdown(_("**New here? Three places to look first:**"))
        for k, (path, title, what) in enumerate(steps, 1):
            text, link = st.columns([4, 1], vertical_alignment="center")
            text.markdown(_("{k}. **{title}**: {what}").format(k=k, title=_(title), what=_(what)))
            link.page_link(path, label=_(title), icon=":material/arrow_forward:")
        st.button(_("Dismiss"), key="tour_dismiss", on_click=_set_open, args=(False,),
                  help=_("Hide the tour; the sidebar's Show the tour button brings it back"))

