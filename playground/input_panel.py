"""The shared sidebar every page draws (:func:`input_panel`): the language, the conversation input
(sample, paste, upload, generate), the format picker, the pickers of a conversation in a multi-
conversation file and of a Claude Code sub-agent, then the model and budget and the model settings;
and a trace's unlogged-prefix input (:func:`prefix_input`). Domain work happens in ctxlab; this
module only wires widgets to it."""
from __future__ import annotations

from typing import Any

import streamlit as st

import ctxlab
from ctxlab.errors import CtxlabError
from ctxlab.formats import decode_text
from ctxlab.generate import PARAMS as GEN_PARAMS
from ctxlab.i18n import N_, _, error_text, local
from playground.budget import on_limit_change, on_model_change
from playground.conversation import conversation_parts, generated_text, parse, read_as
from playground.language import language_switch
from playground.llm_settings import llm_settings
from playground.markdown import md_escape
from playground.navigation import follow_app_navigation
from playground.state import (AUTO_FORMAT, DEFAULTS, SAMPLES_DIR, init_state, persist, prefix_override, sample_names,
                              text_hash, text_sha)

SOURCES = {"sample": N_("Sample"), "paste": N_("Paste"), "upload": N_("Upload"), "generate": N_("Generate")}


def _set_prefix(text: str, key: str) -> None:
    st.session_state.prefix_overrides = {**(st.session_state.get("prefix_overrides") or {}),
                                         text_sha(text): int(st.session_state[key])}


def _infer_prefix(text: str, key: str) -> None:
    overrides = dict(st.session_state.get("prefix_overrides") or {})
    overrides.pop(text_sha(text), None)
    st.session_state.prefix_overrides = overrides
    st.session_state.pop(key, None)  # the input shows the inferred size again


def prefix_input(conv: ctxlab.Conversation, container: Any = st) -> None:
    """For a trace: the size of the system prompt and tools its file does not log (inferred from its
    bill), which the user can set; every page counts, fits and prices with it."""
    from ctxlab.conversation import UNLOGGED
    from ctxlab.formats import TRACES
    text = st.session_state.get("conversation_text")
    if not text or conv.format not in TRACES:
        return
    head = conv.messages[0].extra.get(UNLOGGED) if conv.messages else None
    key = f"prefix_in_{text_sha(text)[:16]}"
    container.number_input(_("Unlogged system prompt and tools (tokens)"), min_value=0, max_value=2_000_000, step=500,
                           value=int(head["tokens"]) if head else 0, key=key, on_change=_set_prefix, args=(text, key),
                           help=_("The part of every prompt the trace file does not hold, inferred from its bill "
                                  "where it logs one. Type the size you know (0: none); every page uses it."))
    if prefix_override(text) is not None:
        container.button(_("Infer it from the bill again"), key="prefix_reset", on_click=_infer_prefix,
                         args=(text, key))


def _format_picker() -> None:
    """The sidebar's Format option: detect the input's format, or read it as the format named (a file
    that detection reads as another format, e.g. a bare mini-swe-agent message list). Its own function:
    the input panel's other options sit beside it."""
    from ctxlab.formats import FORMATS
    titles = {AUTO_FORMAT: _("detect (auto)"), **{k: _(f.title) for k, f in FORMATS.items()}}  # titles: sidebar.po
    if st.session_state.get("input_format") not in titles:
        st.session_state.input_format = AUTO_FORMAT
    st.sidebar.selectbox(_("Format"), list(titles), key="input_format", format_func=titles.__getitem__,
                         help=_("How to read the input: detected, or the format you name (when an error asks you to "
                                "pick the format). A named format is read, then used as OpenAI messages."))


def try_use(text: str, label: str) -> None:
    """Take ``text`` (from ``label``, for captions) as the input: read as the Format option says, then
    made the conversation in use, or offered to the conversation or sub-agent picker; a bad input
    leaves the engine's message for the sidebar (``input_error``)."""
    fmt = st.session_state.get("input_format", AUTO_FORMAT)
    try:
        if fmt != AUTO_FORMAT:
            text = read_as(text_hash(text), fmt, text)
            label = _("{label}, read as {format}").format(label=label, format=fmt)
        parts = conversation_parts(text)
    except CtxlabError as e:
        st.session_state.input_error = error_text(e)
        return
    if len(parts) > 1:  # the picker (_pick_conversation) chooses which one is in use
        if st.session_state.get("multi_input") != (text_hash(text), label):
            st.session_state.multi_pick = 0
        st.session_state.multi_input = (text_hash(text), label)
        st.session_state.multi_text = text
        st.session_state.input_error = None
        return
    st.session_state.multi_text = None
    if _offer_subagents(text, label):  # the sub-agent picker (_pick_subagent) chooses what is in use
        return
    _use(text, label)


