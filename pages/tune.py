"""Tune: sweep strategies' parameters and context limits over a set of conversations, see the
Pareto front of cost against needed facts served, pick a point by a stated rule, open it in the
Strategy Lab, and export it (ctxlab config, and the native form of your framework where it maps)."""
from __future__ import annotations

import hashlib
import json
from typing import Any

import pandas as pd
import streamlit as st

import ctxlab
from ctxlab.errors import CtxlabError
from ctxlab.configs import make_config
from ctxlab.figures_tune import has_values, pareto_figure, points_table, sensitivity_figure, undefined_axis_reason
from ctxlab.formats import load_all
from ctxlab.prefix import with_unlogged_prefix
from ctxlab.pricing import Price
from ctxlab.strategies import STRATEGIES, Budget, get_strategy
from ctxlab.sweep import COLUMNS, TRACE_SUFFIXES, Grid, SweepResult
from ctxlab.tokens import TokenCounter
from ctxlab.i18n import N_, _, local, local_error, use
from playground import lab_cache
from playground.conversation import current_conversation
from playground.handoff import go_to_lab, load_point_into_lab
from playground.input_panel import input_panel
from playground.language import LANG_KEY
from playground.markdown import md_escape
from playground.prices import price_panel
from playground.state import SAMPLES_DIR, persist, sample_names, text_hash
from playground.subagents import form_rows, form_table
from playground.tune_job import SweepJob
from playground.widgets import (config_downloads, native_downloads, snippet_download, strategy_title, tools_picker,
                                translated_columns)

UPLOAD_TYPES = tuple(s.lstrip(".") for s in TRACE_SUFFIXES)  # every file ending a sweep folder is searched for

SETS = {"samples": N_("Bundled samples"), "upload": N_("Upload files"), "folder": N_("Upload a folder"),
        "current": N_("The sidebar's conversation")}
DEFAULT_STRATEGIES = ["sliding_window", "clear_tool_results"]
# Measured call by call on the bundled samples: at 3,000 / 6,000 tokens no point of the old default
# (sliding_window, tool_rounds) served 95% of the needed facts, so Tune recommended nothing; at
# 8,000 / 16,000 with clear_tool_results (which has native exports) it recommends a point that fits.
# Parameters varied when the page opens (min, max, points): 2 strategies x 3 points x 2 limits, which
# answers in about a second on the three samples. (Comments, not strings: a page's bare string is shown.)
DEFAULT_RANGES = {("sliding_window", "buffer_ratio"): (0.1, 0.5, 3), ("tool_rounds", "keep_rounds"): (0, 2, 3),
                  ("clear_tool_results", "keep"): (1, 5, 3)}
# A grid larger than this is sampled (seeded) down to it, so a click never starts an hour of work.
MAX_POINTS = 200
METRICS = [c for c in COLUMNS if c not in ("strategy", "params", "max_tokens", "conversations")]
MAX_UPLOAD_BYTES = 50 * 1024 * 1024
POINT_HEADERS = (N_("point"), N_("pareto"), N_("recommended"))
# The points table's headers in words (the measures' headers are their identifiers, as in the CLI). (a comment: a page's bare string is shown)


# ---------------------------------------------------------------- the set of conversations

@st.cache_resource(show_spinner=False, max_entries=8)
def _parse_files(key: str, _files: tuple[tuple[str, bytes], ...]) -> tuple[list[ctxlab.Conversation], list[str]]:
    """Every conversation of the files (JSON or JSONL, any format ctxlab reads), and one error per
    file that is not one (naming the file and where in it)."""
    convs: list[ctxlab.Conversation] = []
    errors: list[str] = []
    for name, data in _files:
        try:
            convs += [with_unlogged_prefix(c) for c in load_all(data, max_bytes=MAX_UPLOAD_BYTES)]  # traces: + bill
        except CtxlabError as e:
            errors.append(f"{name}: {e}")  # the engine's message, in English like the CLI's
    return convs, errors


