"""``oldest_first``: the least valuable, oldest groups go first (a score by role, facts and age).

Removes whole groups and keeps its books as ``middle_out`` does (see that module)."""
from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..i18n import N_, T, Tn
from .base import Strategy, param, register
from .plan import Plan, make_plan, minimum_warning, positions, texts
from .incremental.batch import apply as apply_removal, simulate, tables as batch_tables
from .incremental.ledger import LONE, _Decided, _Ledger
from .view import MEMO_EXTENDERS, Budget, View


ROLE_SCORE = {"system": 1.0, "user": 0.75, "assistant_text": 0.5, "summary": 0.5, "tool_calls": 0.25,
              "tool_results": 0.0}
ROLE_LABEL = {"system": T("system message"), "user": T("user message"), "assistant_text": T("assistant text"),
              "summary": T("summary"), "tool_calls": T("tool call"), "tool_results": T("tool result")}


def _age_text(age: int) -> str:
    """How old a turn is, in words."""
    return T("current turn") if age == 0 else Tn("{n} turn old", "{n} turns old", age)


def _group_table(view: View) -> tuple[np.ndarray, ...]:
    """Once per view, per atomic group: its first index, its role score (a tool round ranks as its
    results), its tokens, ``1 - log10(1 + tokens) / 5`` and its turn + 1."""
    cached = view.memo.get("oldest_first.groups")
    if cached is not None:
        return cached
    rows = [_group_row(view, members) for members in view.seg.groups]
    cached = view.memo["oldest_first.groups"] = _table(rows)
    return cached


def _group_row(view: View, members: tuple[int, ...]) -> tuple[int, float, int, float, int]:
    """One group's row of ``_group_table``."""
    first = members[0]
    if len(members) == 1:
        score, size = ROLE_SCORE[view.categories[first]], view.tokens[first]
    else:  # several members make a tool round: its lowest member is a tool result
        score, size = ROLE_SCORE["tool_results"], sum(map(view.tokens.__getitem__, members))
    return first, score, size, 1 - math.log10(1 + size) / 5, view.seg.turn_of[first] + 1  # math.log10, as always


def _table(rows: list[tuple[int, float, int, float, int]]) -> tuple[np.ndarray, ...]:
    """Rows as the columns of ``_group_table``."""
    firsts, scores, sizes, small, turns = zip(*rows) if rows else ((),) * 5
    return (np.array(firsts, dtype=np.int64), np.array(scores, dtype=float), np.array(sizes, dtype=np.int64),
            np.array(small, dtype=float), np.array(turns, dtype=np.int64))


def _extend_group_table(old: View, new: View, table: tuple[np.ndarray, ...]) -> tuple[np.ndarray, ...]:
    """The group table of a grown view: rows of groups the new messages joined are redone, rows of
    new groups added, the others stand."""
    groups = new.seg.groups
    touched = sorted({new.seg.group_of[i] for i in range(len(old), len(new))})
    kept = len(table[0])
    columns = [column.copy() for column in table]
    for g in (g for g in touched if g < kept):
        for column, value in zip(columns, _group_row(new, groups[g])):
            column[g] = value
    added = _table([_group_row(new, groups[g]) for g in range(kept, len(groups))])
    return tuple(np.concatenate((column, extra)) for column, extra in zip(columns, added))


@dataclass(frozen=True)
class _Scored:
    """``oldest_first``'s removable groups, lowest priority first: priority, first index, group,
    tokens (arrays of one entry per group)."""

    p: np.ndarray
    firsts: np.ndarray
    groups: np.ndarray
    sizes: np.ndarray

    def rows(self) -> Iterator[tuple[float, int, int, int]]:
        """(priority, first index, group, tokens) per entry."""
        return zip(self.p.tolist(), self.firsts.tolist(), self.groups.tolist(), self.sizes.tolist())


