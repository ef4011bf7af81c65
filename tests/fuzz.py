"""Hostile-input fuzzing of the CLI contract: hypothesis strategies that take real
conversations (the bundled samples and tau-bench runs) in OpenAI, Anthropic and LangChain form and
break them the way a messy log or an attacker would, plus the checker of the CLI contract.

The contract, for every command: exit 0, 1 (``validate`` only) or 2; on exit 2 exactly one stderr
line that starts with ``ctxlab:``, names a location and stays under :data:`MAX_ERROR_CHARS`; never a
traceback nor an "internal error"; stdout is valid UTF-8 (no lone surrogate) and valid JSON.
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import re
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable

from hypothesis import strategies as st

from ctxlab.cli import main
from ctxlab.formats import export, loads

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_data"
TAU = ROOT.parent / "shared" / "data" / "tau-bench" / "airline_trajectories_trials01.json"
FORMATS = ("openai", "anthropic", "langchain")
MAX_ERROR_CHARS = 400
#: how many tau-bench runs feed the mutations (all 100 in the long run)
LONG_RUN = int(os.environ.get("CTXLAB_FUZZ_EXAMPLES", "0") or 0) > 0
TAU_RUNS = 100 if LONG_RUN else 6
BIG = 1_000_000 if LONG_RUN else 200_000  # characters of a "huge string"
DEEP = 10_000  # nesting levels of a runaway document or arguments text
_DEEP_MARK = "\u0001ctxlab-fuzz-deep\u0001"
#: number literals JSON allows or Python's json reads beyond JSON: each must be read
#: exactly or refused with its line and column, and none may come out as NaN or Infinity
NUMBER_LITERALS = ("9" * 5_000, "-" + "1" * 4_301, "1" * 4_300, "1e400", "-1e400", "1e-400", "-0", "NaN",
                   "Infinity", "-Infinity", "123456789012345678901234567890", "1.5e308")
_NUMBER_MARK = "\u0001ctxlab-fuzz-number-{}\u0001"

COMMANDS: tuple[tuple[str, ...], ...] = (
    ("count",),
    ("validate",),
    ("convert", "--to", "anthropic"),
    ("apply", "--strategy", "clear_tool_results", "--param", "trigger_tokens=0", "--param", "keep=1"),
    ("apply", "--strategy", "hybrid", "--max-tokens", "2000"),  # runs middle_out and oldest_first
)
_LOCATION = re.compile(r"message \d+|\$|JSONL line \d+|\binput\b|line \d+|offset \d+|--[a-z-]+|\bFILE\b|"
                       r"\bformat\b|\btools?\b|item \d+")


# ---------------------------------------------------------------- base documents


@lru_cache(maxsize=None)
def base_documents() -> tuple[tuple[str, str, str], ...]:
    """(format, source name, JSON text) of every base conversation in each fuzzed format."""
    sources = [(p.stem, p.read_text(encoding="utf-8")) for p in sorted(SAMPLES.glob("*.json"))
               if p.name.startswith(("ecommerce", "parallel", "sql"))]
    if TAU.exists():
        runs = json.loads(TAU.read_text(encoding="utf-8"))[:TAU_RUNS]
        sources += [(f"tau-{r['task_id']}-{r['trial']}", json.dumps({"messages": r["traj"]})) for r in runs]
    out = []
    for name, text in sources:
        conv = loads(text)
        for fmt in FORMATS:
            out.append((fmt, name, json.dumps(export(conv, fmt).data, ensure_ascii=False)))
    return tuple(out)


def _messages(doc: Any) -> list | None:
    if isinstance(doc, list):
        return doc
    if isinstance(doc, dict) and isinstance(doc.get("messages"), list):
        return doc["messages"]
    return None


def _paths(node: Any, path: tuple = ()) -> list[tuple]:
    """Every path into the document (iterative: documents can be big)."""
    out, stack = [], [(node, path)]
    while stack:
        node, path = stack.pop()
        out.append(path)
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        stack.extend((child, (*path, key)) for key, child in items)
    out.sort(key=lambda p: [str(k) for k in p])
    return out


def _get(doc: Any, path: tuple) -> Any:
    for key in path:
        doc = doc[key]
    return doc


def _set(doc: Any, path: tuple, value: Any) -> Any:
    if not path:
        return value
    _get(doc, path[:-1])[path[-1]] = value
    return doc


# ---------------------------------------------------------------- mutations

_SPECIAL = ["\ud800", "\udc80", "\udfff", "\u2028", "\u2029", "\u0085", "\x00", "\ufeff", "\r\n", "\r",
            "\U0001F600", "\U0001F469\u200d\U0001F4BB", "\u0301", "\\", "\"", "\t", "\u202e"]


def _weird_values() -> st.SearchStrategy:
    return st.sampled_from([
        None, 0, 1, -1.5, 1e308, True, False, "", "x", "{bad", "[1]", [], [1], ["x"], {}, {"a": 1}, {"type": 1},
        {"type": "teleport"}, [{"type": "text"}], [None], "\ud800", "\udc80", "\x00", 2**70,
    ]) | st.just("BIG") | st.just("DEEP") | st.text(max_size=12)


def _materialize(value: Any) -> Any:
    if value == "BIG":
        return ("lorem ipsum dolor sit amet \u00e9\U0001F600 " * (BIG // 30 + 1))[:BIG]
    if value == "DEEP":
        return _DEEP_MARK
    return value


def _deep_arguments() -> st.SearchStrategy:
    return st.sampled_from([
        '{"a":' * DEEP + "1" + "}" * DEEP,
        "[" * DEEP + "]" * DEEP,
        '{"a":' + "[" * DEEP + "]" * DEEP + "}",
        "{bad", "[1]", "1", "null", '"text"', "", "   ", '{"a": 1} trailing', '{"a": "\\ud800"}',
        '{"a": "\\udc80"}', '{"city": "Z\u00fcrich", "n": 1}', '{"a":1,"a":2}', "{\"a\": NaN}",
    ]) | st.sampled_from(NUMBER_LITERALS).map(lambda n: '{"n": %s}' % n)


@st.composite
def mutated_document(draw) -> tuple[str, bytes, list[str]]:
    """(format, input bytes, what was done) for one real conversation broken 1-3 ways."""
    fmt, name, text = draw(st.sampled_from(base_documents()))
    doc = json.loads(text)
    done = [f"{fmt}:{name}"]
    for _ in range(draw(st.integers(1, 3))):
        op = draw(st.sampled_from(_OPS))
        doc = op(draw, doc, done)
    return fmt, _serialize(draw, doc, done), done


def _op_delete_key(draw, doc, done):
    paths = [p for p in _paths(doc) if p and isinstance(p[-1], str)]
    if paths:
        p = draw(st.sampled_from(paths))
        del _get(doc, p[:-1])[p[-1]]
        done.append(f"delete {p}")
    return doc


def _op_change_type(draw, doc, done):
    p = draw(st.sampled_from(_paths(doc)))
    value = _materialize(draw(_weird_values()))
    done.append(f"set {p} = {str(value)[:20]!r}")
    return _set(doc, p, value)


def _op_messages(draw, doc, done):
    msgs = _messages(doc)
    if not msgs:
        return doc
    i, j = draw(st.integers(0, len(msgs) - 1)), draw(st.integers(0, len(msgs) - 1))
    how = draw(st.sampled_from(["duplicate", "swap", "delete", "truncate", "empty"]))
    if how == "duplicate":
        msgs.insert(j, json.loads(json.dumps(msgs[i])))
    elif how == "swap":
        msgs[i], msgs[j] = msgs[j], msgs[i]
    elif how == "delete":
        del msgs[i]
    elif how == "truncate":
        del msgs[i:]
    else:
        msgs.clear()
    done.append(f"{how} messages {i} {j}")
    return doc


def _op_unknown_role(draw, doc, done):
    msgs = _messages(doc)
    if msgs and isinstance(msgs[0], dict):
        i = draw(st.integers(0, len(msgs) - 1))
        key = "role" if "role" in msgs[i] else "type"
        value = draw(st.sampled_from(["wizard", "", "Tool", "teleport", "x" * 100_000, "\ud800", "a\nb", None, 7]))
        if isinstance(msgs[i], dict):
            msgs[i][key] = value
            done.append(f"message {i} {key} = {str(value)[:20]!r}")
    return doc


_ID_KEYS = ("id", "tool_call_id", "tool_use_id", "call_id")


def _op_corrupt_id(draw, doc, done):
    paths = [p for p in _paths(doc) if p and p[-1] in _ID_KEYS]
    if paths:
        p = draw(st.sampled_from(paths))
        value = draw(st.sampled_from(["", "other", None, 12, "c\x00", "\ud800", "x" * 5000, ["a"]]))
        done.append(f"id {p} = {str(value)[:20]!r}")
        _set(doc, p, value)
    return doc


def _op_arguments(draw, doc, done):
    paths = [p for p in _paths(doc) if p and p[-1] in ("arguments", "input", "args")]
    if paths:
        p = draw(st.sampled_from(paths))
        value = draw(_deep_arguments() | _weird_values().map(_materialize))
        done.append(f"arguments {p} = {str(value)[:20]!r}")
        _set(doc, p, value)
    return doc


def _op_string(draw, doc, done):
    paths = [p for p in _paths(doc) if isinstance(_get(doc, p), str)]
    if paths:
        p = draw(st.sampled_from(paths))
        s = _get(doc, p)
        k = draw(st.integers(0, len(s)))
        special = draw(st.sampled_from(_SPECIAL))
        done.append(f"insert {special!r} in {p}")
        _set(doc, p, s[:k] + special + s[k:])
    return doc


def _op_key_string(draw, doc, done):
    """A key with a control character, a surrogate or a huge name."""
    paths = [p for p in _paths(doc) if isinstance(_get(doc, p), dict)]
    if paths:
        p = draw(st.sampled_from(paths))
        key = draw(st.sampled_from(["\ud800", "a\nb", "\x00", "k" * 100_000, "\u2028"]))
        _get(doc, p)[key] = draw(st.sampled_from(["v", 1, None, {"type": "teleport"}]))
        done.append(f"key {key[:10]!r} in {p}")
    return doc


def _op_tools(draw, doc, done):
    tools = doc.get("tools") if isinstance(doc, dict) else None
    if isinstance(tools, list) and tools and isinstance(tools[0], dict):
        t = tools[draw(st.integers(0, len(tools) - 1))]
        schema = t.get("function", t)
        key = next((k for k in ("parameters", "input_schema") if k in schema), "parameters")
        value = draw(st.sampled_from([7, "x", [], None, {"a": 1}, {"a": {"type": 3}}, {"a": {"enum": 5}}]))
        where = draw(st.sampled_from(["properties", "schema", "items"]))
        if where == "schema":
            schema[key] = value
        elif isinstance(schema.get(key), dict):
            schema[key][where if where == "properties" else "properties"] = (
                value if where == "properties" else {"x": {"type": "array", "items": value}})
        done.append(f"tool {where} = {value!r}")
    return doc


def _op_unknown_block(draw, doc, done):
    paths = [p for p in _paths(doc) if isinstance(_get(doc, p), list) and p and p[-1] == "content"]
    if paths:
        p = draw(st.sampled_from(paths))
        block = draw(st.sampled_from([{"type": "teleport"}, {"type": "teleport", "text": "x"}, {"type": "input_audio"},
                                      {"nope": 1}, "bare", {"type": ""}]))
        _get(doc, p).insert(draw(st.integers(0, len(_get(doc, p)))), block)
        done.append(f"block {block!r} in {p}")
    return doc


def _op_number(draw, doc, done):
    """A number literal of :data:`NUMBER_LITERALS` in place of any value (written raw by ``_serialize``)."""
    paths = [p for p in _paths(doc) if p]
    if paths:
        p = draw(st.sampled_from(paths))
        k = draw(st.integers(0, len(NUMBER_LITERALS) - 1))
        done.append(f"number {NUMBER_LITERALS[k][:12]} at {p}")
        _set(doc, p, _NUMBER_MARK.format(k))
    return doc


def _op_system_only(draw, doc, done):
    """Only the system messages left (a conversation with no user turn)."""
    msgs = _messages(doc)
    if msgs:
        kept = [m for m in msgs if isinstance(m, dict) and m.get("role") in ("system", "developer")]
        kept = kept or [{"role": "system", "content": "You are helpful. " * draw(st.integers(1, 400))}]
        if draw(st.booleans()):
            kept.append({"role": "system", "content": "Also: " + "be brief. " * draw(st.integers(1, 400))})
        msgs[:] = kept
        done.append(f"system messages only ({len(kept)})")
    return doc


_OPS: list[Callable] = [_op_delete_key, _op_change_type, _op_messages, _op_unknown_role, _op_corrupt_id,
                        _op_arguments, _op_string, _op_key_string, _op_tools, _op_unknown_block, _op_number,
                        _op_system_only]


def _serialize(draw, doc: Any, done: list[str]) -> bytes:
    """The document as JSON or JSONL bytes, then broken at the byte level (or not)."""
    ascii_only = draw(st.booleans())
    msgs = _messages(doc)
    if msgs is not None and draw(st.integers(0, 4)) == 0:
        text = "\n".join(json.dumps(m, ensure_ascii=ascii_only) for m in msgs)
        done.append("as JSONL")
    else:
        text = json.dumps(doc, ensure_ascii=ascii_only, indent=draw(st.sampled_from([None, 2])))
    text = text.replace(json.dumps(_DEEP_MARK), "[" * DEEP + "]" * DEEP)
    for k, literal in enumerate(NUMBER_LITERALS):
        text = text.replace(json.dumps(_NUMBER_MARK.format(k), ensure_ascii=ascii_only), literal)
    data = text.encode("utf-8", "surrogatepass")  # a raw lone surrogate becomes invalid UTF-8 bytes
    how = draw(st.sampled_from(["none"] * 6 + ["truncate", "bad byte", "nul", "bom", "crlf", "bom+crlf"]))
    if how != "none":
        done.append(how)
    k = draw(st.integers(0, len(data)))
    if how == "truncate":
        data = data[:k]
    elif how == "bad byte":
        data = data[:k] + draw(st.sampled_from([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x80"])) + data[k:]
    elif how == "nul":
        data = data[:k] + b"\x00" + data[k:]
    if how.startswith("bom"):
        data = b"\xef\xbb\xbf" + data
    if how.endswith("crlf"):
        data = data.replace(b"\n", b"\r\n")
    return data


# ---------------------------------------------------------------- the contract


def run_cli(argv: list[str]) -> tuple[int, str, str]:
    """``ctxlab ARGV`` in this process: (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


def check_contract(command: tuple[str, ...], code: int, out: str, err: str) -> None:
    """Assert the CLI contract for one run (messages say what broke)."""
    assert code in ((0, 1, 2) if command[0] == "validate" else (0, 2)), f"exit {code}: {err[:300]}"
    assert "Traceback" not in err and "internal error" not in err, err[:600]
    err.encode("utf-8")  # stderr is valid Unicode text (no lone surrogate)
    out.encode("utf-8")  # strict: a lone surrogate would reach stdout as an invalid byte
    if code == 2:
        lines = err.splitlines()
        assert len(lines) == 1 and err.endswith("\n") and out == "", f"{len(lines)} lines: {err[:600]!r}"
        line = lines[0]
        assert line.startswith("ctxlab: "), line[:300]
        assert len(line) < MAX_ERROR_CHARS, f"{len(line)} characters: {line[:600]!r}"
        assert _LOCATION.search(line), f"no location: {line!r}"
        assert not re.search(r"[\x00-\x1f\x7f\u2028\u2029\x85]", line), f"control character: {line!r}"
        return
    for line in err.splitlines():
        assert line.startswith(("note: ", "ctxlab: warning: ")), f"stray stderr line: {line[:300]!r}"
        assert len(line) < 4 * MAX_ERROR_CHARS, f"note of {len(line)} characters: {line[:300]!r}"
    text = out.strip()
    for doc in (text.splitlines() if "\n{" in text and not text.startswith("{\n") else [text]):
        json.loads(doc, parse_constant=_not_json)  # and never NaN or Infinity


def _not_json(literal: str) -> Any:
    raise AssertionError(f"{literal} written: not JSON")
