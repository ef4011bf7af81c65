"""LangSmith run exports: a root run with its child runs, or a list / JSONL of runs.

Follows the LangSmith run schema of the ``langsmith`` SDK 0.4 (``Run``: ``id``, ``name``,
``run_type`` llm / chain / tool / ..., ``inputs``, ``outputs``, ``error``, ``parent_run_id``,
``trace_id``, ``dotted_order``, ``start_time``, ``child_runs``, ``extra``) and LangChain's
``usage_metadata`` (``input_tokens``, which includes the cache, ``output_tokens``,
``input_token_details.cache_read`` / ``cache_creation``). Shapes read:

* a root run with nested ``child_runs`` (``client.read_run(id, load_child_runs=True)``), or a
  list of such roots;
* a flat list (or JSONL, or ``{"runs": [...]}``) of runs, as ``client.list_runs`` returns them:
  grouped by ``trace_id``, one conversation per trace.

Every run of type ``llm`` is one model call, in ``dotted_order`` (else ``start_time``) order. Its
``inputs.messages`` is the prompt: LangChain's serialized messages (a list of lists, one per
prompt of a batch: the first is read) or OpenAI / Anthropic message dicts; ``inputs.tools`` or
``extra.invocation_params.tools`` the tools. Its reply is ``outputs.generations[0][0].message``,
an OpenAI completion (``choices``), or an assistant message. Usage is read from the reply's
``usage_metadata``, else ``outputs.usage_metadata``, else the run's ``prompt_tokens`` /
``completion_tokens`` (with ``prompt_token_details.cache_read``). An llm run with ``error`` and
no outputs is a failed call.

Not carried (said in notes): chain, tool, retriever and other runs (what they did shows only
through the next prompt), feedback, attachments stored apart, and batched prompts after the first.
"""
from __future__ import annotations

from collections import Counter
from typing import Any

from ..errors import ShapeError, shown
from .langfuse import reply_items
from .tools import parse_tools
from ._runs import CallRecord, assemble, read_items, usage_of, whole
from ._trace import Trace, note_gaps, trace_format

NAME = "langsmith"
_RUN_TYPES = ("llm", "chain", "tool", "retriever", "embedding", "prompt", "parser")


def _is_run(r: Any) -> bool:
    return isinstance(r, dict) and r.get("run_type") in _RUN_TYPES and "id" in r and ("inputs" in r or "outputs" in r)


def _has_llm(r: dict, depth: int = 0) -> bool:
    if r.get("run_type") == "llm":
        return True
    kids = r.get("child_runs")
    return depth < 50 and isinstance(kids, list) and any(_has_llm(c, depth + 1) for c in kids if isinstance(c, dict))


def _run_list(doc: Any) -> list | None:
    if isinstance(doc, dict) and isinstance(doc.get("runs"), list):
        return doc["runs"]
    if isinstance(doc, list):
        return doc
    return None


def detect_doc(doc: Any) -> bool:
    """A LangSmith run (with child runs) or a list of runs, with at least one llm run."""
    if _is_run(doc):
        return _has_llm(doc)
    runs_ = _run_list(doc)
    return bool(runs_) and all(_is_run(r) for r in runs_[:200]) and any(_has_llm(r) for r in runs_)


def _flatten(run: dict, where: str, out: list[tuple[dict, str]], depth: int = 0) -> None:
    out.append((run, where))
    if depth > 200:
        raise ShapeError("child runs nest too deep", where=where)
    kids = run.get("child_runs") or []
    if not isinstance(kids, list):
        raise ShapeError(f"child_runs must be a list, found {type(kids).__name__}", where=f"{where}.child_runs")
    for k, c in enumerate(kids):
        if not isinstance(c, dict):
            raise ShapeError(f"a child run must be an object, found {type(c).__name__}", where=f"{where}.child_runs[{k}]")
        _flatten(c, f"{where}.child_runs[{k}]", out, depth + 1)


def _all_runs(doc: Any) -> list[tuple[dict, str]]:
    out: list[tuple[dict, str]] = []
    if isinstance(doc, dict) and not isinstance(doc.get("runs"), list):
        _flatten(doc, "$", out)
        return out
    for k, r in enumerate(_run_list(doc) or []):
        if not isinstance(r, dict):
            raise ShapeError(f"a run must be an object, found {type(r).__name__}", where=f"$[{k}]")
        _flatten(r, f"$[{k}]", out)
    return out


def runs(doc: Any, lines: tuple[int, ...] | None) -> list[Any]:
    """One document per trace: a root run as it is; a flat list grouped by ``trace_id`` (a
    root's own id when it has none)."""
    if isinstance(doc, dict) and not isinstance(doc.get("runs"), list):
        return [doc]
    groups: dict[str, list[dict]] = {}
    for k, r in enumerate(_run_list(doc) or []):
        if not isinstance(r, dict):
            raise ShapeError(f"a run must be an object, found {type(r).__name__}", where=f"$[{k}]")
        groups.setdefault(str(r.get("trace_id") or r.get("id")), []).append(r)
    return [{"runs": rs} for rs in groups.values() if any(_has_llm(r) for r in rs)] or [{"runs": []}]


