"""ctxlab playground: `streamlit run app.py`."""
import streamlit as st

from appstate import input_panel

st.set_page_config(page_title="ctxlab", page_icon="🧪", layout="wide")
input_panel()
nav = st.navigation([st.Page("pages/token_counts.py", title="Token counts", icon="🔢", default=True)])
nav.run()
