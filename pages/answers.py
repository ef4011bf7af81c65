"""Answers: what a model answers from the context each of two to four strategies leaves (answer
replay), and how well each context still answers questions about early facts (probes), beside the
offline fact retention. Needs a model (the sidebar's settings or the environment); without one the
page says how to configure it and stops. Results stay in session state: a rerun never calls the
model again, only the Ask and Run probes buttons do."""
from __future__ import annotations

from typing import Any, Sequence

import pandas as pd
import streamlit as st

from ctxlab.answers import Answer, answer_replay
from ctxlab.compare import DEFAULT_STRATEGIES, MAX_COLUMNS, MIN_COLUMNS, column_labels
from ctxlab.errors import CtxlabError
from ctxlab.i18n import N_, _, local
from ctxlab.llm import BASE_URL_ENV, KEY_ENV, MODEL_ENV
from ctxlab.probes import MATCH_RULE, Probe, ProbeScore, generate_probes, score_probes, user_probes
from ctxlab.strategies import Strategy
from playground.budget import current_budget
from playground.conversation import require_conversation
from playground.input_panel import input_panel
from playground.llm_settings import current_llm
from playground.markdown import md_code, md_escape
from playground.state import persist, text_hash
from playground.widgets import count_column, strategy_picker

NOT_REPORTED = N_("not reported")
MAX_PROBES = 10
EXAMPLE_PROBES = [{"question": "", "expected": ""}]
HOW_TO_CONFIGURE = N_(
    "**No model configured.**\n\nThis page needs a model. Open **Model for answers and LLM summaries** in the sidebar and give a base URL "
    "(any OpenAI-compatible server: OpenAI, vLLM, Ollama, LM Studio, a proxy), a model name and, if the server "
    "needs one, an API key. Or start the app with `{key_env}`, `{base_url_env}` and `{model_env}` set. "
    "Everything else in ctxlab works without a model.")


def _figure(value: int | None) -> str:
    return _(NOT_REPORTED) if value is None else f"{value:,}"


def _latency(ms: float | None) -> str:
    return "-" if ms is None else f"{ms:,.0f} ms"


def _signature(kind: str, strategies: Sequence[Strategy], labels: Sequence[str], *extra: Any) -> tuple:
    """What a result depends on: when it differs from the current one, the page says the result
    shown is from earlier settings (and never calls the model by itself)."""
    return (kind, text_hash(st.session_state.conversation_text or ""), tuple(repr(s) for s in strategies),
            tuple(labels), repr(budget), st.session_state.model, llm.config.fingerprint(), *extra)


def _show_answer(col: Any, a: Answer) -> None:
    """One strategy's answer (as plain text, never Markdown or HTML) and what it cost."""
    col.subheader(a.label)
    if a.ok:
        col.code(a.answer or _("(an empty answer)"), language=None, wrap_lines=True)
        if a.tool_calls:
            col.caption(md_escape(_("The model asked for tool calls instead: {calls}").format(
                calls=", ".join(a.tool_calls))))
    else:
        col.error(md_escape(a.error or _("the call failed")))
        fallback = a.fallback or _("no answer")
        col.caption(md_escape(_("{text}.").format(text=fallback[:1].upper() + fallback[1:])))
    m1, m2 = col.columns(2)
    m1.metric(_("Prompt tokens"), _figure(a.prompt_tokens), help=_("As the server reported them"))
    m2.metric(_("Cached tokens"), _figure(a.cached_tokens),
              help=_("usage.prompt_tokens_details.cached_tokens, when the server reports it"))
    m3, m4 = col.columns(2)
    m3.metric(_("Latency"), _latency(a.latency_ms), help=_("{n} request(s)").format(n=a.attempts))
    m4.metric(_("Context (ctxlab)"), f"{a.context_tokens:,}",
              help=_("ctxlab's count of the {n} messages and the tool definitions sent").format(n=a.context_messages))
    col.caption(_("Facts retained: {retained}; {completion} completion tokens.").format(
        retained=_("n/a") if a.retention is None else f"{a.retention:.0%}", completion=_figure(a.completion_tokens)))
    for w in map(local, a.warnings):  # the plan's warnings, in the language in use
        col.warning(md_escape(w[:1].upper() + w[1:]))


