"""ctxlab playground: `streamlit run app.py`. Navigation only; each page draws the shared
sidebar (appstate.input_panel) so that it also runs on its own in tests."""
import streamlit as st

st.set_page_config(page_title="ctxlab", page_icon="🧪", layout="wide")
nav = st.navigation([st.Page("pages/token_counts.py", title="Token counts", icon="🔢", default=True)])
nav.run()
