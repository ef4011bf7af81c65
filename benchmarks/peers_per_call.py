"""ctxlab's replay beside the peers' own code, call by call, on real traces.

    PYTHONPATH=. python3 benchmarks/peers_per_call.py [--tau N] [--coding DIR]

At every model call of a trace, LangChain runs its agent middleware on the request built from the
whole history in the agent's state (``ContextEditingMiddleware`` copies the messages and edits the
copy; the trim middleware ctxlab exports calls ``trim_messages`` in ``wrap_model_call``). This
script runs LangChain's own ``ClearToolUsesEdit`` and ``trim_messages`` that way at every call, and
ctxlab's replay of ``clear_tool_results`` and ``sliding_window`` beside them, with both values of
``works_on``: ``full_history`` (the default of both, as their targets run them) and ``kept_history``
(the strategy works on what it left at the last call). It prints, per strategy and mode, how many calls send the same
prompt (the same tool results cleared; the same messages kept) and how many differ.

Token counts: LangChain is given ctxlab's counter, so a difference is about the rule, not the
counting. Data: the 100 tau-bench airline runs in ../shared/data (MIT, sierra-research/tau-bench),
and the coding traces in tests/data/coding (sources in its README).
"""
from __future__ import annotations

import argparse
import json
import sys
from copy import deepcopy
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import ctxlab
from ctxlab.conversation import Conversation
from ctxlab.configs import export_native, make_config
from ctxlab.configs.langchain import trim_function
from ctxlab.formats.langchain import to_langchain
from ctxlab.replay import FUTURE, replay
from ctxlab.strategies import Budget, get_strategy
from ctxlab.strategies.langchain_trim import tiktoken_counter
from ctxlab.tokens import TokenCounter

ROOT = Path(__file__).resolve().parent.parent
TAU = ROOT.parent / "shared" / "data" / "tau-bench"
CODING = ROOT / "tests" / "data" / "coding"
MODEL = "gpt-4o"
ORDER = (FUTURE, "keep", "drop", "summarize", "clear", "truncate")
TOO_SMALL = "too small to gain from a placeholder"


@dataclass
class Tally:
    """Calls compared and the numbers of those whose prompts differ (with a reason, when known)."""

    calls: int = 0
    differ: list[int] = field(default_factory=list)
    documented: list[int] = field(default_factory=list)  # differences the README lists, with their reason

    def add(self, other: "Tally") -> None:
        self.calls += other.calls
        self.differ += other.differ
        self.documented += other.documented


def tau_runs(limit: int | None = None) -> list[Conversation]:
    """The tau-bench airline runs as conversations (with their tool definitions)."""
    runs = json.loads((TAU / "airline_trajectories_trials01.json").read_text())
    tools = json.loads((TAU / "tools_airline.json").read_text())
    return [ctxlab.loads(json.dumps({"messages": r["traj"], "tools": tools})) for r in runs[:limit]]


def coding_traces(folder: Path = CODING) -> list[Conversation]:
    """Every coding trace of ``folder`` that reads, with at least one tool result."""
    out = []
    for f in sorted(folder.iterdir()):
        if f.suffix in (".json", ".jsonl", ".traj"):
            out += [c for c in ctxlab.load_all(f.read_bytes()) if any(m.role == "tool" for m in c.messages)]
    return out


def _lc(conv: Conversation) -> list:
    notes: list[str] = []
    return [to_langchain(m, i, notes) for i, m in enumerate(conv.messages)]


def _cells(r: Any) -> Any:
    return r.codes(ORDER)


def clear_tool_results(conv: Conversation, trigger: int, keep: int, history: str) -> Tally:
    """ctxlab's clear_tool_results replayed under ``history`` beside LangChain's ClearToolUsesEdit
    applied to the whole history at every call. ctxlab leaves a result its placeholder would not
    shrink (``TOO_SMALL``, documented): such results count as cleared on ctxlab's side."""
    from langchain.agents.middleware import ClearToolUsesEdit
    counter = TokenCounter(MODEL)
    lc_count = tiktoken_counter(counter)
    strategy = get_strategy("clear_tool_results", trigger_tokens=trigger, keep=keep, works_on=history)
    r = replay(conv, strategy, Budget(10_000_000), model=MODEL)
    cells = _cells(r)
    lcs = _lc(conv)
    tally = Tally()
    for call in r.calls:
        hist = deepcopy(lcs[:call.index])
        ClearToolUsesEdit(trigger=trigger, keep=keep).apply(hist, count_tokens=lc_count)
        theirs = {i for i, m in enumerate(hist)
                  if m.type == "tool" and m.response_metadata.get("context_editing", {}).get("cleared")}
        ours = {i for i in range(call.index) if ORDER[cells[call.number][i]] == "clear"}
        prompt = r.prompt(call.number)  # the plan's reasons are about the view it was made on (prompt.inputs)
        small = set() if prompt.plan is None else \
            {prompt.inputs[k] for k, why in enumerate(prompt.plan.reasons) if TOO_SMALL in why}
        tally.calls += 1
        if theirs != ours | small:
            tally.differ.append(call.number)
    return tally


