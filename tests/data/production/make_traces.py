"""Writes the production-trace test files of this folder from the public specifications (run it
to regenerate them: ``python3 tests/data/production/make_traces.py``).

Nothing here comes from a live service: the agent runs, their content and every usage figure are
written by hand for the tests (the usage figures are plausible, not billed by anyone). The shapes
follow: OpenTelemetry GenAI semantic conventions v1.37-v1.39 in OTLP/JSON; the Langfuse public API
v3 (a trace with observations; an observations page); the LangSmith run schema (langsmith SDK 0.4)
with LangChain's serialized messages and ``usage_metadata``.

Two agent runs of a build-triage agent: run A has four model calls (a cache hit on every call
after the first, a tool that fails, a call that fails with a 429 and is retried); run B has two.
"""
from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).parent
RULES = [f"Rule {k}: when a build step named step-{k} fails, read its log first, quote the failing line, name "
         f"the owner team of step-{k} from the ownership table, and never retry step-{k} more than twice "
         "without a human in the loop." for k in range(1, 41)]
SYSTEM = "You are the build-triage agent of the platform team.\n" + "\n".join(RULES)
TOOLS = [
    {"type": "function", "name": "get_build_log", "description": "Read the log of a build.",
     "parameters": {"type": "object", "properties": {"build_id": {"type": "string"}}, "required": ["build_id"]}},
    {"type": "function", "name": "create_issue", "description": "Open an issue in the tracker.",
     "parameters": {"type": "object", "properties": {"title": {"type": "string"}, "body": {"type": "string"}},
                    "required": ["title"]}},
    {"type": "function", "name": "notify_owner", "description": "Message the owner team of a step.",
     "parameters": {"type": "object", "properties": {"team": {"type": "string"}, "text": {"type": "string"}},
                    "required": ["team", "text"]}},
]
LOG = "\n".join(f"[{k:04d}] step-{k % 40 + 1}: ok ({k * 7 % 113} ms)" for k in range(120)) + \
    "\n[0120] step-17: FAILED: linker error: undefined reference to `zstd_compress`"

# One agent run = steps: (user text | None, assistant reply, tool results after it, usage, error)
# reply: ("text", str) or ("calls", [(id, name, args)]); results: [(id, text, is_error)]
RUN_A = {
    "user": "The nightly build 4411 failed. Find out why and open an issue for the owners.",
    "calls": [
        {"reply": ("calls", [("call_log", "get_build_log", {"build_id": "4411"})]),
         "results": [("call_log", LOG, False)],
         "usage": {"input": 1958, "output": 21, "cache_read": 0, "cache_write": 0}},
        {"reply": ("calls", [("call_issue", "create_issue", {"title": "step-17 linker error in nightly 4411",
                                                            "body": "undefined reference to `zstd_compress`"})]),
         "results": [("call_issue", "Error: 403 permission denied for project platform/build", True)],
         "usage": {"input": 4260, "output": 48, "cache_read": 1920, "cache_write": 0}},
        {"error": "429", "usage": None},
        {"reply": ("calls", [("call_notify", "notify_owner", {"team": "storage",
                                                              "text": "step-17 fails to link zstd in nightly 4411"})]),
         "results": [("call_notify", "sent", False)],
         "usage": {"input": 4341, "output": 40, "cache_read": 4224, "cache_write": 0}},
        {"reply": ("text", "Build 4411 failed at step-17 (linker error: undefined reference to `zstd_compress`). "
                           "I could not open an issue (403), so I messaged the storage team directly."),
         "usage": {"input": 4399, "output": 44, "cache_read": 4224, "cache_write": 0}},
    ],
}
RUN_B = {
    "user": "Is build 4412 green?",
    "calls": [
        {"reply": ("calls", [("call_log2", "get_build_log", {"build_id": "4412"})]),
         "results": [("call_log2", "[0000] all 40 steps ok", False)],
         "usage": {"input": 1941, "output": 20, "cache_read": 1792, "cache_write": 0}},
        {"reply": ("text", "Yes: all 40 steps of build 4412 passed."),
         "usage": {"input": 1989, "output": 13, "cache_read": 1920, "cache_write": 0}},
    ],
}
MODEL = "gpt-4o-2024-08-06"