def _extend_labels(old: View, new: View, known: tuple) -> tuple | None:
    """``oldest_first``'s reason texts for a grown view: all but those of groups the new messages
    joined (their size changed), while no turn is added (a new turn ages every group)."""
    if len(new.seg.turns) != len(old.seg.turns):
        return None
    touched = {new.seg.group_of[i] for i in range(len(old), len(new))}
    weights, labels, texts = known
    return weights, {g: v for g, v in labels.items() if g not in touched}, {g: v for g, v in texts.items() if g not in touched}


MEMO_EXTENDERS["oldest_first.labels"] = _extend_labels
MEMO_EXTENDERS["oldest_first.groups"] = _extend_group_table
MEMO_EXTENDERS["oldest_first.describe"] = lambda old, new, known: (
    known if len(new.seg.turns) == len(old.seg.turns) else None)  # ages count from the newest turn


@register
@dataclass(frozen=True)
class OldestFirst(Strategy):
    """Remove the lowest-priority groups first (older, bigger, tool results) until the rest fits.

    A group (a tool call with all its results, or one message) is scored as one unit::

        priority = role_weight * role + age_weight / (1 + turns_old)
                   + size_weight * (1 - min(log10(1 + tokens) / 5, 1))

    ``role`` is the lowest of its members (system 1.0, user 0.75, assistant text 0.5, tool call
    0.25, tool result 0.0), so a tool round ranks as its results; ``turns_old`` counts turns since
    the group's turn (the preamble is older than turn 0); ``tokens`` is the group's total, on a log
    scale (10 tokens -> 0.79, 1,000 -> 0.40, 100,000 and more -> 0). Lower goes first; on a tie,
    the older. Removing a user message removes its turn. Never removed: the system prompt, the
    newest user message, pinned messages (with their turn's user message and last reply), and
    anything that would leave fewer than ``min_messages`` messages.
    """

    name: ClassVar[str] = "oldest_first"
    title: ClassVar[str] = N_("Oldest / lowest priority first")
    summary: ClassVar[str] = N_("Scores every tool round and message by role, age and size, and removes the lowest "
                              "first until the rest fits; pinned messages stay.")
    min_messages: int = param(4, min=1, max=100_000, help=N_("Never keep fewer messages than this."))
    role_weight: float = param(1.0, min=0.0, max=10.0,
                               help=N_("Weight of the role (system > user > assistant > tool result)."))
    age_weight: float = param(1.0, min=0.0, max=10.0, help=N_("Weight of recency, 1 / (1 + turns old)."))
    size_weight: float = param(0.5, min=0.0, max=10.0, help=N_("Weight of smallness, on a log scale of tokens."))

    def _scored(self, view: View, book: _Ledger) -> "_Scored":
        """Priority, first index, group and tokens per removable group, lowest first (older first on
        a tie). Vectorised over the groups; the same floating-point operations, in the same order, as
        ``role + recency + size_weight * small`` per group."""
        firsts, role_scores, sizes, small, turn_plus_one = _group_table(view)
        recency = np.array([self.age_weight / (1 + age) for age in range(len(view.seg.turns), -1, -1)])  # by turn + 1
        prot, actions = book.protected, book.actions
        removable = np.fromiter(map("keep".__eq__, map(actions.__getitem__, firsts.tolist())), bool, len(firsts))
        removable &= ~np.array(prot, dtype=bool)
        size_term = np.where(small > 0, self.size_weight * small, 0.0)
        p = (self.role_weight * role_scores + recency[turn_plus_one]) + size_term
        groups = np.flatnonzero(removable)
        order = groups[np.lexsort((firsts[groups], p[groups]))]
        return _Scored(p[order], firsts[order], order, sizes[order])

    def _labels(self, view: View, scored: "_Scored",
                entries: "list[int] | np.ndarray") -> tuple[list[tuple[str, str]], dict]:
        """(priority as reasons print it, description) of the given entries of ``scored``, and the
        per-group texts they come from. Kept per view for the latest weights (a priority depends on
        the view and the weights only), so a re-plan at another budget formats none of them again."""
        weights = (self.role_weight, self.age_weight, self.size_weight)
        cached = view.memo.get("oldest_first.labels")
        if cached is None or cached[0] != weights:
            cached = view.memo["oldest_first.labels"] = (weights, {}, {})
        known = cached[1]
        groups = scored.groups[entries].tolist()
        out = list(map(known.get, groups))
        if None in out:
            describe = self._describer(view)
            ps, sizes = scored.p[entries].tolist(), scored.sizes[entries].tolist()
            for k in positions(out, (None,)):
                out[k] = known[groups[k]] = (f"{ps[k]:.2f}", describe(groups[k], sizes[k]))
        return out, cached[2]

    def _removal_reasons(self, view: View, scored: "_Scored", entries: np.ndarray) -> list[str]:
        """The reason of each given entry's removal (per view and weights, like ``_labels``)."""
        weights = (self.role_weight, self.age_weight, self.size_weight)
        cached = view.memo.get("oldest_first.labels")
        texts = cached[2] if cached is not None and cached[0] == weights else {}
        groups = scored.groups[entries].tolist()
        out = list(map(texts.get, groups))
        if None in out:
            missing = positions(out, (None,))
            labels, texts = self._labels(view, scored, np.asarray(entries)[missing])
            for k, label in zip(missing, labels):
                out[k] = texts[groups[k]] = T("low priority {p}: {describe}", p=label[0], describe=label[1])
        return out

    @staticmethod
    def _describer(view: View) -> Callable[[int, int], str]:
        """A function (group, tokens) -> role, age and size of the group, as reasons show them."""
        seg, cats, newest = view.seg, view.categories, len(view.seg.turns) - 1
        ages = [_age_text(age) for age in range(newest + 2)]
        known: dict[tuple[int, int], str] = view.memo.setdefault("oldest_first.describe", {})  # per group: view-only
        made = texts(view)  # by label, age and size: shared with the views grown from this one

        def describe(g: int, size: int) -> str:
            text = known.get((g, size))
            if text is None:
                members = seg.groups[g]
                label = ROLE_LABEL[cats[members[0]] if len(members) == 1 else "tool_results"]
                age = newest - seg.turn_of[members[0]] if newest >= 0 else 0
                text = made.get(("describe", label, age, size))
                if text is None:
                    text = made["describe", label, age, size] = T("{label}, {age}, {size:,} tokens", label=label,
                                                                  age=ages[age], size=size)
                known[g, size] = text
            return text
        return describe

    def _remove(self, view: View, book: _Ledger, scored: "_Scored", target: int) -> tuple[float | None, int]:
        """Remove the lowest groups until ``target`` fits; the last priority removed and the groups
        kept for ``min_messages``. In one numpy pass (``incremental.batch``) when no removal comes near
        ``min_messages``, else by the loop it stands for."""
        order = scored.groups
        removal = simulate(book, order, target)
        if removal is not None and len(removal.acted):
            table, groups = batch_tables(view), order[removal.acted]
            firsts = table.firsts[groups]
            turns = table.turn_of[firsts]
            ends = table.ends[np.maximum(turns, 0)] if len(table.ends) else firsts  # no user turn: system only
            most = np.where(table.user_first[groups], ends - firsts,
                            table.lengths[groups] + 1)  # bounds book.cost(g), as the loop's first test
            if np.any(removal.kept_before(removal.acted) - most < self.min_messages):
                removal = None
        if removal is None:
            return self._remove_by_loop(view, book, list(scored.rows()), target)

        apply_removal(book, removal, order, lambda acted: self._removal_reasons(view, scored, acted),
                      lambda user: T("removed with its turn's user message ({user})", user=user), LONE)
        return (scored.p[int(removal.acted[-1])].item() if len(removal.acted) else None), 0

    def _remove_by_loop(self, view: View, book: _Ledger, scored: list, target: int) -> tuple[float | None, int]:
        """``_remove`` one group at a time (the ledger's own steps)."""
        seg, least, describe = view.seg, self.min_messages, self._describer(view)
        actions, reasons, starts, turn_of = book.actions, book.reasons, book.starts, seg.turn_of
        groups, turns, drop_group = seg.groups, seg.turns, book.drop_group
        threshold, skipped = None, 0
        for p, first, g, size in scored:
            if book.total <= target:
                break
            if actions[first] != "keep":
                continue
            turn = turn_of[first]
            is_user = turn >= 0 and first == starts[turn]
            if book.kept - (turns[turn][1] - first if is_user else len(groups[g]) + 1) < least \
                    and book.kept - book.cost(g) < least:  # the first bound book.cost(g), the cheap test
                for i in groups[g]:
                    reasons[i] = T("kept: removing it would leave fewer than {least} messages", least=least)
                skipped += 1
                continue
            why = T("low priority {p:.2f}: {describe}", p=p, describe=describe(g, size))
            if is_user:
                book.drop_turn(turn, why, T("removed with its turn's user message ({first})", first=first))
            else:
                drop_group(g, why)
            threshold = p
        return threshold, skipped

    def decide(self, view: View, budget: Budget) -> _Decided:
        """Decisions and stats, before settling."""
        n, target = len(view), budget.available
        must = [*view.pins, *view.compactions,
                *(i for i in (view.first_system(), view.newest_user()) if i is not None)]
        book = _Ledger(view, must)
        scored = self._scored(view, book)
        threshold, skipped = self._remove(view, book, scored, target)
        cut = T("nothing had to go") if threshold is None else T("above the {threshold:.2f} cut", threshold=threshold)
        firsts, actions, reasons, groups = scored.firsts.tolist(), book.actions, book.reasons, view.seg.groups
        kept = [j for j in positions(list(map(actions.__getitem__, firsts)), ("keep",)) if not reasons[firsts[j]]]
        made = texts(view)
        for j, (p, what) in zip(kept, self._labels(view, scored, kept)[0]):
            why = made.get(("kept", p, what, cut))
            if why is None:
                why = made["kept", p, what, cut] = T("kept: priority {p} ({what}), {cut}", p=p, what=what, cut=cut)
            for i in groups[int(scored.groups[j])]:
                reasons[i] = why
        book.fill(T("kept"), why_protected=T("kept: its turn holds a pinned message"))
        warn = None
        if book.total > target:
            what = (T("the minimum of {min_messages} messages (min_messages)", min_messages=self.min_messages) if skipped else
                    T("the system prompt, the newest user message and the pinned messages"))
            warn = minimum_warning(view, budget, what, book.total)
        stats = {"removed": n - book.kept, "groups_removed": book.groups_removed,
                 "priority_threshold": None if threshold is None else round(threshold, 3),
                 "tokens_removed": view.total - book.total, "kept_for_min_messages": skipped}
        head = T("oldest_first removes groups only until the messages fit the {target:,} tokens the budget leaves", target=target)
        idle = (T("{head}, and they hold {total:,}", head=head, total=view.total) if view.total <= target else
                T("{head}; they hold {total:,} but every message is the system prompt, the newest user message, "
                "pinned, or needed to keep {min_messages} messages (min_messages)", head=head, total=view.total, min_messages=self.min_messages))
        return _Decided(book.actions, book.reasons, [warn] if warn else [], stats, idle)

    def apply(self, view: View, budget: Budget) -> Plan:
        """Remove the lowest-priority groups until the rest fits."""
        d = self.decide(view, budget)
        return make_plan(view, budget, self.name, self.params(), d.actions, d.reasons, warnings=d.warnings,
                         stats=d.stats, idle=d.idle)


