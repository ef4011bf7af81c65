"""Open models' chat templates, rendered as the text their tokenizer reads: the framing tokens of
DeepSeek and Qwen requests, counted exactly.

``render(template, messages, tools, thinking)`` returns the prompt as ``Piece`` objects, one per
message (plus the tool block and the reply priming), whose texts joined are the prompt. The rules
follow the models' published templates (written here, not copied):

* ``deepseek_v32``: DeepSeek-V3.2's ``encoding/encoding_dsv32.py`` (Hugging Face
  deepseek-ai/DeepSeek-V3.2, MIT), for ``deepseek-v3.2`` (open weights). BOS first; a system
  message is its bare text, the tool block after it (``## Tools`` ..., one JSON schema per line); a user message is
  ``<｜User｜>text<｜Assistant｜>`` then ``<think>`` (the newest user message, thinking on) or
  ``</think>``; tool calls are DSML ``invoke`` blocks with one ``parameter`` per argument; results
  are ``<result>`` lines inside one ``<function_results>`` block per call message; an assistant
  message after the newest user message carries its reasoning before ``</think>`` when thinking
  is on, and earlier reasoning is dropped (the template's ``drop_thinking``).
* ``deepseek_v4``: DeepSeek-V4's ``encoding_dsv4.py`` (as vLLM ships it), the model the API's
  ``deepseek-v4-flash`` / ``deepseek-v4-pro`` and, since April 2026, the aliases ``deepseek-chat``
  (thinking off) and ``deepseek-reasoner`` (thinking on) serve. Differences from V3.2: tool results
  and any user text after them are merged into one user turn of ``<tool_result>`` blocks joined by
  blank lines; ``<｜Assistant｜>`` with ``<think>`` or ``</think>`` follows every user turn that an
  assistant message follows (or that ends the prompt); calls are a ``tool_calls`` DSML block; and
  when tools are given, reasoning is never dropped (every assistant message carries its own, and
  every user turn opens a think block in thinking mode).
* ``qwen3`` / ``qwen25``: Qwen3's and Qwen2.5's ``chat_template`` (ChatML): every message is
  ``<|im_start|>role\\ntext<|im_end|>\\n``; tools go into the first system message as a ``# Tools``
  section with one JSON object per tool (``json.dumps`` spacing, as Jinja's ``tojson``); calls are
  ``<tool_call>`` JSON lines; consecutive results share one user message of ``<tool_response>``
  blocks; Qwen3 writes the reasoning of assistant messages after the newest user query as
  ``<think>\\n...\\n</think>\\n\\n``; the reply is primed with ``<|im_start|>assistant\\n`` (and an
  empty think block when thinking is off). Qwen2.5 adds its default system prompt when none is
  given and has no reasoning.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Callable, Sequence

from .conversation import Message, ToolDef

TEMPLATES = ("deepseek_v4", "deepseek_v32", "qwen3", "qwen25")


@dataclass(frozen=True, slots=True)
class Piece:
    """A stretch of the rendered prompt: ``kind`` is ``message`` (with its ``index``), ``tools``
    or ``priming`` (BOS and the reply's opening)."""

    kind: str
    index: int | None
    text: str


def _json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False)


def message_text(m: Message, notes: set[str]) -> str:
    """The text a template writes for a message's content: text parts joined; an image or an
    unmodelled part is written as its JSON and noted (no rule for it here)."""
    if isinstance(m.content, str):
        return m.content
    out = []
    for p in m.content:
        if p.type in ("text", "refusal"):
            out.append(p.text)
        elif p.type not in ("thinking", "redacted_thinking"):
            notes.add(f"content blocks of type {p.type!r}: the chat template has no rule for them; "
                      "counted as their JSON text")
            out.append(p.raw_json())
    return "".join(out)


