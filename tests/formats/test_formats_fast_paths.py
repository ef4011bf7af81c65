"""The fast paths of reading give the answers of the plain code they replace:
detection from one shared summary of the list, the short path for plain chat messages, the depth
check, the faster ``Message.__init__``, the garbage collector paused while a file is read."""
from __future__ import annotations

import gc
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxlab import loads
from ctxlab.conversation import Message, Part, ToolCall
from ctxlab.errors import CtxlabError, NestingTooDeepError
from ctxlab.formats import FORMATS, ReadContext, detect
from ctxlab.formats import anthropic, langchain, openai_chat, responses
from ctxlab.formats._json import depth_check

from ..conftest import SAMPLES


# ---------------------------------------------------------------- reference detectors (the loops before)


def _ref_openai(items):
    if not items or not all(isinstance(m, dict) and "role" in m for m in items):
        return 0
    score = 1
    for m in items:
        if m.get("role") in ("tool", "function", "developer") or "tool_calls" in m or "function_call" in m:
            score = 3
        if m.get("role") not in openai_chat._ROLES:
            return 0
        c = m.get("content")
        if isinstance(c, list) and any(isinstance(p, dict) and p.get("type") in ("tool_use", "tool_result", "thinking")
                                       for p in c):
            return 0
    return score


def _ref_anthropic(items):
    if not items or not all(isinstance(m, dict) and "role" in m for m in items):
        return 0
    score = 1
    for m in items:
        if m.get("role") not in anthropic._ROLES or "tool_calls" in m or "function_call" in m:
            return 0
        content = m.get("content")
        for b in content if isinstance(content, list) else ():
            kind = b.get("type") if isinstance(b, dict) else None
            if kind in anthropic._STRONG_BLOCKS or (kind == "image" and "source" in b):
                score = 3
            elif kind in anthropic._OPENAI_PARTS:
                return 0
    return score


def _ref_responses(items):
    if not items or not all(isinstance(it, dict) for it in items):
        return 0
    score = 0
    for it in items:
        kind, content = it.get("type"), it.get("content")
        if kind in ("function_call", "function_call_output", "reasoning"):
            score = 3
        elif isinstance(content, list) and any(isinstance(p, dict) and p.get("type") in responses._STRONG_PARTS
                                               for p in content) and kind in ("message", None):
            score = 3
        elif kind == "message":
            score = max(score, 2)
    return score


REFERENCE = {"openai": _ref_openai, "anthropic": _ref_anthropic, "responses": _ref_responses}

_roles = st.sampled_from(["system", "user", "assistant", "tool", "developer", "function", "human", "ai", "x"])
_values = st.one_of(st.none(), st.text(max_size=3), st.integers(), st.lists(st.integers(), max_size=1))
_blocks = st.fixed_dictionaries({"type": st.sampled_from(["text", "tool_use", "tool_result", "thinking", "image",
                                                          "image_url", "input_text", "output_text", "refusal"])},
                                optional={"source": st.just({}), "text": st.just("t")})
_item = st.dictionaries(
    st.sampled_from(["role", "content", "type", "tool_calls", "function_call", "data", "lc", "name"]),
    st.one_of(_roles, _values, st.lists(st.one_of(_blocks, st.text(max_size=2)), max_size=3),
              st.sampled_from(["message", "function_call", "reasoning", "human", "constructor"])),
    max_size=4)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(_item, st.integers(), st.text(max_size=2)), max_size=6))
def test_each_detector_scores_as_its_reference_loop(items):
    for name, ref in REFERENCE.items():
        assert FORMATS[name].detect(items) == ref(items), name


@pytest.mark.parametrize("path", sorted(SAMPLES.glob("*.json")), ids=lambda p: p.name)
def test_detection_of_every_sample_matches_the_reference(path):
    doc = json.loads(path.read_text())
    items = doc.get("messages", doc.get("input")) if isinstance(doc, dict) else doc
    if not isinstance(items, list) or not items:
        pytest.skip("not a message list")
    for name, ref in REFERENCE.items():
        assert FORMATS[name].detect(items) == ref(items), name
    assert isinstance(detect(items), str) if max(f.detect(items) for f in FORMATS.values()) > 0 else True


