"""Tool catalogs: OpenAI ``tools`` (Chat and Responses shapes), Anthropic ``tools``
(``input_schema``) and MCP ``tools/list`` (``inputSchema``), read into ToolDef and written back."""
from __future__ import annotations

from typing import Any

from ..errors import ShapeError, path_key, shown
from ..conversation import ToolDef

_EMPTY_SCHEMA = {"type": "object", "properties": {}}


def _one_tool(raw: Any, where: str) -> ToolDef:
    if not isinstance(raw, dict):
        raise ShapeError(f"a tool must be an object, found {type(raw).__name__}", where=where)
    category = raw.get("category") or raw.get("x_category")
    if isinstance(raw.get("function"), dict):  # OpenAI Chat: {"type": "function", "function": {...}}
        fn, schema_key = raw["function"], "parameters"
        extra = {k: v for k, v in raw.items() if k not in ("type", "function", "category")}
        extra.update((k, v) for k, v in fn.items() if k not in ("name", "description", "parameters"))  # strict
    else:  # OpenAI Responses / Anthropic / MCP: flat
        fn = raw
        schema_key = next((k for k in ("parameters", "input_schema", "inputSchema") if k in raw), "parameters")
        extra = {k: v for k, v in raw.items() if k not in ("type", "name", "description", schema_key, "category")}
        if raw.get("type") not in (None, "function", "custom"):  # an Anthropic server tool: bash_20250124, ...
            extra["type"] = raw["type"]
    name = fn.get("name")
    if not isinstance(name, str) or not name:
        raise ShapeError("a tool has no name", where=f"{where}.name" if fn is raw else f"{where}.function.name")
    schema = fn.get(schema_key) or _EMPTY_SCHEMA
    schema_at = f"{where}{'' if fn is raw else '.function'}.{schema_key}"
    if not isinstance(schema, dict):
        raise ShapeError(f"the parameter schema of tool {shown(name)} must be an object, found "
                         f"{type(schema).__name__}", where=schema_at)
    _check_schema(schema, schema_at, name)
    return ToolDef(name=name, description=str(fn.get("description") or ""), parameters=schema,
                   category=category if isinstance(category, str) else None, extra=extra)


def _check_schema(schema: dict, where: str, tool: str) -> None:
    """Every ``properties`` in a parameter schema (nested ones too, and those under ``items``)
    must map names to schema objects: a provider rejects anything else, and the token counter
    walks them."""
    stack = [(schema, where)]
    while stack:
        node, at = stack.pop()
        props = node.get("properties")
        if props is not None:
            if not isinstance(props, dict):
                raise ShapeError(f"'properties' of tool {shown(tool)} must be an object, found {type(props).__name__}",
                                 where=f"{at}.properties", hint="Map each parameter name to its JSON schema")
            for key, sub in props.items():
                if not isinstance(sub, dict):
                    raise ShapeError(f"the schema of parameter {shown(key)} of tool {shown(tool)} must be an "
                                     f"object, found {type(sub).__name__}", where=f"{at}.properties{path_key(key)}",
                                     hint="Give each parameter a JSON schema such as {\"type\": \"string\"}")
                stack.append((sub, f"{at}.properties{path_key(key)}"))
        items = node.get("items")
        if isinstance(items, dict):
            stack.append((items, f"{at}.items"))


def parse_tools(raw: Any, where: str = "$.tools") -> tuple[ToolDef, ...]:
    """Read a tool list in any of the known shapes, including an MCP ``tools/list`` result
    (``{"tools": [...]}`` or a JSON-RPC response around it)."""
    if isinstance(raw, dict):
        if isinstance(raw.get("result"), dict):
            raw, where = raw["result"], f"{where}.result"
        if "tools" in raw:
            raw, where = raw["tools"], f"{where}.tools"
    if not isinstance(raw, list):
        raise ShapeError("tools must be a list of tool definitions", where=where)
    tools = tuple(_one_tool(t, f"{where}[{i}]") for i, t in enumerate(raw))
    seen: dict[str, int] = {}
    for i, t in enumerate(tools):
        if t.name in seen:
            raise ShapeError(f"tool name {shown(t.name)} is defined twice (also at index {seen[t.name]})",
                             where=f"{where}[{i}]", hint="Tool names must be unique")
        seen[t.name] = i
    return tools


def is_server_tool(t: ToolDef) -> bool:
    """An Anthropic server tool (``bash_20250124``, ``web_search_20250305``...): a type, no schema."""
    return "type" in t.extra


def _own(t: ToolDef, keys: tuple[str, ...]) -> dict[str, Any]:
    """The tool's unmodelled fields that the target format has a place for (the others are noted
    by the export's check)."""
    return {k: v for k, v in t.extra.items() if k in keys}


def tools_to_openai(tools: tuple[ToolDef, ...] | list[ToolDef]) -> list[dict]:
    """OpenAI Chat Completions ``tools`` (server tools have no place: left out, and noted by export)."""
    return [{"type": "function", "function": {"name": t.name, "description": t.description,
                                              "parameters": dict(t.parameters), **_own(t, ("strict",))}}
            for t in tools if not is_server_tool(t)]


def tools_to_anthropic(tools: tuple[ToolDef, ...] | list[ToolDef]) -> list[dict]:
    """Anthropic Messages ``tools``: custom tools with ``cache_control``, server tools as they came."""
    return [{"name": t.name, **dict(t.extra)} if is_server_tool(t) else
            {"name": t.name, "description": t.description, "input_schema": dict(t.parameters),
             **_own(t, ("cache_control",))} for t in tools]


def tools_to_responses(tools: tuple[ToolDef, ...] | list[ToolDef]) -> list[dict]:
    """OpenAI Responses API ``tools`` (flat function tools)."""
    return [{"type": "function", "name": t.name, "description": t.description, "parameters": dict(t.parameters),
             **_own(t, ("strict",))} for t in tools if not is_server_tool(t)]


def tools_to_mcp(tools: tuple[ToolDef, ...] | list[ToolDef]) -> list[dict]:
    """MCP ``tools/list`` entries (with ``title``, ``annotations``, ``outputSchema`` and ``_meta``)."""
    return [{"name": t.name, "description": t.description, "inputSchema": dict(t.parameters),
             **_own(t, ("title", "annotations", "outputSchema", "_meta"))} for t in tools if not is_server_tool(t)]