def sliding_window(conv: Conversation, max_tokens: int, history: str) -> Tally:
    """ctxlab's sliding_window replayed under ``history`` beside the exported ``trim_messages``
    call applied to the whole history at every call. Documented differences (counted in
    ``documented``, not in ``differ``): when the newest turn does not fit the window, trim_messages
    keeps no human message while ctxlab keeps the system prompt and the question; a history with
    no user message yet (a sub-agent's transcript) is sent whole by ctxlab, emptied by trim_messages."""
    counter = TokenCounter(MODEL)
    strategy = get_strategy("sliding_window", buffer_ratio=0.1, works_on=history)
    budget = Budget(max_tokens)
    trim = trim_function(export_native(make_config(strategy, budget, MODEL), "langchain"), tiktoken_counter(counter))
    r = replay(conv, strategy, budget, model=MODEL)
    cells = _cells(r)
    lcs = _lc(conv)
    ids = {id(m): i for i, m in enumerate(lcs)}
    tokens = counter.count(conv.messages, tools=()).message_tokens
    tally = Tally()
    for call in r.calls:
        theirs = [ids[id(m)] for m in trim(lcs[:call.index])]
        ours = [i for i in range(call.index) if ORDER[cells[call.number][i]] == "keep"]
        tally.calls += 1
        if theirs == ours:
            continue
        plan = r.plan_at(call.number)
        users = [i for i in range(call.index) if conv.messages[i].role == "user"]
        window = plan.stats.get("window_tokens") if plan is not None else None
        if not users and not theirs:  # no user message yet: trim_messages (start_on="human") keeps nothing
            tally.documented.append(call.number)
        elif users and window is not None and tokens[0] + sum(tokens[users[-1]:call.index]) > window:
            tally.documented.append(call.number)
        else:
            tally.differ.append(call.number)
    return tally


def _opening(conv: Conversation) -> int:
    """Message tokens before the first model call (the system prompt and the task)."""
    first = next((i for i, m in enumerate(conv.messages) if m.role == "assistant"), len(conv.messages))
    return sum(TokenCounter(MODEL).count(conv.messages[:first], tools=()).message_tokens)


CASES = {
    "clear_tool_results": lambda conv, history: clear_tool_results(conv, _opening(conv) + 1_000, 1, history),
    "sliding_window": lambda conv, history: sliding_window(conv, 3_000, history),
}
"""What is compared on each conversation: Anthropic's rule at a trigger 1,000 tokens past the
opening (the system prompt and task; tau-bench's policy alone is about 2,700), so runs pass it
mid-run and a clear can bring them back under it, keep 1; and a window they overflow (3,000 tokens)."""


def compare(convs: Iterable[Conversation], name: str, history: str) -> Tally:
    """One strategy in one mode over every conversation."""
    total = Tally()
    for conv in convs:
        total.add(CASES[name](conv, history))
    return total


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tau", type=int, default=100, help="how many tau-bench runs (default all 100)")
    ap.add_argument("--coding", default=str(CODING), help="a folder of coding traces")
    args = ap.parse_args(argv)
    sets = {"tau-bench airline": tau_runs(args.tau), "coding traces": coding_traces(Path(args.coding))}
    print(f"{'data':18} {'strategy':20} {'works_on':13} {'calls':>6} {'same':>6} {'differ':>7} {'documented':>10}")
    for label, convs in sets.items():
        for name in CASES:
            for history in ("full_history", "kept_history"):
                t = compare(convs, name, history)
                same = t.calls - len(t.differ) - len(t.documented)
                print(f"{label:18} {name:20} {history:13} {t.calls:6,} {same:6,} {len(t.differ):7,} "
                      f"{len(t.documented):10,}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
