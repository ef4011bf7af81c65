"""Widgets shared by the app's pages, built from the engine's schemas (no domain logic here)."""
from __future__ import annotations

from typing import Any

import streamlit as st

from ctxlab.i18n import N_, _, local, local_error
from ctxlab.errors import CtxlabError
from ctxlab.configs import TARGETS, NoNativeFormError, config_json, config_yaml, export_native
from ctxlab.compare import ACTION_WORDS
from ctxlab.figures import ACTION_COLORS
from ctxlab.strategies import STRATEGIES, Budget, Strategy, get_strategy
from ctxlab.strategies.summarizers.llm import MERGE_PROMPT, SUMMARY_PROMPT
from playground.markdown import md_escape
from playground.state import persist

TABLE_ACTIONS = ("keep", "summarize", "clear", "truncate", "drop", "insert")
"""The actions a table row can show, in the order of their badges."""
TABLE_ACTION_WORDS = {a: ACTION_WORDS[a] for a in TABLE_ACTIONS}
"""Each of those actions' word, in English (shown through ``_``)."""
CHAR_PX, BADGE_PAD_PX = 8, 44
"""Width of a character of the tables' font and a badge's padding plus the cell's, in pixels
(generous: a column a few pixels too wide costs nothing, one too narrow cuts the word)."""


def text_width(texts: Any) -> int:
    """Pixels a table column needs to show the longest of ``texts`` whole, as a badge."""
    return CHAR_PX * max((_cells(t) for t in texts), default=1) + BADGE_PAD_PX


def _cells(text: str) -> int:
    """Character widths of ``text``: a Chinese character takes two."""
    return sum(2 if "\u2e80" <= ch <= "\uffef" else 1 for ch in text)


def action_words() -> dict[str, str]:
    """The word for each action (``ACTION_WORDS``) in the language in use, for tables' cells."""
    return {k: _(v) for k, v in ACTION_WORDS.items()}


def action_column(label: str = N_("action"), help: str | None = None) -> Any:
    """A table column showing each row's action as a word on a badge of the action's colour, wide
    enough for the longest word (the cell holds the word, e.g. ``"dropped"``)."""
    words = [_(ACTION_WORDS[a]) for a in TABLE_ACTIONS]
    return st.column_config.MultiselectColumn(_(label), options=words, color=[ACTION_COLORS[a] for a in TABLE_ACTIONS],
                                              width=text_width([*words, label]), help=help)


def count_column(label: str, help: str | None = None) -> Any:
    """A column of whole numbers written with thousands separators (1,993, not 1993)."""
    return st.column_config.NumberColumn(label, format="localized", help=help)


def message_number(index: int | None) -> str:
    """A message's number for a table's "#" column; blank for a row that is no input message (an
    inserted summary): a missing number would read "None" in the table."""
    return "" if index is None else f"{index:,}"


def number_column(label: str = "#") -> Any:
    """The "#" column of message numbers written by :func:`message_number`."""
    return st.column_config.TextColumn(label, width="small")


BUILTIN_TEXT = {"summary_prompt": SUMMARY_PROMPT, "merge_prompt": MERGE_PROMPT}
"""Text parameters whose empty value means a built-in text: their text areas show that text, and
an unchanged (or emptied) area passes the empty value, so a config keeps saying "built-in"."""
LONG_TEXT = 80
"""A text parameter whose default is longer than this many characters gets a text area."""


def _is_long_text(spec: dict[str, Any]) -> bool:
    return spec["type"] == "str" and not spec.get("choices") and (
        spec["name"] in BUILTIN_TEXT or spec["name"].endswith("_prompt") or len(str(spec["default"] or "")) > LONG_TEXT)


