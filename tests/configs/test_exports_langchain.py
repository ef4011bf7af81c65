"""The LangChain export, checked by running LangChain's own classes on the same conversations as
ctxlab, with a token counter that gives ctxlab's counts (so a difference is about the rule, not the
counting): the exported ContextEditingMiddleware clears the same tool results as
clear_tool_results, the exported SummarizationMiddleware summarizes at the same point as
summarize, the exported trim_messages keeps what the window strategies keep; and each documented
difference is shown by its own test."""
from __future__ import annotations

import itertools

import pytest

import ctxlab
from ctxlab.conversation import Message
from ctxlab.configs import export_native, make_config, read_config
from ctxlab.configs.langchain import build_middleware, trim_function
from ctxlab.formats.langchain import to_langchain
from ctxlab.generate import generate
from ctxlab.strategies import Budget, get_strategy, make_view
from ctxlab.strategies.langchain_trim import tiktoken_counter
from ctxlab.tokens import TokenCounter

from ..builders import assistant, system, tool, user
from ..conftest import SAMPLES

pytest.importorskip("langchain.agents.middleware")
from langchain.agents import create_agent  # noqa: E402
from langchain.agents.middleware import ClearToolUsesEdit, ContextEditingMiddleware, SummarizationMiddleware  # noqa: E402
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel  # noqa: E402
from langchain_core.messages import AIMessage  # noqa: E402

MODEL = "gpt-4o"
COUNTER = TokenCounter(MODEL)
LC_COUNTER = tiktoken_counter(COUNTER)  # ctxlab's counts, for LangChain messages
SAMPLE_NAMES = ("ecommerce_refund.json", "sql_agent.json", "parallel_travel.json")


class RecordingChatModel(GenericFakeChatModel):
    """A fake chat model (langchain-core's) that remembers the messages of every call."""

    seen: list = []

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        self.seen.append(list(messages))
        return super()._generate(messages, stop=stop, run_manager=run_manager, **kwargs)


def _fake_model() -> RecordingChatModel:
    return RecordingChatModel(messages=itertools.repeat(AIMessage("Summary: the user asked; tools answered.")), seen=[])


def _conversations() -> list[ctxlab.Conversation]:
    out = [ctxlab.load(SAMPLES / name) for name in SAMPLE_NAMES]
    out += [generate("ecommerce", turns=3, rounds_per_turn=2, result_tokens=200, seed=1),
            generate("sql", turns=2, rounds_per_turn=3, result_tokens=300, parallel_calls=2, seed=2),
            generate("travel", turns=4, rounds_per_turn=1, result_tokens=200, parallel_calls=3, seed=3)]
    return out


CONVERSATIONS = _conversations()


def _lc(messages) -> list:
    notes: list[str] = []
    return [to_langchain(m, i, notes) for i, m in enumerate(messages)]


def _export(strategy, max_tokens: int = 16_000, **kw):
    return export_native(make_config(strategy, Budget(max_tokens), MODEL, **kw), "langchain")


def _plan(messages, strategy, max_tokens: int = 16_000):
    lab = read_config(make_config(strategy, Budget(max_tokens), MODEL))
    return strategy.apply(make_view(list(messages), counter=COUNTER), lab.budget())


def _seen_by_model(middleware: list, messages) -> list:
    """What the model receives when a LangChain agent runs with ``middleware`` on ``messages``."""
    model = _fake_model()
    create_agent(model, tools=[], middleware=middleware).invoke({"messages": _lc(messages)})
    return model.seen[0]


# ---- clear_tool_results vs ContextEditingMiddleware(edits=[ClearToolUsesEdit(...)])

def _cleared_by_langchain(sent: list) -> set[int]:
    return {i for i, m in enumerate(sent) if m.type == "tool" and m.response_metadata.get("context_editing", {}).get("cleared")}


def _too_small(plan) -> set[int]:
    return {i for i, r in enumerate(plan.reasons) if "too small to gain from a placeholder" in r}