def _prompt(run: dict, where: str, trace: Trace) -> list | None:
    inputs = run.get("inputs") if isinstance(run.get("inputs"), dict) else {}
    extra = run.get("extra") if isinstance(run.get("extra"), dict) else {}
    params = extra.get("invocation_params") if isinstance(extra.get("invocation_params"), dict) else {}
    tools = inputs.get("tools") or params.get("tools")
    if isinstance(tools, list) and tools and not trace.tools:
        trace.tools = parse_tools(tools, f"{where}.inputs.tools")
    items = inputs.get("messages", inputs.get("prompts"))
    if items is None:
        return None
    if isinstance(items, list) and items and isinstance(items[0], list):
        if len(items) > 1:
            trace.notes.append(f"{where}: a batch of {len(items)} prompts: the first is read")
        items = items[0]
    if isinstance(items, list) and items and isinstance(items[0], str):  # a completion model's prompts
        items = [{"role": "user", "content": items[0]}]
    if not isinstance(items, list):
        raise ShapeError("inputs.messages must be a list of messages", where=f"{where}.inputs.messages")
    system = inputs.get("system")
    return ([{"role": "system", "content": system}] if isinstance(system, (str, list)) else []) + items


_SHAPES = (  # (prompt, output, details, cache read, cache write) keys of each usage shape LangSmith stores
    ("input_tokens", "output_tokens", "input_token_details", "cache_read", "cache_creation"),  # usage_metadata
    ("prompt_tokens", "completion_tokens", "prompt_token_details", "cache_read", "cache_creation"),  # a run's own
    ("prompt_tokens", "completion_tokens", "prompt_tokens_details", "cached_tokens", None),  # an OpenAI completion
)


def _counts(u: Any, where: str, shape: tuple[str, str, str, str, str | None], model: str | None):
    """The usage in ``u`` written with the keys of ``shape``; None when ``u`` has no prompt count (a
    run's own ``prompt_tokens`` of 0 or null, as non-model runs carry, counts as none)."""
    prompt, output, details_key, read, write = shape
    if not isinstance(u, dict) or not (u.get(prompt) if shape is _SHAPES[1] else prompt in u):
        return None
    details = u.get(details_key) if isinstance(u.get(details_key), dict) else {}
    return usage_of(whole(u[prompt], f"{where}.{prompt}", prompt),
                    whole(u.get(output), f"{where}.{output}", output),
                    whole(details.get(read), f"{where}.{details_key}.{read}", read),
                    whole(details.get(write), f"{where}.{details_key}.{write}", write) if write else None, model)


def _usage(run: dict, reply: list, where: str, model: str | None):
    outputs = run.get("outputs") if isinstance(run.get("outputs"), dict) else {}
    for item in reply:
        kw = item.get("kwargs") if isinstance(item.get("kwargs"), dict) else item
        if found := _counts(kw.get("usage_metadata"), f"{where}.outputs (usage_metadata)", _SHAPES[0], model):
            return found
    return (_counts(outputs.get("usage_metadata"), f"{where}.outputs.usage_metadata", _SHAPES[0], model)
            or _counts(run, where, _SHAPES[1], model)
            or _counts(outputs.get("usage"), f"{where}.outputs.usage", _SHAPES[2], model))


def _model(run: dict) -> str | None:
    extra = run.get("extra") if isinstance(run.get("extra"), dict) else {}
    meta = extra.get("metadata") if isinstance(extra.get("metadata"), dict) else {}
    params = extra.get("invocation_params") if isinstance(extra.get("invocation_params"), dict) else {}
    for value in (meta.get("ls_model_name"), params.get("model"), params.get("model_name")):
        if isinstance(value, str) and value:
            return value
    return None


def _call(run: dict, where: str, trace: Trace) -> CallRecord:
    model = _model(run)
    items = _prompt(run, where, trace)
    prompt = read_items(items, f"{where}.inputs.messages", trace.notes) if items is not None else None
    raw_reply = reply_items(run.get("outputs") or None, f"{where}.outputs")
    reply = [m for m in read_items(raw_reply, f"{where}.outputs", trace.notes) if m.role == "assistant"][:1]
    return CallRecord(prompt, reply, _usage(run, raw_reply, where, model), f"llm run {shown(run.get('id'), 40)}",
                      str(run["error"]) if run.get("error") else None, model)


def _order(run: dict, k: int) -> tuple:
    return (str(run.get("dotted_order") or ""), str(run.get("start_time") or ""), k)


def read_doc(doc: Any, lines: tuple[int, ...] | None) -> Trace:
    """Read the llm runs of one LangSmith trace (a run tree, or a trace's runs)."""
    trace = Trace(meta={})
    all_runs = _all_runs(doc)
    calls: list[tuple[tuple, CallRecord]] = []
    skipped: Counter[str] = Counter()
    failed_tools: list[str] = []
    for k, (run, where) in enumerate(all_runs):
        kind = run.get("run_type")
        if run.get("parent_run_id") in (None, "") and kind != "llm":
            for key in ("trace_id", "name", "session_id"):
                if isinstance(run.get(key), str):
                    trace.meta.setdefault(key, run[key])
        if kind == "llm":
            calls.append((_order(run, k), _call(run, where, trace)))
        else:
            skipped[str(kind)] += 1
            if kind == "tool" and run.get("error"):
                failed_tools.append(f"{shown(run.get('name'), 30)} ({shown(run['error'], 60)})")
    calls.sort(key=lambda c: c[0])
    assemble([c for _, c in calls], trace, "llm run")
    if failed_tools:
        trace.notes.append(f"{len(failed_tools):,} tool run(s) ended in error: {', '.join(failed_tools[:5])}; "
                           "their results are marked where the next prompt says so (status=\"error\")")
    note_gaps(trace, skipped, "runs other than llm runs", "llm run")
    return trace


TRACE = trace_format(NAME, "LangSmith run export (JSON)", detect_doc, read_doc, runs)
FORMAT = TRACE.format