def _text_param(container: Any, spec: dict[str, Any], key: str) -> str:
    """A long text parameter as a text area in a collapsed expander, prefilled with the built-in
    text it stands for; returns "" while the area holds the built-in text (or nothing)."""
    builtin = BUILTIN_TEXT.get(spec["name"], "")
    st.session_state.setdefault(key, builtin or str(spec["default"] or ""))
    raw = str(st.session_state[key])
    edited = bool(raw.strip()) and raw.strip() != builtin.strip()
    box = container.expander(spec["name"], expanded=False)  # a stable label: a new one would close it on every edit
    raw = box.text_area(spec["name"], key=key, height=220, help=_help(spec), label_visibility="collapsed")
    if builtin:
        box.caption(_("Edited; empty it to use the built-in text.") if edited else _("The built-in text (in use)."))
    return "" if builtin and raw.strip() in ("", builtin.strip()) else raw


DEFAULTS_CHOICES = {"scaled": N_("scaled to this budget"), "documented": N_("documented peer defaults")}
"""Where a strategy's parameter controls take their values from: the strategy's ``scaled_defaults``
for the budget in use, or its schema defaults (the ones its peers document)."""


def widget_value(spec: dict[str, Any], value: Any) -> Any:
    """A parameter value as its :func:`strategy_picker` control holds it (text for optional ints and
    lists, clamped to the control's range): to fill the controls from a saved profile or a sweep point."""
    kind = spec["type"]
    if spec.get("choices"):
        return value
    if kind == "bool":
        return bool(value)
    if kind == "int" and spec["default"] is None:
        return "" if value is None else str(int(value))
    if kind in ("int", "float"):
        cast = int if kind == "int" else float
        lo, hi = spec.get("min"), spec.get("max")
        value = cast(value)
        if lo is not None:
            value = max(value, cast(lo))
        if hi is not None:
            value = min(value, cast(hi))
        return value
    if kind.startswith("list["):
        return ", ".join(map(str, value or []))
    return str(value or "") or BUILTIN_TEXT.get(spec["name"], "")


def default_values(name: str, choice: str, budget: Budget | None) -> dict[str, Any]:
    """The parameter values a strategy's controls start from: scaled to ``budget`` (when the
    strategy can scale and a budget is given) or the documented defaults."""
    cls = STRATEGIES[name]
    values = {spec["name"]: spec["default"] for spec in cls.schema()}
    if choice == "scaled" and budget is not None:
        values.update(cls.scaled_defaults(budget))
    return values


def _fill_defaults(prefix: str, name: str, budget: Budget | None, force: bool = False) -> None:
    """Put the chosen defaults into the strategy's controls: every control the user has not
    changed since it was last filled (all of them when ``force``), so a new budget rescales
    untouched values and never overrides a value the user set."""
    choice = st.session_state.get(f"{prefix}_defaults", "scaled")
    filled_key = f"{prefix}_{name}__filled"
    filled: dict[str, Any] = dict(st.session_state.get(filled_key, {}))
    specs = {spec["name"]: spec for spec in STRATEGIES[name].schema()}
    for param, value in default_values(name, choice, budget).items():
        key, new = f"{prefix}_{name}_{param}", widget_value(specs[param], value)
        if force or key not in st.session_state or st.session_state[key] == filled.get(key):
            st.session_state[key] = new
            filled[key] = new
    st.session_state[filled_key] = filled


def _help(spec: dict[str, Any]) -> str:
    """A parameter's help in the language in use (marked with N_ where the strategy declares it)."""
    text = spec.get("help", "")
    return _(text) if text else ""


def strategy_title(name: str) -> str:
    """A strategy's title in the language in use (its name when it has none)."""
    title = STRATEGIES[name].title
    return _(title) if title else name


