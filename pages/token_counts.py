"""Token counts: what each message of the conversation costs, by category, against the budget."""
import plotly.graph_objects as go
import streamlit as st

from appstate import current_conversation, input_panel, md_escape
from ctxlab import count_tokens, resolve_model
from ctxlab.errors import CtxlabError
from ctxlab.tokens import CATEGORIES

input_panel()
st.title("Token counts")
st.write("Every message of the conversation on the left, counted the way the OpenAI API bills it, "
         "split by category and set against the model's context window.")

conv = current_conversation()
if conv is None:
    st.info("Pick a sample, paste or upload a conversation in the sidebar.")
    st.stop()

model = st.session_state.model
try:
    counts = count_tokens(conv, model=model)
except CtxlabError as e:
    st.error(md_escape(str(e)))
    st.stop()
window = resolve_model(model).context_window

c1, c2, c3, c4 = st.columns(4)
c1.metric("Format", conv.format)
c2.metric("Messages", len(conv))
c3.metric("Prompt tokens", f"{counts.total:,}")
c4.metric("Of the context window", f"{counts.total / window:.1%}", help=f"{window:,} tokens for {model}")

fig = go.Figure()
for cat in CATEGORIES:
    fig.add_bar(name=cat.replace("_", " "), y=["prompt"], x=[counts.by_category[cat]], orientation="h")
fig.update_layout(barmode="stack", height=180, margin=dict(l=10, r=10, t=10, b=10), legend_orientation="h")
st.plotly_chart(fig, key="category_bar")

rows = [{"#": i, "role": m.role, "category": cat, "tokens": n, "text": (m.text or ", ".join(c.name for c in m.tool_calls))[:200]}
        for i, (m, cat, n) in enumerate(zip(conv.messages, counts.message_categories, counts.message_tokens))]
st.dataframe(rows, key="message_table", hide_index=True, width="stretch")

if counts.approximations:
    with st.expander("Where the count is an approximation"):
        for a in counts.approximations:
            st.text(a)
if conv.notes:
    with st.expander("Import notes"):
        for n in conv.notes:
            st.text(n)
