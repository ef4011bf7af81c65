"""Failure Modes: one lesson per way a context fails (poisoning, distraction, confusion, clash) and
one per structural mitigation (quarantine, tool loadout). Each lesson explains the mode, shows a
bundled conversation with the detector's findings highlighted on its message timeline, and applies
a finding's mitigation with before and after; every lesson also runs on the sidebar's conversation."""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Sequence

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

import ctxlab
from ctxlab.conversation import Conversation, Message
from ctxlab.diagnostics import (MODES, STRUCTURAL_LESSONS, Finding, Mitigation, MitigationResult, apply_mitigation,
                                diagnose, lesson_path, summarize_findings)
from ctxlab.errors import CtxlabError
from ctxlab.fidelity import needed_facts
from ctxlab.findings import diff_findings
from ctxlab.measure import measure
from ctxlab.i18n import N_, _, language
from ctxlab.figures import CATEGORY_COLORS
from ctxlab.strategies import Budget, get_strategy
from ctxlab.tokens import TokenCounter
from playground.conversation import parse
from playground.input_panel import input_panel
from playground.language import choose_language
from playground.markdown import md_escape
from playground.state import text_hash
from playground.widgets import count_column, message_number, number_column, text_width


@dataclass(frozen=True)
class Lesson:
    """A lesson: its title, the failure mode whose findings it shows (None: every mode), its
    explanation (both in English, translated where shown) and its bundled English conversation
    (``lesson_path`` gives the one for the interface's language)."""

    title: str
    mode: str | None
    explanation: str
    path: Path


LESSONS: dict[str, Lesson] = {
    **{name: Lesson(info.title, name, info.explanation, info.lesson) for name, info in MODES.items()},
    "quarantine": Lesson(
        N_("Context quarantine"), None,
        N_("One agent doing three unrelated jobs carries every job's tool results into every other job's model "
        "call. Quarantine gives each independent task its own sub-agent with its own, smaller context: the "
        "preamble, that task's turns and only the tools it uses. No single call has to hold everything, and a "
        "mistake in one task cannot leak into another."), STRUCTURAL_LESSONS["quarantine"]),
    "tool_loadout": Lesson(
        N_("Tool loadout"), "confusion",
        N_("Past about 30 tools, models pick the wrong one more often, and every definition costs prompt tokens "
        "on every call. A loadout sends only the few tools retrieved for the request in front of the model "
        "(here: the top 5 from a Chroma index of the catalog), so the look-alikes and the irrelevant tools "
        "never reach it."), STRUCTURAL_LESSONS["tool_loadout"]),
}
# (lesson name -> lesson, in the order the page offers them; a comment: a bare string here would show on the page)
SOURCES = {"lesson": N_("The lesson's conversation"), "mine": N_("My conversation (sidebar)")}
SEVERITY_LABELS = {"error": N_("error"), "warning": N_("warning"), "info": N_("info")}
MODE_LABELS = {"poisoning": N_("poisoning"), "distraction": N_("distraction"), "confusion": N_("confusion"),
               "clash": N_("clash")}
MODE_FINDINGS = {"poisoning": N_("Poisoning findings"), "distraction": N_("Distraction findings"),
                 "confusion": N_("Confusion findings"), "clash": N_("Clash findings")}
CATEGORY_LABELS = {"system": N_("system"), "user": N_("user"), "assistant_text": N_("assistant text"),
                   "tool_calls": N_("tool calls"), "tool_results": N_("tool results")}
SEVERITY_ORDER = ("error", "warning", "info")
HIGHLIGHT = "#111111"  # the finding outline and badge: no role colour is this dark
PREVIEW = 140
SELECTED = N_("selected")  # the timeline table's tag of the selected finding's messages


# ---------------------------------------------------------------- engine calls, cached

@st.cache_data(show_spinner=False, max_entries=8)
def _lesson_text(path: str) -> str:
    return Path(path).read_text(encoding="utf-8")


choose_language()  # before the cached functions below: their spinners speak the page's language


@st.cache_resource(show_spinner=_("Diagnosing…"), max_entries=16)
def _findings(conv_key: str, model: str, lang: str, _conv: Conversation) -> tuple[Finding, ...]:
    """Every mode's findings on a conversation, once per conversation text, model and interface
    language (the evidence is written in it)."""
    return tuple(diagnose(_conv, model=model))