def _cases():
    for conv in CONVERSATIONS:
        total = sum(COUNTER.count(conv.messages, tools=()).message_tokens)
        tools = sorted({c.name for m in conv.messages for c in m.tool_calls})
        yield conv, dict(trigger_tokens=0, keep=1)
        yield conv, dict(trigger_tokens=total - 1, keep=2, clear_tool_inputs=True)   # just over: fires
        yield conv, dict(trigger_tokens=total, keep=0)                              # not over: nothing
        yield conv, dict(trigger_tokens=1000, keep=3, exclude_tools=tools[:1])


@pytest.mark.parametrize("conv, params", list(_cases()),
                         ids=lambda v: v.metadata.get("title", v.format) if isinstance(v, ctxlab.Conversation) else
                         ",".join(f"{k}={v[k]}" for k in v))
def test_context_editing_middleware_clears_the_same_tool_results(conv, params):
    strategy = get_strategy("clear_tool_results", **params)
    plan = _plan(conv.messages, strategy)
    sent = _seen_by_model(build_middleware(_export(strategy), token_counter=LC_COUNTER), conv.messages)
    ours = {i for i, a in enumerate(plan.actions) if a == "clear" and conv.messages[i].role == "tool"}
    assert len(sent) == len(conv.messages)
    assert _cleared_by_langchain(sent) == ours | _too_small(plan)  # the one difference besides clear_at_least
    if params.get("clear_tool_inputs"):
        theirs = {cid for m in sent if m.type == "ai" for cid in m.response_metadata.get("context_editing", {})
                  .get("cleared_tool_inputs", [])}
        ours_inputs = {cid for a, m in enumerate(plan.messages) if m.role == "assistant"
                       for cid in (c.id for c, old in zip(m.tool_calls, conv.messages[plan.origin[a]].tool_calls)
                                   if c.arguments == "{}" != old.arguments)}
        assert theirs == ours_inputs


def test_the_comparison_is_not_vacuous():
    conv = CONVERSATIONS[0]
    plan = _plan(conv.messages, get_strategy("clear_tool_results", trigger_tokens=0, keep=1))
    assert sum(a == "clear" for a in plan.actions) >= 5


def _long_results() -> list[Message]:
    big = "x " * 600  # ~600 tokens a result
    out = [system(), user("Go")]
    for k in range(5):
        out += [assistant("", f"c{k}"), tool(f"c{k}", big)]
    return out + [assistant("Done."), user("Thanks")]


def test_difference_langchain_stops_clearing_once_clear_at_least_is_reclaimed():
    messages = _long_results()
    strategy = get_strategy("clear_tool_results", trigger_tokens=0, keep=1, clear_at_least=700)
    plan = _plan(messages, strategy)
    sent = _seen_by_model(build_middleware(_export(strategy), token_counter=LC_COUNTER), messages)
    ours = {i for i, a in enumerate(plan.actions) if a == "clear"}
    assert len(ours) == 4                      # ctxlab (and Anthropic's documentation): a minimum, all four go
    assert _cleared_by_langchain(sent) == {3, 5}  # LangChain: oldest first, stops past 700 tokens reclaimed
    assert "stops as soon as that many tokens are reclaimed" in " ".join(_export(strategy).not_carried)


def test_difference_langchain_keeps_what_it_cleared_when_clear_at_least_is_out_of_reach():
    messages = _long_results()
    strategy = get_strategy("clear_tool_results", trigger_tokens=0, keep=1, clear_at_least=100_000)
    plan = _plan(messages, strategy)
    sent = _seen_by_model(build_middleware(_export(strategy), token_counter=LC_COUNTER), messages)
    assert "clear" not in plan.actions                        # all-or-nothing: nothing
    assert _cleared_by_langchain(sent) == {3, 5, 7, 9}        # LangChain cleared all it could anyway


def test_difference_ctxlab_leaves_a_result_its_placeholder_would_not_shrink():
    messages = [system(), user("Go"), assistant("", "a"), tool("a", "ok"), assistant("", "b"), tool("b", "x " * 300),
                assistant("", "c"), tool("c", "done"), assistant("Done."), user("Thanks")]
    strategy = get_strategy("clear_tool_results", trigger_tokens=0, keep=0)
    plan = _plan(messages, strategy)
    sent = _seen_by_model(build_middleware(_export(strategy), token_counter=LC_COUNTER), messages)
    assert {i for i, a in enumerate(plan.actions) if a == "clear"} == {5}
    assert _too_small(plan) == {3, 7}
    assert _cleared_by_langchain(sent) == {3, 5, 7}
    assert any("would not make it smaller" in n for n in _export(strategy).not_carried)