def _answer_tab(strategies: list[Strategy], labels: list[str]) -> None:
    st.session_state.setdefault("ans_question", "")
    question = st.text_area(_("Question"), key="ans_question", height=80,
                            placeholder=_("The final question, e.g. What refund amount did we agree on?"),
                            help=_("Added as the newest user message; each strategy is applied to the conversation "
                                   "with it, and its context is sent to the model"))
    signature = _signature("answers", strategies, labels, question.strip())
    if st.button(_("Ask"), key="ans_ask", type="primary"):
        with st.spinner(_("Asking {model}…").format(model=md_escape(llm.config.model))):
            try:
                answers = answer_replay(conv, strategies, question, llm, budget, labels=labels,
                                        model=st.session_state.model)
            except CtxlabError as e:
                st.error(md_escape(str(e)))
                return
        st.session_state.ans_results = (signature, answers)
    held = st.session_state.get("ans_results")
    if not held:
        st.caption(_("Write a question and press Ask: one call per strategy."))
        return
    if held[0] != signature:
        st.caption(_("These answers are for an earlier question or settings; press Ask to ask again."))
    answers = held[1]
    failed = [a for a in answers if not a.ok]
    if failed and len(failed) == len(answers):
        st.warning(_("No strategy got an answer: the contexts and their counts below are ctxlab's own, computed "
                     "offline."))
    for col, a in zip(st.columns(len(answers)), answers):
        _show_answer(col, a)


def _probes_to_ask() -> list[Probe] | None:
    """The probes the user chose (generated or written), or None after saying what is wrong."""
    source = st.radio(_("Probes"), ["generated", "written"], key="probe_source", horizontal=True,
                      format_func=lambda k: _(PROBE_SOURCES[k]))
    if source == "generated":
        n = st.slider(_("Number of probes"), 1, MAX_PROBES, value=5, key="probe_n")
        probes = generate_probes(conv, n)
        if not probes:
            st.info(_("This conversation has no fact from before its newest turn to ask about: write your own "
                      "probes."))
            return None
        st.dataframe(pd.DataFrame([{"#": p.message_index, "question": p.question, "expected": p.expected}
                                   for p in probes]), key="probe_generated", hide_index=True, width="stretch",
                     column_config={"#": count_column(_("from message")),
                                    "question": st.column_config.TextColumn(_("question")),
                                    "expected": st.column_config.TextColumn(_("expected"))})
        return probes
    st.session_state.setdefault("probe_rows", list(EXAMPLE_PROBES))
    table = st.data_editor(pd.DataFrame(st.session_state.probe_rows, columns=["question", "expected"]),
                           key="probe_table", num_rows="dynamic", hide_index=True, width="stretch",
                           column_config={"question": st.column_config.TextColumn(_("question"), width="large"),
                                          "expected": st.column_config.TextColumn(_("expected answer"))})
    rows = [(str(q or "").strip(), str(e or "").strip()) for q, e in zip(table["question"], table["expected"])]
    rows = [r for r in rows if r[0] or r[1]]
    if not rows:
        st.caption(_("Add a question and the fact its answer must contain, one per row."))
        return None
    try:
        return user_probes([q for q, _ in rows], [e for _, e in rows])
    except CtxlabError as e:
        st.error(md_escape(str(e)))
        return None


def _score_rows(scores: Sequence[ProbeScore]) -> pd.DataFrame:
    return pd.DataFrame([{"strategy": s.label, "probe score": None if s.score is None else round(100 * s.score),
                          "hits": _("{hits} of {answered}").format(hits=s.hits, answered=s.answered), "failed calls": len(s.answers) - s.answered,
                          "facts retained": None if s.retention is None else round(100 * s.retention),
                          "needed recall": None if s.needed_recall is None else round(100 * s.needed_recall),
                          "tokens after": s.tokens_after} for s in scores])


PROBE_SOURCES = {"generated": N_("generated from the conversation's facts"), "written": N_("written by you")}
ANSWER_COLUMNS = {"hit": N_("hit"), "expected": N_("expected"), "answer": N_("answer"), "question": N_("question")}