def reasoning_text(m: Message) -> str:
    """The reasoning an assistant message carries (DeepSeek ``reasoning_content``, a thinking block)."""
    if isinstance(m.content, str):
        return ""
    return "".join(p.text for p in m.content if p.type == "thinking")


def _last_user(messages: Sequence[Message]) -> int:
    return max((i for i, m in enumerate(messages) if m.role == "user"), default=-1)


def _tool_schema(t: ToolDef) -> dict:
    return {"name": t.name, "description": t.description, "parameters": t.parameters}


# --- DeepSeek-V3.2 ---------------------------------------------------------------------------

_DSML = "｜DSML｜"
_DS_TOOLS = (
    "## Tools\nYou have access to a set of tools you can use to answer the user's question.\n"
    "You can invoke functions by writing a \"<{d}function_calls>\" block like the following as part of your "
    "reply to the user:\n<{d}function_calls>\n<{d}invoke name=\"$FUNCTION_NAME\">\n"
    "<{d}parameter name=\"$PARAMETER_NAME\" string=\"true|false\">$PARAMETER_VALUE</{d}parameter>\n...\n"
    "</{d}invoke>\n<{d}invoke name=\"$FUNCTION_NAME2\">\n...\n</{d}invoke>\n</{d}function_calls>\n"
    "String and scalar parameters should be specified as is without any escaping or quotes, while lists and "
    "objects should use JSON format. The \"string\" attribute should be set to \"true\" for string type "
    "parameters and \"false\" for other types (numbers, booleans, arrays, objects).\n"
    "If the thinking_mode is enabled, then after function results you should strongly consider outputting a "
    "thinking block. Here is an example:\n<{d}function_calls>\n...\n</{d}function_calls>\n<function_results>\n"
    "...\n</function_results>\n<think>...thinking about results</think>\n"
    "Here are the functions available in JSONSchema format:\n<functions>\n{schemas}\n</functions>\n")


def _dsml_arguments(arguments: str, notes: set[str]) -> str:
    try:
        args = json.loads(arguments) if arguments.strip() else {}
    except ValueError:
        args = None
    if not isinstance(args, dict):
        notes.add("tool-call arguments that are not a JSON object: DSML has no form for them; counted as their text")
        return arguments
    return "\n".join(
        f'<{_DSML}parameter name="{k}" string="{"true" if isinstance(v, str) else "false"}">'
        f'{v if isinstance(v, str) else _json(v)}</{_DSML}parameter>' for k, v in args.items())


def _dsml_calls(m: Message, block: str, notes: set[str]) -> str:
    """An assistant message's calls as a DSML block named ``block`` (empty without calls)."""
    if not m.tool_calls:
        return ""
    invokes = "\n".join(f'<{_DSML}invoke name="{c.name}">\n{_dsml_arguments(c.arguments, notes)}\n</{_DSML}invoke>'
                        for c in m.tool_calls)
    return f"\n\n<{_DSML}{block}>\n{invokes}\n</{_DSML}{block}>"


def _ds_assistant(m: Message, after_last_user: bool, thinking: bool, notes: set[str]) -> str:
    calls = _dsml_calls(m, "function_calls", notes)
    think = reasoning_text(m) + "</think>" if thinking and after_last_user else ""
    return f"{think}{message_text(m, notes)}{calls}<｜end▁of▁sentence｜>"


def _ds_tool(messages: Sequence[Message], i: int, last_user: int, thinking: bool, notes: set[str]) -> str:
    first = i == 0 or messages[i - 1].role != "tool"
    last = i + 1 == len(messages) or messages[i + 1].role != "tool"
    text = ("\n\n<function_results>" if first else "") + f"\n<result>{message_text(messages[i], notes)}</result>"
    if last:
        text += "\n</function_results>\n\n" + ("<think>" if thinking and i >= last_user else "</think>")
    return text