def test_the_python_form_builds_the_same_middleware_with_langchains_classes():
    strategy = get_strategy("clear_tool_results", trigger_tokens=5000, keep=2, clear_at_least=10,
                            exclude_tools=["get_order"], clear_tool_inputs=True)
    native = _export(strategy)
    namespace: dict = {}
    exec(compile(native.python, "context_middleware.py", "exec"), namespace)
    built = namespace["context_middleware"](token_counter=LC_COUNTER)
    assert [type(m) for m in built] == [ContextEditingMiddleware]
    edit = built[0].edits[0]
    assert isinstance(edit, ClearToolUsesEdit)
    assert (edit.trigger, edit.keep, edit.clear_at_least, edit.clear_tool_inputs, tuple(edit.exclude_tools)) == \
        (5000, 2, 10, True, ("get_order",))
    assert built[0].token_counter is LC_COUNTER


def test_a_tool_name_cannot_inject_code_into_the_python_form():
    evil = "x')\nimport os; os.system('echo pwned')#"
    native = _export(get_strategy("clear_tool_results", exclude_tools=[evil]))
    namespace: dict = {}
    exec(compile(native.python, "context_middleware.py", "exec"), namespace)
    assert "os" not in namespace
    assert tuple(namespace["context_middleware"]()[0].edits[0].exclude_tools) == (evil,)


# ---- summarize vs SummarizationMiddleware(trigger=..., keep=...)

def _model_call_points(conv):
    """Prefix lengths where an agent calls the model: after a user message or a tool result batch."""
    ms = conv.messages
    return [k for k in range(2, len(ms) + 1)
            if ms[k - 1].role == "user" or (ms[k - 1].role == "tool" and (k == len(ms) or ms[k].role != "tool"))]


def _summarizes(middleware, messages) -> bool:
    return middleware.before_model({"messages": _lc(messages)}, None) is not None


@pytest.mark.parametrize("params, max_tokens", [
    (dict(trigger_messages=12, trigger_ratio=1.0, keep_recent=1), 1_000_000),   # by message count
    (dict(trigger_messages=1_000_000, trigger_ratio=0.3, keep_recent=1), 9_000),  # by tokens
    (dict(trigger_messages=30, trigger_ratio=0.5, keep_recent=1), 6_000),         # either
])
def test_summarization_middleware_summarizes_at_the_same_point(params, max_tokens):
    strategy = get_strategy("summarize", **params)
    native = _export(strategy, max_tokens)
    [middleware] = build_middleware(native, model=_fake_model(), token_counter=LC_COUNTER)
    assert isinstance(middleware, SummarizationMiddleware)
    compared = fired = 0
    for conv in CONVERSATIONS:
        for k in _model_call_points(conv):
            prefix = conv.messages[:k]
            if sum(m.role == "user" for m in prefix) < 2:
                continue  # no older turn for ctxlab to fold (see the difference test below)
            plan = _plan(prefix, strategy, max_tokens)
            ours = "summarize" in plan.actions
            assert _summarizes(middleware, prefix) == ours, (conv.metadata.get("title"), k)
            compared, fired = compared + 1, fired + ours
    assert compared > 20 and 0 < fired < compared  # both sides of the trigger were seen


def _max_tokens_leaving(available: int) -> int:
    """A max_tokens whose budget leaves exactly ``available`` tokens for messages."""
    return next(m for m in range(available, 2 * available + 100)
                if read_config(make_config(get_strategy("none"), Budget(m), MODEL)).budget().available == available)


