"""Tool Retrieval: which of the catalog's tools a Chroma retrieval would send for this turn, why
each one is there, and how many tool-definition tokens that saves; plus recall and tokens over a
labeled query set, and the selected tools' tokens in the Strategy Lab's budget."""
from __future__ import annotations

import hashlib
import html
import json
import os
from pathlib import Path
from typing import Any

import streamlit as st

from ctxlab import figures
from ctxlab.errors import CtxlabError
from ctxlab.formats import load_json_documents
from ctxlab.i18n import N_, _, language, local
from ctxlab.tokens import TokenCounter
from ctxlab.tools import (TUNED_CONTEXT, OpenAIEmbeddings, ToolCatalog, ToolIndex, content_hash, conversation_query,
                          data_dir, get_provider, query_from_conversation, sweep)
from ctxlab.tools.lexical import tokenize
from ctxlab.tools.confidence import DEFAULT_ON_NO_MATCH, TUNED_THRESHOLDS
from ctxlab.tools.embeddings import PROVIDERS as MODEL_CLASSES, default_provider_for
from ctxlab.tools.select import DEFAULT_THRESHOLD, Selection
from playground.conversation import current_conversation
from playground.input_panel import input_panel
from playground.markdown import md_escape
from playground.state import SAMPLES_DIR, persist, text_hash
from playground.widgets import translated_columns

SAMPLE_CATALOG = SAMPLES_DIR / "tools_ecommerce.json"
SAMPLE_QUERIES = SAMPLES_DIR / "tool_queries_ecommerce.jsonl"
DEFAULT_QUERY = "The blender from order ORD-104233 arrived broken. I want my money back."
SAMPLE_SETS = {"zh": (SAMPLES_DIR / "tools_zh_support.json",
                      SAMPLES_DIR / "tool_queries_zh_support.jsonl", "我要退货退款，订单号 YJ20261108-4471。")}
# (per interface language: the sample catalog, its labeled queries and the example query, English otherwise, so
# a Chinese user starts on the Chinese catalog with a Chinese question; a comment: a bare string is drawn)
CATALOGS = {"sample": N_("Sample catalog"), "conversation": N_("The conversation's tools"),
            "upload": N_("Upload a tool list")}
QUERY_SOURCES = {"text": N_("Free text"), "conversation": N_("The conversation's newest user message")}
PROVIDERS = {"auto": N_("auto (by the catalog's language: MiniLM for English, a multilingual model for Chinese)"),
             "local": N_("local (all-MiniLM-L6-v2, offline)"),
             "use": N_("use (USE multilingual, offline; Chinese, mixed)"),
             "multilingual": N_("multilingual (multilingual-e5-small, offline; Chinese, slower)"),
             "hash": N_("hash (word-hash fake, instant)"),
             "openai": N_("openai (text-embedding-3-small)")}
QUERY_SETS = {"bundled": N_("Bundled (labeled for the sample catalog)"), "upload": N_("Upload JSONL")}
REASON_LABELS = {"similarity": N_("similarity"), "expansion": N_("category expansion"), "always": N_("always included"),
                 "fallback": N_("fallback (all tools)")}
ON_NO_MATCH = {"all": N_("Send all tools"), "none": N_("Send no tools")}
TABLE_HEADERS = (N_("name"), N_("category"), N_("tokens"), N_("sent"), N_("description"), N_("why"),
                 N_("similarity"), N_("score"))
CHART_NAMES = (N_("tool tokens (mean)"), N_("threshold"), N_("recall"))
# Headers and chart series of the page, marked for the catalogs (the data keeps its English keys). (a comment: a page's bare string is shown)
SWEEP_KS = (1, 2, 3, 5, 8, 10, 15, 20)
SWEEP_THRESHOLDS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6)
KEY_FIELD = "tr_openai_key"   # the password widget: its value lives only in the widget
SWEEP_RESULT = "tr_sweep_result"  # the last sweep computed on this page (not a widget)
CHOSEN = "tr_catalog_chosen"  # True once the user picks a catalog; until then it follows the conversation
DEFAULTS: dict[str, Any] = {  # this page's widget keys and their first values (tr_catalog: see _default_catalog)
    "tr_query_source": "text", "tr_query": DEFAULT_QUERY, "tr_prev_turns": 0, "tr_context": True,
    "tr_provider": "auto", "tr_top_k": 5, "tr_threshold": DEFAULT_THRESHOLD, "tr_expand": True, "tr_hybrid": True,
    "tr_always": [], "tool_use_selection": False, "tr_queries": "bundled", "tr_on_no_match": DEFAULT_ON_NO_MATCH,
    "tr_max_expansion": None,
}


