"""ctxlab playground: `streamlit run app.py`. Navigation only; each page draws the shared
sidebar (playground.input_panel) itself, so a page also runs on its own (the tests do that)."""
from pathlib import Path

import streamlit as st

from ctxlab.i18n import N_, _
from playground.language import choose_language
from playground.navigation import follow_app_navigation
from playground.tour import show_tour

# Material icons ship with Streamlit's own font: emoji would show as empty boxes in a browser
# without an emoji font (Debian's chromium).
st.set_page_config(page_title="ctxlab", page_icon=":material/science:", layout="wide")
PAGES = [
    ("pages/strategy_lab.py", N_("Strategy Lab"), ":material/science:"),
    ("pages/compare.py", N_("Compare"), ":material/compare_arrows:"),
    ("pages/tune.py", N_("Tune"), ":material/tune:"),
    ("pages/answers.py", N_("Answers"), ":material/question_answer:"),
    ("pages/failure_modes.py", N_("Failure Modes"), ":material/healing:"),
    ("pages/agent_loop.py", N_("Where it runs"), ":material/repeat:"),
    ("pages/tool_retrieval.py", N_("Tool Retrieval"), ":material/build:"),
    ("pages/token_counts.py", N_("Token counts"), ":material/calculate:"),
    ("pages/agents.py", N_("Agents"), ":material/smart_toy:"),
    ("pages/chat.py", N_("Chat"), ":material/chat:"),
]
follow_app_navigation(rerun=False)  # this run is app.py's: no rerun needed to leave the pages-folder mode
choose_language()  # before the navigation: its titles are translated
here = Path(__file__).resolve().parent
present = [p for p in PAGES if (here / p[0]).exists()]
# The first page is served at "/" (its url_path "home" only names it inside Streamlit); its own address
# (/strategy_lab, as in a link someone shared) opens it too, through an unlisted copy: without it, Streamlit
# answered "Page not found".
pages = [st.Page(path, title=_(title), icon=icon, default=k == 0, url_path="home" if k == 0 else None)
         for k, (path, title, icon) in enumerate(present)]
if present:
    path, title, icon = present[0]
    pages.append(st.Page(path, title=_(title), icon=icon, url_path=Path(path).stem, visibility="hidden"))
nav = st.navigation(pages)
show_tour([page[0] for page in present])  # a newcomer's three first stops, until dismissed
nav.run()