# ---------------------------------------------------------------- the short path for plain chat


class _Item(dict):
    """A dict subclass: the reader's per-item loop takes it (the short path wants exact dicts)."""


@settings(max_examples=200, deadline=None)
@given(st.lists(st.fixed_dictionaries({"role": st.sampled_from(["system", "user", "assistant"]),
                                       "content": st.text(max_size=8)}), min_size=1, max_size=8))
def test_plain_chat_reads_to_the_messages_of_the_full_loop(items):
    fast = openai_chat.read(items, ReadContext())
    slow = openai_chat.read([_Item(m) for m in items], ReadContext())
    assert fast == slow
    assert [m.role for m in fast] == [m["role"] for m in items]


def test_one_unplain_message_sends_the_list_through_the_full_loop():
    items = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
             {"role": "tool", "tool_call_id": "c1", "content": "ok"}, {"role": "user", "content": ["a"]}]
    out = openai_chat.read(items, ReadContext())
    assert out[1].tool_calls[0].id == "c1" and out[2].tool_call_id == "c1" and out[3].content[0].text == "a"
    with pytest.raises(CtxlabError, match="unknown role"):
        openai_chat.read([{"role": "user", "content": "a"}, {"role": "robot", "content": "b"}], ReadContext())


def test_plain_messages_share_one_empty_extra_mapping():
    conv = loads(json.dumps([{"role": "user", "content": "a"}, {"role": "assistant", "content": "b", "refusal": None},
                             {"role": "user", "content": "c"}]))
    assert conv.messages[0].extra is conv.messages[2].extra and not conv.messages[0].extra
    assert dict(conv.messages[1].extra) == {"refusal": None}  # unknown fields are still kept


# ---------------------------------------------------------------- depth check


def _depth(value):
    if isinstance(value, dict):
        return 1 + max(map(_depth, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(_depth, value), default=0)
    return 0


_json_values = st.recursive(st.one_of(st.none(), st.integers(), st.text(max_size=2)),
                            lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                    st.dictionaries(st.text(max_size=2), inner, max_size=3)),
                            max_leaves=30)


@settings(max_examples=300, deadline=None)
@given(_json_values, st.integers(1, 8))
def test_depth_check_refuses_exactly_what_nests_deeper_than_the_limit(value, limit):
    if _depth(value) > limit:
        with pytest.raises(NestingTooDeepError, match=f"deeper than {limit} levels"):
            depth_check(value, limit)
    else:
        depth_check(value, limit)


def test_depth_error_names_the_path():
    with pytest.raises(NestingTooDeepError) as e:
        depth_check({"messages": [{"role": "user", "content": [[[["x"]]]]}]}, 5)
    assert e.value.where == "$.messages[0].content[0][0]"  # the 6th level: root, list, message, content, [0], [0]


# ---------------------------------------------------------------- Message and the collector


def test_message_init_keeps_the_dataclass_contract():
    m = Message("tool", "r", tool_call_id="c1", is_error=True)
    assert (m.role, m.content, m.tool_call_id, m.is_error, m.name, m.tool_calls, m.id) == \
        ("tool", "r", "c1", True, None, (), None)
    assert Message("user").extra is Message("assistant").extra
    with pytest.raises(TypeError):
        Message()  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        Message("user", bogus=1)  # type: ignore[call-arg]
    with pytest.raises(AttributeError):
        m.role = "user"  # type: ignore[misc]
    assert Part("text", "x").data == {} and ToolCall("i", "n").arguments == "{}"


def test_reading_leaves_the_garbage_collector_as_it_was():
    assert gc.isenabled()
    loads(json.dumps([{"role": "user", "content": "hi"}]))
    assert gc.isenabled()
    with pytest.raises(CtxlabError):
        loads("[{]")
    assert gc.isenabled()
    gc.disable()
    try:
        loads(json.dumps([{"role": "user", "content": "hi"}]))
        assert not gc.isenabled()  # a caller's choice is kept
    finally:
        gc.enable()


def test_langchain_detection_still_needs_every_item_typed():
    assert langchain.detect([{"type": "human", "data": {"content": "x"}}]) == 3
    assert langchain.detect([{"type": "human", "data": {"content": "x"}}, 3]) == 0