def _param_widget(container: Any, spec: dict[str, Any], key: str) -> Any:
    """One control for one parameter, from its schema entry. Defaults go into session state
    first (not into the widget), so a value kept across pages never clashes with a default."""
    label, help_text, kind, default = spec["name"], _help(spec), spec["type"], spec["default"]
    if spec.get("choices"):
        st.session_state.setdefault(key, default)
        return container.selectbox(label, list(spec["choices"]), key=key, help=help_text)
    if kind == "bool":
        st.session_state.setdefault(key, bool(default))
        return container.checkbox(label, key=key, help=help_text)
    if kind == "int":
        if default is None:  # optional: empty means "use the budget"
            st.session_state.setdefault(key, "")
            raw = container.text_input(label, key=key, help=help_text, placeholder=_("from the budget"))
            return int(raw) if raw.strip().isdigit() else None
        lo, hi = spec.get("min"), spec.get("max")
        st.session_state.setdefault(key, int(default))
        if lo is not None and hi is not None and hi - lo <= 1000:
            return container.slider(label, int(lo), int(hi), key=key, help=help_text)
        return container.number_input(label, min_value=int(lo) if lo is not None else None,
                                      max_value=int(hi) if hi is not None else None, step=1, key=key, help=help_text)
    if kind == "float":
        lo, hi = float(spec.get("min", 0.0)), float(spec.get("max", 1.0))
        st.session_state.setdefault(key, float(default))
        return container.slider(label, lo, hi, step=(hi - lo) / 100 or 0.01, key=key, help=help_text)
    if kind.startswith("list["):
        st.session_state.setdefault(key, ", ".join(map(str, default or [])))
        raw = container.text_input(label, key=key, help=_("{help} (comma-separated)").format(help=help_text))
        items = [v.strip() for v in raw.split(",") if v.strip()]
        return [int(v) for v in items if v.lstrip("-").isdigit()] if kind == "list[int]" else items
    if _is_long_text(spec):
        return _text_param(container, spec, key)
    st.session_state.setdefault(key, str(default or ""))
    return container.text_input(label, key=key, help=help_text)


def strategy_picker(prefix: str, container: Any = st, default: str = "tool_rounds",
                    exclude: tuple[str, ...] = (), budget: Budget | None = None) -> Strategy | None:
    """A strategy selectbox, a choice of defaults (scaled to ``budget`` or documented) and the
    strategy's parameter controls (keys ``{prefix}_strategy``, ``{prefix}_defaults`` and
    ``{prefix}_{strategy}_{param}``); returns the built strategy, or None after showing the engine's
    error for an invalid combination."""
    names = [n for n in STRATEGIES if n not in exclude]
    st.session_state.setdefault(f"{prefix}_strategy", default if default in names else names[0])
    name = container.selectbox(_("Strategy"), names, key=f"{prefix}_strategy", format_func=strategy_title,
                               help=_("Each strategy decides keep / drop / summarize / clear / truncate per message"))
    container.caption(_(STRATEGIES[name].summary))
    specs = STRATEGIES[name].schema()
    scaling = STRATEGIES[name].scaling
    if specs and budget is not None and scaling:
        st.session_state.setdefault(f"{prefix}_defaults", "scaled")
        container.radio(_("Defaults"), list(DEFAULTS_CHOICES), key=f"{prefix}_defaults",
                        format_func=lambda k: _(DEFAULTS_CHOICES[k]),
                        on_change=_fill_defaults, args=(prefix, name, budget, True), horizontal=True,
                        help=_("{scaling} The documented defaults are the values the strategy's peers ship, which "
                               "may never act on a small budget. Picking one fills the controls below.").format(
                            scaling=_(scaling)))
    _fill_defaults(prefix, name, budget if scaling else None)
    params = {spec["name"]: _param_widget(container, spec, f"{prefix}_{name}_{spec['name']}") for spec in specs}
    persist(f"{prefix}_strategy", f"{prefix}_defaults", f"{prefix}_{name}__filled",
            *(f"{prefix}_{name}_{spec['name']}" for spec in specs))
    try:
        return get_strategy(name, **params)
    except CtxlabError as e:
        container.error(md_escape(str(e)))
        return None