@st.cache_resource(show_spinner=_("Embedding the tools (first time for this catalog)…"), max_entries=8)
def _tool_index(tools_key: str, store: str, _tools: tuple) -> Any:
    """A Chroma index of a catalog under the app's data dir, built once (the embeddings persist)."""
    from ctxlab.retrieval import ToolCatalog, ToolIndex
    index = ToolIndex(ToolCatalog.from_tools(_tools, name=f"lesson-{tools_key[:12]}"), "local")
    if index.pending():
        index.build()
    return index


def _tools_key(tools: Sequence[Any]) -> str:
    return hashlib.sha256("\0".join(f"{t.name}\1{t.description}" for t in tools).encode()).hexdigest()


@dataclass(frozen=True)
class Applied:
    """A mitigation's result, with the needed facts served before and after and how they were measured."""

    result: MitigationResult
    served_before: float | None
    served_after: float | None
    served_how: str
    lost: tuple[str, ...] = ()  # needed facts served before and not after
    recovery: tuple[str, ...] = ()  # how each lost fact could come back (ctxlab.fidelity.RECOVERIES keys)


def _served_in(original: Conversation, parts: Sequence[Sequence[Message]]
               ) -> tuple[float | None, dict[str, str]]:
    """Share of the needed facts (ctxlab.fidelity.needed_facts of ``original``) that the context
    holding each needing assistant message still has before it, and the facts not served. ``parts``
    are the contexts sent (one, or one per sub-agent); a needing message no longer sent as it was is
    not counted. The facts not served map to how they could come back (``NeededFacts.recovery``)."""
    nf = needed_facts(original)
    where = {id(m): i for i, m in enumerate(original.messages)}
    facts = [[nf.facts_of(m, where.get(id(m))) for m in p] for p in parts]
    served = counted = 0
    missed: dict[str, str] = {}
    for need in nf.needs:
        wanted = original.messages[need.needed_by]
        for k, part in enumerate(parts):
            pos = next((i for i, m in enumerate(part) if m is wanted), None)
            if pos is not None:
                counted += 1
                hit = any(need.served_by(facts[k][i]) for i in range(pos))
                served += hit
                if not hit:
                    missed.setdefault(str(need.fact), nf.recovery(need))
                break
    return (served / counted if counted else None), missed


@st.cache_resource(show_spinner=_("Applying the mitigation…"), max_entries=16)
def _apply(key: tuple, _conv: Conversation, _m: Mitigation, model: str, limit: int, reserve: float) -> Applied:
    """Apply ``_m`` and measure needed facts served: a strategy through the call-by-call replay
    (``ctxlab.measure.measure``, against ``none``); the other kinds change the context once, so each needing
    message is checked against the context that would hold it (``_served_in``)."""
    index = _tool_index(_tools_key(_conv.tools), str(_data_dir()), tuple(_conv.tools)) \
        if _m.kind == "tool_retrieval" and _conv.tools else None
    result = apply_mitigation(_conv, _m, model=model, context_limit=limit, index=index)
    if _m.kind == "strategy":
        budget = Budget(limit, reserve, TokenCounter(model).tools(_conv.tools))
        strategy = get_strategy(_m.strategy or "", **dict(_m.params))
        before = measure(_conv, "none", budget, model=model)
        after = measure(_conv, strategy, budget, model=model)
        missed_before = {m.fact for m in before.fidelity.misses}
        lost = {m.fact: m.recovery for m in after.fidelity.misses if m.fact not in missed_before}
        return Applied(result, before.needed_recall, after.needed_recall,
                       _("replayed call by call with {strategy}, against sending everything").format(
                           strategy=strategy.name), tuple(lost), tuple(lost.values()))
    parts = result.subagents if _m.kind == "quarantine" else (result.after,)
    before, missed_before = _served_in(_conv, [_conv.messages])
    after, missed_after = _served_in(_conv, [p.messages for p in parts if p is not None])
    lost = {f: r for f, r in missed_after.items() if f not in missed_before}
    return Applied(result, before, after, _("checked in the context that holds each assistant message, before and after"),
                   tuple(lost), tuple(lost.values()))


def _data_dir() -> Path:
    from ctxlab.retrieval import data_dir
    return data_dir()


# ---------------------------------------------------------------- figures and tables

