"""Token counts: OpenAI's own reported numbers, offline loading, model mapping, caching."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from ctxlab import Message, TokenCounter, ToolCall, count_tokens, loads, parse_tools
from ctxlab.errors import UnknownModelError
from ctxlab.conversation import Part
from ctxlab.tokens import CATEGORIES, NOTE_CALLS, NOTE_IMAGES, _Counts

from ..conftest import SHARED, needs_shared

REFERENCE = SHARED / "openai-cookbook-token-counts" / "token_count_reference.json"


def _reference_cases():
    if not REFERENCE.exists():
        return []
    data = json.loads(REFERENCE.read_text())
    cases = []
    for ex in data["chat_examples"]:
        for r in ex["results"]:
            model = r["model"].split(" ")[0]
            if "alias at the time" in r["model"]:
                model = "gpt-3.5-turbo-0301"  # the notebook records that the alias then pointed to 0301
            cases.append(pytest.param(ex["request"], model, r["api_prompt_tokens"], id=f"{ex['id']}-{r['model']}"))
    return cases


@needs_shared
@pytest.mark.parametrize("request_body,model,expected", _reference_cases())
def test_reproduces_every_prompt_token_count_the_openai_api_reported(request_body, model, expected):
    conv = loads(json.dumps(request_body))
    assert count_tokens(conv, model=model).total == expected


@needs_shared
def test_token_ids_match_the_cookbook_strings():
    data = json.loads(REFERENCE.read_text())
    from ctxlab._encodings import get_encoding
    checked = 0
    for s in data["string_examples"]:
        if s["encoding"] in ("cl100k_base", "o200k_base"):
            assert get_encoding(s["encoding"]).encode(s["text"]) == s["token_ids"]
            checked += 1
    assert checked == 8


def test_encodings_load_with_no_network_and_an_empty_cache(tmp_path):
    code = (
        "import socket\n"
        "def refuse(*a, **k): raise OSError('network disabled by the test')\n"
        "socket.socket.connect = refuse\nsocket.create_connection = refuse\n"
        "from ctxlab import TokenCounter\n"
        "print(TokenCounter('gpt-4o').text('tiktoken is great!'), TokenCounter('gpt-4').text('2 + 2 = 4'))\n"
    )
    env = {**os.environ, "TIKTOKEN_CACHE_DIR": str(tmp_path / "cache")}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["6", "7"]
    assert len(list((tmp_path / "cache").iterdir())) == 2


def test_a_corrupted_cache_file_is_replaced_by_the_bundled_one(tmp_path, monkeypatch):
    from ctxlab import _encodings
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    path = _encodings.seed_cache("cl100k_base")
    with open(path, "wb") as f:
        f.write(b"not a bpe file")
    assert _encodings.seed_cache("cl100k_base") == path
    import hashlib
    # tiktoken's own expected sha256 for cl100k_base (tiktoken_ext.openai_public)
    assert hashlib.sha256(open(path, "rb").read()).hexdigest() == \
        "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"


@pytest.mark.parametrize("model,encoding,exact", [
    ("gpt-4o-2024-08-06", "o200k_base", True), ("gpt-4o-mini", "o200k_base", True),
    ("gpt-4.1-mini", "o200k_base", True), ("o3-mini", "o200k_base", True), ("gpt-5", "o200k_base", True),
    ("gpt-4-0613", "cl100k_base", True), ("gpt-3.5-turbo-0125", "cl100k_base", True),
    ("claude-sonnet-4-5-20250929", "cl100k_base", False), ("llama-3.1-70b", "cl100k_base", False),
])
def test_each_model_gets_its_encoding_and_others_are_marked_estimates(model, encoding, exact):
    c = count_tokens([Message("user", "hello")], model=model)
    assert c.encoding == encoding
    assert c.exact is exact
    if not exact:
        assert any("estimate" in a for a in c.approximations)


def test_unknown_model_fails_with_the_known_ones():
    with pytest.raises(UnknownModelError) as e:
        TokenCounter("gpt-99-turbo")
    assert "gpt-4o" in str(e.value) and "gpt-99-turbo" in str(e.value)


def _tool_conversation() -> list[Message]:
    return [
        Message("system", "You are a support agent."),
        Message("user", "Where is order A-1001?"),
        Message("assistant", "", tool_calls=(ToolCall("c1", "get_order", '{"order_id":"A-1001"}'),
                                             ToolCall("c2", "get_shipment", '{"order_id":"A-1001"}'))),
        Message("tool", '{"status":"shipped"}', tool_call_id="c1"),
        Message("tool", '{"carrier":"UPS","eta":"2026-11-24"}', tool_call_id="c2"),
        Message("assistant", "Order A-1001 shipped with UPS; it arrives on 2026-11-24."),
    ]


def test_breakdown_by_category_adds_up_to_the_total():
    tools = parse_tools([{"name": "get_order", "description": "Look up an order.",
                          "input_schema": {"type": "object", "properties": {"order_id": {"type": "string"}}}}])
    c = count_tokens(_tool_conversation(), model="gpt-4o", tools=tools)
    assert set(c.by_category) == set(CATEGORIES)
    assert sum(c.by_category.values()) == c.total
    assert sum(c.message_tokens) + c.tools_tokens + c.reply_priming == c.total
    assert c.message_categories == ("system", "user", "tool_calls", "tool_results", "tool_results", "assistant_text")
    assert c.by_category["tool_definitions"] == c.tools_tokens > 0
    assert c.exact is False and NOTE_CALLS in c.approximations


def test_tool_call_arguments_are_counted_from_their_original_text():
    compact = [Message("assistant", "", tool_calls=(ToolCall("c1", "f", '{"a":1,"b":[1,2,3]}'),))]
    spaced = [Message("assistant", "", tool_calls=(ToolCall("c1", "f", '{"a": 1, "b": [1, 2, 3]}'),))]
    assert count_tokens(spaced).total > count_tokens(compact).total


def test_the_same_tool_counts_the_same_in_openai_anthropic_and_mcp_shapes():
    schema = {"type": "object", "properties": {"city": {"type": "string", "description": "City name."},
                                               "unit": {"type": "string", "enum": ["c", "f"]}}}
    shapes = [
        [{"type": "function", "function": {"name": "weather", "description": "Get weather.", "parameters": schema}}],
        [{"name": "weather", "description": "Get weather.", "input_schema": schema}],
        {"tools": [{"name": "weather", "description": "Get weather.", "inputSchema": schema}]},
    ]
    counts = {TokenCounter("gpt-4o").tools(parse_tools(s)) for s in shapes}
    assert len(counts) == 1 and counts.pop() > 12


def test_images_are_estimated_and_say_so():
    msg = Message("user", (Part("text", "what is this?"), Part("image", data={"url": "https://x/y.png", "detail": "low"})))
    c = count_tokens([msg])
    assert NOTE_IMAGES in c.approximations and not c.exact
    assert c.total == count_tokens([Message("user", "what is this?")]).total + 85


def test_recount_after_one_edit_encodes_only_the_edited_text():
    class CountingEncoding:
        def __init__(self, inner):
            self.inner, self.texts = inner, []

        def encode_ordinary(self, t):
            self.texts.append(t)
            return self.inner.encode_ordinary(t)

        def encode_ordinary_batch(self, ts):
            self.texts.extend(ts)
            return self.inner.encode_ordinary_batch(ts)

    counter = TokenCounter("gpt-4o")
    counter._cache = _Counts()
    counter._enc = spy = CountingEncoding(counter._enc)
    msgs = _tool_conversation()
    first = counter.count(msgs).total
    assert len(spy.texts) > 5
    spy.texts.clear()
    msgs[1] = Message("user", "Where is order A-1002?")
    second = counter.count(msgs).total
    assert spy.texts == ["Where is order A-1002?"]
    assert second == first  # same length ids, same token count


def test_special_token_text_is_counted_as_plain_text():
    # "<|endoftext|>" pasted by a user is ordinary text to the API; tiktoken's encode() would raise
    assert TokenCounter("gpt-4o").text("<|endoftext|>") > 1


def test_the_count_cache_lets_go_of_text_past_its_character_limit(monkeypatch):
    from ctxlab import tokens
    monkeypatch.setattr(tokens, "_CACHE_CHAR_LIMIT", 10_000)
    counter = TokenCounter("gpt-4o")
    counter._cache = _Counts()
    texts = [f"text {i} " + "word " * 200 for i in range(50)]  # about 50,000 characters in all
    counter.prime(texts)
    assert sum(map(len, counter._cache)) <= 10_000 and counter._cache.chars <= 10_000
    assert counter.text(texts[0]) == len(counter._enc.encode_ordinary(texts[0]))