def summary_note(record: dict[str, Any]) -> str:
    """One line saying who wrote a plan's summary (``plan.stats["summary_by"]``): the model, its
    tokens and the time it took, or that the offline summarizer stood in for it."""
    if record.get("summarizer") != "llm":
        return _("Summary written by the {summarizer} summarizer.").format(
            summarizer=record.get("summarizer", "offline"))
    def n(key: str) -> str:
        return "?" if record.get(key) is None else f"{record[key]:,}"
    if record.get("cache_hit"):
        how = _("from the cache (no call)")
    elif record.get("attempts", 1) > 1:
        how = _("in {ms:,.0f} ms, {k} attempts").format(ms=record.get("latency_ms", 0), k=record["attempts"])
    else:
        how = _("in {ms:,.0f} ms").format(ms=record.get("latency_ms", 0))
    return _("Summary written by {model} ({call} call): {prompt} prompt tokens, {completion} completion tokens, "
             "{how}.").format(model=record.get("model") or _("the model"), call=record.get("call", "first"),
                              prompt=n("prompt_tokens"), completion=n("completion_tokens"), how=how)


def config_downloads(config: dict[str, Any], label: str, stem: str, key: str) -> None:
    """JSON and YAML download buttons for a ctxlab config, side by side, and the YAML shown below:
    ``label JSON`` / ``label YAML``, files ``stem.json`` / ``stem.yaml``, widget keys ``key_json`` /
    ``key_yaml``."""
    as_yaml = config_yaml(config)
    d1, d2 = st.columns(2)
    d1.download_button(_("{label} JSON").format(label=label), config_json(config), file_name=f"{stem}.json", mime="application/json",
                       key=f"{key}_json")
    d2.download_button(_("{label} YAML").format(label=label), as_yaml, file_name=f"{stem}.yaml", mime="application/yaml",
                       key=f"{key}_yaml")
    st.code(as_yaml, language="yaml")


def over_budget_note(record: Any, history: int, sent: int, limit: int) -> str:
    """Why the context sent is over the budget, in terms of what ran: messages that arrived since
    the strategy's last run (it runs again at the next user message), a strategy that ran and never
    acted (its settings do not fit this budget), or one that acted and still does not fit."""
    since = history - 1 - int(record.applied_through)  # seqs count from 0; -1 before the first run
    ran, acted = int(record.times_applied), int(record.times_triggered)
    over, s = sent - limit, record.strategy
    if not ran:
        return _("Over the budget by {over:,} tokens: {s} has not run yet; it runs at the next user message.").format(
            over=over, s=s)
    if not acted:
        return _("Over the budget by {over:,} tokens: {s} ran {ran:,} time(s), once at each user message, and never "
                 "acted: its settings do not trigger on a {limit:,}-token budget. Edit the agent (the controls' "
                 "defaults scaled to the budget fit it) and use Update existing sessions.").format(
            over=over, s=s, ran=ran, limit=limit)
    if since > 0:
        return _("Over the budget by {over:,} tokens: {since:,} message(s) arrived since {s} last ran (at the start "
                 "of this turn); it runs again at the next user message.").format(over=over, since=since, s=s)
    return _("Over the budget by {over:,} tokens: {s} acted {acted:,} of {ran:,} time(s) and what it keeps (the "
             "system prompt, the summary, the newest turn) is still larger than the budget.").format(
        over=over, s=s, acted=acted, ran=ran)


APPLY_AT_WORDS = {"every_call": N_("before every model call"), "turn_start": N_("when a user message arrives")}
"""Where a strategy runs (its ``apply_at``), in words."""


def snippet_download(config: dict[str, Any], apply_at: str, key: str, show_code: bool = True) -> None:
    """The Python snippet that applies the config's strategy in production (``manage_context.py``):
    a caption saying where its LangGraph node runs (``apply_at``), a download button (key ``key``)
    and the code."""
    from ctxlab.snippets import python_snippet
    snippet = python_snippet(config)
    where = apply_at
    st.caption(_("Python that applies the same strategy in production: a plain function, and a LangGraph node "
                 "wired to run {where} (its apply_at).").format(where=_(APPLY_AT_WORDS.get(where, where))))
    st.download_button(_("Python snippet"), snippet, file_name="manage_context.py", mime="text/x-python", key=key)
    if show_code:
        st.code(snippet, language="python")