def _probe_tab(strategies: list[Strategy], labels: list[str]) -> None:
    st.caption(md_escape(_("Each probe is asked from each strategy's context and scored by {rule}.").format(
        rule=_(MATCH_RULE))))
    probes = _probes_to_ask()
    signature = _signature("probes", strategies, labels, tuple(probes or ()))
    if st.button(_("Run probes"), key="probe_run", type="primary", disabled=not probes):
        with st.spinner(_("Asking {probes} probe(s) × {strategies} strategies…").format(
                probes=len(probes or ()), strategies=len(strategies))):
            try:
                scores = score_probes(conv, strategies, probes or [], llm, budget, labels=labels,
                                      model=st.session_state.model)
            except CtxlabError as e:
                st.error(md_escape(str(e)))
                return
        st.session_state.probe_results = (signature, scores)
    held = st.session_state.get("probe_results")
    if not held:
        return
    if held[0] != signature:
        st.caption(_("These scores are for earlier probes or settings; press Run probes to ask again."))
    scores = held[1]
    st.dataframe(_score_rows(scores), key="probe_scores", hide_index=True, width="stretch",
                 column_config={"strategy": st.column_config.TextColumn(_("strategy")),
                                "probe score": st.column_config.NumberColumn(_("probe score"), format="%d%%",
                                                                             help=_("hits / probes answered")),
                                "hits": st.column_config.TextColumn(_("hits")),
                                "failed calls": st.column_config.NumberColumn(_("failed calls")),
                                "facts retained": st.column_config.NumberColumn(
                                    _("facts retained"), format="%d%%", help=_("offline: the plan's fact retention")),
                                "needed recall": st.column_config.NumberColumn(
                                    _("needed recall"), format="%d%%", help=_("offline: the replay's needed recall")),
                                "tokens after": count_column(_("tokens after"))})
    for col, s in zip(st.columns(len(scores)), scores):
        col.subheader(s.label)
        for err in s.errors:
            col.error(md_escape(err))
        col.dataframe(pd.DataFrame([{"hit": _("hit") if a.hit else (_("failed") if a.answer is None else _("miss")),
                                     "expected": a.probe.expected, "answer": a.answer or "", "question": a.probe.question}
                                    for a in s.answers]), key=f"probe_answers_{s.label}", hide_index=True,
                      width="stretch", column_config={c: st.column_config.TextColumn(_(label))
                                                      for c, label in ANSWER_COLUMNS.items()})


# ---------------------------------------------------------------- page

st.set_page_config(layout="wide")  # additive: app.py's title and icon stay; four answers need the width
input_panel()
persist("ans_count", "ans_question", "probe_source", "probe_n")  # kept across a visit to another page
st.title(_("Answers"))
st.write(_("The same question asked from the context each strategy leaves: the answers side by side with what "
           "each call cost; and probes about early facts, scored beside the offline fact retention."))
llm = current_llm()
if not llm.config.configured:
    st.info(_(HOW_TO_CONFIGURE).format(key_env=KEY_ENV, base_url_env=BASE_URL_ENV, model_env=MODEL_ENV))
    st.stop()
conv = require_conversation()
try:
    budget = current_budget(conv)
except CtxlabError as e:
    st.error(md_escape(str(e)))
    st.stop()
st.caption(_("Model: {model}").format(model=md_code(llm.config.describe())))

count = int(st.number_input(_("Strategies"), min_value=MIN_COLUMNS, max_value=MAX_COLUMNS, value=MIN_COLUMNS, step=1,
                            key="ans_count"))
picked: list[Strategy] = []
columns: list[int] = []
for k, col in enumerate(st.columns(count), 1):
    with col.expander(_("Strategy {k}").format(k=k), expanded=True):
        strategy = strategy_picker(f"ans{k}", st, default=DEFAULT_STRATEGIES[k - 1], budget=budget)
    if strategy is not None:
        picked.append(strategy)
        columns.append(k)
if not picked:
    st.info(_("No strategy can be used with its current parameters: fix the ones marked in red above."))
    st.stop()
names = column_labels([s.name for s in picked], columns)

tab_answers, tab_probes = st.tabs([_("Answer replay"), _("Probes")])
with tab_answers:
    _answer_tab(picked, names)
with tab_probes:
    _probe_tab(picked, names)