def test_summarization_triggers_on_the_same_side_of_each_threshold():
    conv = CONVERSATIONS[3]
    k = [k for k in _model_call_points(conv) if sum(m.role == "user" for m in conv.messages[:k]) >= 2][1]
    prefix, longer = conv.messages[:k], conv.messages[:k + 1]
    total = sum(make_view(list(prefix), counter=COUNTER).tokens)
    cases = [(dict(trigger_messages=len(prefix), trigger_ratio=1.0), 1_000_000),          # exactly at the count
             (dict(trigger_messages=1_000_000, trigger_ratio=1.0), _max_tokens_leaving(total))]  # exactly at the tokens
    for params, max_tokens in cases:
        strategy = get_strategy("summarize", keep_recent=1, **params)
        [middleware] = build_middleware(_export(strategy, max_tokens), model=_fake_model(), token_counter=LC_COUNTER)
        assert "summarize" not in _plan(prefix, strategy, max_tokens).actions
        assert not _summarizes(middleware, prefix)     # at the threshold: neither
        assert "summarize" in _plan(longer, strategy, max_tokens).actions
        assert _summarizes(middleware, longer)         # one message past it: both


def test_difference_summarization_keeps_exactly_keep_messages_ctxlab_keeps_the_task():
    conv = CONVERSATIONS[3]  # generated: several turns of tool rounds
    strategy = get_strategy("summarize", trigger_messages=5, trigger_ratio=1.0, keep_recent=3)
    [middleware] = build_middleware(_export(strategy, 1_000_000), model=_fake_model(), token_counter=LC_COUNTER)
    in_turn_2 = [k for k in _model_call_points(conv)
                 if sum(m.role == "user" for m in conv.messages[:k]) == 2 and conv.messages[k - 1].role == "tool"]
    prefix = conv.messages[:in_turn_2[1]]  # user, call, result, call, result: five messages of turn 2
    update = middleware.before_model({"messages": _lc(prefix)}, None)
    kept_by_langchain = update["messages"][2:]  # RemoveMessage(all), the summary (a HumanMessage), what is kept
    assert update["messages"][1].type == "human" and "summary" in update["messages"][1].content
    plan = _plan(prefix, strategy, 1_000_000)
    newest_user = max(i for i, m in enumerate(prefix) if m.role == "user")
    assert plan.actions[newest_user] == "keep"                      # ctxlab: the task stays as the user wrote it
    assert "summarize" in plan.actions[newest_user + 1:]            # and the turn's older steps are folded
    assert not any(m.type == "human" for m in kept_by_langchain)    # LangChain: the task lives only in its summary
    assert kept_by_langchain[0].type == "ai"                        # moved back so the tool result keeps its call


def test_both_fold_inside_a_long_first_turn_ctxlab_keeps_its_user_message():
    messages = CONVERSATIONS[4].messages  # generated: a first turn of three tool rounds
    first = [m for m in messages[: next(i for i, m in enumerate(messages) if i > 1 and m.role == "user")]]
    strategy = get_strategy("summarize", trigger_messages=4, trigger_ratio=1.0, keep_recent=2)
    [middleware] = build_middleware(_export(strategy, 1_000_000), model=_fake_model(), token_counter=LC_COUNTER)
    plan = _plan(first, strategy, 1_000_000)
    user = next(i for i, m in enumerate(first) if m.role == "user")
    assert plan.stats["triggered"] and "summarize" in plan.actions and plan.actions[user] == "keep"
    assert _summarizes(middleware, first)


# ---- the window strategies vs trim_messages

def _kept(plan) -> list[int]:
    return [i for i, a in enumerate(plan.actions) if a == "keep"]


def _trimmed(native, messages, counter=LC_COUNTER) -> list[int]:
    lcs = _lc(messages)
    ids = {id(m): i for i, m in enumerate(lcs)}
    return [ids[id(m)] for m in trim_function(native, counter)(lcs)]