def _ds_head(messages: Sequence[Message], tools: Sequence[ToolDef], template: str) -> tuple[list[Piece], str, int]:
    """A DeepSeek prompt's start: the BOS piece, the tool block (``template`` filled with the tools'
    schemas; empty without tools) and where it goes (after the first system message; first, as its
    own piece, when there is none: -1)."""
    pieces = [Piece("priming", None, "<｜begin▁of▁sentence｜>")]
    tool_block = ("\n\n" + template.format(d=_DSML, schemas="\n".join(_json(_tool_schema(t)) for t in tools))
                  if tools else "")
    tools_at = next((i for i, m in enumerate(messages) if m.role == "system"), -1)
    if tool_block and tools_at < 0:
        pieces.append(Piece("tools", None, tool_block))
    return pieces, tool_block, tools_at


def render_deepseek(messages: Sequence[Message], tools: Sequence[ToolDef], thinking: bool,
                    notes: set[str]) -> list[Piece]:
    """The DeepSeek-V3.2 prompt of a request, as pieces."""
    last_user = _last_user(messages)
    pieces, tool_block, tools_at = _ds_head(messages, tools, _DS_TOOLS)
    for i, m in enumerate(messages):
        if m.role == "system":
            text = message_text(m, notes)
        elif m.role == "user":
            text = (f"<｜User｜>{message_text(m, notes)}<｜Assistant｜>"
                    + ("<think>" if thinking and i == last_user else "</think>"))
        elif m.role == "tool":
            text = _ds_tool(messages, i, last_user, thinking, notes)
        else:
            text = _ds_assistant(m, i > last_user, thinking, notes)
        pieces.append(Piece("message", i, text))
        if i == tools_at and tool_block:
            pieces.append(Piece("tools", None, tool_block))
    return pieces


# --- DeepSeek-V4 ----------------------------------------------------------------------------

_DS4_TOOLS = (
    "## Tools\n\nYou have access to a set of tools to help answer the user's question. You can invoke tools by writing "
    "a \"<{d}tool_calls>\" block like the following:\n\n<{d}tool_calls>\n<{d}invoke name=\"$TOOL_NAME\">\n"
    "<{d}parameter name=\"$PARAMETER_NAME\" string=\"true|false\">$PARAMETER_VALUE</{d}parameter>\n...\n"
    "</{d}invoke>\n<{d}invoke name=\"$TOOL_NAME2\">\n...\n</{d}invoke>\n</{d}tool_calls>\n\n"
    "String parameters should be specified as is and set `string=\"true\"`. For all other types (numbers, booleans, "
    "arrays, objects), pass the value in JSON format and set `string=\"false\"`.\n\n"
    "If thinking_mode is enabled (triggered by <think>), you MUST output your complete reasoning inside "
    "<think>...</think> BEFORE any tool calls or final response.\n\n"
    "Otherwise, output directly after </think> with tool calls or final response.\n\n"
    "### Available Tool Schemas\n\n{schemas}\n\n"
    "You MUST strictly follow the above defined tool name and parameter schemas to invoke tool calls.\n")


def _ds4_results_order(messages: Sequence[Message], i: int) -> list[int]:
    """Indexes of the run of tool messages starting at ``i``, in the order of the calls they
    answer (the encoding sorts results by the preceding assistant message's call order)."""
    j = i
    while j < len(messages) and messages[j].role == "tool":
        j += 1
    k = i - 1
    while k >= 0 and messages[k].role != "assistant":
        k -= 1
    order = {c.id: n for n, c in enumerate(messages[k].tool_calls)} if k >= 0 else {}
    return sorted(range(i, j), key=lambda x: order.get(messages[x].tool_call_id or "", 0))


