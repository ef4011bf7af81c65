"""The app's session state and shared sidebar: every key and its default in one place, the
conversation input (sample, paste, upload, generate) and the model and budget every page uses.
Domain work happens in ctxlab; this module only wires widgets to it and caches its results."""
from __future__ import annotations

import hashlib
import json
import os
import re
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import streamlit as st

import ctxlab
from ctxlab.errors import CtxlabError
from ctxlab.formats import decode_text
from ctxlab.generate import PARAMS as GEN_PARAMS
from ctxlab.generate import generate
from ctxlab.i18n import LANGUAGES, N_, _, error_text, language, local, pick, use
from ctxlab.llm import BASE_URL_ENV, DEFAULT_MODEL, KEY_ENV, LLM, MODEL_ENV, LLMConfig, public_url
from ctxlab.strategies import Budget, View, make_view
from ctxlab.tokens import TokenCounter

if TYPE_CHECKING:
    from ctxlab.pricing import Price

SAMPLES_DIR = Path(__file__).resolve().parent / "sample_data"
DEFAULT_SAMPLE = "ecommerce_refund.json"
DEFAULT_SAMPLES = {"zh": "zh_support_agent.json"}
"""The first sample by interface language: a Chinese user starts on a Chinese conversation."""
AUTO_FORMAT = "auto"
SOURCES = {"sample": N_("Sample"), "paste": N_("Paste"), "upload": N_("Upload"), "generate": N_("Generate")}

DEFAULTS: dict[str, Callable[[], Any]] = {
    "source": lambda: "sample",          # sample | paste | upload | generate
    "sample_name": lambda: DEFAULT_SAMPLES.get(language(), DEFAULT_SAMPLE),
    "paste_text": lambda: "",
    "input_format": lambda: AUTO_FORMAT,  # the format the input is read as: detected, or one the user names
    "conversation_text": lambda: None,   # the text of the conversation in use (last good input)
    "conversation_label": lambda: "",    # where it came from, for captions
    "input_error": lambda: None,         # the engine's message for the last bad input
    "multi_text": lambda: None,          # an input of several conversations (JSONL): the picker's source
    "multi_input": lambda: None,         # (its text hash, where it came from)
    "multi_pick": lambda: 0,             # which of them is in use
    "subagent_text": lambda: None,       # a Claude Code session with sub-agents: the sub-agent picker's source
    "subagent_input": lambda: None,      # (its text hash, where it came from)
    "subagent_pick": lambda: "",         # the sub-agent in use ("": the main session)
    "model": lambda: "gpt-4o",
    "max_tokens": lambda: 16_000,        # context limit in use (a small default so strategies have work)
    "limit_set_by_user": lambda: False,  # True once the user typed a limit: a model change then keeps it
    "limit_note": lambda: None,          # what the last model change did to the limit the user set
    "reserve": lambda: 0.15,
    "pins": lambda: [],                  # message indexes pinned in the Strategy Lab
    "tool_tokens_override": lambda: None,  # tokens of the tools retrieval selected, when used in the budget
    "tool_tokens_source": lambda: None,    # where they come from: {label, own, model, conversation (text hash)}
    **{f"gen_{p['name']}": (lambda d=p["default"]: d) for p in GEN_PARAMS},
}

_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~$])")


PERSISTENT = "_persistent_keys"


def init_state() -> None:
    """Put every key's default into session state once, and keep page widgets' values across
    page switches (Streamlit forgets a widget's value when a page that does not draw it runs)."""
    for key, factory in DEFAULTS.items():
        if key not in st.session_state:
            st.session_state[key] = factory()
    for key in st.session_state.get(PERSISTENT, ()):
        if key in st.session_state:
            st.session_state[key] = st.session_state[key]


def persist(*keys: str) -> None:
    """Mark widget keys whose values should survive a visit to another page."""
    st.session_state.setdefault(PERSISTENT, set()).update(keys)


def md_escape(text: str) -> str:
    """Text safe to show inside Markdown (st.error, st.info, ...): no links, images or HTML."""
    return _MD_SPECIAL.sub(r"\\\1", text)


def sample_names() -> list[str]:
    """The bundled sample conversations (tool catalogs excluded)."""
    return sorted(p.name for p in SAMPLES_DIR.glob("*.json") if not p.name.startswith("tool"))


