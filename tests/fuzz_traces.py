"""Hostile-input fuzzing of the trace readers: the agents' traces (Claude Code, Codex,
SWE-agent, mini-swe-agent, OpenHands V0 and V1) and the production traces (OTel GenAI spans,
Langfuse, LangSmith) of tests/data, broken with values of the wrong type where the readers look
(ids, content, tool calls, usage, start times), number-like strings that fool ``isdigit()``, and
deep trees (a span parent chain, content nested many levels), then run through the CLI. The
contract is the one of tests/fuzz.py: a located one-line error or valid JSON, never a crash.
"""
from __future__ import annotations

import copy
import json
from functools import lru_cache
from typing import Any

from hypothesis import strategies as st

from .conftest import ROOT, SAMPLES
from .fuzz import _get, _paths, _set
from .formats.test_formats_coding import V1_EVENTS

TRACE_SUFFIXES = (".json", ".jsonl", ".traj")  # the traces of tests/data/coding (not its README or a build log)
TRACE_FILES = sorted([*(p for p in (ROOT / "tests" / "data" / "coding").iterdir() if p.suffix in TRACE_SUFFIXES),
                      *(ROOT / "tests" / "data" / "production").glob("*.json*"),
                      SAMPLES / "coding" / "coding_agent_session.jsonl"])
#: the fields the readers read a typed value from: mutated more often than the rest
HOT_KEYS = frozenset({
    "id", "content", "tool_calls", "function", "arguments", "message", "messages", "action", "thought", "kind",
    "type", "role", "model", "usage", "usageDetails", "usage_metadata", "input", "output", "intValue",
    "stringValue", "startTimeUnixNano", "startTime", "start_time", "parentSpanId", "spanId", "parentObservationId",
    "llm_response_id", "tool_call_id", "tool_call_ids", "tool_call_metadata", "model_response", "choices",
    "llm_message", "tool_call", "observation", "history", "payload", "extra", "actions", "input_tokens",
    "output_tokens", "total_tokens", "prompt_tokens", "summary", "info", "parent_run_id", "child_runs",
})
#: values of a wrong type, and numbers written as text that pass ``str.isdigit()`` or look like one
WRONG = (None, 0, -1, 7, 1.5, True, "", "x", "\u00b2", "\u0663", "--5", "-5", "9" * 5_000, " 12 ", [], ["a"], [1],
         {}, {"a": 1}, [{"type": "text"}], [None], [[1]], {"type": 3})
#: levels of a deep tree that stays under the 64-level JSON limit
DEEP_LEVELS = 40
#: spans in a parent chain added to an OTel file (the grouping must stay linear in them)
CHAIN_SPANS = 1_500


@lru_cache(maxsize=None)
def trace_bases() -> tuple[tuple[str, bool, str], ...]:
    """(name, whether JSONL, JSON text of the parsed document) of every base trace."""
    out = []
    for path in TRACE_FILES:
        text = path.read_text(encoding="utf-8")
        jsonl = path.suffix == ".jsonl"
        doc = [json.loads(ln) for ln in text.splitlines() if ln.strip()] if jsonl else json.loads(text)
        if path.name.startswith("mini_swe_agent") and isinstance(doc, list):  # an older bare list: in its envelope
            doc = {"trajectory_format": "mini-swe-agent-1.1", "info": {"exit_status": "Submitted"}, "messages": doc}
        out.append((path.name, jsonl, json.dumps(doc)))
    out.append(("openhands_v1_items", False, json.dumps({"items": V1_EVENTS})))
    out.append(("openhands_v1.jsonl", True, json.dumps(V1_EVENTS)))
    return tuple(out)


def _op_wrong_type(draw, doc, done):
    paths = [p for p in _paths(doc) if p]
    hot = [p for p in paths if isinstance(p[-1], str) and p[-1] in HOT_KEYS]
    p = draw(st.sampled_from(hot if hot and draw(st.booleans()) else paths))
    value = copy.deepcopy(draw(st.sampled_from(WRONG)))
    done.append(f"set {p} = {str(value)[:20]!r}")
    return _set(doc, p, value)


def _op_deep_tree(draw, doc, done):
    """A container nested :data:`DEEP_LEVELS` deep in place of a list or object."""
    paths = [p for p in _paths(doc) if p and isinstance(_get(doc, p), (list, dict))]
    if paths:
        p = draw(st.sampled_from(paths))
        node: Any = draw(st.sampled_from([{"type": "text", "text": "x"}, "x", 1]))
        for _ in range(DEEP_LEVELS):
            node = [node] if draw(st.booleans()) else {"content": node}
        done.append(f"deep tree at {p}")
        _set(doc, p, node)
    return doc


def _op_span_chain(draw, doc, done):
    """OTel: :data:`CHAIN_SPANS` spans each the parent of the next, under the first span."""
    holder = _first_span_list(doc)
    if holder is None or not holder or not isinstance(holder[0], dict):
        return doc
    top = holder[0]
    parent = top.get("spanId")
    for n in range(CHAIN_SPANS):
        sid = f"c{n:015x}"
        holder.append({"traceId": top.get("traceId"), "spanId": sid, "parentSpanId": parent, "name": "step",
                       "startTimeUnixNano": str(1_764_000_000_000_000_000 + n), "attributes": []})
        parent = sid
    done.append(f"a chain of {CHAIN_SPANS} spans")
    return doc


def _first_span_list(doc: Any) -> list | None:
    for d in doc if isinstance(doc, list) else [doc]:
        try:
            found = d["resourceSpans"][0]["scopeSpans"][0]["spans"]
        except (KeyError, IndexError, TypeError):
            continue
        if isinstance(found, list):
            return found
    return None


def _op_record(draw, doc, done):
    """A record (JSONL line, event, history item) replaced by a value that is no object."""
    items = doc if isinstance(doc, list) else next(
        (doc[k] for k in ("history", "messages", "items", "data") if isinstance(doc, dict) and
         isinstance(doc.get(k), list)), None)
    if items:
        k = draw(st.integers(0, len(items) - 1))
        items[k] = copy.deepcopy(draw(st.sampled_from([[1, 2], "x", 5, None, [], {}])))
        done.append(f"record {k} = {str(items[k])[:20]!r}")
    return doc


_OPS = (_op_wrong_type, _op_wrong_type, _op_wrong_type, _op_deep_tree, _op_span_chain, _op_record)


@st.composite
def mutated_trace(draw) -> tuple[str, bytes, list[str]]:
    """(file suffix, input bytes, what was done) for one trace broken 1-3 ways."""
    name, jsonl, text = draw(st.sampled_from(trace_bases()))
    doc = json.loads(text)
    done = [name]
    for _ in range(draw(st.integers(1, 3))):
        doc = draw(st.sampled_from(_OPS))(draw, doc, done)
    if jsonl and isinstance(doc, list):
        data = "\n".join(json.dumps(r, ensure_ascii=False) for r in doc)
    else:
        data = json.dumps(doc, ensure_ascii=False)
    return (".jsonl" if jsonl else ".json"), data.encode("utf-8"), done