def _ds4_turns(messages: Sequence[Message]) -> list[list[int]]:
    """Messages grouped as V4 renders them: a run of tool messages and the user messages right
    after it (or a run of user messages) is one user turn; anything else is a turn of its own."""
    turns: list[list[int]] = []
    i = 0
    while i < len(messages):
        m = messages[i]
        if m.role in ("tool", "user"):
            turn = _ds4_results_order(messages, i) if m.role == "tool" else [i]
            i = max(turn) + 1 if m.role == "tool" else i + 1
            while i < len(messages) and messages[i].role in ("tool", "user"):
                more = _ds4_results_order(messages, i) if messages[i].role == "tool" else [i]
                turn += more
                i = max(more) + 1
            turns.append(turn)
        else:
            turns.append([i])
            i += 1
    return turns


def render_deepseek_v4(messages: Sequence[Message], tools: Sequence[ToolDef], thinking: bool,
                       notes: set[str]) -> list[Piece]:
    """The DeepSeek-V4 prompt of a request, as pieces."""
    turns = _ds4_turns(messages)
    kinds = ["user" if messages[t[0]].role in ("user", "tool") else messages[t[0]].role for t in turns]
    last_user = max((n for n, k in enumerate(kinds) if k == "user"), default=-1)
    keep_reasoning = bool(tools)  # the encoding never drops reasoning when tools are given
    pieces, tool_block, tools_at = _ds_head(messages, tools, _DS4_TOOLS)
    for n, turn in enumerate(turns):
        kind = kinds[n]
        if kind == "user":
            for k, i in enumerate(turn):
                m = messages[i]
                body = message_text(m, notes)
                text = f"<tool_result>{body}</tool_result>" if m.role == "tool" else body
                pieces.append(Piece("message", i, ("<｜User｜>" if k == 0 else "\n\n") + text))
            following = turns[n + 1] if n + 1 < len(turns) else None
            if following is None or kinds[n + 1] == "assistant":
                opens = thinking and (keep_reasoning or n >= last_user)
                pieces[-1] = Piece("message", pieces[-1].index,
                                   pieces[-1].text + "<｜Assistant｜>" + ("<think>" if opens else "</think>"))
            continue
        i = turn[0]
        m = messages[i]
        if kind == "system":
            pieces.append(Piece("message", i, message_text(m, notes)))
            if i == tools_at and tool_block:
                pieces.append(Piece("tools", None, tool_block))
            continue
        calls = _dsml_calls(m, "tool_calls", notes)
        think = reasoning_text(m) + "</think>" if thinking and (keep_reasoning or n > last_user) else ""
        pieces.append(Piece("message", i, f"{think}{message_text(m, notes)}{calls}<｜end▁of▁sentence｜>"))
    return pieces


# --- Qwen (ChatML) ---------------------------------------------------------------------------