def _category(m: Message) -> str:
    if m.role == "assistant":
        return "tool_calls" if m.tool_calls else "assistant_text"
    return {"tool": "tool_results"}.get(m.role, m.role if m.role in CATEGORY_COLORS else "user")


def _preview(m: Message) -> str:
    text = m.text or ", ".join(f"{c.name}({c.arguments})" for c in m.tool_calls)
    return text if len(text) <= PREVIEW else text[:PREVIEW] + "…"


def timeline_figure(conv: Conversation, tokens: Sequence[int], highlight: Sequence[int]) -> go.Figure:
    """Tokens per message coloured by role, the finding's messages outlined and marked."""
    marked = set(highlight)
    fig = go.Figure(go.Bar(
        x=list(range(len(tokens))), y=list(tokens),
        marker=dict(color=[CATEGORY_COLORS[_category(m)] for m in conv.messages],
                    line=dict(color=[HIGHLIGHT if i in marked else "rgba(0,0,0,0)" for i in range(len(tokens))],
                              width=[3 if i in marked else 0 for i in range(len(tokens))])),
        customdata=[[_(CATEGORY_LABELS.get(m.role, m.role)), _("finding") if i in marked else ""]
                    for i, m in enumerate(conv.messages)],
        hovertemplate=_("#%{x} %{customdata[0]}: %{y:,} tokens %{customdata[1]}") + "<extra></extra>",
        showlegend=False))
    for cat in dict.fromkeys(_category(m) for m in conv.messages):  # the colours' legend (bars carry no names)
        fig.add_trace(go.Bar(x=[None], y=[None], name=_(CATEGORY_LABELS.get(cat, cat)), marker_color=CATEGORY_COLORS[cat],
                             hoverinfo="skip", showlegend=True))
    top = max(tokens, default=1) or 1
    if marked:
        fig.add_trace(go.Scatter(x=sorted(marked), y=[tokens[i] + top * 0.06 for i in sorted(marked)], mode="markers",
                                 marker=dict(symbol="triangle-down", size=12, color=HIGHLIGHT), name=_("finding"),
                                 hoverinfo="skip"))
    fig.update_layout(height=260, margin=dict(l=10, r=10, t=30, b=10), title=_("Tokens per message (finding marked)"),
                      xaxis=dict(title=_("message"), dtick=max(1, len(tokens) // 20)), yaxis=dict(title=_("tokens"),
                      range=[0, top * 1.15]), legend=dict(orientation="h", y=1.12, x=1, xanchor="right"))
    return fig


def timeline_table(conv: Conversation, tokens: Sequence[int], highlight: Sequence[int],
                   findings: Sequence[Finding]) -> pd.DataFrame:
    """One row per message; ``finding`` names the codes of the findings pointing at it, the
    selected finding's first."""
    codes: dict[int, list[str]] = {i: [_(SELECTED)] for i in highlight}
    for f in findings:
        for i in f.messages:
            if f.code not in codes.setdefault(i, []):
                codes[i].append(f.code)
    return pd.DataFrame([{"#": i, "finding": codes.get(i, []), "role": m.role, "tokens": tokens[i],
                          "content": _preview(m)} for i, m in enumerate(conv.messages)])


def subagent_figure(shared: int, parts: Sequence[int], limit: int) -> go.Figure:
    """The shared context against each sub-agent's context, one bar each, with the context limit."""
    names = [_("one shared context")] + [_("sub-agent {n}").format(n=k + 1) for k in range(len(parts))]
    values = [shared, *parts]
    fig = go.Figure(go.Bar(y=names, x=values, orientation="h", text=[f"{v:,}" for v in values], textposition="outside",
                           marker_color=["#9D9D9D"] + ["#4C78A8"] * len(parts)))
    end = max([*values, 1]) * 1.2
    if limit <= end:
        fig.add_vline(x=limit, line_dash="dash", annotation_text=_("limit {limit}").format(limit=f"{limit:,}"))
    fig.update_layout(height=80 + 40 * len(values), margin=dict(l=10, r=10, t=30, b=10),
                      title=_("Tokens per model call"), xaxis=dict(range=[0, end], title=_("tokens")),
                      yaxis=dict(autorange="reversed"))
    return fig


def _pct(x: float | None) -> str:
    return _("n/a") if x is None else f"{x:.0%}"


def _finding_label(f: Finding) -> str:
    severity = _(SEVERITY_LABELS[f.severity])
    if f.messages:
        return _("{severity}: {code} (messages {where})").format(severity=severity, code=f.code,
                                                                 where=", ".join(map(str, f.messages)))
    if f.tools:
        return _("{severity}: {code} ({n} tools)").format(severity=severity, code=f.code, n=len(f.tools))
    return _("{severity}: {code} (the whole conversation)").format(severity=severity, code=f.code)


MITIGATION_ORDER = ("prune", "strategy", "tool_retrieval", "quarantine")


def _teaching_order(f: Finding) -> tuple:
    """Findings a lesson shows first: the most severe, then those whose mitigation acts on the
    context itself (prune, strategy) before the structural ones, then those that point at
    messages (something to see on the timeline), then by first message."""
    kind = f.mitigation.kind if f.mitigation else None
    return (SEVERITY_ORDER.index(f.severity), MITIGATION_ORDER.index(kind) if kind else len(MITIGATION_ORDER),
            not f.messages, f.messages[:1])


# ---------------------------------------------------------------- page sections

def after_origins(conv: Conversation, r: MitigationResult) -> list[int | None]:
    """For each message of ``r.after``, its index in ``conv`` (None for an inserted summary), so
    findings after a mitigation point at the same messages as before: a strategy's plan says it; a
    prune keeps the other messages (the same objects) and blanks the named text messages in place."""
    after = r.after.messages if r.after is not None else ()
    if r.plan is not None:
        return list(r.plan.origin)
    if r.mitigation.kind == "prune":
        present = {id(m) for m in after}
        blanked = {i for i in r.mitigation.messages
                   if 0 <= i < len(conv) and not conv.messages[i].tool_calls and conv.messages[i].role != "tool"}
        kept = [i for i, m in enumerate(conv.messages) if id(m) in present or i in blanked]
        if len(kept) == len(after):
            return list(kept)
    return list(range(len(after)))


def findings_after(conv: Conversation, r: MitigationResult) -> list[Finding]:
    """The findings after the mitigation, their message indexes those of ``conv`` (a quarantine's
    already are)."""
    if r.after is None:
        return list(r.findings_after)
    origin = after_origins(conv, r)
    return [replace(f, messages=tuple(o for o in (origin[i] for i in f.messages if i < len(origin)) if o is not None))
            for f in r.findings_after]


def _why_facts_fell(applied: Applied) -> str | None:
    """One sentence on needed facts the mitigation stopped serving, naming them (None: none)."""
    if not applied.lost:
        return None
    shown = ", ".join(f'"{f}"' for f in applied.lost[:6])
    text = (_("Needed facts served fell from {before} to {after}: the messages this fix removes held {facts} and "
              "{more} more, which a later answer quotes. The answer still quotes them; the context it was written "
              "from no longer shows where they came from.") if len(applied.lost) > 6 else
            _("Needed facts served fell from {before} to {after}: the messages this fix removes held {facts}, "
              "which a later answer quotes. The answer still quotes them; the context it was written from no "
              "longer shows where they came from."))
    text = text.format(before=_pct(applied.served_before), after=_pct(applied.served_after), facts=shown,
                       more=len(applied.lost) - 6)
    from ctxlab.fidelity import FROM_AGENT, REFETCH, UNRECOVERABLE  # the priced loss
    counts = [(sum(r == REFETCH for r in applied.recovery),
               _("{n:,} a tool call run again would bring back (a modelled re-fetch: one more call)")),
              (sum(r in UNRECOVERABLE for r in applied.recovery),
               _("{n:,} nothing would bring back (the user gave them, or the result changed since)")),
              (sum(r == FROM_AGENT for r in applied.recovery),
               _("{n:,} the agent had written first itself (it can write them again)"))]
    parts = [part.format(n=n) for n, part in counts if n]
    return text + (" " + _("Of these: {parts}.").format(parts=_("; ").join(parts)) if parts else "")


def _before_after(applied: Applied, mode: str | None, conv: Conversation) -> None:
    r = applied.result
    in_mode = (lambda fs: [f for f in fs if f.mode == mode]) if mode else list
    before, after = in_mode(r.findings_before), in_mode(findings_after(conv, r))
    c1, c2, c3, c4 = st.columns(4)
    c1.metric(_("Tokens") if r.after is not None else _("Tokens (largest call)"), f"{r.tokens_after:,}",
              delta=f"{r.tokens_after - r.tokens_before:,}", delta_color="inverse",
              help=_("before: {value}").format(value=f"{r.tokens_before:,}"))
    c2.metric(_(MODE_FINDINGS[mode]) if mode else _("Findings"), f"{len(after)}", delta=f"{len(after) - len(before)}",
              delta_color="inverse", help=_("before: {value}").format(value=len(before)))
    c3.metric(_("Facts retained"), _pct(r.facts_after),
              help=_("before: {value}; the conversation's facts (ids, amounts) still present").format(
                  value=_pct(r.facts_before)))
    c4.metric(_("Needed facts served"), _pct(applied.served_after),
              help=_("before: {value}; {how}").format(value=_pct(applied.served_before), how=applied.served_how))
    # the same finding, or the same problem whose messages a fix moved (a blanked claim no longer counts
    # among a mistyped id's messages): still there, not gone and new
    diff = diff_findings(before, after, loose=True)
    gone = diff.gone
    summary = (_("Before: {tokens_before} tokens, {n_before} {mode} findings; after: {tokens_after} tokens, "
                 "{n_after} {mode} findings. Needed facts served: {served_before} before, {served_after} after "
                 "({how}).") if mode else
               _("Before: {tokens_before} tokens, {n_before} findings; after: {tokens_after} tokens, {n_after} "
                 "findings. Needed facts served: {served_before} before, {served_after} after ({how})."))
    st.caption(md_escape(summary.format(
        tokens_before=f"{r.tokens_before:,}", n_before=len(before), tokens_after=f"{r.tokens_after:,}",
        n_after=len(after), mode=_(MODE_LABELS[mode]) if mode else "", served_before=_pct(applied.served_before),
        served_after=_pct(applied.served_after), how=applied.served_how)))
    if why := _why_facts_fell(applied):
        st.caption(md_escape(why))
    if gone:
        st.success(md_escape(_("Gone after the mitigation: {findings}").format(
            findings="; ".join(_finding_label(f) for f in gone))))
    kept = diff.still
    if kept:
        st.warning(md_escape(_("Still there: {findings}").format(findings="; ".join(_finding_label(f) for f in kept))))
    for f in diff.new:
        st.caption(md_escape(_("New after the mitigation, {finding}: {evidence}").format(
            finding=_finding_label(f), evidence=f.evidence)))
    if r.subagents:
        st.plotly_chart(subagent_figure(r.tokens_before, r.subagent_tokens, int(st.session_state.max_tokens)),
                        key="fm_subagent_bars")
        st.dataframe(pd.DataFrame([{"sub-agent": k + 1, "tokens": t,
                                    "messages": ", ".join(map(str, p.metadata["subagent"]["source_messages"])),
                                    "tools": ", ".join(x.name for x in p.tools)}
                                   for k, (p, t) in enumerate(zip(r.subagents, r.subagent_tokens))]),
                     key="fm_subagent_table", hide_index=True, width="stretch",
                     column_config={"sub-agent": st.column_config.NumberColumn(_("sub-agent")),
                                    "tokens": count_column(_("tokens")),
                                    "messages": st.column_config.TextColumn(_("messages")),
                                    "tools": st.column_config.TextColumn(_("tools"))})
    if r.tools_before != r.tools_after:
        left, right = st.columns(2)
        tool_column = {"tool": st.column_config.TextColumn(_("tool"))}
        left.caption(_("Tools sent before ({n})").format(n=len(r.tools_before)))
        left.dataframe(pd.DataFrame({"tool": list(r.tools_before)}), key="fm_tools_before", hide_index=True,
                       height=240, width="stretch", column_config=tool_column)
        right.caption(_("Tools sent after ({n})").format(n=len(r.tools_after)))
        right.dataframe(pd.DataFrame({"tool": list(r.tools_after)}), key="fm_tools_after", hide_index=True,
                        width="stretch", column_config=tool_column)
    if r.after is not None and r.after.messages != conv.messages:
        with st.expander(_("The conversation after the mitigation")):
            counter = TokenCounter(st.session_state.model)
            st.caption(_("# is the message's number in the conversation before (empty for an inserted summary)"))
            origin = after_origins(conv, r)
            st.dataframe(pd.DataFrame([{"#": message_number(o), "role": m.role, "tokens": counter.message(m),
                                        "content": _preview(m)} for o, m in zip(origin, r.after.messages)]),
                         key="fm_after_table", hide_index=True, width="stretch",
                         column_config={"#": number_column(), "role": st.column_config.TextColumn(_("role")),
                                        "tokens": count_column(_("tokens")),
                                        "content": st.column_config.TextColumn(_("content"))})


def _continue(base: tuple, after: Conversation, conv: Conversation, label: str) -> None:
    """Make ``after`` (a mitigation's result) the conversation the lesson runs on next (a chain of
    fixes kept per lesson and source; "Start over" drops it)."""
    data = ctxlab.export(after, "openai").data
    text = json.dumps({**data, "facts": list(conv.facts), "title": conv.metadata.get("title", "")})
    chain = st.session_state.get("fm_chain")
    steps = chain["steps"] if chain and chain["base"] == base else []
    st.session_state.fm_chain = {"base": base, "steps": [*steps, (label, text)]}
    st.session_state.pop("fm_applied", None)


def _mitigation_for(lesson: Lesson, name: str, conv: Conversation, finding: Finding | None) -> Mitigation | None:
    """The selected finding's mitigation; the structural lessons offer theirs even without a finding."""
    if name == "quarantine":
        return Mitigation("quarantine", _("Split into sub-agent contexts, one per independent task"))
    if finding is not None and finding.mitigation is not None:
        return finding.mitigation
    if name == "tool_loadout" and len(conv.tools) > 5:
        return Mitigation("tool_retrieval", _("Send only the tools retrieved for the query (top {k})").format(k=5), k=5)
    return None


# ---------------------------------------------------------------- page

st.set_page_config(layout="wide")  # additive: app.py's title and icon stay
input_panel()
st.title(_("Failure Modes"))
st.caption(_("Four ways a context fails, and two ways to structure an agent so it does not. Pick a lesson, look at "
             "the marked messages, then apply the mitigation and compare before and after."))
name = st.radio(_("Lesson"), list(LESSONS), key="fm_lesson", horizontal=True, format_func=lambda n: _(LESSONS[n].title))
lesson = LESSONS[name]
lesson_file = lesson_path(name, language())  # the Chinese interface runs the Chinese story where one is written
source = st.radio(_("Run it on"), list(SOURCES), key="fm_source", horizontal=True, format_func=lambda s: _(SOURCES[s]),
                  help=_("The lesson's bundled conversation, or the conversation chosen in the sidebar (diagnose mine)"))
st.markdown(md_escape(_(lesson.explanation)))

model = st.session_state.model
if source == "mine":
    text = st.session_state.get("conversation_text")
    label = st.session_state.get("conversation_label") or _("your conversation")
    if not text:
        st.info(_("Pick a sample, paste, upload or generate a conversation in the sidebar."))
        st.stop()
else:
    text, label = _lesson_text(str(lesson_file)), _("lesson {file}").format(file=lesson_file.name)
base_key = (source, name, text_hash(text))
chain = st.session_state.get("fm_chain")
if chain and chain["base"] == base_key:  # fixes applied one after another
    text = chain["steps"][-1][1]
    label = _("{label} after {n} fix(es)").format(label=label, n=len(chain["steps"]))
    st.info(md_escape(_("Fixes applied so far, in order: {fixes}. The findings and the next mitigation below are "
                        "those of the result.").format(fixes="; ".join(s[0] for s in chain["steps"]))))
    st.button(_("Start over from the original"), key="fm_restart",
              on_click=lambda: st.session_state.pop("fm_chain", None))
try:
    conv = parse(text)
    counter = TokenCounter(model)
    tokens = [counter.message(m) for m in conv.messages]
    conv_key = text_hash(text)
    all_findings = _findings(conv_key, model, language(), conv)
except CtxlabError as e:
    st.error(md_escape(str(e)))
    st.stop()

findings = sorted((f for f in all_findings if lesson.mode is None or f.mode == lesson.mode), key=_teaching_order)
counts = summarize_findings(all_findings)
st.subheader(_("What the detectors find in {label}").format(label=md_escape(label)))
st.caption(md_escape(_("{messages} messages, {tokens} tokens of messages, {tools} tools. Findings per mode: {counts}").format(
    messages=f"{len(conv):,}", tokens=f"{sum(tokens):,}", tools=len(conv.tools),
    counts=", ".join(f"{_(MODE_LABELS[m])} {n}" for m, n in counts.items()))))
planted = conv.metadata.get("planted") or []
if planted:
    st.caption(md_escape(_("Planted by the generator: {planted}").format(planted="; ".join(
        _("{mode} {code} at messages {messages}").format(mode=_(MODE_LABELS.get(p.get("mode"), str(p.get("mode")))),
                                                         code=p.get("code"), messages=p.get("messages"))
        for p in planted if isinstance(p, dict)))))

selected: Finding | None = None
if findings:
    options = [f"{k + 1}. {_finding_label(f)}" for k, f in enumerate(findings)]  # unique, numbered
    if st.session_state.get("fm_finding") not in options:  # another lesson or conversation: its first finding
        st.session_state.fm_finding = options[0]
    selected = findings[options.index(st.selectbox(_("Finding"), options, key="fm_finding"))]
    # a finding is what the lesson is about, not a failure of the page: no red error box
    (st.info if selected.severity == "info" else st.warning)(
        _("**{severity}**, {code}: {evidence}").format(severity=_(SEVERITY_LABELS[selected.severity]),
                                                        code=md_escape(selected.code),
                                                        evidence=md_escape(selected.evidence)))
    if selected.tools:
        shown_tools = ", ".join(selected.tools[:12])
        st.caption(md_escape((_("Tools involved: {tools} and {more} more") if len(selected.tools) > 12 else
                              _("Tools involved: {tools}")).format(tools=shown_tools, more=len(selected.tools) - 12)))
else:
    st.success(md_escape((_("The detectors report no {mode} finding in {label}.") if lesson.mode else
                          _("The detectors report no finding in {label}.")).format(
        mode=_(MODE_LABELS[lesson.mode]) if lesson.mode else "", label=label)))

highlight = selected.messages if selected else ()
st.plotly_chart(timeline_figure(conv, tokens, highlight), key="fm_timeline")
rows = timeline_table(conv, tokens, highlight, findings)
codes = sorted({c for cs in rows["finding"] for c in cs})
st.dataframe(rows, key="fm_table", hide_index=True, width="stretch", height=min(38 + 35 * len(rows), 420),
             column_config={"#": count_column("#"), "role": st.column_config.TextColumn(_("role")),
                            "finding": st.column_config.MultiselectColumn(
                                _("finding"), options=codes, width=min(max([text_width(["finding"])] + [
                                    sum(text_width([c]) for c in cs) for cs in rows["finding"]]), 480),
                                color=[HIGHLIGHT if c == _(SELECTED) else "#F58518" for c in codes]),
                            "tokens": count_column(_("tokens")),
                            "content": st.column_config.TextColumn(_("content"), width="large")})

st.subheader(_("Mitigation"))
mitigation = _mitigation_for(lesson, name, conv, selected)
if mitigation is None:
    st.info(_("Nothing to mitigate here: pick another finding, or another lesson."))
    st.stop()
limit, reserve = int(st.session_state.max_tokens), float(st.session_state.reserve)
apply_key = (source, name, conv_key, model, limit, reserve, repr(mitigation.to_dict()), language())
if st.button(_("Apply: {mitigation}").format(mitigation=md_escape(mitigation.label)), key="fm_apply", type="primary"):
    st.session_state.fm_applied = apply_key
if st.session_state.get("fm_applied") == apply_key:
    try:
        applied = _apply(apply_key, conv, mitigation, model, limit, reserve)
    except CtxlabError as e:
        st.error(md_escape(str(e)))
        st.stop()
    _before_after(applied, lesson.mode, conv)
    if applied.result.after is not None and applied.result.after.messages != conv.messages:
        st.button(_("Continue from this result (apply the next fix to it)"), key="fm_continue", on_click=_continue,
                  args=(base_key, applied.result.after, conv, mitigation.label),
                  help=_("Makes the mitigated conversation the one the lesson diagnoses, so fixes add up"))
else:
    st.caption(_("Applies the mitigation to this conversation and shows tokens, findings, facts retained and needed "
                 "facts served before and after."))
