"""The ``langchain_trim`` baseline: LangChain's own ``trim_messages``, run as is, mapped back to
the input messages, with its provider-rule breakages reported instead of repaired."""
from __future__ import annotations

import pytest
from langchain_core.messages import ToolMessage, trim_messages

import ctxlab
from ctxlab.formats.langchain import to_langchain
from ctxlab.conversation import Message, Part
from ctxlab.strategies import STRATEGIES, Budget, StrategyError, get_strategy, make_view
from ctxlab.strategies.langchain_trim import LANGCHAIN_CORE_VERSION, message_from_langchain, tiktoken_counter
from ctxlab.validate import validate

from ..builders import assistant, system, tool, user
from ..conftest import SAMPLES

SAMPLE_FILES = ("ecommerce_refund", "parallel_travel", "sql_agent")
CONFIGS = ({}, {"start_on": "none"}, {"include_system": False}, {"end_on": "ai"},
           {"strategy": "first", "start_on": "none", "include_system": False})


def _view(name: str):
    return make_view(ctxlab.load(SAMPLES / f"{name}.json"), "gpt-4o")


def _direct(view, max_tokens: int, **kwargs) -> list[int]:
    """Input indexes that trim_messages itself keeps, called directly on LangChain messages."""
    lcs = [to_langchain(m, i, []) for i, m in enumerate(view.messages)]
    counts = {id(lc): n for lc, n in zip(lcs, view.tokens)}
    out = trim_messages(lcs, max_tokens=max_tokens, token_counter=lambda ms: sum(counts[id(m)] for m in ms), **kwargs)
    where = {id(lc): i for i, lc in enumerate(lcs)}
    return [where[id(m)] for m in out]


def _lc_kwargs(params: dict) -> dict:
    """The same configuration as trim_messages keyword arguments (defaults of the strategy)."""
    p = {"strategy": "last", "start_on": "human", "include_system": True, "end_on": "none", **params}
    out = {"strategy": p["strategy"], "end_on": None if p["end_on"] == "none" else p["end_on"]}
    if p["strategy"] == "last":
        out.update(start_on=None if p["start_on"] == "none" else p["start_on"], include_system=p["include_system"])
    return out


def _issue_33245_case() -> tuple[list[Message], int]:
    """A history and a budget at which a 'last' trim keeps a tool result but not its call."""
    msgs = [system(), user("Where is order KC-1?"), assistant("", "c1"), tool("c1", "shipped " * 40),
            assistant("It shipped."), user("Thanks, and KC-2?"), assistant("Let me check.")]
    view = make_view(msgs, "gpt-4o")
    return msgs, view.tokens[0] + sum(view.tokens[3:])


@pytest.mark.parametrize("name", SAMPLE_FILES)
@pytest.mark.parametrize("params", CONFIGS)
@pytest.mark.parametrize("max_tokens", [1_500, 4_000, 9_000])
def test_the_wrapper_keeps_exactly_what_trim_messages_keeps(name: str, params: dict, max_tokens: int) -> None:
    view = _view(name)
    plan = get_strategy("langchain_trim", max_tokens=max_tokens, **params).apply(view, Budget(200_000))
    assert list(plan.origin) == _direct(view, max_tokens, **_lc_kwargs(params))
    assert all(m is view.messages[o] for m, o in zip(plan.messages, plan.origin))
    kept = set(plan.origin)
    assert [a == "keep" for a in plan.actions] == [i in kept for i in range(len(view))]


@pytest.mark.parametrize("params", CONFIGS)
@pytest.mark.parametrize("max_tokens", [3_000, 20_000])
def test_a_grown_long_conversation_keeps_exactly_what_trim_messages_keeps(params: dict, max_tokens: int,
                                                                          monkeypatch) -> None:
    """Long enough that trim_messages' counts of runs of the conversation are taken from running
    totals; grown by ``append`` with the parent let go of, as a live agent does, converting only
    the new messages to LangChain."""
    import gc
    from ctxlab.generate import generate
    from ctxlab.strategies import langchain_trim
    messages = list(generate("ecommerce", turns=20, rounds_per_turn=3, result_tokens=300, parallel_calls=2,
                             seed=5).messages)
    strategy = get_strategy("langchain_trim", max_tokens=max_tokens, **params)
    view = make_view(messages[:120], "gpt-4o")
    strategy.apply(view, Budget(200_000))
    converted = []
    real = langchain_trim.to_langchain
    monkeypatch.setattr(langchain_trim, "to_langchain", lambda m, i, notes: converted.append(i) or real(m, i, notes))
    for k in range(120, len(messages)):
        view = view.append(messages[k])
        if k % 25 == 0:
            gc.collect()  # the parent is gone: only its grown view holds what it converted
        plan = strategy.apply(view, Budget(200_000))
        if k % 15 == 0 or k == len(messages) - 1:
            whole = make_view(messages[:k + 1], "gpt-4o")
            assert list(plan.origin) == _direct(whole, max_tokens, **_lc_kwargs(params)), k
    assert converted == list(range(120, len(messages)))