_QWEN25_SYSTEM = "You are Qwen, created by Alibaba Cloud. You are a helpful assistant."
_QWEN_TOOLS_HEAD = ("# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
                    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>")
_QWEN_TOOLS_TAIL = ("\n</tools>\n\nFor each function call, return a json object with function name and "
                    "arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n"
                    "{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n")


def _qwen_arguments(arguments: str, qwen3: bool) -> str:
    if qwen3:
        return arguments  # Qwen3's template writes a string argument as it is
    try:
        return _json(json.loads(arguments))
    except ValueError:
        return _json(arguments)


def _qwen_assistant(m: Message, after_query: bool, is_last: bool, qwen3: bool, notes: set[str]) -> str:
    content, reasoning = message_text(m, notes), reasoning_text(m)
    if qwen3 and after_query and (is_last or reasoning):
        text = f"<|im_start|>assistant\n<think>\n{reasoning.strip(chr(10))}\n</think>\n\n{content.lstrip(chr(10))}"
    else:
        text = f"<|im_start|>assistant\n{content}"
    for j, c in enumerate(m.tool_calls):
        if j or content:
            text += "\n"
        text += f'<tool_call>\n{{"name": "{c.name}", "arguments": {_qwen_arguments(c.arguments, qwen3)}}}\n</tool_call>'
    return text + "<|im_end|>\n"


def _qwen_tool(messages: Sequence[Message], i: int, notes: set[str]) -> str:
    first = i == 0 or messages[i - 1].role != "tool"
    last = i + 1 == len(messages) or messages[i + 1].role != "tool"
    body = message_text(messages[i], notes)
    text = ("<|im_start|>user" if first else "") + f"\n<tool_response>\n{body}\n</tool_response>"
    return text + ("<|im_end|>\n" if last else "")


def render_qwen(messages: Sequence[Message], tools: Sequence[ToolDef], thinking: bool, notes: set[str],
                qwen3: bool = True) -> list[Piece]:
    """The Qwen3 (or Qwen2.5) ChatML prompt of a request, as pieces."""
    pieces: list[Piece] = []
    first_system = bool(messages) and messages[0].role == "system"
    default = "" if qwen3 else _QWEN25_SYSTEM
    if tools:
        head = message_text(messages[0], notes) if first_system else default
        schemas = "".join("\n" + _json({"type": "function", "function": _tool_schema(t)}) for t in tools)
        if first_system:
            pieces.append(Piece("message", 0, f"<|im_start|>system\n{head}\n\n"))
        prefix = "" if first_system else "<|im_start|>system\n" + (f"{head}\n\n" if head else "")
        pieces.append(Piece("tools", None, prefix + _QWEN_TOOLS_HEAD + schemas + _QWEN_TOOLS_TAIL))
    elif not first_system and default:
        pieces.append(Piece("priming", None, f"<|im_start|>system\n{default}<|im_end|>\n"))
    last_user = _last_user(messages)
    for i, m in enumerate(messages):
        if i == 0 and first_system and tools:
            continue
        if m.role in ("system", "user"):
            text = f"<|im_start|>{m.role}\n{message_text(m, notes)}<|im_end|>\n"
        elif m.role == "tool":
            text = _qwen_tool(messages, i, notes)
        else:
            text = _qwen_assistant(m, i > last_user, i == len(messages) - 1, qwen3, notes)
        pieces.append(Piece("message", i, text))
    opening = "<|im_start|>assistant\n" + ("<think>\n\n</think>\n\n" if qwen3 and not thinking else "")
    pieces.append(Piece("priming", None, opening))
    return pieces


Renderer = Callable[[Sequence[Message], Sequence[ToolDef], bool, set], list[Piece]]

RENDERERS: dict[str, Renderer] = {
    "deepseek_v4": render_deepseek_v4,
    "deepseek_v32": render_deepseek,
    "qwen3": render_qwen,
    "qwen25": lambda messages, tools, thinking, notes: render_qwen(messages, tools, thinking, notes, qwen3=False),
}
"""Template name -> renderer (messages, tools, thinking, notes) -> pieces."""


def render(template: str, messages: Sequence[Message], tools: Sequence[ToolDef] = (), thinking: bool = False,
           notes: set[str] | None = None) -> list[Piece]:
    """The prompt of a request under ``template`` as pieces; ``notes`` collects what was estimated."""
    return RENDERERS[template](messages, tools, thinking, set() if notes is None else notes)


def group_pieces(pieces: Sequence[Piece], specials: frozenset[str]) -> list[list[Piece]]:
    """Pieces in runs whose joints fall on a special token. A tokenizer splits special tokens out
    before anything else, so the prompt's count is the sum of its runs' counts (a joint inside
    ordinary text, e.g. a system text and the tool block, could merge across it)."""
    ends = tuple(specials)
    runs: list[list[Piece]] = []
    for p in pieces:
        if runs and not (runs[-1][-1].text.endswith(ends) or p.text.startswith(ends)):
            runs[-1].append(p)
        else:
            runs.append([p])
    return runs


__all__ = ["RENDERERS", "TEMPLATES", "group_pieces", "message_text", "Piece", "reasoning_text", "render",
           "render_deepseek", "render_deepseek_v4", "render_qwen"]
