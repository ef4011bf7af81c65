"""Turns, tool rounds and atomic groups: examples a reader can check by eye, and properties on
arbitrary (also broken) message lists, compared with a slow obvious reference."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from ctxlab.conversation import Message
from ctxlab.segments import segment

from ..builders import assistant, system, tool, user


def test_turns_start_at_each_user_message_and_the_preamble_is_turn_minus_one() -> None:
    msgs = [system(), system("Use tools."), user(), assistant("Hello"), user("Again"), assistant("Yes")]
    s = segment(msgs)
    assert s.turn_of == (-1, -1, 0, 0, 1, 1)
    assert s.preamble == (0, 2)
    assert s.turns == ((2, 4), (4, 6))
    assert len(s) == 6


def test_no_user_message_means_everything_is_preamble() -> None:
    s = segment([system(), assistant("Welcome")])
    assert s.turn_of == (-1, -1)
    assert s.preamble == (0, 2)
    assert s.turns == ()


def test_empty_list() -> None:
    s = segment([])
    assert (s.turn_of, s.groups, s.rounds, s.turns, s.preamble) == ((), (), (), (), (0, 0))


def test_parallel_calls_and_their_results_form_one_group_and_one_round() -> None:
    msgs = [user(), assistant("", "a", "b"), tool("b"), tool("a"), assistant("Done")]
    s = segment(msgs)
    assert s.groups == ((0,), (1, 2, 3), (4,))
    assert s.group_of == (0, 1, 1, 1, 2)
    assert s.rounds == ((1, 2, 3),)
    assert s.round_of == (-1, 0, 0, 0, -1)
    assert s.group_members(3) == (1, 2, 3)
    assert s.orphans == ()


def test_several_rounds_are_numbered_in_order() -> None:
    msgs = [user(), assistant("", "a"), tool("a"), assistant("", "b"), tool("b"), assistant("ok"),
            user(), assistant("", "c"), tool("c")]
    s = segment(msgs)
    assert s.rounds == ((1, 2), (3, 4), (7, 8))
    assert s.round_of == (-1, 0, 0, 1, 1, -1, -1, 2, 2)
    assert s.turn_of == (0, 0, 0, 0, 0, 0, 1, 1, 1)


def test_a_late_result_still_joins_its_call_group_even_across_a_turn() -> None:
    msgs = [user(), assistant("", "a", "b"), tool("a"), user("wait"), tool("b")]
    s = segment(msgs)
    assert s.group_members(1) == (1, 2, 4)
    assert s.groups == ((0,), (1, 2, 4), (3,))
    assert s.round_of == (-1, 0, 0, -1, 0)


def test_results_without_an_earlier_call_are_orphans_in_groups_of_one() -> None:
    msgs = [user(), tool("early"), assistant("", "early"), tool(None), tool("nobody"), tool("early")]
    s = segment(msgs)
    assert s.orphans == (1, 3, 4)
    assert s.group_members(5) == (2, 5)
    for i in s.orphans:
        assert s.group_members(i) == (i,)
        assert s.round_of[i] == -1


def test_a_result_answers_the_latest_earlier_call_with_its_id() -> None:
    msgs = [user(), assistant("", "x"), tool("x"), assistant("", "x"), tool("x")]
    s = segment(msgs)
    assert s.rounds == ((1, 2), (3, 4))


def test_a_user_message_never_answers_a_call() -> None:
    msgs = [user(), assistant("", "x"), Message("user", "result?", tool_call_id="x")]
    s = segment(msgs)
    assert s.rounds == ((1,),)
    assert s.group_members(2) == (2,)
    assert s.turn_of == (0, 0, 1)


def test_an_assistant_without_calls_is_not_a_round() -> None:
    s = segment([user(), assistant("plain")])
    assert s.rounds == ()
    assert s.round_of == (-1, -1)


# --- properties on arbitrary message lists -------------------------------------------------

IDS = st.sampled_from(["a", "b", "c", "d"])


@st.composite
def any_message(draw: st.DrawFn) -> Message:
    """Any message, including results for unknown or missing ids and calls reusing ids."""
    role = draw(st.sampled_from(["system", "user", "assistant", "tool"]))
    if role == "assistant":
        return assistant("", *draw(st.lists(IDS, max_size=3, unique=True)))
    if role == "tool":
        return tool(draw(st.none() | IDS))
    return Message(role, "x")


def reference_groups(msgs: list[Message]) -> list[set[int]]:
    """Groups the slow obvious way: each result looks back for the latest call with its id."""
    owner: dict[int, int] = {}
    for i, m in enumerate(msgs):
        if m.role != "tool":
            continue
        for j in range(i - 1, -1, -1):
            if msgs[j].role == "assistant" and any(c.id == m.tool_call_id for c in msgs[j].tool_calls):
                owner[i] = j
                break
    groups: dict[int, set[int]] = {}
    for i in range(len(msgs)):
        groups.setdefault(owner.get(i, i), set()).add(i)
    return list(groups.values())


@settings(max_examples=300)
@given(st.lists(any_message(), max_size=25))
def test_groups_partition_the_indexes_and_match_the_reference(msgs: list[Message]) -> None:
    s = segment(msgs)
    flat = sorted(i for g in s.groups for i in g)
    assert flat == list(range(len(msgs)))
    assert all(list(g) == sorted(g) for g in s.groups)
    assert [g[0] for g in s.groups] == sorted(g[0] for g in s.groups)
    for gid, g in enumerate(s.groups):
        assert all(s.group_of[i] == gid for i in g)
    assert sorted(map(sorted, s.groups)) == sorted(map(sorted, reference_groups(msgs)))


@settings(max_examples=300)
@given(st.lists(any_message(), max_size=25))
def test_a_group_never_mixes_two_rounds(msgs: list[Message]) -> None:
    s = segment(msgs)
    for g in s.groups:
        assert len({s.round_of[i] for i in g}) == 1
    for r, members in enumerate(s.rounds):
        assert msgs[members[0]].role == "assistant" and msgs[members[0]].tool_calls
        assert s.groups[s.group_of[members[0]]] == members
        assert all(s.round_of[i] == r for i in members)
    assert sum(len(r) for r in s.rounds) == sum(1 for r in s.round_of if r >= 0)


@settings(max_examples=300)
@given(st.lists(any_message(), max_size=25))
def test_turn_ranges_cover_every_index_in_order(msgs: list[Message]) -> None:
    s = segment(msgs)
    spans = [s.preamble, *s.turns]
    assert spans[0][0] == 0 and spans[-1][1] == len(msgs)
    assert all(a[1] == b[0] for a, b in zip(spans, spans[1:]))
    for k, (start, end) in enumerate(s.turns):
        assert msgs[start].role == "user"
        assert all(msgs[i].role != "user" for i in range(start + 1, end))
        assert s.turn_of[start:end] == (k,) * (end - start)
    assert s.turn_of[: s.preamble[1]] == (-1,) * s.preamble[1]
    assert all(m.role != "user" for m in msgs[: s.preamble[1]])