def test_views_grown_apart_from_one_parent_each_trim_their_own_messages() -> None:
    """Two views appended to the same parent (the second after the first was planned) and the
    parent itself each keep what trim_messages keeps of their own conversation."""
    from ctxlab.generate import generate
    messages = list(generate("ecommerce", turns=12, rounds_per_turn=3, result_tokens=300, seed=6).messages)
    other = list(generate("ecommerce", turns=4, rounds_per_turn=2, result_tokens=300, seed=9).messages)[1:]
    strategy = get_strategy("langchain_trim", max_tokens=2_500)
    parent = make_view(messages[:60], "gpt-4o")
    strategy.apply(parent, Budget(200_000))
    first = parent.append(*messages[60:80])
    second = parent.append(*other[:15])
    for view, conv in ((first, messages[:80]), (second, messages[:60] + other[:15]), (parent, messages[:60]),
                       (first.append(*messages[80:90]), messages[:90])):
        plan = strategy.apply(view, Budget(200_000))
        assert list(plan.origin) == _direct(make_view(conv, "gpt-4o"), 2_500, **_lc_kwargs({}))
        assert list(plan.messages) == [conv[o] for o in plan.origin]


@pytest.mark.parametrize("name", SAMPLE_FILES)
def test_every_decision_says_trim_messages_made_it(name: str) -> None:
    plan = get_strategy("langchain_trim").apply(_view(name), Budget(4_000, reserve=0))
    assert plan.count("drop") > 0
    for action, reason in zip(plan.actions, plan.reasons):
        verb = {"keep": "kept by", "drop": "dropped by"}[action]
        assert reason.startswith(f"{verb} trim_messages(strategy='last', start_on='human')")
    assert "3,997" in plan.reasons[-1]


def test_without_a_max_tokens_it_trims_to_what_the_budget_leaves_for_messages() -> None:
    view = _view("ecommerce_refund")
    budget = Budget(6_000, tools_tokens=500)
    plan = get_strategy("langchain_trim").apply(view, budget)
    assert plan.stats["max_tokens"] == budget.available
    assert sum(plan.output_tokens) <= budget.available and plan.fits
    assert list(plan.origin) == _direct(view, budget.available, **_lc_kwargs({}))


def test_issue_33245_a_leading_orphan_tool_result_is_reported_not_repaired() -> None:
    msgs, max_tokens = _issue_33245_case()
    view = make_view(msgs, "gpt-4o")
    plan = get_strategy("langchain_trim", start_on="none", max_tokens=max_tokens).apply(view, Budget(100_000))
    if [m.role for m in plan.messages[:2]] != ["system", "tool"]:
        pytest.skip(f"langchain-core {LANGCHAIN_CORE_VERSION} no longer returns a leading orphan tool result "
                    "(langchain issue 33245 fixed?)")
    assert isinstance(trim_messages([to_langchain(m, i, []) for i, m in enumerate(msgs)], max_tokens=max_tokens,
                                    token_counter=tiktoken_counter(view.counter), include_system=True)[1], ToolMessage)
    openai = [f for f in validate(list(plan.messages), "openai") if f.severity == "error"]
    assert [f.code for f in openai] == ["orphan_tool_result"]
    assert plan.stats["errors_openai"] == 1 and plan.stats["errors_anthropic"] >= 1
    assert plan.stats["finding_codes"][0] == "orphan_tool_result"
    assert any("orphan_tool_result at message 3" in w for w in plan.warnings)


