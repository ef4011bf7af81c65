"""The Strategy Lab's message table: its columns that depend only on the conversation (the
content previews, roles, token counts) built once per conversation and cached, the plan's own
columns added per plan, and paging, so a rerun on 10,000 messages sends one page of rows (and
one page of "Open a message" choices) to the browser, not all of them."""
from __future__ import annotations

from typing import Any, Callable, Sequence

import pandas as pd
import streamlit as st

from ctxlab.conversation import Message
from ctxlab.strategies import Plan, View
from ctxlab.i18n import _, local_all
from ui import message_number

PAGE_ROWS = 500
COLUMNS = ["#", "open", "role", "tokens", "action", "code", "reason", "content"]


@st.cache_resource(show_spinner=False, max_entries=8)
def base_columns(view_key: tuple, _view: View, _preview: Callable[[Message], str]) -> dict[str, list[Any]]:
    """The columns every plan of this conversation shares: index, role, tokens, content preview
    (the previews of 10,000 messages were a quarter of a rerun)."""
    n = len(_view.messages)
    return {"#": [message_number(i) for i in range(n)], "open": list(range(n)), "role": list(_view.roles),
            "tokens": list(_view.tokens), "content": [_preview(m) for m in _view.messages]}


def summary_slots(plan: Plan) -> list[tuple[int, int]]:
    """(output index, input index it is inserted before; len(actions) for the end) per summary."""
    slots, nxt = [], len(plan.actions)
    for k in range(len(plan.origin) - 1, -1, -1):
        if plan.origin[k] is None:
            slots.append((k, nxt))
        else:
            nxt = plan.origin[k]
    return slots[::-1]


def plan_rows(base: dict[str, list[Any]], plan: Plan, labels: dict[str, str],
              preview: Callable[[Message], str]) -> pd.DataFrame:
    """One row per input message (the shared columns plus the plan's action and reason), with
    the inserted summaries where they go."""
    cols = {"#": base["#"], "open": base["open"], "role": base["role"], "tokens": base["tokens"],
            "action": [labels.get(a, a) for a in plan.actions], "code": list(plan.actions),
            "reason": local_all(plan.reasons), "content": base["content"]}
    df = pd.DataFrame(cols, columns=COLUMNS)
    slots = summary_slots(plan)
    if slots:  # summaries are few: rebuild the frame with their rows in place
        rows = df.to_dict("records")
        for k, at in reversed(slots):
            rows.insert(at, {"#": message_number(None), "open": f"summary {k}", "role": "summary",
                             "tokens": plan.output_tokens[k], "action": labels["insert"], "code": "insert",
                             "reason": _("inserted by {strategy}").format(strategy=plan.strategy),
                             "content": preview(plan.messages[k])})
        df = pd.DataFrame(rows, columns=COLUMNS)
    return df


def page_of(rows: pd.DataFrame, key: str, box: Any = st) -> tuple[pd.DataFrame, str]:
    """The rows of the page picked in a page box (shown only when there is more than one page)
    and a caption: "rows 501-1,000 of 9,096 (of 10,011)"."""
    pages = max(1, -(-len(rows) // PAGE_ROWS))
    if st.session_state.get(key, 1) > pages:
        st.session_state[key] = 1
    page = box.number_input(_("Page (of {pages:,}; {rows} rows each)").format(pages=pages, rows=PAGE_ROWS),
                            min_value=1, max_value=pages,
                            step=1, key=key) if pages > 1 else 1
    start = (page - 1) * PAGE_ROWS
    shown = rows.iloc[start:start + PAGE_ROWS]
    return shown, _("rows {first:,}-{last:,} of {n:,}").format(first=start + 1 if len(rows) else 0,
                                                              last=start + len(shown), n=len(rows))


def open_options(options: Sequence[Any], page: pd.DataFrame, opened: Any) -> list[Any]:
    """The "Open a message" choices: those of the rows on the page (``options`` is aligned with
    the unfiltered rows, whose positions the page's index holds), plus the one already open."""
    on_page = [options[i] for i in page.index]
    if opened is not None and opened not in on_page and opened in options:
        on_page.append(opened)
    return on_page or list(options[:1])
