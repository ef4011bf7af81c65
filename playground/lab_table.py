"""The Strategy Lab's message table: one row per input message with the plan's inserted summaries
where they go, kept as arrays per plan (action codes, roles, what each row opens), filtered and
paged on those arrays, and turned into a DataFrame only for the page of rows shown. A rerun on
10,000 messages sends one page of rows (and one page of "Open a message" choices) to the browser
and builds no 10,000-row frame: building one, with every content preview, was a quarter of a
rerun."""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np
import pandas as pd
import streamlit as st

from ctxlab.conversation import Message
from ctxlab.strategies import Plan, View
from ctxlab.i18n import _, local
from playground.widgets import message_number

PAGE_ROWS = 500
COLUMNS = ["#", "open", "role", "tokens", "action", "code", "reason", "content"]


def summary_slots(plan: Plan) -> list[tuple[int, int]]:
    """(output index, input index it is inserted before; len(actions) for the end) per summary."""
    slots, nxt = [], len(plan.actions)
    for k in range(len(plan.origin) - 1, -1, -1):
        if plan.origin[k] is None:
            slots.append((k, nxt))
        else:
            nxt = plan.origin[k]
    return slots[::-1]


class PlanTable:
    """The rows of one plan's table as arrays: ``order[r]`` is the input message of row ``r``, or
    ``-(k + 1)`` for the summary that is output message ``k``."""

    def __init__(self, view: View, plan: Plan) -> None:
        self.view, self.plan = view, plan
        n = len(plan.actions)
        order = np.arange(n, dtype=np.int64)
        codes = np.asarray(plan.actions, dtype=object)
        roles = np.asarray(view.roles, dtype=object)
        tokens = np.asarray(view.tokens, dtype=np.int64)
        slots = summary_slots(plan)
        if slots:  # summaries are few: insert their rows in place
            at = [a for _, a in slots]
            order = np.insert(order, at, [-(k + 1) for k, _ in slots])
            codes = np.insert(codes, at, "insert")
            roles = np.insert(roles, at, "summary")
            tokens = np.insert(tokens, at, [plan.output_tokens[k] for k, _ in slots])
        self.order, self.codes, self.roles, self.tokens = order, codes, roles, tokens
        self.summaries = {k for k, _ in slots}

    def __len__(self) -> int:
        return len(self.order)

    @property
    def max_tokens(self) -> int:
        """The largest row's tokens (the tokens column's bar scale), at least 1."""
        return max(int(self.tokens.max()), 1) if len(self.tokens) else 1

    def select(self, actions: Sequence[str] = (), roles: Sequence[str] = ()) -> np.ndarray:
        """Positions of the rows whose action is one of ``actions`` and role one of ``roles``
        (an empty choice keeps every row)."""
        mask = np.ones(len(self.order), dtype=bool)
        if actions:
            mask &= np.isin(self.codes, list(actions))
        if roles:
            mask &= np.isin(self.roles, list(roles))
        return np.flatnonzero(mask)

    def opens(self, positions: Sequence[int]) -> list[int | str]:
        """What each row opens: its message index, or "summary k" for output message k."""
        return [int(o) if o >= 0 else f"summary {-o - 1}" for o in self.order[positions]]

    def holds(self, opened: Any) -> bool:
        """Whether ``opened`` (a message index or "summary k") is a row of this table."""
        if isinstance(opened, str):
            parts = opened.split()
            return len(parts) == 2 and parts[1].isdigit() and int(parts[1]) in self.summaries
        return isinstance(opened, int) and 0 <= opened < len(self.plan.actions)

    def frame(self, positions: Sequence[int], labels: dict[str, str], preview: Callable[[Message], str],
              with_open: bool = False) -> pd.DataFrame:
        """The rows at ``positions`` as a DataFrame indexed by those positions (content previews
        and action words made for these rows only)."""
        plan, messages = self.plan, self.view.messages
        positions = np.asarray(positions, dtype=np.int64)
        order = self.order[positions].tolist()
        codes = self.codes[positions].tolist()
        inserted = _("inserted by {strategy}").format(strategy=plan.strategy)
        cols = {"#": [message_number(o) if o >= 0 else message_number(None) for o in order],
                "open": [o if o >= 0 else f"summary {-o - 1}" for o in order],
                "role": self.roles[positions].tolist(), "tokens": self.tokens[positions].tolist(),
                "action": [labels.get(a, a) for a in codes], "code": codes,
                "reason": [local(plan.reasons[o]) if o >= 0 else inserted for o in order],
                "content": [preview(messages[o] if o >= 0 else plan.messages[-o - 1]) for o in order]}
        if not with_open:
            del cols["open"]
        return pd.DataFrame(cols, index=pd.Index(positions))


def plan_rows(view: View, plan: Plan, labels: dict[str, str], preview: Callable[[Message], str]) -> pd.DataFrame:
    """The whole table as one DataFrame (every row, with what each opens): for a notebook or a
    test; the page builds only the page of rows it shows."""
    table = PlanTable(view, plan)
    return table.frame(np.arange(len(table)), labels, preview, with_open=True).reset_index(drop=True)


def page_of(n_rows: int, key: str, box: Any = st) -> tuple[slice, str]:
    """The slice of the rows on the page picked in a page box (shown only when there is more than
    one page) and a caption: "rows 501-1,000 of 9,096"."""
    pages = max(1, -(-n_rows // PAGE_ROWS))
    if st.session_state.get(key, 1) > pages:
        st.session_state[key] = 1
    page = box.number_input(_("Page (of {pages:,}; {rows} rows each)").format(pages=pages, rows=PAGE_ROWS),
                            min_value=1, max_value=pages,
                            step=1, key=key) if pages > 1 else 1
    start = (page - 1) * PAGE_ROWS
    stop = min(start + PAGE_ROWS, n_rows)
    return slice(start, stop), _("rows {first:,}-{last:,} of {n:,}").format(first=start + 1 if n_rows else 0,
                                                                            last=stop, n=n_rows)


def open_options(table: PlanTable, on_page: Sequence[int], opened: Any) -> list[Any]:
    """The "Open a message" choices: those of the rows on the page, plus the one already open
    (when it is still a row of the table)."""
    choices = table.opens(on_page)
    if opened is not None and opened not in choices and table.holds(opened):
        choices.append(opened)
    return choices or table.opens(np.arange(min(1, len(table))))