def native_downloads(config: dict[str, Any], prefix: str) -> None:
    """The config in each framework's own form (JSON and Python downloads, what does not carry
    over), or the one line saying why a framework has none (keys ``{prefix}_{target}_json|py``)."""
    import json
    for target in TARGETS:
        try:
            native = export_native(config, target)
        except NoNativeFormError as e:
            st.caption(md_escape(f"{target}: {local_error(e)}"))
            continue
        st.markdown(f"**{target}**")
        n1, n2 = st.columns(2)
        n1.download_button(f"{target} JSON", json.dumps(native.to_dict(), indent=2), file_name=f"{target}.json",
                           mime="application/json", key=f"{prefix}_{target}_json")
        name = native.file_name or f"{target}_context.py"  # a TOML or shell file for the coding agents' settings
        n2.download_button(f"{target} {'Python' if name.endswith('.py') else name.rsplit('.', 1)[-1].upper()}",
                           native.python, file_name=name, mime="text/x-python" if name.endswith(".py") else "text/plain",
                           key=f"{prefix}_{target}_py")
        if native.not_carried:
            st.caption(_("What does not carry over:"))
            for note in native.not_carried:
                st.caption(md_escape(f"- {local(note)}"))


def translated_columns(names: Any, config: dict[str, Any] | None = None) -> dict[str, Any]:
    """Column configs that show each column's header (and help) in the language in use; the data
    keeps its English keys. ``config`` holds the columns' own configs (a number format, a badge...),
    whose labels and help are the English text, marked for the catalogs where they are written."""
    out: dict[str, Any] = {}
    for name in names:
        cfg = dict((config or {}).get(name) or {})
        cfg["label"] = _(cfg.get("label") or name)
        tip = cfg.get("help")
        if tip:
            cfg["help"] = _(tip)
        out[name] = cfg
    return out


def table_columns(rows: Any) -> list[str]:
    """The columns of a list of row dicts, in first-seen order."""
    seen: dict[str, None] = {}
    for row in rows:
        for k in row:
            seen.setdefault(k, None)
    return list(seen)


ROLE_NAMES = {"system": N_("system"), "user": N_("user"), "assistant": N_("assistant"), "tool": N_("tool"),
              "summary": N_("summary")}
"""Each message role's name for people (pickers and captions; tables keep the role as data)."""


def role_name(role: str) -> str:
    """A message role in the language in use (an unknown role as it is)."""
    return _(ROLE_NAMES[role]) if role in ROLE_NAMES else role


TOOL_MODE_WORDS = {"all": N_("all of them, at every call"),
                   "retrieval": N_("a retrieval's pick per call (top 5 of the call's last messages)"),
                   "deferred": N_("deferred: a search tool plus the definitions found so far")}


def tools_picker(key: str, has_tools: bool) -> str:
    """Which tool definitions a replay sends at each call (``ctxlab.tools_per_call``); "all" without a
    selectbox when the conversations have no tool definitions."""
    if not has_tools:
        return "all"
    return st.selectbox(_("Tool definitions sent"), list(TOOL_MODE_WORDS), key=key,
                        format_func=lambda m: _(TOOL_MODE_WORDS[m]),
                        help=_("On the call-by-call replay (needed facts, cost, cache breaks), the tool definitions "
                               "of each call count in its prompt and in the budget the strategy plans with. A "
                               "retrieval's list changes from call to call and breaks the prompt cache each time; "
                               "deferred loading (Anthropic's tool search) adds each definition once, at the first "
                               "call that uses it."))