def test_trim_messages_keeps_what_sliding_window_keeps_when_the_newest_turn_fits():
    compared = 0
    for conv, max_tokens in itertools.product(CONVERSATIONS, (2_500, 4_000, 8_000, 16_000)):
        strategy = get_strategy("sliding_window", buffer_ratio=0.1)
        plan = _plan(conv.messages, strategy, max_tokens)
        newest = max(i for i, m in enumerate(conv.messages) if m.role == "user")
        window = plan.stats["window_tokens"]
        view = make_view(list(conv.messages), counter=COUNTER)
        if view.tokens[0] + sum(view.tokens[newest:]) > window:
            continue  # the newest turn does not fit: see the difference test
        assert _trimmed(_export(strategy, max_tokens), conv.messages) == _kept(plan), (conv.metadata, max_tokens)
        compared += 1
    assert compared >= 12


def test_difference_sliding_window_keeps_the_question_when_the_newest_turn_does_not_fit():
    conv = CONVERSATIONS[0]
    strategy = get_strategy("sliding_window", buffer_ratio=0.0)
    plan = _plan(conv.messages, strategy, 2_000)
    newest = max(i for i, m in enumerate(conv.messages) if m.role == "user")
    assert 0 in _kept(plan) and newest in _kept(plan)           # system prompt and question always kept
    trimmed = _trimmed(_export(strategy, 2_000), conv.messages)
    assert newest not in trimmed                                # trim_messages: no human message fits
    assert any("keeps nothing of the turn" in n for n in _export(strategy, 2_000).not_carried)


def _without_system(conv) -> list[Message]:
    return [m for m in conv.messages if m.role != "system"]


def test_trim_messages_by_count_is_turn_safe_when_the_window_starts_on_a_user_message():
    agree = differ = 0
    for conv in CONVERSATIONS:
        messages = _without_system(conv)  # in an agent the system prompt is outside the messages
        for last_n in range(1, len(messages) + 1):
            strategy = get_strategy("turn_safe", last_n=last_n)
            ours, theirs = _kept(_plan(messages, strategy)), _trimmed(_export(strategy), messages, counter=None)
            if messages[len(messages) - last_n].role == "user":
                assert theirs == ours
                agree += 1
            else:  # the documented difference: trim_messages moves forward, ctxlab widens back
                assert len(theirs) < len(ours) and set(theirs) <= set(ours)
                differ += 1
    assert agree > 5 and differ > 20


def test_langchain_trim_exports_the_call_it_runs():
    for conv in CONVERSATIONS:
        for params in (dict(), dict(start_on="none", allow_partial=False, max_tokens=3_000),
                       dict(strategy="first", start_on="none", include_system=False, end_on="ai")):
            strategy = get_strategy("langchain_trim", **params)
            plan = _plan(conv.messages, strategy, 6_000)
            assert _trimmed(_export(strategy, 6_000), conv.messages) == _kept(plan)


def test_the_trim_middleware_sends_the_model_what_trim_messages_keeps():
    conv = CONVERSATIONS[1]
    strategy = get_strategy("sliding_window")
    native = _export(strategy, 6_000)
    namespace: dict = {}
    exec(compile(native.python, "context_middleware.py", "exec"), namespace)
    sent = _seen_by_model(namespace["context_middleware"](token_counter=LC_COUNTER), conv.messages)
    expected = _trimmed(native, conv.messages)
    assert [m.content for m in sent] == [_lc(conv.messages)[i].content for i in expected]
    assert len(sent) < len(conv.messages)


@pytest.mark.parametrize("versions, says, never", [
    ({"langchain": "1.5.2", "langchain-core": "1.8.3"}, "checked with langchain 1.5.2, langchain-core 1.8.3", None),
    ({"langchain": None, "langchain-core": "1.8.3"}, "langchain not installed where this was exported", "None"),
    ({"langchain": None, "langchain-core": None}, "are not installed where this was exported", "None"),
])
def test_the_snippet_header_names_the_installed_langchain_or_says_it_is_not_installed(monkeypatch, versions, says,
                                                                                       never):
    """on a core install the header read "checked with langchain None"."""
    from ctxlab.configs import langchain as lc
    monkeypatch.setattr(lc, "CHECKED_WITH", versions)
    config = make_config(get_strategy("sliding_window"), Budget(8_000, 0.15, 0), "gpt-4o")
    head = export_native(config, "langchain").python.split('"""')[1]
    assert says in head, head
    assert never is None or never not in head, head
    assert "installed" in head or versions["langchain"] in head