def sample_set() -> tuple[Path, Path, str]:
    """(sample catalog, its labeled queries, the example query) for the interface's language."""
    return SAMPLE_SETS.get(language(), (SAMPLE_CATALOG, SAMPLE_QUERIES, DEFAULT_QUERY))


def _follow_conversation_query(conv: Any) -> None:
    """The free-text query starts as the example for the bundled catalog, or, when the catalog is
    the conversation's own tools, as the conversation's newest user message (an airline upload gets
    an airline query, not the e-commerce example, which every airline tool found "unsure"); it
    follows that until the user types a query of their own."""
    example = sample_set()[2]
    auto = (query_from_conversation(conv, 0) if conv is not None else "") or example
    filled = st.session_state.get("tr_query_filled", DEFAULT_QUERY)
    if st.session_state.get("tr_query") in (filled, None):
        st.session_state.tr_query = auto
    st.session_state.tr_query_filled = auto


# ---------------------------------------------------------------- cached engine objects

@st.cache_resource(show_spinner=False, max_entries=16)
def _catalog(text: str, source: str) -> ToolCatalog:
    """A catalog from JSON text; uploads get a name of their own (content hash), so they never
    share a Chroma collection with the sample."""
    docs, _is_jsonl = load_json_documents(text)
    catalog = ToolCatalog.from_data(docs[0], name="catalog")
    if source == "sample":
        return catalog
    return ToolCatalog.from_tools(catalog.tools, catalog.expansions, f"{source}-{_digest(text)[:10]}")


@st.cache_resource(show_spinner=False, max_entries=16)
def _conversation_catalog(tools_key: str, _tools: tuple) -> ToolCatalog:
    return ToolCatalog.from_tools(_tools, name=f"conversation-{tools_key[:10]}")


@st.cache_resource(show_spinner=False, max_entries=32)
def _costs(catalog_key: str, model: str, _catalog: ToolCatalog) -> dict[str, int]:
    return _catalog.token_costs(TokenCounter(model))


@st.cache_resource(show_spinner=False, max_entries=16)
def _index_slot(catalog_key: str, provider: str, store: str, api_key: str | None) -> dict[str, ToolIndex | None]:
    """The shared place of the ToolIndex of one catalog, provider and store, filled on first use
    and replaced by a rebuild. A typed API key is part of the cache key (Streamlit hashes it), so
    an index built with one session's key is never used by another session."""
    return {"index": None}


@st.cache_data(show_spinner=False, max_entries=16)
def _sweep(params: tuple, _index: ToolIndex, _queries: list) -> tuple[list[dict], list[dict]]:
    """Recall and tokens against k (threshold off, no expansion: recall@k) and against the
    threshold (at the page's top-k and expansion)."""
    _, _, _, _, hybrid, top_k, expand, model, policy, cap = params
    by_k = sweep(_index, _queries, ks=SWEEP_KS, thresholds=(None,), hybrid=hybrid, expand_categories=False,
                 model=model)
    by_t = sweep(_index, _queries, ks=(top_k,), thresholds=SWEEP_THRESHOLDS, hybrid=hybrid,
                 expand_categories=expand, model=model, max_expansion=cap, on_no_match=policy)
    return by_k, by_t


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _catalog_key(catalog: ToolCatalog) -> str:
    """Everything that defines the catalog, hashed: its name, tools and expansion map."""
    return _digest(json.dumps([catalog.name, [content_hash(t) for t in catalog.tools],
                               sorted((k, list(v)) for k, v in catalog.expansions.items())]))


def _provider(name: str, typed_key: str) -> Any:
    """The provider for ToolIndex: "auto" stays a name (the index picks by the catalog's texts)."""
    if name == "auto":
        return name
    if name == "openai":
        return OpenAIEmbeddings(api_key=typed_key or None)  # None: the client reads OPENAI_API_KEY
    return get_provider(name)