def parse(text: str) -> ctxlab.Conversation:
    """Parse conversation text once per distinct text (a shared object: conversations are
    immutable, and copying a large one on every rerun would cost more than planning it). Cached
    under the text's hash, itself remembered per text: Streamlit would otherwise hash the whole
    text on every rerun (20-30 ms for a 10,000-message conversation). A trace's unlogged system
    prompt and tools are at its head: inferred from its bill, or the size the user gave
    (``prefix_override``, which is part of the text's key)."""
    return _parse(text_hash(text), text, prefix_override(text))


@st.cache_resource(show_spinner=False, max_entries=32)
def _parse(text_key: str, _text: str, override: int | None = None) -> ctxlab.Conversation:
    from ctxlab.prefix import with_unlogged_prefix
    return with_unlogged_prefix(ctxlab.loads(_text), override=override)


def prefix_override(text: str) -> int | None:
    """The size the user gave to the unlogged part of this text's prompt (None: inferred)."""
    return (st.session_state.get("prefix_overrides") or {}).get(_sha(text))


def _set_prefix(text: str, key: str) -> None:
    st.session_state.prefix_overrides = {**(st.session_state.get("prefix_overrides") or {}),
                                         _sha(text): int(st.session_state[key])}


def _infer_prefix(text: str, key: str) -> None:
    overrides = dict(st.session_state.get("prefix_overrides") or {})
    overrides.pop(_sha(text), None)
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
    key = f"prefix_in_{_sha(text)[:16]}"
    container.number_input(_("Unlogged system prompt and tools (tokens)"), min_value=0, max_value=2_000_000, step=500,
                           value=int(head["tokens"]) if head else 0, key=key, on_change=_set_prefix, args=(text, key),
                           help=_("The part of every prompt the trace file does not hold, inferred from its bill "
                                  "where it logs one. Type the size you know (0: none); every page uses it."))
    if prefix_override(text) is not None:
        container.button(_("Infer it from the bill again"), key="prefix_reset", on_click=_infer_prefix,
                         args=(text, key))


@st.cache_data(show_spinner=False, max_entries=16)
def generated_text(**params: Any) -> str:
    """A generated conversation as JSON text (facts kept), so it flows like any other input."""
    conv = generate(**params)
    data = ctxlab.export(conv, "openai").data
    return json.dumps({**data, "facts": list(conv.facts), "title": conv.metadata.get("title", ""),
                       "planted": conv.metadata.get("planted", [])})  # loads back into metadata["planted"]


@st.cache_resource(show_spinner=False, max_entries=16)
def _view(text_hash: str, _text: str, model: str, pins: tuple[int, ...]) -> View:
    conv = parse(_text)
    return make_view(conv, counter=TokenCounter(model), pins=pins)


@lru_cache(maxsize=8)
def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def text_hash(text: str) -> str:
    """sha256 of a conversation text, computed once per text (cache keys use it on every rerun),
    with the unlogged-prefix size the user gave for it: every cache keyed by it follows the size."""
    override = prefix_override(text)
    return _sha(text) if override is None else f"{_sha(text)}|prefix={override}"


def current_view(conv_text: str, model: str, pins: tuple[int, ...] = ()) -> View:
    """The strategy view of the conversation for a model, built once and cached."""
    with st.spinner(_("Counting tokens…")):
        return _view(text_hash(conv_text), conv_text, model, pins)


@st.cache_resource(show_spinner=False, max_entries=8)
def _parts(text_key: str, _text: str) -> list[tuple[str, str]]:
    """(label with its size, text) of each conversation of an input (one for a single one)."""
    from ctxlab.formats._json import jsonl_lines
    convs = ctxlab.load_all(_text)
    if len(convs) == 1:
        return [("", _text)]
    texts = ctxlab.formats.run_texts(_text) or [line for _, line in jsonl_lines(_text)]  # a trace: one text a run
    if len(texts) != len(convs):  # a JSON array of conversation objects
        texts = [json.dumps(doc) for doc in json.loads(_text)]
    return [(_("{k}: {title} — {n:,} messages, {kb:,.0f} KB").format(
        k=k + 1, title=c.metadata.get("title") or c.metadata.get("id") or _("conversation"), n=len(c.messages),
        kb=len(t) / 1024), t)
            for k, (c, t) in enumerate(zip(convs, texts))]