def _conversation_set() -> tuple[list[ctxlab.Conversation], str, str, tuple[tuple[str, bytes | str], ...]]:
    """The conversations to sweep, a few words saying which, a key of their content and the files (name,
    content) they come from; stops the page with a message when there are none."""
    which = st.radio(_("Conversations"), list(SETS), key="tune_set", horizontal=True, format_func=lambda k: _(SETS[k]))
    if which == "samples":
        names = st.multiselect(_("Samples"), sample_names(), key="tune_samples", placeholder=_("Choose options"))
        files = tuple((n, (SAMPLES_DIR / n).read_bytes()) for n in names)
    elif which == "upload":
        ups = st.file_uploader(_("One or more .json / .jsonl / .traj files (a JSONL file may hold one conversation "
                                 "a line)"), type=list(UPLOAD_TYPES), accept_multiple_files=True, key="tune_upload")
        files = tuple((u.name, u.getvalue()) for u in ups or ())
    elif which == "folder":
        ups = st.file_uploader(_("A folder: its .json, .jsonl and .traj files, subfolders included (the others, and "
                                 "files that are not conversations, such as tool catalogs, are skipped with a note)"),
                               type=list(UPLOAD_TYPES), accept_multiple_files="directory", key="tune_folder")
        files = tuple((u.name, u.getvalue()) for u in ups or ())
    else:
        conv = current_conversation()
        if conv is None:
            st.info(_("Pick a conversation in the sidebar first."))
            st.stop()
        label = st.session_state.conversation_label or _("the sidebar's conversation")  # escaped where shown
        return [conv], label, text_hash(st.session_state.conversation_text), ((label, st.session_state.conversation_text),)
    if not files:
        st.info(_("Choose at least one sample or upload a file to sweep."))
        st.stop()
    key = hashlib.sha256(b"".join(hashlib.sha256(d).digest() + n.encode() for n, d in files)).hexdigest()
    with st.spinner(_("Reading the conversations…")):
        convs, errors = _parse_files(key, files)
    for e in errors:  # a file named on its own is an error; one found in a folder a note (as in `ctxlab sweep`)
        (st.caption if which == "folder" else st.error)(md_escape(
            _("Not a conversation, left out of the sweep: {error}").format(error=e)))
    if not convs:
        st.info(_("No conversation to sweep: fix or replace the files above."))
        st.stop()
    return convs, _("{n} conversation(s) from {k} file(s)").format(n=len(convs), k=len(files)), key, files


# ---------------------------------------------------------------- the grid, built from the schemas

def _range_values(kind: str, lo: float, hi: float, n: int) -> list[Any]:
    """``n`` evenly spaced values from ``lo`` to ``hi`` (whole numbers for an int, no repeats)."""
    if n <= 1 or lo == hi:
        return [int(lo) if kind == "int" else float(lo)]
    raw = [lo + (hi - lo) * k / (n - 1) for k in range(n)]
    return list(dict.fromkeys(int(round(v)) if kind == "int" else round(v, 4) for v in raw))


def _numeric_control(container: Any, name: str, spec: dict[str, Any]) -> list[Any] | None:
    """A checkbox to vary one numeric parameter, then min, max and how many points."""
    p, kind = spec["name"], spec["type"]
    prefix = f"tune_{name}_{p}"
    lo_bound, hi_bound = spec.get("min"), spec.get("max")
    start = DEFAULT_RANGES.get((name, p))
    default = spec["default"] if spec["default"] is not None else (lo_bound or 1)
    st.session_state.setdefault(f"{prefix}_on", start is not None)
    st.session_state.setdefault(f"{prefix}_min", start[0] if start else default)
    st.session_state.setdefault(f"{prefix}_max", start[1] if start else default)
    st.session_state.setdefault(f"{prefix}_n", start[2] if start else 3)
    persist(*(f"{prefix}_{s}" for s in ("on", "min", "max", "n")))
    label = (_("vary {param}") if spec["default"] is not None else _("vary {param} (default: from the budget)"))
    text = spec.get("help", "")
    if not container.checkbox(label.format(param=p), key=f"{prefix}_on", help=_(text) if text else ""):
        return None
    c1, c2, c3 = container.columns(3)
    cast = int if kind == "int" else float
    bounds = {"min_value": cast(lo_bound) if lo_bound is not None else None,
              "max_value": cast(hi_bound) if hi_bound is not None else None}
    step = 1 if kind == "int" else 0.05
    lo = c1.number_input(_("min"), step=step, key=f"{prefix}_min", **bounds)
    hi = c2.number_input(_("max"), step=step, key=f"{prefix}_max", **bounds)
    n = c3.number_input(_("points"), min_value=1, max_value=10, step=1, key=f"{prefix}_n")
    if hi < lo:
        container.error(_("{param}: max is below min.").format(param=p))
        return None
    return _range_values(kind, lo, hi, int(n))