def _follow_model_threshold(catalog: ToolCatalog) -> None:
    """The threshold starts as the one tuned for the model the provider picked (MiniLM's 0.26 means nothing
    to e5, whose scores sit near 0.9) and follows a provider change until the user moves the slider."""
    name = st.session_state.get("tr_provider", "auto")
    if name == "auto":
        name = default_provider_for([t.description for t in catalog.tools])
    cls = MODEL_CLASSES.get(name)
    model_id = getattr(cls, "model_id", None) if cls is not None else None  # a dataclass field's default
    tuned = TUNED_THRESHOLDS.get(model_id) if isinstance(model_id, str) else None
    filled = st.session_state.get("tr_threshold_filled", DEFAULT_THRESHOLD)
    if tuned is not None and st.session_state.get("tr_threshold") == filled:
        st.session_state.tr_threshold = tuned
        st.session_state.tr_threshold_filled = tuned


def _mark_chosen() -> None:
    st.session_state[CHOSEN] = True


def _default_catalog(sources: list[str]) -> None:
    """The conversation's own tools when it has them, else the sample; a catalog the user picked
    stays picked (while it is still offered)."""
    if not st.session_state.get(CHOSEN) or st.session_state.get("tr_catalog") not in sources:
        st.session_state.tr_catalog = "conversation" if "conversation" in sources else "sample"


def catalog_label(source: str, catalog: ToolCatalog, upload_name: str = "") -> str:
    """Which catalog this is, in words: the budget's captions on this page and the Strategy Lab."""
    if source == "conversation":
        return _("the conversation's own {n} tools").format(n=len(catalog))
    if source == "sample":
        return _("sample catalog {name}, {n} tools").format(name=sample_set()[0].name, n=len(catalog))
    return _("uploaded catalog {name}, {n} tools").format(name=upload_name, n=len(catalog))


def _progress_bar(label: str):
    bar = st.progress(0.0, text=label)

    def update(done: int, total: int, message: str) -> None:  # the engine's message (English), said in ours
        text = _("embedded {done}/{total} tools").format(done=done, total=total) if total else \
            _("The index is up to date")
        bar.progress(done / total if total else 1.0, text=text)
    return update


# ---------------------------------------------------------------- page

st.set_page_config(layout="wide")  # additive: app.py's title and icon stay
input_panel()
for _key, _value in DEFAULTS.items():
    st.session_state.setdefault(_key, _value)
persist(*DEFAULTS, "tr_catalog", CHOSEN)
st.title(_("Tool Retrieval"))
st.write(_("An agent with dozens of tools pays for every definition on every request. Retrieval embeds the "
           "tools once and sends only those close to what the user asks: the whole catalog on the left, what "
           "retrieval sends for this query on the right, and the tokens it saves."))
conv = current_conversation()
model = st.session_state.model

cat_col, query_col = st.columns(2, gap="large")
with cat_col:
    sources = [s for s in CATALOGS if s != "conversation" or (conv is not None and conv.tools)]
    _default_catalog(sources)
    source = st.radio(_("Tool catalog"), sources, key="tr_catalog", format_func=lambda k: _(CATALOGS[k]),
                      horizontal=True, on_change=_mark_chosen,
                      help=_("The tools of the conversation in the sidebar (the default when it has tools), the "
                             "bundled sample catalog (e-commerce; in Chinese, a Chinese shop's), or an OpenAI, "
                             "Anthropic or MCP tool list of your own"))
    upload_name = ""
    try:
        if source == "sample":
            catalog = _catalog(sample_set()[0].read_text(encoding="utf-8"), "sample")
        elif source == "conversation":
            tools_key = _digest(json.dumps([content_hash(t) for t in conv.tools]))
            catalog = _conversation_catalog(tools_key, tuple(conv.tools))
        else:
            up = st.file_uploader(_("Tool list (.json)"), type=["json"], key="tr_catalog_upload",
                                  help=_("OpenAI or Anthropic tools, an MCP tools/list result, or a catalog "
                                         "`{\"tools\": [...], \"expansions\": {...}}`"))
            if up is None:
                st.info(_("Upload a JSON tool list to retrieve from it."))
                st.stop()
            catalog = _catalog(up.getvalue().decode("utf-8", errors="replace"), "upload")
            upload_name = up.name
    except CtxlabError as e:
        st.error(md_escape(str(e)))
        st.stop()
    if not len(catalog):
        st.error(_("The tool list is empty: there is nothing to retrieve."))
        st.stop()
    label = catalog_label(source, catalog, upload_name)
    st.caption(md_escape((_("Retrieving from {label}: {n} categories, {rules} expansion rules") if catalog.expansions
                          else _("Retrieving from {label}: {n} categories")).format(
        label=label, n=len(catalog.categories()), rules=len(catalog.expansions))))