def conversation_parts(text: str) -> list[tuple[str, str]]:
    """Each conversation of an input as (its label with its size, its own text): one entry for a
    single conversation, one per line of a multi-conversation JSONL (the sidebar's picker)."""
    with st.spinner(_("Reading the file…")):
        return _parts(f"{text_hash(text)}|{language()}", text)  # the labels are in the language in use


@st.cache_data(show_spinner=False, max_entries=8)
def _read_as(text_key: str, fmt: str, _text: str) -> str:
    """The input read as format ``fmt`` (detection skipped), written back as OpenAI messages that
    every page reads the same way: one conversation as JSON, several as JSONL (one a line)."""
    convs = ctxlab.load_all(_text, format=fmt)
    docs = [{**ctxlab.export(c, "openai").data, "facts": list(c.facts), "title": c.metadata.get("title", "")}
            for c in convs]
    return json.dumps(docs[0]) if len(docs) == 1 else "\n".join(json.dumps(d) for d in docs) + "\n"


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


def _try_use(text: str, label: str) -> None:
    fmt = st.session_state.get("input_format", AUTO_FORMAT)
    try:
        if fmt != AUTO_FORMAT:
            text = _read_as(text_hash(text), fmt, text)
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
        _on_model_change()
        taken = _("Model {name} taken from the trace ({model}).").format(name=name, model=conv.model)
        st.session_state.limit_note = " ".join(n for n in (taken, st.session_state.limit_note) if n)


MAX_FOLLOWED_LIMIT = 1_000_000
"""An untouched limit follows the model's window up to this many tokens."""


def limit_for_model(limit: int, set_by_user: bool, model: str) -> tuple[int, str | None]:
    """The context limit after switching to ``model``, and a note for the user: a limit the user
    set stays (capped at the model's window); an untouched default follows the model's window."""
    window = ctxlab.resolve_model(model).context_window
    if not set_by_user:
        return min(window, MAX_FOLLOWED_LIMIT), None
    if limit > window:
        return window, _("Your context limit of {limit:,} tokens is more than {model}'s window: "
                         "lowered to {window:,}.").format(limit=limit, model=model, window=window)
    return limit, _("Kept your context limit of {limit:,} tokens ({model}'s window is {window:,}).").format(
        limit=limit, model=model, window=window)


def _on_model_change() -> None:
    st.session_state.max_tokens, st.session_state.limit_note = limit_for_model(
        int(st.session_state.max_tokens), bool(st.session_state.limit_set_by_user), st.session_state.model)


def _on_limit_change() -> None:
    st.session_state.limit_set_by_user = True
    st.session_state.limit_note = None


def _conversation_input() -> None:
    sb = st.sidebar
    source = sb.radio(_("Source"), list(SOURCES), key="source", horizontal=True,
                      format_func=lambda k: _(SOURCES[k]))
    if source == "sample":
        name = sb.selectbox(_("Sample"), sample_names(), key="sample_name")
        if name:
            _try_use((SAMPLES_DIR / name).read_text(encoding="utf-8"), _("sample {name}").format(name=name))
    elif source == "paste":
        text = sb.text_area(_("Paste JSON or JSONL"), key="paste_text", height=180,
                            help=_("OpenAI, Anthropic, LangChain or Responses messages; a list or "
                                   "`{\"messages\": [...]}`"))
        if sb.button(_("Use pasted text"), key="use_paste") and text.strip():
            _try_use(text, _("pasted text"))
    elif source == "upload":
        up = sb.file_uploader(_("Upload .json / .jsonl / .traj"), type=["json", "jsonl", "traj"], key="upload_file",
                              help=_("Also coding agents' traces: Claude Code and Codex sessions, SWE-agent .traj, "
                                     "OpenHands events, mini-swe-agent trajectories"))
        if up is not None:
            try:  # the CLI's decoding: a UTF-16 file is named as such, not "Expecting value"
                _try_use(decode_text(up.getvalue()), _("upload {name}").format(name=up.name))
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
            _try_use(text, _("generated {domain} (seed {seed})").format(domain=values["domain"], seed=values["seed"]))
        except ValueError as e:
            st.session_state.input_error = error_text(e)


LANG_KEY = "lang"
"""Session-state key of the interface language; the URL's ``?lang=`` keeps it across reloads."""


def _follow_language_sample(lang: str) -> None:
    """A first sample left as it was (some language's default) becomes the new language's: switching
    to 中文 opens the Chinese sample, and back. A sample the user picked stays."""
    defaults = {DEFAULT_SAMPLE, *DEFAULT_SAMPLES.values()}
    if st.session_state.get("sample_name") in defaults:
        st.session_state.sample_name = DEFAULT_SAMPLES.get(lang, DEFAULT_SAMPLE)


