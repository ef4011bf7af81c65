"""Prices: the bundled table's price for the sidebar's model and the user's override (kept in this
session's memory only, never written anywhere)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import streamlit as st

from ctxlab.i18n import N_, _
from playground.markdown import md_escape
from playground.state import DEFAULTS, persist

if TYPE_CHECKING:
    from ctxlab.pricing import Price

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