context: tuple[str, ...] = ()  # earlier user messages folded into a short query (the conversation source)
fold = False
with query_col:
    query_source = st.radio(_("Query"), list(QUERY_SOURCES), key="tr_query_source",
                            format_func=lambda k: _(QUERY_SOURCES[k]), horizontal=True)
    if query_source == "text":
        _follow_conversation_query(conv if source == "conversation" else None)
        query = st.text_input(_("What the user asks"), key="tr_query",
                              help=_("Starts as the conversation's newest user message when the catalog is its "
                                     "own tools (else an example for the bundled catalog); what you type stays"))
    else:
        prev = st.number_input(_("Earlier user turns to include"), min_value=0, max_value=20, step=1,
                               key="tr_prev_turns", help=_("Older user messages joined before the newest one, "
                                                           "for follow-ups such as 'yes, do that'"))
        fold = st.checkbox(_("Read a short message with the earlier ones"), key="tr_context", disabled=int(prev) > 0,
                           help=_("A newest message of at most {n} words is ranked with the earlier user messages "
                                  "folded in (weight {w}, then {w2}, ...), as retrieval does by default: a follow-up "
                                  "such as 'the ID is 42' then finds the tool the turn before asked for").format(
                               n=TUNED_CONTEXT.max_words, w=TUNED_CONTEXT.weight,
                               w2=round(TUNED_CONTEXT.weight ** 2, 4))) and int(prev) == 0
        if conv is None:
            st.info(_("Pick a sample, paste or upload a conversation in the sidebar, or type a query."))
            st.stop()
        query = query_from_conversation(conv, int(prev))
        if fold:
            query, context = conversation_query(conv)
        st.caption(_("The query sent to the index:"))
        st.code(query or _("(the conversation has no user message)"), language=None, wrap_lines=True)

catalog_key = _catalog_key(catalog)
costs = _costs(catalog_key, model, catalog)
if [n for n in st.session_state.tr_always if n not in catalog.names]:
    st.session_state.tr_always = [n for n in st.session_state.tr_always if n in catalog.names]

st.subheader(_("Retrieval settings"))
s1, s2, s3 = st.columns([1, 1, 1], gap="large")
_follow_model_threshold(catalog)
top_k = s1.slider(_("Top k"), 1, 20, key="tr_top_k", help=_("At most this many tools picked by similarity"))
threshold = s1.slider(_("Threshold"), 0.0, 1.0, step=0.01, key="tr_threshold",
                      help=_("A tool is picked only when its ranking score reaches this (when none does, retrieval "
                             "is unsure and sends what 'When nothing matches well' says)"))
on_no_match = s1.radio(_("When nothing matches well"), list(ON_NO_MATCH), key="tr_on_no_match",
                       format_func=lambda k: _(ON_NO_MATCH[k]), horizontal=True,
                       help=_("A query no tool matches well (a keyboard mash, small talk, another domain) makes "
                              "retrieval unsure: send every tool (safe: a real request judged unsure still gets its "
                              "tool) or none (the always-included tools still go)"))
expand = s2.checkbox(_("Category expansion"), key="tr_expand",
                     help=_("A picked tool's category pulls in the other tools of the categories it maps to"))
max_expansion = s2.number_input(_("Expansion adds at most"), min_value=0, max_value=500, step=1, key="tr_max_expansion",
                                placeholder=_("as many as top k"), disabled=not expand,
                                help=_("Tools added by category expansion, most similar first; empty: as many as "
                                       "top k"))
hybrid = s2.checkbox(_("Hybrid (cosine + BM25)"), key="tr_hybrid",
                     help=_("Add a bonus of up to 0.15 for tools sharing rare words with the query"))
always = s3.multiselect(_("Always include"), list(catalog.names), key="tr_always",
                        help=_("Tools sent with every request, whatever the query"), placeholder=_("Choose options"))

typed_key = s3.text_input(_("OpenAI API key"), type="password", key=KEY_FIELD,
                          help=_("Only for the openai provider; used for this session's embedding requests, never "
                                 "stored or shown. OPENAI_API_KEY from the environment works too."))