def _on_language_change() -> None:
    lang = st.session_state.get(LANG_KEY)
    if lang not in LANGUAGES:  # a click on the selected option clears the control: keep the language
        lang = st.query_params.get(LANG_KEY) if st.query_params.get(LANG_KEY) in LANGUAGES else use(None)
        st.session_state[LANG_KEY] = lang
    st.query_params[LANG_KEY] = lang
    _follow_language_sample(lang)


def follow_app_navigation(rerun: bool = True) -> None:
    """Run under app.py's navigation even when a deep link is the server's first request. With a
    ``pages/`` folder beside app.py, Streamlit starts in its old multipage mode until app.py calls
    ``st.navigation``; a first request for ``/chat`` ran pages/chat.py alone, under a navigation of
    file names ("app", "agent loop"), without the tour, and ``/strategy_lab`` was "Page not found".
    Leaving that mode and rerunning runs app.py, which opens the page the link asked for (a page's
    address is the same in both modes). Pages run alone (AppTest, ``streamlit run pages/x.py``) are
    never in that mode. :func:`input_panel` calls it (every page draws the sidebar; a callback
    must not: its rerun would drop the callback's work). app.py itself calls this with
    ``rerun=False`` (it is about to call ``st.navigation``, which leaves the mode too)."""
    from streamlit.runtime.pages_manager import PagesManager
    if not rerun:  # app.py's own run: this session has its navigation
        st.session_state[APP_NAV_SEEN] = True
    if PagesManager.uses_pages_directory:
        PagesManager.uses_pages_directory = False
        if rerun and not st.session_state.get(APP_NAV_SEEN):  # a session app.py never ran for: a deep link
            st.rerun()  # (a session that has it keeps its widget events: a rerun would drop a click)


APP_NAV_SEEN = "_app_navigation_seen"
"""Session-state key app.py sets: the session ran under its navigation at least once."""


def choose_language() -> str:
    """Set this run's language: the user's choice, else the URL's ``?lang=``, else the browser's."""
    lang = st.session_state.get(LANG_KEY)
    if lang not in LANGUAGES:
        lang = st.query_params.get(LANG_KEY)
    if lang not in LANGUAGES:
        try:
            lang = pick(st.context.locale)
        except Exception:  # no browser behind this run (AppTest, bare mode)
            lang = None
    st.session_state[LANG_KEY] = use(lang)
    return st.session_state[LANG_KEY]


def language_switch() -> None:
    """The sidebar's language picker (each language named in itself, so anyone can find theirs)."""
    choose_language()
    st.sidebar.segmented_control("Language / 语言", list(LANGUAGES), format_func=LANGUAGES.__getitem__,
                                 key=LANG_KEY, on_change=_on_language_change, label_visibility="collapsed")


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
    st.sidebar.selectbox(_("Model"), list(ctxlab.MODELS), key="model", on_change=_on_model_change,
                         help=_("Picks the tokenizer, the framing and the context window"))
    st.sidebar.number_input(_("Context limit (tokens)"), min_value=256, max_value=2_000_000, step=1000,
                            key="max_tokens", on_change=_on_limit_change,
                            help=_("The model's window, or a smaller limit to see strategies work. A limit you "
                                   "type stays when you change the model (lowered to its window if larger)."))
    if st.session_state.limit_note:
        st.sidebar.caption(md_escape(st.session_state.limit_note))
    st.sidebar.slider(_("Response reserve"), 0.0, 0.5, step=0.05, key="reserve",
                      help=_("Share of the limit kept free for the model's reply"))
    llm_settings()


def current_conversation() -> ctxlab.Conversation | None:
    """The conversation in use, or None before any good input."""
    text = st.session_state.get("conversation_text")
    return parse(text) if text else None


def _own_tools_note(n_own: int, own: int, stale: bool) -> str:
    """The budget's note when it counts the conversation's own tools (``stale``: a Tool Retrieval
    selection exists, made for another conversation or model); a conversation without tools says so."""
    if n_own == 0:
        return _("Tool definitions in the budget: none, the conversation has no tools; the Tool Retrieval selection "
                 "was made for another conversation or model: open Tool Retrieval to select again.") if stale else \
            _("Tool definitions in the budget: none, the conversation has no tools.")
    if stale:
        return _("Tool definitions in the budget: all the conversation's own {n} tools ({own:,} tokens); the Tool "
                 "Retrieval selection was made for another conversation or model: open Tool Retrieval to select "
                 "again.").format(n=n_own, own=own)
    return _("Tool definitions in the budget: all the conversation's own {n} tools ({own:,} tokens).").format(
        n=n_own, own=own)


