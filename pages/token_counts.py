"""Token counts: what each message of the conversation costs, by category, against the budget the
sidebar sets (the same limit, reserve, colours and number format as the other pages)."""
import streamlit as st

from ctxlab import count_tokens, tokens
from ctxlab.errors import CtxlabError
from ctxlab.figures import CATEGORY_NAMES, prompt_bar
from ctxlab.i18n import N_, _
from ctxlab.prefix import check_against_bill
from ctxlab.usage import has_usage
from playground.budget import current_budget
from playground.conversation import require_conversation
from playground.input_panel import input_panel, prefix_input
from playground.markdown import md_escape
from playground.widgets import count_column, role_name, translated_columns

HEADERS = (N_("role"), N_("category"), N_("tokens"), N_("text"))
# The counter's notes (ctxlab/tokens.py, English for the CLI) as whole sentences for the catalogs.
NOTES = {
    tokens.NOTE_CALLS: (N_("tool calls: OpenAI publishes no rule; counted as the function name and arguments text "
                           "plus {n} per call"), {"n": tokens.TOOL_CALL_FRAMING}),
    tokens.NOTE_RESULTS: (N_("tool results: counted as a message (framing, role, content); the call id is not "
                             "counted"), {}),
    tokens.NOTE_IMAGES: (N_("images: estimated at {low} tokens (detail low) or {other} (other detail, size unknown)"),
                         {"low": tokens.IMAGE_TOKENS_LOW, "other": tokens.IMAGE_TOKENS_DEFAULT}),
    tokens.NOTE_NESTED: (N_("nested parameter schemas: counted with the flat-property rule applied at each level"), {}),
}


def _note(text: str) -> str:
    """A counter's note in the language in use (as it came when the catalogs do not know it)."""
    template, values = NOTES.get(text, (None, {}))
    return _(template).format(**values) if template else text

input_panel()
st.title(_("Token counts"))
st.write(_("Every message of the conversation on the left, counted the way the OpenAI API bills it, "
           "split by category and set against the sidebar's context limit, less the response reserve."))

conv = require_conversation()
prefix_input(conv)
model = st.session_state.model
try:
    counts = count_tokens(conv, model=model)
    budget = current_budget(conv)
except CtxlabError as e:
    st.error(md_escape(str(e)))
    st.stop()

share = counts.total / budget.prompt_limit
c1, c2, c3, c4 = st.columns(4)
c1.metric(_("Format"), conv.format)
c2.metric(_("Messages"), f"{len(conv):,}")
c3.metric(_("Prompt tokens"), f"{counts.total:,}")
c4.metric(_("Of the prompt limit"), f"{share:,.0%}" if share >= 10 else f"{share:.1%}",
          help=_("{prompt:,} tokens: the {limit:,}-token context limit less the {reserve:.0%} response reserve "
                 "(sidebar)").format(prompt=budget.prompt_limit, limit=budget.max_tokens, reserve=budget.reserve))
if counts.total > budget.prompt_limit:
    st.warning(_("Over the limit: the prompt takes {total:,} tokens, {over:,} more than the {prompt:,}-token prompt "
                 "limit ({limit:,} less the {reserve:.0%} reserve). The Strategy Lab shows what each strategy does "
                 "about it.").format(total=counts.total, over=counts.total - budget.prompt_limit,
                                     prompt=budget.prompt_limit, limit=budget.max_tokens, reserve=budget.reserve))

st.plotly_chart(prompt_bar(counts.by_category, budget), key="category_bar")

rows = [{"#": i, "role": role_name(m.role), "category": _(CATEGORY_NAMES.get(cat, cat.replace("_", " "))), "tokens": n,
         "text": (m.text or ", ".join(c.name for c in m.tool_calls))[:200]}
        for i, (m, cat, n) in enumerate(zip(conv.messages, counts.message_categories, counts.message_tokens))]
st.dataframe(rows, key="message_table", hide_index=True, width="stretch",
             column_config=translated_columns(["#", "role", "category", "tokens", "text"],
                                              {"#": count_column("#"), "tokens": count_column("tokens")}))

if has_usage(conv):  # a production trace: what the provider billed beside the count, over the calls
    try:
        u = check_against_bill(conv, model=model, budget=budget)  # with the unlogged prefix when the bill shows one
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
        check = u.error_summary()
        if check is not None:
            st.caption(_("Each call's prompt as ctxlab estimates it (the unlogged prefix plus the count, scaled by the "
                         "tokenizer factor) against the bill: {within:,} of {calls:,} calls within 5%, median error "
                         "{median:.1%}, largest {largest:.1%}.").format(
                within=check["within_5pct"], calls=check["calls"], median=check["median_abs"],
                largest=check["max_abs"]))
        st.caption(_("Per call in the Strategy Lab's Replay tab and in `ctxlab count` (reported_usage)."))

if counts.approximations:
    with st.expander(_("Where the count is an approximation")):
        for a in counts.approximations:
            st.text(_note(a))
if conv.notes:
    with st.expander(_("Import notes")):
        for note in conv.notes:
            st.text(note)