providers = [p for p in PROVIDERS if p != "openai" or typed_key or os.environ.get("OPENAI_API_KEY")]
if st.session_state.tr_provider not in providers:
    st.session_state.tr_provider = "auto"
provider = s3.radio(_("Embedding provider"), providers, key="tr_provider", format_func=lambda k: _(PROVIDERS[k]),
                    help=_("openai appears once a key is typed above or OPENAI_API_KEY is set"))

slot = _index_slot(catalog_key, provider, str(data_dir()), (typed_key or None) if provider == "openai" else None)
status_box = st.container()
if slot["index"] is None:
    try:
        slot["index"] = ToolIndex(catalog, _provider(provider, typed_key))
    except CtxlabError as e:  # e.g. a store built with another model: the rebuild below fixes it
        status_box.error(md_escape(str(e)))
if slot["index"] is not None and provider != "openai" and slot["index"].pending():  # offline, free: build now
    try:
        with status_box:
            slot["index"].build(progress=_progress_bar(_("Embedding the tools (first time for this catalog and model)…")))
    except CtxlabError as e:
        status_box.error(md_escape(str(e)))
built = slot["index"] is not None and slot["index"].count > 0
if status_box.button(_("Rebuild index") if built else _("Build index"), key="tr_rebuild",
                     help=_("Delete the stored index and embed every tool again")):
    try:
        slot["index"] = None
        slot["index"] = ToolIndex(catalog, _provider(provider, typed_key), rebuild=True)
        with status_box:
            report = slot["index"].build(progress=_progress_bar(_("Embedding the tools…")))
        status_box.success(_("Rebuilt: embedded {n} tools in {s:.1f} s.").format(n=report.embedded, s=report.seconds))
    except CtxlabError as e:
        status_box.error(md_escape(str(e)))
index: ToolIndex | None = slot["index"]
if index is not None:
    s = index.status()
    status_box.caption(md_escape(
        (_("Index: model {model}, {n} tools stored ({catalog} in the catalog, {pending} changed since the build), "
           "built {built}, collection {collection} in {location}") if s.pending else
         _("Index: model {model}, {n} tools stored ({catalog} in the catalog), built {built}, collection "
           "{collection} in {location}")).format(
            model=s.model_id, n=s.count, catalog=s.catalog_tools, pending=s.pending, built=s.built_at or _("never"),
            collection=s.collection, location=s.location)))
    if provider == "openai" and not s.count:
        status_box.caption(_("The openai provider calls the API: press Build index to embed the catalog."))

selection: Selection | None = None
if index is not None:
    try:
        selection = index.select(query, top_k=int(top_k), threshold=float(threshold), expand_categories=expand,
                                 always_include=always, hybrid=hybrid, model=model, on_no_match=on_no_match,
                                 max_expansion=None if max_expansion is None else int(max_expansion),
                                 context=context, context_rule="auto" if fold else "off")
    except CtxlabError as e:
        st.error(md_escape(str(e)))

left, right = st.columns([2, 3], gap="large")
with left:
    st.subheader(_("All tools"))
    sent = set(selection.names) if selection else set()
    st.dataframe([{"name": t.name, "category": t.category or "", "tokens": costs[t.name], "sent": t.name in sent,
                   "description": t.description[:160]} for t in catalog.tools],
                 key="tr_catalog_table", hide_index=True, width="stretch", height=460,
                 column_config=translated_columns(["name", "category", "tokens", "sent", "description"], {
                     "tokens": st.column_config.NumberColumn("tokens", format="%d"),
                     "sent": st.column_config.CheckboxColumn("sent", width="small")}))
    st.caption(_("Tokens per definition as the OpenAI API bills tools for {model} (without the per-request "
                 "overhead).").format(model=md_escape(model)))

if selection is None:
    st.stop()