def _choice_control(container: Any, name: str, spec: dict[str, Any]) -> list[Any] | None:
    """A multiselect of the values to try for a parameter with choices (or a bool)."""
    p = spec["name"]
    options = list(spec["choices"]) if spec.get("choices") else [False, True]
    key = f"tune_{name}_{p}_values"
    st.session_state.setdefault(key, [])
    persist(key)
    text = spec.get("help", "")
    picked = container.multiselect(_("{param}: values to try").format(param=p), options, key=key,
                                   placeholder=_("default ({value})").format(value=spec["default"]),
                                   help=_(text) if text else "")
    return list(picked) or None


def _grid_controls() -> tuple[dict[str, dict[str, list[Any]]], list[str]]:
    """The chosen strategies and, per strategy, the values of each varied parameter; notes on what is
    kept at its default."""
    st.session_state.setdefault("tune_strategies", DEFAULT_STRATEGIES)
    persist("tune_strategies")
    chosen = st.multiselect(_("Strategies"), [n for n in STRATEGIES if n != "none"], key="tune_strategies",
                            format_func=strategy_title, placeholder=_("Choose options"))
    grid: dict[str, dict[str, list[Any]]] = {}
    notes = []
    for col, name in zip(st.columns(max(len(chosen), 1)), chosen):
        col.markdown(f"**{strategy_title(name)}**")
        values: dict[str, list[Any]] = {}
        fixed = []
        for spec in STRATEGIES[name].schema():
            if spec.get("choices") or spec["type"] == "bool":
                got = _choice_control(col, name, spec)
            elif spec["type"] in ("int", "float"):
                got = _numeric_control(col, name, spec)
            else:
                fixed.append(spec["name"])
                got = None
            if got:
                values[spec["name"]] = got
        if fixed:
            col.caption(_("Kept at their defaults: {params}.").format(params=", ".join(fixed)))
        grid[name] = values
    if any(not v for v in grid.values()):
        notes.append(_("A strategy with nothing varied runs once per limit with its documented defaults."))
    return grid, notes


def _budgets() -> list[int] | None:
    st.session_state.setdefault("tune_budgets", "8000, 16000")
    persist("tune_budgets")
    raw = st.text_input(_("Context limits to try (tokens, comma-separated)"), key="tune_budgets")
    try:
        out = [int(v.strip().replace("_", "")) for v in raw.split(",") if v.strip()]
    except ValueError:
        st.error(md_escape(_("Context limits must be whole numbers separated by commas, got {raw}.").format(raw=repr(raw))))
        return None
    if not out or any(v < 256 for v in out):
        st.error(_("Give at least one context limit of 256 tokens or more."))
        return None
    return out


# ---------------------------------------------------------------- run and results

def _start(convs: list[ctxlab.Conversation], grid: Grid, budgets: list[int], price: Price | None,
           min_recall: float, sample: int | None, signature: str, tools_mode: str = "all") -> None:
    """Start the sweep in its own process (playground.tune_job.SweepJob): the page stays live, shows progress
    with an estimate, can cancel it, and a closed tab ends it."""
    old = st.session_state.get("tune_job")
    if old is not None:
        old.cancel()
    st.session_state.tune_job = SweepJob(convs, grid, budgets, model=st.session_state.model, prices=price,
                                         reserve=float(st.session_state.reserve), min_recall=min_recall,
                                         sample=sample, seed=0, tools=tools_mode)
    st.session_state.tune_job_signature = signature
    st.session_state.tune_job_tools = TokenCounter(st.session_state.model).tools(convs[0].tools)


def _duration(seconds: float) -> str:
    return _("{s:,.0f} s").format(s=seconds) if seconds < 120 else _("{m:,.1f} min").format(m=seconds / 60)


def _job_text(job: SweepJob) -> str:
    """Where a running sweep is, in words: conversations done, time so far, time left."""
    left = job.remaining()
    eta = (_("about {time} left").format(time=_duration(left)) if left is not None else
           _("an estimate after the first conversation (the largest has {n:,} messages)").format(n=job.largest))
    return _("{k} of {n} conversation(s) done, {time} so far, {eta}.").format(
        k=job.done, n=job.total, time=_duration(job.elapsed()), eta=eta)


def _cancel_job() -> None:
    job = st.session_state.get("tune_job")
    if job is not None:
        job.cancel()