def prompts(run: dict):
    """(prompt as OpenAI messages, the call) for each call, in order."""
    msgs = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": run["user"]}]
    for call in run["calls"]:
        yield list(msgs), call
        if "reply" not in call:
            continue
        msgs.append(openai_reply(call["reply"]))
        for cid, text, _ in call.get("results", []):
            msgs.append({"role": "tool", "tool_call_id": cid, "content": text})


def openai_reply(reply) -> dict:
    if reply[0] == "text":
        return {"role": "assistant", "content": reply[1]}
    return {"role": "assistant", "content": None, "tool_calls": [
        {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
        for cid, name, args in reply[1]]}


# ---------------------------------------------------------------------- OpenTelemetry


def otel_parts(m: dict) -> dict:
    if m["role"] == "tool":
        return {"role": "tool", "parts": [{"type": "tool_call_response", "id": m["tool_call_id"], "response": m["content"]}]}
    parts = [{"type": "text", "content": m["content"]}] if m.get("content") else []
    for c in m.get("tool_calls") or []:
        parts.append({"type": "tool_call", "id": c["id"], "name": c["function"]["name"],
                      "arguments": json.loads(c["function"]["arguments"])})
    return {"role": m["role"], "parts": parts}


def attr(key: str, value) -> dict:
    if isinstance(value, bool):
        return {"key": key, "value": {"boolValue": value}}
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": str(value)}}
    return {"key": key, "value": {"stringValue": value}}


def otel_run(run: dict, trace_id: str, t0: int, tag: str) -> list[dict]:
    agent = f"{tag}000000000001"
    spans = [{"traceId": trace_id, "spanId": agent, "name": "invoke_agent triage", "kind": 1,
              "startTimeUnixNano": str(t0), "endTimeUnixNano": str(t0 + 10**10),
              "attributes": [attr("gen_ai.operation.name", "invoke_agent"), attr("gen_ai.agent.name", "triage"),
                             attr("gen_ai.provider.name", "openai")], "status": {}}]
    t = t0 + 1000
    for n, (prompt, call) in enumerate(prompts(run)):
        sid = f"{tag}0000000001{n:02d}"
        a = [attr("gen_ai.operation.name", "chat"), attr("gen_ai.provider.name", "openai"),
             attr("gen_ai.request.model", "gpt-4o"),
             attr("gen_ai.system_instructions", json.dumps([{"type": "text", "content": SYSTEM}])),
             attr("gen_ai.input.messages", json.dumps([otel_parts(m) for m in prompt[1:]])),
             attr("gen_ai.tool.definitions", json.dumps(TOOLS))]
        status = {}
        if "reply" in call:
            a.append(attr("gen_ai.response.model", MODEL))
            a.append(attr("gen_ai.output.messages", json.dumps(
                [{**otel_parts(openai_reply(call["reply"])), "finish_reason": "stop"}])))
            u = call["usage"]
            a += [attr("gen_ai.usage.input_tokens", u["input"]), attr("gen_ai.usage.output_tokens", u["output"]),
                  attr("gen_ai.usage.cache_read.input_tokens", u["cache_read"]),
                  attr("gen_ai.usage.cache_creation.input_tokens", u["cache_write"])]
        else:
            a.append(attr("error.type", call["error"]))
            status = {"code": 2, "message": "Rate limit reached"}
        spans.append({"traceId": trace_id, "spanId": sid, "parentSpanId": agent, "name": "chat gpt-4o", "kind": 3,
                      "startTimeUnixNano": str(t), "endTimeUnixNano": str(t + 900), "attributes": a, "status": status})
        t += 1000
        for cid, _, bad in call.get("results", []):
            tool = call["reply"][1][0][1]
            spans.append({"traceId": trace_id, "spanId": f"{tag}0000000002{n:02d}", "parentSpanId": agent,
                          "name": f"execute_tool {tool}", "kind": 1, "startTimeUnixNano": str(t),
                          "endTimeUnixNano": str(t + 500),
                          "attributes": [attr("gen_ai.operation.name", "execute_tool"), attr("gen_ai.tool.name", tool),
                                         attr("gen_ai.tool.call.id", cid)] + ([attr("error.type", "403")] if bad else []),
                          "status": {"code": 2, "message": "permission denied"} if bad else {}})
            t += 1000
    return spans


def otel() -> None:
    spans = otel_run(RUN_A, "4bf92f3577b34da6a3ce929d0e0e4736", 1_764_000_000_000_000_000, "a1") + \
        otel_run(RUN_B, "0af7651916cd43dd8448eb211c80319c", 1_764_000_100_000_000_000, "b2")
    spans.append({"traceId": "0af7651916cd43dd8448eb211c80319c", "spanId": "b20000000000ee", "name": "embeddings",
                  "startTimeUnixNano": "1764000100000000500", "endTimeUnixNano": "1764000100000000600",
                  "attributes": [attr("gen_ai.operation.name", "embeddings"), attr("gen_ai.request.model", "text-embedding-3-small")]})
    resource = {"attributes": [attr("service.name", "triage-agent")]}
    doc = {"resourceSpans": [{"resource": resource, "scopeSpans": [
        {"scope": {"name": "opentelemetry.instrumentation.openai_v2", "version": "2.1b0"}, "spans": spans}]}]}
    (HERE / "otel_agent_runs.json").write_text(json.dumps(doc, indent=1) + "\n")
    lines = [{"resourceSpans": [{"resource": resource, "scopeSpans": [{"scope": {"name": "x"}, "spans": [s]}]}]}
             for s in spans if s["traceId"].startswith("0af7")]
    (HERE / "otel_file_exporter.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))


# ---------------------------------------------------------------------- Langfuse


def langfuse_usage(u: dict) -> dict:  # Langfuse's "input" excludes what the cache served
    return {"input": u["input"] - u["cache_read"] - u["cache_write"], "output": u["output"],
            "input_cached_tokens": u["cache_read"], "total": u["input"] + u["output"]}


def langfuse_obs(run: dict, trace_id: str, minute: int) -> list[dict]:
    out = [{"id": f"{trace_id}-agent", "traceId": trace_id, "type": "AGENT", "name": "triage",
            "startTime": f"2026-11-20T10:{minute:02d}:00.000Z", "level": "DEFAULT", "parentObservationId": None}]
    for n, (prompt, call) in enumerate(prompts(run)):
        o = {"id": f"{trace_id}-gen-{n}", "traceId": trace_id, "type": "GENERATION", "name": "OpenAI-generation",
             "startTime": f"2026-11-20T10:{minute:02d}:{n * 2 + 1:02d}.000Z", "model": MODEL,
             "modelParameters": {"temperature": 0}, "input": {"messages": prompt, "tools": TOOLS},
             "parentObservationId": f"{trace_id}-agent", "level": "DEFAULT", "statusMessage": None}
        if "reply" in call:
            o["output"] = openai_reply(call["reply"])
            o["usageDetails"] = langfuse_usage(call["usage"])
            o["costDetails"] = {"total": 0.01}
        else:
            o.update(output=None, level="ERROR", statusMessage="429 Rate limit reached", usageDetails={})
        out.append(o)
        for cid, text, bad in call.get("results", []):
            out.append({"id": f"{trace_id}-tool-{n}", "traceId": trace_id, "type": "TOOL",
                        "name": call["reply"][1][0][1], "startTime": f"2026-11-20T10:{minute:02d}:{n * 2 + 2:02d}.000Z",
                        "input": call["reply"][1][0][2], "output": text, "level": "ERROR" if bad else "DEFAULT",
                        "statusMessage": "permission denied" if bad else None,
                        "parentObservationId": f"{trace_id}-agent"})
    return out


def langfuse() -> None:
    trace = {"id": "lf-trace-a", "name": "triage", "timestamp": "2026-11-20T10:00:00.000Z", "sessionId": "s-1",
             "userId": "u-7", "input": RUN_A["user"], "output": None, "tags": ["nightly"],
             "observations": langfuse_obs(RUN_A, "lf-trace-a", 0), "scores": []}
    (HERE / "langfuse_trace_export.json").write_text(json.dumps(trace, indent=1) + "\n")
    data = langfuse_obs(RUN_A, "lf-trace-a", 0) + langfuse_obs(RUN_B, "lf-trace-b", 5)
    page = {"data": data, "meta": {"page": 1, "limit": 50, "totalItems": len(data), "totalPages": 1}}
    (HERE / "langfuse_observations_api.json").write_text(json.dumps(page, indent=1) + "\n")


# ---------------------------------------------------------------------- LangSmith

LC = {"system": "SystemMessage", "user": "HumanMessage", "assistant": "AIMessage", "tool": "ToolMessage"}


def lc_message(m: dict, usage: dict | None = None) -> dict:
    kw: dict = {"content": m.get("content") or ""}
    if m.get("tool_calls"):
        kw["tool_calls"] = [{"id": c["id"], "name": c["function"]["name"], "args": json.loads(c["function"]["arguments"]),
                             "type": "tool_call"} for c in m["tool_calls"]]
    if m["role"] == "tool":
        kw["tool_call_id"] = m["tool_call_id"]
        if m["content"].startswith("Error:"):
            kw["status"] = "error"
    if usage:
        kw["usage_metadata"] = {"input_tokens": usage["input"], "output_tokens": usage["output"],
                                "total_tokens": usage["input"] + usage["output"],
                                "input_token_details": {"cache_read": usage["cache_read"],
                                                        "cache_creation": usage["cache_write"]}}
    kw["type"] = {"system": "system", "user": "human", "assistant": "ai", "tool": "tool"}[m["role"]]
    return {"lc": 1, "type": "constructor", "id": ["langchain", "schema", "messages", LC[m["role"]]], "kwargs": kw}


def langsmith_runs(run: dict, trace_id: str, day: int) -> dict:
    root = {"id": trace_id, "trace_id": trace_id, "name": "LangGraph", "run_type": "chain", "parent_run_id": None,
            "dotted_order": f"202611{day:02d}T100000000000Z{trace_id}", "start_time": f"2026-11-{day:02d}T10:00:00",
            "inputs": {"messages": [{"role": "user", "content": run["user"]}]}, "outputs": {}, "error": None,
            "child_runs": []}
    for n, (prompt, call) in enumerate(prompts(run)):
        rid = f"{trace_id[:-2]}{n:02d}"
        child = {"id": rid, "trace_id": trace_id, "name": "ChatOpenAI", "run_type": "llm", "parent_run_id": trace_id,
                 "dotted_order": f"{root['dotted_order']}.202611{day:02d}T1000{n:02d}000000Z{rid}",
                 "start_time": f"2026-11-{day:02d}T10:00:{n:02d}",
                 "extra": {"invocation_params": {"model": "gpt-4o", "tools": [{"type": "function", "function": {
                     k: v for k, v in t.items() if k != "type"}} for t in TOOLS]},
                     "metadata": {"ls_provider": "openai", "ls_model_name": "gpt-4o"}},
                 "inputs": {"messages": [[lc_message(m) for m in prompt]]}, "child_runs": []}
        if "reply" in call:
            child["outputs"] = {"generations": [[{"text": "", "type": "ChatGeneration",
                                                  "message": lc_message(openai_reply(call["reply"]), call["usage"])}]],
                                "llm_output": {"model_name": MODEL}, "run": None, "type": "LLMResult"}
            child["error"] = None
        else:
            child["outputs"] = None
            child["error"] = "RateLimitError('Error code: 429')"
        root["child_runs"].append(child)
        for cid, text, bad in call.get("results", []):
            root["child_runs"].append({
                "id": f"{trace_id[:-2]}t{n}", "trace_id": trace_id, "name": call["reply"][1][0][1], "run_type": "tool",
                "parent_run_id": trace_id, "dotted_order": f"{root['dotted_order']}.202611{day:02d}T1000{n:02d}500000Z",
                "inputs": {"input": json.dumps(call["reply"][1][0][2])}, "outputs": None if bad else {"output": text},
                "error": text if bad else None, "child_runs": []})
    return root


def langsmith() -> None:
    tree = langsmith_runs(RUN_A, "1e0b6c4a-7c1f-4a57-9d5e-3f3b2a1c0d01", 20)
    (HERE / "langsmith_run_tree.json").write_text(json.dumps(tree, indent=1) + "\n")
    flat = []
    for root in (tree, langsmith_runs(RUN_B, "1e0b6c4a-7c1f-4a57-9d5e-3f3b2a1c0d02", 21)):
        kids = root["child_runs"]
        flat.append({**root, "child_runs": None})
        flat += kids
    (HERE / "langsmith_runs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in flat))


if __name__ == "__main__":
    otel()
    langfuse()
    langsmith()