def test_start_on_human_avoids_the_orphan_at_the_same_budget() -> None:
    msgs, max_tokens = _issue_33245_case()
    plan = get_strategy("langchain_trim", max_tokens=max_tokens).apply(make_view(msgs, "gpt-4o"), Budget(100_000))
    assert [m.role for m in plan.messages] == ["system", "user", "assistant"]
    assert plan.stats["errors_openai"] == plan.stats["errors_anthropic"] == 0
    assert not plan.warnings


def test_strategy_first_can_leave_a_call_unanswered_and_says_so() -> None:
    msgs = [system(), user("Find KC-1"), assistant("", "c1"), tool("c1", "row " * 300), assistant("Found it.")]
    view = make_view(msgs, "gpt-4o")
    strategy = get_strategy("langchain_trim", strategy="first", start_on="none", include_system=False,
                            max_tokens=sum(view.tokens[:3]))
    plan = strategy.apply(view, Budget(100_000))
    assert plan.actions == ("keep", "keep", "keep", "drop", "drop")
    assert plan.stats["errors_openai"] == 1 and "unanswered_tool_call" in plan.stats["finding_codes"]
    assert "after the window it kept" in plan.reasons[3]


def test_losing_the_newest_user_message_is_a_warning() -> None:
    view = _view("sql_agent")
    plan = get_strategy("langchain_trim").apply(view, Budget(1_500, reserve=0))
    newest = view.newest_user()
    assert plan.actions[newest] == "drop"
    assert any(f"newest user message (message {newest})" in w for w in plan.warnings)


def test_allow_partial_keeps_the_tail_lines_as_trim_messages_does() -> None:
    question = "\n".join(f"line {k}: details about order KC-{k}" for k in range(60))
    msgs = [system(), user(question), assistant("Sure.")]
    view = make_view(msgs, "gpt-4o")
    strategy = get_strategy("langchain_trim", start_on="none", allow_partial=True, max_tokens=200)
    plan = strategy.apply(view, Budget(10_000))
    assert plan.actions == ("keep", "truncate", "keep")
    cut = plan.messages[1]
    assert cut is not msgs[1] and msgs[1].content == question  # a new message; the input is untouched
    direct = trim_messages([to_langchain(m, i, []) for i, m in enumerate(msgs)], max_tokens=200, allow_partial=True,
                           token_counter=tiktoken_counter(view.counter), include_system=True)
    assert cut.content == direct[1].content and question.endswith(cut.content)
    assert plan.reasons[1].startswith("cut by trim_messages(strategy='last', allow_partial=True)")
    assert plan.stats["partial"] == 1 and sum(plan.output_tokens) <= 200


def test_allow_partial_on_content_blocks_keeps_whole_newest_blocks() -> None:
    blocks = tuple(Part("text", f"block {k} " * 20) for k in range(6))
    view = make_view([system(), Message("user", blocks), assistant("Sure.")], "gpt-4o")
    strategy = get_strategy("langchain_trim", start_on="none", allow_partial=True, max_tokens=150)
    plan = strategy.apply(view, Budget(10_000))
    assert plan.actions[1] == "truncate"
    kept = plan.messages[1].content
    assert 0 < len(kept) < len(blocks) and kept == blocks[len(blocks) - len(kept):]


@pytest.mark.parametrize("name", SAMPLE_FILES)
def test_the_baseline_is_judged_on_ctxlabs_own_token_counts(name: str) -> None:
    view = _view(name)
    for i, m in enumerate(view.messages):
        assert view.counter.message(message_from_langchain(to_langchain(m, i, []))) == view.tokens[i]


@pytest.mark.parametrize("params, word", [({"strategy": "middle"}, "strategy"), ({"start_on": "robot"}, "start_on"),
                                           ({"end_on": "user"}, "end_on"), ({"max_tokens": 0}, "max_tokens"),
                                           ({"allow_partial": "yes"}, "allow_partial"),
                                           ({"strategy": "first"}, "strategy='last'")])
def test_bad_parameters_are_refused_when_built(params: dict, word: str) -> None:
    with pytest.raises(StrategyError, match=word):
        get_strategy("langchain_trim", **params)


def test_it_is_registered_with_its_parameters() -> None:
    assert STRATEGIES["langchain_trim"].name == "langchain_trim"
    names = [p["name"] for p in STRATEGIES["langchain_trim"].schema()]
    assert names == ["strategy", "start_on", "end_on", "include_system", "allow_partial", "max_tokens", "apply_at",
                     "works_on"]