def tool_budget(conv: ctxlab.Conversation) -> tuple[int, str, bool]:
    """The tool-definition tokens the budget counts, which catalog they come from (in words),
    and whether they exceed all of the conversation's own tools. The Tool Retrieval selection
    counts only while it was made for this conversation and model."""
    model = st.session_state.model
    own = TokenCounter(model).tools(conv.tools)
    n_own = len(conv.tools)
    override, src = st.session_state.tool_tokens_override, st.session_state.get("tool_tokens_source")
    if override is None or not src:
        return own, _own_tools_note(n_own, own, False), False
    if src.get("conversation") != text_hash(st.session_state.conversation_text or "") or src.get("model") != model:
        return own, _own_tools_note(n_own, own, True), False
    if int(override) > own:
        if n_own == 0:
            return int(override), _("Tool definitions in the budget: {sel:,} tokens, the tools retrieval selects from "
                                    "{label}; the conversation has no tools of its own: that catalog is not the "
                                    "conversation's.").format(sel=int(override), label=src["label"]), True
        return int(override), _("Tool definitions in the budget: {sel:,} tokens, the tools retrieval selects from "
                                "{label}, more than all the conversation's own {n} tools ({own:,} tokens): that "
                                "catalog is not the conversation's.").format(
            sel=int(override), label=src["label"], n=n_own, own=own), True
    return int(override), _("Tool definitions in the budget: {sel:,} tokens, the tools retrieval selects from "
                            "{label} (all the conversation's own tools: {own:,} tokens).").format(
        sel=int(override), label=src["label"], own=own), False


def current_budget(conv: ctxlab.Conversation) -> Budget:
    """The budget from the sidebar; tool definitions count in it (only the selected ones when the
    Tool Retrieval page says so: see tool_budget)."""
    return Budget(int(st.session_state.max_tokens), float(st.session_state.reserve), tool_budget(conv)[0])


def require_conversation() -> ctxlab.Conversation:
    """The conversation, or an info box and a stop (a page's prerequisite guard)."""
    conv = current_conversation()
    if conv is None:
        st.info(_("Pick a sample, paste, upload or generate a conversation in the sidebar."))
        st.stop()
    return conv


# ---------------------------------------------------------------- model settings (bring your own model)

LLM_KEY = "_llm_api_key"
"""Session-state key of the API key typed in the settings panel: memory only, never a widget value
(a widget's value travels back to the browser), never written to a file, an export or a log."""
LLM_PROBE = [{"role": "user", "content": "Reply with the single word OK."}]


def md_code(text: str) -> str:
    """``text`` as inline code in Markdown (shown as typed: no link, no emphasis, no escapes seen)."""
    return "`" + text.replace("`", "'").replace("\n", " ") + "`"


def _remember_key() -> None:
    """Move a typed key out of its field into memory; the field is emptied so the key is not sent
    back to the browser on the next run."""
    typed = str(st.session_state.get("llm_api_key_input") or "").strip()
    if typed:
        st.session_state[LLM_KEY] = typed
    st.session_state.llm_api_key_input = ""
    st.session_state.llm_test = None


def _forget_key() -> None:
    st.session_state.pop(LLM_KEY, None)
    st.session_state.llm_test = None


def _env_base_url() -> str:
    """OPENAI_BASE_URL when it can be shown as it is (no user name or password in it), else ""."""
    url = os.environ.get(BASE_URL_ENV, "").strip()
    return url if url and public_url(url) == url.split("?")[0].split("#")[0] else ""


def current_llm() -> LLM:
    """The model the settings panel (or the environment, for what the panel leaves empty) points
    at, one object per configuration kept in session state (its summary cache and cool-down live
    with it). An invalid setting gives a model that is not configured (the panel shows why)."""
    key = st.session_state.get(LLM_KEY)
    try:
        config = LLMConfig.from_env(model=str(st.session_state.get("llm_model") or "").strip() or None,
                                    base_url=str(st.session_state.get("llm_base_url") or "").strip() or None,
                                    api_key=key or None)
    except CtxlabError as e:
        st.session_state.llm_config_error = str(e)
        config = LLMConfig()
    else:
        st.session_state.llm_config_error = None
    held = st.session_state.get("_llm")
    if held is None or held[0] != config.fingerprint():
        held = st.session_state["_llm"] = (config.fingerprint(), LLM(config))
    return held[1]


