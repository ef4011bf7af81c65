"""The machinery that lets a replay extend instead of restart; a strategy author can ignore it.

A strategy is correct with ``apply(view, budget)`` alone: the replay, every invariant test and every
page work without anything here. What lives here makes the same answers cheap when a view grows one
message at a time: ``log`` (the append-only columns a growing view shares), ``replan`` (re-planning
from the previous plan when messages were appended: ``remember`` / ``extend``), ``replan_windows``,
``replan_keys``, ``replan_clear`` and ``replan_recent`` (those fast paths for the window and
key-message strategies, the ones that clear old tool results, and ``recent_events``), ``batch`` and
``ledger`` (the removal books of the group strategies, kept per view). Each fast path is checked
against the plain ``apply`` by tests/strategies/test_strategy_replan.py and tests/strategies/test_strategy_incremental.py.
"""