def _pick_conversation() -> None:
    """For an input holding several conversations: which one is in use, each with its size."""
    text = st.session_state.get("multi_text")
    if not text:
        return
    parts, label = conversation_parts(text), st.session_state.multi_input[1]
    k = st.sidebar.selectbox(_("Conversation ({n} in this file)").format(n=len(parts)), range(len(parts)),
                             key="multi_pick", format_func=lambda i: parts[i][0],
                             help=_("The file holds several conversations: every page uses the one picked here"))
    _use(parts[k][1], _("{label}, conversation {k} of {n}").format(label=label, k=k + 1, n=len(parts)))


def _offer_subagents(text: str, label: str) -> bool:
    """Whether ``text`` is a Claude Code session whose sub-agents can be opened (then the picker
    shows); remembered with where it came from."""
    try:
        conv = parse(text)
    except CtxlabError:
        return False  # _use shows the error
    if not any(a.get("records") for a in conv.metadata.get("subagents") or ()):
        st.session_state.subagent_text = None
        return False
    if st.session_state.get("subagent_input") != (text_hash(text), label):
        st.session_state.subagent_pick = ""
    st.session_state.subagent_input = (text_hash(text), label)
    st.session_state.subagent_text = text
    st.session_state.input_error = None
    return True


def _subagent_label(row: dict[str, Any]) -> str:
    task = (row.get("prompt") or "")[:50]
    if row.get("returned_at") is None:
        return _("{id}: {task} — no result came back in this file").format(id=row["id"], task=task)
    return _("{id}: {task} — returned at message {at}, {tokens:,} tokens back").format(
        id=row["id"], task=task, at=row["returned_at"], tokens=row.get("tokens_back") or 0)


def _pick_subagent() -> None:
    """For a Claude Code session with sub-agents: the main session or one sub-agent, each a
    conversation of its own that every page opens and replays."""
    from ctxlab.formats.claude_agents import session_records, subagent_summary, subagent_text
    text = st.session_state.get("subagent_text")
    if not text:
        return
    rows = {r["id"]: r for r in subagent_summary(parse(text), st.session_state.get("model")) if r.get("records")}
    choice = st.sidebar.selectbox(_("Sub-agent ({n} in this session)").format(n=len(rows)), ["", *rows],
                                  key="subagent_pick", format_func=lambda i: _subagent_label(rows[i]) if i else
                                  _("The main session"),
                                  help=_("A sub-agent (a Task call) ran with its own context: pick it to see and "
                                         "replay its own conversation"))
    label = st.session_state.subagent_input[1]
    if choice not in rows:
        _use(text, label)
        return
    try:
        sub = subagent_text(session_records(text), choice)
    except CtxlabError as e:
        st.session_state.input_error = error_text(e)
        return
    _use(sub, _("{label}, sub-agent {id}").format(label=label, id=choice))


def _use(text: str, label: str) -> None:
    try:
        parse(text)
    except CtxlabError as e:
        st.session_state.input_error = error_text(e)
        return
    if text != st.session_state.conversation_text:
        st.session_state.pins = []
        _adopt_trace_model(parse(text))
    st.session_state.conversation_text = text
    st.session_state.conversation_label = label
    st.session_state.conversation_kind = st.session_state.get("source")  # where it came from: upload, paste...
    st.session_state.input_error = None


def _adopt_trace_model(conv: ctxlab.Conversation) -> None:
    """A trace names the model that ran it: the sidebar takes it, so every page prices, counts and
    fits with it (a model ctxlab has no window for keeps the sidebar's, with a note)."""
    from ctxlab.formats import TRACES
    if conv.format not in TRACES or not conv.model:
        return
    try:
        name = ctxlab.resolve_model(conv.model).name
    except CtxlabError:
        st.session_state.limit_note = _("The trace ran {model}: ctxlab has no tokenizer or window for it; the "
                                        "sidebar's model stays.").format(model=conv.model)
        return
    if name in ctxlab.MODELS and name != st.session_state.get("model"):
        st.session_state.model = name
        on_model_change()
        taken = _("Model {name} taken from the trace ({model}).").format(name=name, model=conv.model)
        st.session_state.limit_note = " ".join(n for n in (taken, st.session_state.limit_note) if n)