def _test_connection() -> None:
    llm = current_llm()
    try:
        reply = llm.chat(LLM_PROBE, max_tokens=5)
    except CtxlabError as e:
        st.session_state.llm_test = (llm.config.fingerprint(), "error", str(e))
        return
    st.session_state.llm_test = (llm.config.fingerprint(), "ok",
                                 _("{model} answered {reply} in {ms:,.0f} ms.").format(
                                     model=md_code(llm.config.describe()), reply=md_code(reply.text.strip()[:60]),
                                     ms=reply.latency_ms))


def llm_settings() -> LLM:
    """The sidebar's model settings panel (model name, base URL, API key in a password field, a
    connection test), prefilled from the environment; returns :func:`current_llm`. The
    environment's key is never shown: the panel says where it comes from instead."""
    st.session_state.setdefault("llm_model", os.environ.get(MODEL_ENV) or DEFAULT_MODEL)
    st.session_state.setdefault("llm_base_url", _env_base_url())
    st.session_state.setdefault("llm_test", None)
    persist("llm_model", "llm_base_url")
    llm = current_llm()
    box = st.sidebar.expander(_("Model for answers and LLM summaries"), expanded=False,
                              icon=":material/tune:")
    # small markdown, not captions: the sidebar's captions are the model-and-budget notes (tests/app/test_sidebar.py)
    note = lambda text: box.markdown(f":small[{text}]")  # noqa: E731  (our own text; no brackets in it)
    note(_("Optional: answer replay, probes and the summarize strategy's summarizer=llm use it. Any "
           "OpenAI-compatible server (OpenAI, vLLM, Ollama, LM Studio, a proxy)."))
    box.text_input(_("Model name"), key="llm_model",
                   help=_("The name the server knows; default from {env}").format(env=MODEL_ENV))
    box.text_input(_("Base URL"), key="llm_base_url", placeholder="https://api.openai.com/v1",
                   help=_("Empty: {env}, else OpenAI. E.g. http://127.0.0.1:11434/v1 for Ollama").format(env=BASE_URL_ENV))
    box.text_input(_("API key"), type="password", key="llm_api_key_input", on_change=_remember_key,
                   placeholder="sk-…", help=_("Kept in this browser session's memory only; never saved or shown"))
    if st.session_state.get(LLM_KEY):
        note(_("API key: set in this session (not shown)."))
        box.button(_("Forget the key"), key="llm_forget_key", on_click=_forget_key)
    elif os.environ.get(KEY_ENV):
        note(_("API key: set from {env}.").format(env=KEY_ENV))
    else:
        note(_("API key: none (a local server needs none)."))
    if st.session_state.get("llm_config_error"):
        box.error(md_escape(st.session_state.llm_config_error))
    elif llm.config.configured:
        box.markdown(_("In use: {model}").format(model=md_code(llm.config.describe())))  # a model name may hold a bracket
    else:
        note(_("No model configured: everything works offline."))
    box.button(_("Test connection"), key="llm_test_button", on_click=_test_connection,
               disabled=not llm.config.configured)
    test = st.session_state.llm_test
    if test and test[0] == llm.config.fingerprint():
        (box.success if test[1] == "ok" else box.error)(test[2] if test[1] == "ok" else md_escape(test[2]))
    return llm


def open_in_lab(text: str, label: str, *, model: str | None = None, max_tokens: int | None = None,
                reserve: float | None = None) -> None:
    """Make ``text`` (a conversation's JSON, e.g. a live session's full history) the conversation
    the Strategy Lab and the other pages use, as if it had been pasted; with the session's model
    and budget when given. Call it before the sidebar's widgets are drawn (a button's callback)."""
    init_state()
    st.session_state.source = "paste"
    st.session_state.paste_text = text
    _try_use(text, label)
    if model:
        try:
            st.session_state.model = ctxlab.resolve_model(model).name
        except CtxlabError:
            pass  # an unknown model keeps the sidebar's; the Lab still opens the conversation
    if max_tokens:
        st.session_state.max_tokens = int(max_tokens)
    if reserve is not None:
        st.session_state.reserve = float(reserve)


