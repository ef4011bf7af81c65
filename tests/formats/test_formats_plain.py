"""Plain chat messages made while parsing (formats/_plain.py) and the CLI's streamed output.

The fast paths must give exactly what the general paths give: the same Conversations (checked
against reading the same text without the parse hook), the same errors, and the same bytes
out of ``ctxlab apply`` (checked against the plan's eager ``to_dict`` written in one piece)."""
from __future__ import annotations

import json
from dataclasses import asdict

import pytest

from ctxlab.cli import main
from ctxlab.cli.strategies import build_strategy
from ctxlab.conversation import Message
from ctxlab.errors import CtxlabError
from ctxlab.formats import TRACES, _read_documents, export, load_all
from ctxlab.formats._json import JSONText, decode_text, dumps, iter_dumps, parse_documents
from ctxlab.formats._plain import PlainMessages, role_sample
from ctxlab.strategies import prepare
from ctxlab.validate import validate

from ..conftest import SAMPLES

PLAIN = [{"role": "system", "content": "s"}, {"role": "user", "content": "hi"}, {"role": "assistant", "content": ""}]
CALL = {"role": "assistant", "content": None, "tool_calls": [
    {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{\"role\": \"user\"}"}}]}
DOCUMENTS = {
    "plain list": PLAIN,
    "plain envelope": {"model": "gpt-4o", "messages": PLAIN, "temperature": 0.2},
    "keys reversed": {"messages": [{"content": "hi", "role": "user"}, *PLAIN[2:]]},
    "repeated key": '{"messages": [{"role": "user", "content": "a", "content": "b"}]}',
    "mixed with tool calls": [PLAIN[1], CALL, {"role": "tool", "tool_call_id": "c1", "content": "ok"}, PLAIN[2]],
    "plain object in metadata": {"messages": PLAIN, "metadata": {"example": {"role": "user", "content": "x"}}},
    "plain object deep": {"messages": PLAIN[1:], "x": [[[[{"role": "assistant", "content": "deep"}]]]]},
    "one message object": {"role": "user", "content": "hi"},
    "list of lists": [[PLAIN[1]]],
    "several conversations": [{"messages": PLAIN}, {"messages": PLAIN[1:]}],
    "anthropic system": {"system": "be brief", "messages": PLAIN[1:]},
    "responses instructions": {"instructions": "be brief", "input": PLAIN[1:]},
    "developer role": [{"role": "developer", "content": "d"}, PLAIN[1]],
    "unknown role": [PLAIN[1], {"role": "robot", "content": "x"}],
    "null content": [{"role": "user", "content": None}],
    "bad facts": {"messages": PLAIN, "facts": [{"role": "user", "content": "x"}]},
    "mini-swe-agent trace": {"trajectory_format": "mini-swe-agent-1", "info": {},
                             "messages": [*PLAIN, {"role": "user", "content": "output"}]},
    "lone surrogate": '[{"role": "user", "content": "\\ud800 x"}]',
}


def _reference(text: str, **kw) -> str:
    """What load_all gives without the parse hook: repr of the conversations, or the error."""
    fmt, depth = kw.get("format"), kw.get("max_depth", 64)
    try:
        docs, lines = parse_documents(decode_text(text), depth)
        return repr(_read_documents(docs, lines, fmt, depth, None))
    except CtxlabError as e:
        return f"{type(e).__name__}: {e} at {e.where}"


def _loaded(text: str, **kw) -> str:
    try:
        return repr(load_all(text, **kw))
    except CtxlabError as e:
        return f"{type(e).__name__}: {e} at {e.where}"


@pytest.mark.parametrize("name", sorted(DOCUMENTS))
@pytest.mark.parametrize("kw", [{}, {"format": "openai"}, {"format": "anthropic"}, {"max_depth": 2}, {"max_depth": 3}])
def test_load_all_reads_what_the_general_path_reads(name, kw):
    doc = DOCUMENTS[name]
    text = doc if isinstance(doc, str) else json.dumps(doc)
    assert _loaded(text, **kw) == _reference(text, **kw)


