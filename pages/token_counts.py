"""Token counts: what each message of the conversation costs, by category, against the budget the
sidebar sets (the same limit, reserve, colours and number format as the other pages)."""
import streamlit as st

from appstate import current_budget, input_panel, md_escape, require_conversation
from ctxlab import count_tokens
from ctxlab.errors import CtxlabError
from ctxlab.figures import prompt_bar
from ctxlab.i18n import _
from ctxlab.usage import compare_usage, has_usage
from ui import count_column

input_panel()
st.title("Token counts")
st.write("Every message of the conversation on the left, counted the way the OpenAI API bills it, "
         "split by category and set against the sidebar's context limit, less the response reserve.")

conv = require_conversation()
model = st.session_state.model
try:
    counts = count_tokens(conv, model=model)
    budget = current_budget(conv)
except CtxlabError as e:
    st.error(md_escape(str(e)))
    st.stop()

share = counts.total / budget.prompt_limit
c1, c2, c3, c4 = st.columns(4)
c1.metric("Format", conv.format)
c2.metric("Messages", f"{len(conv):,}")
c3.metric("Prompt tokens", f"{counts.total:,}")
c4.metric("Of the prompt limit", f"{share:,.0%}" if share >= 10 else f"{share:.1%}",
          help=f"{budget.prompt_limit:,} tokens: the {budget.max_tokens:,}-token context limit less the "
               f"{budget.reserve:.0%} response reserve (sidebar)")
if counts.total > budget.prompt_limit:
    st.warning(f"Over the limit: the prompt takes {counts.total:,} tokens, {counts.total - budget.prompt_limit:,} "
               f"more than the {budget.prompt_limit:,}-token prompt limit ({budget.max_tokens:,} less the "
               f"{budget.reserve:.0%} reserve). The Strategy Lab shows what each strategy does about it.")

st.plotly_chart(prompt_bar(counts.by_category, budget), key="category_bar")

rows = [{"#": i, "role": m.role, "category": cat.replace("_", " "), "tokens": n,
         "text": (m.text or ", ".join(c.name for c in m.tool_calls))[:200]}
        for i, (m, cat, n) in enumerate(zip(conv.messages, counts.message_categories, counts.message_tokens))]
st.dataframe(rows, key="message_table", hide_index=True, width="stretch",
             column_config={"#": count_column("#"), "tokens": count_column("tokens")})

if has_usage(conv):  # a production trace: what the provider billed beside the count, over the calls
    try:
        u = compare_usage(conv, model=model, budget=budget)
    except CtxlabError as e:
        st.error(md_escape(str(e)))
    else:
        st.subheader(_("Billed by the provider"))
        b1, b2, b3 = st.columns(3)
        b1.metric(_("Calls with billed usage"), f"{len(u.calls):,} / {u.total_calls:,}")
        b2.metric(_("Billed prompt tokens, all calls"), f"{u.reported_prompt_tokens:,}",
                  delta=_("{diff} vs counted").format(diff=f"{u.prompt_difference:+,}"), delta_color="off",
                  help=_("Counted: {counted} (each call's prompt as the trace sent it)").format(
                      counted=f"{u.counted_prompt_tokens:,}"))
        cached = u.reported_cached_tokens
        b3.metric(_("Billed cached tokens"), "-" if cached is None else f"{cached:,}",
                  delta=None if cached is None else _("{diff} vs modelled").format(
                      diff=f"{cached - u.modelled_cached_tokens:+,}"), delta_color="off",
                  help=_("Modelled by the prompt-cache rule: {modelled}").format(
                      modelled=f"{u.modelled_cached_tokens:,}"))
        st.caption(_("Per call in the Strategy Lab's Replay tab and in `ctxlab count` (reported_usage)."))

if counts.approximations:
    with st.expander("Where the count is an approximation"):
        for a in counts.approximations:
            st.text(a)
if conv.notes:
    with st.expander("Import notes"):
        for note in conv.notes:
            st.text(note)