@st.fragment(run_every=1.0)
def _job_panel() -> None:
    """A running sweep: its progress, an estimate and Cancel, polled every second; when it ends,
    its result becomes the page's and the whole page reruns."""
    use(st.session_state.get(LANG_KEY))  # a fragment's own rerun runs nothing above it: this session's language
    job: SweepJob | None = st.session_state.get("tune_job")
    if job is None:
        return
    state = job.poll()
    if state == "running":
        st.progress(job.done / max(job.total, 1), text=_job_text(job))  # our own words: no escaping needed
        st.button(_("Cancel the sweep"), key="tune_cancel", on_click=_cancel_job)
        return
    del st.session_state["tune_job"]
    if state == "done":
        st.session_state.tune_result = job.result
        st.session_state.tune_signature = st.session_state.tune_job_signature
        st.session_state.tune_tools_tokens = st.session_state.tune_job_tools
        st.session_state.tune_job_note = None
    elif state == "error":
        st.session_state.tune_job_note = ("error", job.error or _("the sweep failed"))
    else:
        st.session_state.tune_job_note = ("info", _("Sweep cancelled after {time} ({k} of {n} conversation(s) done); "
                                                    "nothing of it is kept.").format(
            time=_duration(job.elapsed()), k=job.done, n=job.total))
    st.rerun(scope="app")


def _label(p: dict[str, Any]) -> str:
    params = ", ".join(f"{k}={v}" for k, v in p["params"].items())
    return f"{p['strategy']}({params}) @ {p['max_tokens']:,}"


def _point_summary(p: dict[str, Any]) -> str:
    recall = _("n/a") if p["needed_recall"] is None else f"{p['needed_recall']:.0%}"
    cost = (f"${p['cost_usd']:.4f}" if p["cost_usd"] is not None else
            _("{n:,} input tokens").format(n=p["input_tokens_total"]))
    if p["cost_vs_none"] is not None:
        cost = _("{money} ({change:+.0%} vs none)").format(money=cost, change=p["cost_vs_none"])
    return _("{point}: serves {recall} of the needed facts, costs {cost}, saves {saved:.0%} of input tokens, every "
             "model call fits in {fits:.0%} of the conversations ({over:,} of {calls:,} calls over the limit), "
             "{invalid} rejected by a provider").format(
        point=_label(p), recall=recall, cost=cost, saved=p["saved"], fits=p["fits_rate"], over=p["calls_over_limit"],
        calls=p["calls"], invalid=p["invalid"])


def _open_in_lab(point: dict[str, Any]) -> None:
    load_point_into_lab(point["strategy"], point["params"], point["max_tokens"])
    st.session_state.tune_goto_lab = True


def _exports(point: dict[str, Any], tools_tokens: int) -> None:
    """ctxlab's config of the point and its native form in each framework that has one."""
    strategy = get_strategy(point["strategy"], **point["params"])
    budget = Budget(point["max_tokens"], float(st.session_state.reserve), tools_tokens)
    config = make_config(strategy, budget, st.session_state.model)
    st.caption(_("tools_tokens is {n:,}: the tool definitions of the first conversation of the set; set it to your "
                 "agent's.").format(n=tools_tokens))
    config_downloads(config, _("ctxlab config"), "tuned", "tune_dl")
    native_downloads(config, "tune_dl")
    snippet_download(config, strategy.apply_at, "tune_dl_snippet", show_code=False)  # every target, as in the Lab


@st.cache_resource(show_spinner=False, max_entries=8)
def _subagent_sessions(key: str, _files: tuple[tuple[str, bytes | str], ...]) -> list[tuple[str, str]]:
    """(name, text) of each file of the set that is a Claude Code main session with a logged sub-agent."""
    out = []
    for name, data in _files:
        text = data if isinstance(data, str) else data.decode("utf-8", "replace")
        if "agentId" not in text:  # no sub-agent named anywhere: not parsed again
            continue
        try:
            first = load_all(text, max_bytes=MAX_UPLOAD_BYTES)[:1]
        except CtxlabError:
            continue
        if first and first[0].metadata.get("subagents"):
            out.append((name, text))
    return out