def test_the_hook_makes_messages_only_for_a_whole_plain_list():
    docs, _ = parse_documents(json.dumps({"messages": PLAIN}), plain=True)
    assert isinstance(docs[0]["messages"], PlainMessages)
    assert docs[0]["messages"] == [Message(m["role"], m["content"]) for m in PLAIN]
    for name in ("mixed with tool calls", "plain object in metadata", "plain object deep", "list of lists",
                 "several conversations", "one message object"):
        text = json.dumps(DOCUMENTS[name])
        plain, _ = parse_documents(text, plain=True)
        assert plain == parse_documents(text)[0], name  # every Message back as its dict
        assert "Message(" not in repr(plain), name


def test_trace_detectors_reject_plain_message_lists():
    """trace_probe shows trace detectors the first 200 records only: none takes plain messages."""
    many = [PLAIN[1], PLAIN[2]] * 300
    for doc in (many, {"messages": many}, {"messages": many, "model": "gpt-4o"}):
        assert not [n for n, tf in TRACES.items() if tf.detect(doc)]


def test_role_sample_has_each_role_once_in_order():
    items = PlainMessages(Message(r, "x") for r in ("user", "assistant", "user", "system", "assistant"))
    assert [d["role"] for d in role_sample(items)] == ["user", "assistant", "system"]


def _gen(items):
    yield from items


@pytest.mark.parametrize("indent", [2, None])
def test_iter_dumps_writes_a_generator_value_as_the_list(indent):
    data = {"a": 1, "d": [{"i": 0, "text": "two\nlines"}, {"i": 1, "n": [1, {"z": []}]}], "e": {}, "f": [],
            "raw": [JSONText({"a": 1}, '{\n  "a" :1}')], "m": {"q": [JSONText({}, "{ }")]}}
    for key in ("d", "f", "raw"):
        streamed = {k: _gen(v) if k == key else v for k, v in data.items()}
        assert "".join(iter_dumps(streamed, indent=indent, block=7)) == dumps(data, indent=indent)


def test_cli_apply_writes_what_the_eager_plan_gives(capsys):
    """The decisions streamed one by one: the same bytes as the plan's whole dict, on every sample."""
    samples = sorted(p for p in SAMPLES.glob("*.json") if "messages" in json.loads(p.read_text()))
    assert samples
    for path in samples:
        assert main(["apply", str(path), "--strategy", "sliding_window", "--max-tokens", "2000"]) == 0
        out, _ = capsys.readouterr()
        (conv,) = load_all(path.read_bytes())
        view, budget = prepare(conv, None, context_limit=2000)
        strategy = build_strategy("sliding_window", [], budget)  # scaled to the budget, as the CLI does
        plan = strategy.apply(view, budget)
        want = plan.to_dict()
        want["params"] = strategy.params()
        want["findings"] = [asdict(f) for f in validate(list(plan.messages), rules="openai")]
        want["messages"] = export(conv.with_messages(plan.messages), "openai").data
        assert out == dumps(want, indent=2) + "\n", path.name


def test_the_fast_plain_message_is_a_message_like_any_other():
    import dataclasses
    import pickle

    from ctxlab.formats._plain import MAKE_PLAIN, _make_plain
    assert MAKE_PLAIN is _make_plain  # the fast path is in use for the Message of today
    for role, content in (("user", "hi"), ("assistant", ""), ("system", "中文 🎉")):
        made, want = _make_plain(role, content), Message(role, content)
        assert type(made) is Message and made == want and repr(made) == repr(want)
        assert all(getattr(made, f.name) == getattr(want, f.name) for f in dataclasses.fields(Message))
        assert pickle.loads(pickle.dumps(made)) == want
        with pytest.raises(dataclasses.FrozenInstanceError):
            made.content = "changed"
