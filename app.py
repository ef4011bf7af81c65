"""ctxlab playground: `streamlit run app.py`. Navigation only; each page draws the shared
sidebar (appstate.input_panel) itself, so a page also runs on its own (the tests do that)."""
from pathlib import Path

import streamlit as st

st.set_page_config(page_title="ctxlab", page_icon="🧪", layout="wide")
PAGES = [
    ("pages/strategy_lab.py", "Strategy Lab", "🧪"),
    ("pages/compare.py", "Compare", "⚖️"),
    ("pages/tool_retrieval.py", "Tool Retrieval", "🧰"),
    ("pages/token_counts.py", "Token counts", "🔢"),
    ("pages/agents.py", "Agents", "🤖"),
    ("pages/chat.py", "Chat", "💬"),
]
here = Path(__file__).resolve().parent
nav = st.navigation([st.Page(path, title=title, icon=icon, default=k == 0)
                     for k, (path, title, icon) in enumerate(p for p in PAGES if (here / p[0]).exists())])
nav.run()
