"""Widgets shared by the app's pages, built from the engine's schemas (no domain logic here)."""
from __future__ import annotations

from typing import Any

import streamlit as st

from appstate import md_escape, persist
from ctxlab.errors import CtxlabError
from ctxlab.strategies import STRATEGIES, Strategy, get_strategy

ACTION_ICONS = {"keep": "🟩 kept", "summarize": "🟨 summarized", "clear": "🟦 cleared", "truncate": "🟪 truncated",
                "drop": "🟥 dropped"}


def _param_widget(container: Any, spec: dict[str, Any], key: str) -> Any:
    """One control for one parameter, from its schema entry. Defaults go into session state
    first (not into the widget), so a value kept across pages never clashes with a default."""
    label, help_text, kind, default = spec["name"], spec.get("help", ""), spec["type"], spec["default"]
    if spec.get("choices"):
        st.session_state.setdefault(key, default)
        return container.selectbox(label, list(spec["choices"]), key=key, help=help_text)
    if kind == "bool":
        st.session_state.setdefault(key, bool(default))
        return container.checkbox(label, key=key, help=help_text)
    if kind == "int":
        if default is None:  # optional: empty means "use the budget"
            st.session_state.setdefault(key, "")
            raw = container.text_input(label, key=key, help=help_text, placeholder="from the budget")
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
        raw = container.text_input(label, key=key, help=f"{help_text} (comma-separated)")
        items = [v.strip() for v in raw.split(",") if v.strip()]
        return [int(v) for v in items if v.lstrip("-").isdigit()] if kind == "list[int]" else items
    st.session_state.setdefault(key, str(default or ""))
    return container.text_input(label, key=key, help=help_text)


def strategy_picker(prefix: str, container: Any = st, default: str = "tool_rounds",
                    exclude: tuple[str, ...] = ()) -> Strategy | None:
    """A strategy selectbox and its parameter controls (keys ``{prefix}_strategy`` and
    ``{prefix}_{strategy}_{param}``); returns the built strategy, or None after showing the
    engine's error for an invalid combination."""
    names = [n for n in STRATEGIES if n not in exclude]
    st.session_state.setdefault(f"{prefix}_strategy", default if default in names else names[0])
    name = container.selectbox("Strategy", names, key=f"{prefix}_strategy", format_func=lambda n: STRATEGIES[n].title or n,
                               help="Each strategy decides keep / drop / summarize / clear / truncate per message")
    container.caption(STRATEGIES[name].summary)
    params = {spec["name"]: _param_widget(container, spec, f"{prefix}_{name}_{spec['name']}")
              for spec in STRATEGIES[name].schema()}
    persist(f"{prefix}_strategy", *(f"{prefix}_{name}_{spec['name']}" for spec in STRATEGIES[name].schema()))
    try:
        return get_strategy(name, **params)
    except CtxlabError as e:
        container.error(md_escape(str(e)))
        return None