with right:
    st.subheader(_("What retrieval sends"))
    if selection.fallback == "no_match":  # retrieval ran, and no tool matches well
        sent_what = _("every tool") if on_no_match == "all" else (
            _("no tools except the always-included ones") if always else _("no tools"))
        st.warning(md_escape(_("Unsure: {why}. Sending {what} (your choice for a query that matches nothing "
                               "well).").format(why=local(selection.unsure_reason), what=sent_what)))
    if selection.context:
        st.caption(md_escape(_("Ranked with {n} earlier user message(s) folded in (weights {weights}): the newest "
                               "message has {words} words, at most {limit}.").format(
            n=len(selection.context), weights=", ".join(f"{w:g}" for _t, w in selection.context),
            words=len(tokenize(query)), limit=TUNED_CONTEXT.max_words)))
    elif fold and context:
        st.caption(md_escape(_("Ranked alone: the newest message has {words} words, more than {limit}, so the "
                               "earlier user messages are not folded in.").format(
            words=len(tokenize(query)), limit=TUNED_CONTEXT.max_words)))
    for w in selection.warnings:
        if not w.startswith("unsure"):  # said just above, in full
            st.warning(md_escape(local(w)))
    saved = selection.tokens_all - selection.tokens_selected
    m1, m2, m3, m4 = st.columns(4)
    m1.metric(_("Tools sent"), _("{k} of {n}").format(k=len(selection.tools), n=len(catalog)))
    m2.metric(_("Tool tokens, all"), f"{selection.tokens_all:,}")
    m3.metric(_("Tool tokens, selected"), f"{selection.tokens_selected:,}")
    m4.metric(_("Tokens saved"), f"{saved:,}",
              help=_("{share:.0%} of the tool-definition tokens").format(share=selection.saved_ratio))
    sends = _("Retrieval sends {sel:,} of {all:,} tool-definition tokens (OpenAI billing for {model}): {share:.0%} "
              "saved on this request.").format(sel=selection.tokens_selected, all=selection.tokens_all,
                                                model=md_escape(model), share=selection.saved_ratio)
    if selection.expansion_left_out:
        sends += " " + _("Category expansion added at most {cap} tools and left out {n} more of the same "
                         "categories.").format(cap=selection.expansion_cap, n=selection.expansion_left_out)
    st.caption(sends)
    scored = [t for t in selection.tools if t.similarity is not None and t.reason != "fallback"]
    if scored:
        rows = [{"name": html.escape(t.name), "similarity": t.similarity, "reason": t.reason} for t in scored]
        st.plotly_chart(figures.similarity_bars(rows, float(threshold)), key="tr_similarity_bars")
        st.caption(_("Bars: cosine similarity to the query, coloured by why the tool is sent (picked by similarity, "
                     "pulled in by category expansion, always included). The threshold applies to the ranking "
                     "score, which with hybrid adds a lexical bonus, so a pick may sit left of the line.") if hybrid
                   else _("Bars: cosine similarity to the query, coloured by why the tool is sent (picked by "
                          "similarity, pulled in by category expansion, always included). The threshold applies to "
                          "the ranking score."))
    st.dataframe([{"name": t.name, "why": _(REASON_LABELS.get(t.reason, t.reason)), "category": t.tool.category or "",
                   "similarity": None if t.similarity is None else round(t.similarity, 3),
                   "score": None if t.score is None else round(t.score, 3), "tokens": t.tokens}
                  for t in selection.tools], key="tr_selected_table", hide_index=True, width="stretch",
                 column_config=translated_columns(["name", "why", "category", "similarity", "score", "tokens"]))

st.subheader(_("In the Strategy Lab's budget"))
conv_tools = TokenCounter(model).tools(conv.tools) if conv is not None else 0
own = _("the conversation's own {n} tools").format(n=len(conv.tools)) if conv is not None and conv.tools else \
    _("no tools (the conversation has none)")
use = st.checkbox(_("Count only the selected tools in the Strategy Lab's budget"), key="tool_use_selection")
st.caption(md_escape(_(
    "Catalog feeding the budget: {label}. When on, the Strategy Lab and Compare set aside {sel:,} tokens for tool "
    "definitions (the tools retrieval sends here, billed as the OpenAI API does) instead of the {own_tokens:,} tokens "
    "of {own}. It follows this page's selection; turn it off to count the conversation's tools again.").format(
        label=label, sel=selection.tokens_selected, own_tokens=conv_tools, own=own)))
if use and conv is not None and selection.tokens_selected > conv_tools:
    raised = _("Counting this selection raises the tool definitions in the budget from {own_tokens:,} tokens ({own}) "
               "to {sel:,}, because it comes from {label}, not from the conversation's tools.").format(
        own_tokens=conv_tools, own=own, sel=selection.tokens_selected, label=label)
    if conv.tools:
        raised += " " + _("Pick \"The conversation's tools\" as the catalog to count only those.")
    st.warning(md_escape(raised))