def _subagents_inline(point: dict[str, Any], key: str, files: tuple[tuple[str, bytes | str], ...],
                      price: Price | None) -> None:
    """The recommended point on each sub-agent session of the set, isolated (as the sweep measured the
    parent) and inline (``ctxlab.subagents.isolation``), on request."""
    sessions = _subagent_sessions(key, files)
    if not sessions:
        return
    if not st.checkbox(_("Also measure the recommended point with the sub-agent work inline"), key="tune_subagents",
                       help=_("The sweep measures a Claude Code main session as logged: the parent, which saw only "
                              "what each sub-agent returned. This replays the recommended point on that parent, on "
                              "each sub-agent in its own context, and on the same work inline in the parent.")):
        return
    model, reserve = st.session_state.model, float(st.session_state.reserve)
    strategy = get_strategy(point["strategy"], **point["params"])
    budget = Budget.for_model(model, reserve=reserve, max_tokens=point["max_tokens"])
    rows = []
    try:
        with st.spinner(_("Replaying the sub-agents…")):
            for name, text in sessions:
                rows += form_rows({"session": name}, lab_cache.subagents_measured(
                    text_hash(text), model, None, repr(strategy), repr(budget), repr(price), text, strategy, budget,
                    price))
    except CtxlabError as e:
        st.info(md_escape(local_error(e)))
        return
    form_table(rows, "tune_subagents_table", N_("session"))


def _results(result: SweepResult, tools_tokens: int, subagent_set: tuple = ()) -> None:
    st.subheader(_("Recommendation"))
    recall_defined = has_values(result, "needed_recall")
    if result.recommendation is None and not recall_defined:
        st.warning(md_escape(_("No recommendation: {why}").format(why=undefined_axis_reason(result, "needed_recall"))))
    elif result.recommendation is None:
        st.warning(md_escape(_("No point serves at least {level:.0%} of the needed facts without a provider rejecting "
                               "its output: lower the recall level, widen the ranges or raise the limits.").format(
            level=result.min_recall)))
    else:
        best = result.points[result.recommendation]
        (st.warning if best["calls_over_limit"] else st.success)(md_escape(_point_summary(best)))
        if "refetches" in best:  # the priced loss: how many re-fetches its total cost assumes
            from ctxlab.compare import refetch_sentence
            st.caption(md_escape(refetch_sentence(best)))
    st.caption(md_escape(_("Rule: {rule}").format(rule=result.rule)))
    for note in result.notes:
        st.caption(md_escape(local(note)))  # the sweep ran in a worker thread, in English: shown in the page's language
    if subagent_set and result.recommendation is not None:
        _subagents_inline(result.points[result.recommendation], *subagent_set)
    try:
        st.plotly_chart(pareto_figure(result), key="tune_pareto")
        st.caption(_("One dot per point (a cross: some output a provider rejects); the dotted line joins the points "
                     "no other point beats on both axes; the star is the recommendation. Hover a dot for its "
                     "parameters."))
    except ValueError as e:  # no point has both axes (e.g. nothing needed facts): say why, no empty chart
        st.info(md_escape(_("No Pareto figure: {why}").format(why=e)))

    st.subheader(_("Every point"))
    table = pd.DataFrame(points_table(result))
    pct = {c: st.column_config.NumberColumn(c, format="percent")
           for c in ("saved", "fits_rate", "retention", "needed_recall", "cached_share", "cost_vs_none")}
    st.dataframe(table, key="tune_table", hide_index=True, width="stretch",
                 column_config={**translated_columns(POINT_HEADERS),
                                **pct, "cost_usd": st.column_config.NumberColumn("cost_usd", format="$%.4f"),
                                "input_tokens_total": st.column_config.NumberColumn("input_tokens_total",
                                                                                    format="localized"),
                                "cache_tokens_lost": st.column_config.NumberColumn("cache_tokens_lost",
                                                                                   format="localized"),
                                "tokens_final_mean": st.column_config.NumberColumn("tokens_final_mean", format="%.0f"),
                                "tokens_final_p95": st.column_config.NumberColumn("tokens_final_p95", format="%.0f"),
                                "plan_ms": st.column_config.NumberColumn("plan_ms", format="%.3f")})
    base = result.baseline
    money = f"${base['cost_usd']:.4f}" if base["cost_usd"] is not None else _("no price")
    st.caption(md_escape(_("Click a column header to sort. Keeping everything (none) sends {n:,} input tokens over all "
                           "calls, {cached:.0%} cached, and costs {money}.").format(
        n=base["input_tokens_total"], cached=base["cached_share"], money=money)))

    varied = sorted({(p["strategy"], k) for p in result.points for k in p["params"]})
    if varied:
        st.subheader(_("Sensitivity"))
        s1, s2 = st.columns(2)
        pick = s1.selectbox(_("Parameter"), varied, key="tune_sens_param", format_func=lambda sp: f"{sp[0]}.{sp[1]}")
        measures = [m for m in METRICS if has_values(result, m)] or METRICS
        default = next(m for m in ("needed_recall", "cost_usd", "input_tokens_total", *measures) if m in measures)
        if st.session_state.get("tune_sens_metric") not in measures:
            st.session_state.tune_sens_metric = default
        metric = s2.selectbox(_("Measure"), measures, key="tune_sens_metric")
        try:
            st.plotly_chart(sensitivity_figure(result, pick[0], pick[1], metric), key="tune_sensitivity")
        except ValueError as e:
            st.info(md_escape(str(e)))

    st.subheader(_("Use a point"))
    options = list(range(len(result.points)))
    if st.session_state.get("tune_point") not in options:
        st.session_state.tune_point = result.recommendation if result.recommendation is not None else 0
    k = st.selectbox(_("Point"), options, key="tune_point",
                     format_func=lambda i: (_("#{i} {point} (recommended)") if i == result.recommendation
                                            else "#{i} {point}").format(i=i, point=_label(result.points[i])))
    point = result.points[k]
    st.button(_("Open this point in the Strategy Lab"), key="tune_open_lab", on_click=_open_in_lab, args=(point,),
              help=_("Sets the Lab's strategy, every parameter (as the sweep ran them) and the context limit; the Lab "
                     "shows the sidebar's conversation."))
    with st.expander(_("Export this point"), expanded=True):
        _exports(point, tools_tokens)