# ---------------------------------------------------------------- prices (memory only)

PRICE_KEYS = {"price_input": "input", "price_cached": "cached", "price_output": "output"}
PRICE_LABELS = {"input": N_("input $/M"), "cached": N_("cached $/M"), "output": N_("output $/M")}


def model_price(model: str) -> "Price | None":
    """The bundled table's price for ``model`` (None when it has none: never a guess)."""
    from ctxlab.pricing import load_prices
    return load_prices().get(model)


def current_price() -> "Price | None":
    """The price costs use: the user's override when set (this session only), else the bundled
    table's price for the sidebar model, else None (the model has no price: tokens only)."""
    from ctxlab.pricing import parse_price_override
    model = st.session_state.get("model", DEFAULTS["model"]())
    if not st.session_state.get("price_custom"):
        return model_price(model)
    text = ",".join(f"{field}={float(st.session_state.get(key, 0.0))}" for key, field in PRICE_KEYS.items())
    return parse_price_override(text, model)


def price_panel(container: Any = st) -> "Price | None":
    """An expander to override the model's prices (USD per million tokens; kept in this session
    only, never written anywhere); returns ``current_price()``. The model without a price says so."""
    model = st.session_state.model
    table = model_price(model)
    persist("price_custom", *PRICE_KEYS)
    for key, field in PRICE_KEYS.items():
        attr = {"cached": "cached_input"}.get(field, field)
        st.session_state.setdefault(key, float(getattr(table, attr) or table.input) if table else 0.0)
    st.session_state.setdefault("price_custom", False)
    with container.expander(_("Prices (your override)") if st.session_state.price_custom else _("Prices"),
                            expanded=table is None):
        if table is None:
            st.info(md_escape(_("No price for model {model}: costs show as tokens only. Set prices below to see "
                                "dollars.").format(model=model)))
        else:
            st.caption(md_escape(_("{model}: ${input:g} input, ${cached:g} cached, ${output:g} output per million "
                                   "tokens; cache rule {rule}; source {source}.").format(
                model=model, input=table.input, cached=table.cached_input or table.input, output=table.output,
                rule=table.cache, source=table.source)))
        custom = st.checkbox(_("Use my prices (this session only)"), key="price_custom")
        for col, (key, field) in zip(st.columns(3), PRICE_KEYS.items()):
            col.number_input(_(PRICE_LABELS[field]), min_value=0.0, max_value=1000.0, step=0.05, key=key, format="%.3f",
                             disabled=not custom)
    return current_price()


# ---------------------------------------------------------------- a sweep point into the Strategy Lab

def _lab_value(spec: dict[str, Any], value: Any) -> Any:
    """A parameter value as the Strategy Lab's control holds it (text for optional ints and lists)."""
    kind = spec["type"]
    if spec.get("choices") or kind in ("bool", "float", "str"):
        return value
    if kind == "int":
        return ("" if value is None else str(int(value))) if spec["default"] is None else int(value)
    if kind.startswith("list["):
        return ", ".join(map(str, value or []))
    return value


def load_point_into_lab(strategy: str, params: dict[str, Any], max_tokens: int, reserve: float | None = None) -> None:
    """Set the Strategy Lab to a sweep point: the strategy, every parameter (the point's values, the
    documented defaults for the others, as the sweep ran them, marked as set by the user so no budget
    rescales them) and the context limit. Call it from a widget callback (before the sidebar draws)."""
    from ctxlab.strategies import STRATEGIES
    init_state()
    st.session_state["lab_strategy"] = strategy
    st.session_state["lab_defaults"] = "documented"
    specs = STRATEGIES[strategy].schema()
    values = {spec["name"]: spec["default"] for spec in specs} | dict(params)
    for spec in specs:
        st.session_state[f"lab_{strategy}_{spec['name']}"] = _lab_value(spec, values[spec["name"]])
    st.session_state[f"lab_{strategy}__filled"] = {}
    persist("lab_strategy", "lab_defaults", f"lab_{strategy}__filled",
            *(f"lab_{strategy}_{spec['name']}" for spec in specs))
    st.session_state.max_tokens = int(max_tokens)
    st.session_state.limit_set_by_user = True
    st.session_state.limit_note = None
    if reserve is not None:
        st.session_state.reserve = float(reserve)