st.session_state.tool_tokens_override = int(selection.tokens_selected) if use else None
st.session_state.tool_tokens_source = ({"label": label, "own": source == "conversation", "model": model,
                                        "conversation": text_hash(st.session_state.conversation_text or "")}
                                       if use else None)

st.subheader(_("Recall and tokens over labeled queries"))
st.caption(_("How often the right tools are among those sent, and what they cost, for a set of labeled queries "
             "(JSON Lines: `{\"query\": ..., \"gold_tools\": [...]}`). It embeds every query, so it runs on "
             "request."))
qset = st.radio(_("Labeled queries"), list(QUERY_SETS), key="tr_queries", format_func=lambda k: _(QUERY_SETS[k]),
                horizontal=True)
queries: list | None = None
try:
    if qset == "bundled":
        qpath = sample_set()[1]
        queries, qlabel = load_json_documents(qpath.read_text(encoding="utf-8"))[0], qpath.name
        if source != "sample":
            st.caption(_("The bundled queries name tools of the sample catalog; with another catalog they mostly "
                         "miss."))
    else:
        qup = st.file_uploader(_("Labeled queries (.jsonl)"), type=["jsonl", "json"], key="tr_queries_upload")
        if qup is not None:
            docs, is_jsonl = load_json_documents(qup.getvalue())
            queries = docs[0] if not is_jsonl and len(docs) == 1 and isinstance(docs[0], list) else docs
            qlabel = qup.name
except CtxlabError as e:
    st.error(md_escape(str(e)))
    queries = None
params = (catalog_key, provider, str(data_dir()), _digest(json.dumps(queries, sort_keys=True, default=str)),
          hybrid, int(top_k), expand, model, on_no_match, None if max_expansion is None else int(max_expansion))
if st.button(_("Compute recall and tokens"), key="tr_sweep", disabled=queries is None or index is None):
    try:
        with st.spinner(_("Embedding and ranking the labeled queries…")):
            by_k, by_t = _sweep(params, index, queries)
        st.session_state[SWEEP_RESULT] = {"params": params,
                                          "label": _("{n} queries from {name}").format(n=len(queries), name=qlabel),
                                          "by_k": by_k, "by_t": by_t}
    except CtxlabError as e:
        st.error(md_escape(str(e)))
result = st.session_state.get(SWEEP_RESULT)
if result:
    rp, r_hybrid, r_top_k, r_expand, r_policy = (result["params"][i] for i in (1, 4, 5, 6, 8))
    ranking = _("hybrid") if r_hybrid else _("dense")
    st.caption(md_escape((_("{label}, provider {provider}, {ranking} ranking") if result["params"] == params else
                          _("{label}, provider {provider}, {ranking} ranking; the settings changed since: press the "
                            "button again to recompute")).format(label=result["label"], provider=rp, ranking=ranking)))
    c1, c2 = st.columns(2)
    with c1:
        st.markdown(_("**Recall against k** (no threshold, no expansion: recall@k)"))
        st.plotly_chart(figures.sweep_chart([{"k": r["k"], "recall@k": r["selection_recall"],
                                              "tool tokens (mean)": r["tokens_selected_mean"]} for r in result["by_k"]],
                                            "k", "recall@k", "tool tokens (mean)"), key="tr_sweep_k")
    with c2:
        st.markdown((_("**Tokens against the threshold** (top k {k}, expansion on)") if r_expand else
                     _("**Tokens against the threshold** (top k {k}, expansion off)")).format(k=r_top_k))
        st.plotly_chart(figures.sweep_chart([{"threshold": r["threshold"],
                                              "tool tokens (mean)": r["tokens_selected_mean"],
                                              "recall": r["selection_recall"]} for r in result["by_t"]],
                                            "threshold", "tool tokens (mean)", "recall"), key="tr_sweep_threshold")
        unsure = {r["threshold"]: r["unsure"] for r in result["by_t"] if r["unsure"]}
        if unsure:
            counts = _(", ").join(_("{n} at {t:.1f}").format(n=n, t=t) for t, n in unsure.items())
            st.caption((_("Where no tool reaches the threshold for a query, retrieval is unsure and sends every tool "
                          "(your choice above), so tokens climb again at high thresholds (unsure queries: "
                          "{counts}).") if r_policy == "all" else
                        _("Where no tool reaches the threshold for a query, retrieval is unsure and sends no tools "
                          "(your choice above), so tokens drop to nothing at high thresholds (unsure queries: "
                          "{counts}).")).format(counts=counts))