def _conversation_input() -> None:
    sb = st.sidebar
    source = sb.radio(_("Source"), list(SOURCES), key="source", horizontal=True,
                      format_func=lambda k: _(SOURCES[k]))
    if source == "sample":
        name = sb.selectbox(_("Sample"), sample_names(), key="sample_name")
        if name:
            try_use((SAMPLES_DIR / name).read_text(encoding="utf-8"), _("sample {name}").format(name=name))
    elif source == "paste":
        text = sb.text_area(_("Paste JSON or JSONL"), key="paste_text", height=180,
                            help=_("OpenAI, Anthropic, LangChain or Responses messages; a list or "
                                   "`{\"messages\": [...]}`"))
        if sb.button(_("Use pasted text"), key="use_paste") and text.strip():
            try_use(text, _("pasted text"))
    elif source == "upload":
        up = sb.file_uploader(_("Upload .json / .jsonl / .traj"), type=["json", "jsonl", "traj"], key="upload_file",
                              help=_("Also coding agents' traces: Claude Code and Codex sessions, SWE-agent .traj, "
                                     "OpenHands events, mini-swe-agent trajectories"))
        if up is not None:
            try:  # the CLI's decoding: a UTF-16 file is named as such, not "Expecting value"
                try_use(decode_text(up.getvalue()), _("upload {name}").format(name=up.name))
            except CtxlabError as e:
                st.session_state.input_error = error_text(e)
        elif st.session_state.get("conversation_kind") == "upload":
            # Streamlit forgets a file widget on another page; the conversation it brought stays in use.
            sb.caption(md_escape(_("In use: {label}").format(label=st.session_state.conversation_label)))
    else:
        _generator_controls()


PLANT_PREFIX = "plant_"
"""Generator parameters that plant a context failure; the sidebar groups them under one expander."""


def _gen_widget(box: Any, p: dict[str, Any]) -> Any:
    key = f"gen_{p['name']}"
    text = p["help"]
    tip = _(text)  # marked in ctxlab/generate.py
    if "choices" in p:
        return box.selectbox(p["name"], list(p["choices"]), key=key, help=tip)
    return box.number_input(p["name"], min_value=p["min"], max_value=p["max"], step=1, key=key, help=tip)


def _generator_controls() -> None:
    sb = st.sidebar
    values = {p["name"]: _gen_widget(sb, p) for p in GEN_PARAMS if not p["name"].startswith(PLANT_PREFIX)}
    planting = [p for p in GEN_PARAMS if p["name"].startswith(PLANT_PREFIX)]
    if planting:
        box = sb.expander(_("Plant a failure"), expanded=any(
            st.session_state.get(f"gen_{p['name']}") != p["default"] for p in planting))
        box.caption(_("Plant a context failure the Failure Modes page then finds (recorded in the conversation's "
                      "metadata, `planted`)."))
        values.update({p["name"]: _gen_widget(box, p) for p in planting})
    if sb.button(_("Generate"), key="gen_go"):
        try:
            with st.spinner(_("Generating…")):
                text = generated_text(**values)
            try_use(text, _("generated {domain} (seed {seed})").format(domain=values["domain"], seed=values["seed"]))
        except ValueError as e:
            st.session_state.input_error = error_text(e)


def input_panel() -> None:
    """The shared sidebar: language, conversation input, then model and budget."""
    follow_app_navigation()  # first: every page draws the sidebar (never from a callback, where a rerun is lost)
    language_switch()  # first: the defaults (the first sample) depend on the language
    init_state()
    persist(*DEFAULTS)  # the sidebar's widgets too: a page switch would reset them to their first option / minimum
    st.sidebar.header(_("Conversation"))
    _conversation_input()
    _format_picker()
    _pick_conversation()
    _pick_subagent()
    if st.session_state.input_error:
        st.sidebar.error(md_escape(local(st.session_state.input_error)))
        if st.session_state.conversation_text:
            st.sidebar.caption(_("Still showing the previous conversation."))
    st.sidebar.header(_("Model and budget"))
    st.sidebar.selectbox(_("Model"), list(ctxlab.MODELS), key="model", on_change=on_model_change,
                         help=_("Picks the tokenizer, the framing and the context window"))
    st.sidebar.number_input(_("Context limit (tokens)"), min_value=256, max_value=2_000_000, step=1000,
                            key="max_tokens", on_change=on_limit_change,
                            help=_("The model's window, or a smaller limit to see strategies work. A limit you "
                                   "type stays when you change the model (lowered to its window if larger)."))
    if st.session_state.limit_note:
        st.sidebar.caption(md_escape(st.session_state.limit_note))
    st.sidebar.slider(_("Response reserve"), 0.0, 0.5, step=0.05, key="reserve",
                      help=_("Share of the limit kept free for the model's reply"))
    llm_settings()
