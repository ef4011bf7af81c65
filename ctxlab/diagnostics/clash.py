"""Context clash: the context holds conflicting values for the same field of the same entity
(an order's status, a price, a date), so the model must pick one without knowing which is right.

``conflicting_values``: two tool results report different values for one entity's field, and
nothing between them explains the change: no call to a tool that may write (any tool whose name
does not start with a read verb such as get, list, search) succeeded between the two. The first
observation is the one a mitigation clears; the newest is the one the agent should trust.
"""
from __future__ import annotations

from collections import defaultdict

from ..i18n import _
from .base import Finding, Inputs, Mitigation, detector
from .observations import CallInfo, Record, values_equal


def _writes_between(calls: list[CallInfo], start: int, end: int) -> bool:
    """Whether a possibly-writing call succeeded after message ``start`` and up to ``end`` (a failed
    call changed nothing)."""
    return any(start < c.index <= end and not c.reads and not c.failed for c in calls)


def _same_query(a: Record, b: Record) -> bool:
    """Whether two observations came from the same tool; if so, with the same arguments
    (the same tool asked different questions may report different slices: rows per quarter)."""
    if a.call is None or b.call is None or a.call.name != b.call.name:
        return True
    return a.call.args_key == b.call.args_key or not a.call.reads


@detector("clash", "conflicting_values")
def conflicting_values(inp: Inputs) -> list[Finding]:
    """The same field of the same entity with different values in two tool results."""
    calls = inp.observations.calls
    last: dict[tuple[str, str], Record] = {}
    conflicts: dict[tuple[str, int, int], list[tuple[Record, Record]]] = defaultdict(list)
    for r in inp.observations.records:
        key = (r.entity, r.field)
        prev = last.get(key)
        last[key] = r
        if prev is None or prev.index == r.index or values_equal(prev.value, r.value):
            continue
        if _writes_between(calls, prev.index, r.index) or not _same_query(prev, r):
            continue
        conflicts[(r.entity, prev.index, r.index)].append((prev, r))
    out = []
    for (entity, first, second), pairs in conflicts.items():
        prev, r = pairs[0]
        fields = ", ".join(_("{field} {old} vs {new}").format(field=a.field, old=repr(a.value), new=repr(b.value))
                           for a, b in pairs[:3])

        tools = tuple(dict.fromkeys(x.call.name for x in (prev, r) if x.call))
        keep = sum(1 for m in inp.conv.messages[second:] if m.role == "tool")
        out.append(Finding(
            "clash", "conflicting_values", "error",
            (_("{entity}: messages {first} and {second} disagree ({fields} and {more} more fields) with no write in "
               "between.") if len(pairs) > 3 else
             _("{entity}: messages {first} and {second} disagree ({fields}) with no write in between.")).format(
                entity=entity, first=first, second=second, fields=fields, more=len(pairs) - 3),
            (first, second), tools,
            Mitigation("strategy", _("Clear the older result, keep the newest {keep}").format(keep=keep), strategy="clear_tool_results",
                       params={"trigger_tokens": 0, "keep": keep})))
    return out