# ---------------------------------------------------------------- page

st.set_page_config(layout="wide")
input_panel()
go_to_lab("tune_goto_lab", _("The point is set: open the Strategy Lab."))
st.title(_("Tune"))
st.write(_("Many parameter values and context limits over a set of conversations: what each point serves "
           "(needed facts) and what it costs over the conversations' lives, the points no other beats on both, "
           "and a pick by a stated rule."))
st.session_state.setdefault("tune_set", "samples")
st.session_state.setdefault("tune_samples", sample_names())
persist("tune_set", "tune_samples")

convs, described, set_key, set_files = _conversation_set()
grid_values, grid_notes = _grid_controls()
budgets = _budgets()
st.session_state.setdefault("tune_min_recall", 0.95)
persist("tune_min_recall")
min_recall = st.slider(_("Recall level the recommendation must reach"), 0.5, 1.0, step=0.01, key="tune_min_recall")
tools_mode = tools_picker("tune_tools", any(c.tools for c in convs))
try:
    price = price_panel(st)
except CtxlabError as e:
    st.error(md_escape(str(e)))
    st.stop()
if not grid_values:
    st.info(_("Pick at least one strategy."))
    st.stop()
if budgets is None:
    st.stop()
try:
    grid = Grid.from_dict(grid_values)
except CtxlabError as e:
    st.error(md_escape(str(e)))
    st.stop()
combos = len(grid.combos())
sample = MAX_POINTS // len(set(budgets)) if combos * len(set(budgets)) > MAX_POINTS else None
points = (sample or combos) * len(set(budgets))
size_text = (N_("{points:,} point(s) (a seeded sample of {combos:,} parameter combination(s) x {limits} limit(s)) on "
                 "{described}, model {model}, reserve {reserve:.0%}.") if sample else
             N_("{points:,} point(s) ({combos:,} parameter combination(s) x {limits} limit(s)) on {described}, model "
                "{model}, reserve {reserve:.0%}."))
st.caption(md_escape(" ".join([_(size_text).format(points=points, combos=combos, limits=len(set(budgets)),
                                                   described=described, model=st.session_state.model,
                                                   reserve=st.session_state.reserve), *grid_notes])))
signature = json.dumps([grid_values, budgets, min_recall, repr(price), st.session_state.model,
                        float(st.session_state.reserve), set_key, tools_mode], default=str, sort_keys=True)
running = st.session_state.get("tune_job") is not None
st.button(_("Run the sweep"), key="tune_run", type="primary", disabled=running, on_click=_start,
          args=(convs, grid, budgets, price, min_recall, sample, signature, tools_mode))
_job_panel()
note = st.session_state.pop("tune_job_note", None)
if note:
    (st.error if note[0] == "error" else st.info)(md_escape(note[1]))
result: SweepResult | None = st.session_state.get("tune_result")
if result is None:
    if not running:
        st.info(_("Set the conversations, strategies and ranges, then run the sweep."))
    st.stop()
if st.session_state.get("tune_signature") != signature:
    st.warning(_("The settings changed since this sweep ran: the results below are the last run's. Run it again."))
_results(result, int(st.session_state.get("tune_tools_tokens", 0)), (set_key, set_files, price))
