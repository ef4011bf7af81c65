"""A tool catalog: tool definitions with optional categories and a category expansion map.

Read from OpenAI, Anthropic or MCP tool lists (``ctxlab.formats.parse_tools``), or from a catalog
file ``{"name": ..., "tools": [...], "expansions": {"refunds": ["orders", "refunds", "payments"]}}``.
A tool's category is its ``category`` field (or ``x_category``, or BFCL's ``x_bfcl_class``).
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Mapping, Sequence

from ..errors import ShapeError
from ..formats import parse_tools
from ..formats._json import load_json_documents, read_path
from ..conversation import ToolDef
from ..tokens import TokenCounter


def _params(schema: Mapping[str, Any], prefix: str = "", depth: int = 0) -> list[str]:
    out = []
    props = schema.get("properties") if isinstance(schema, Mapping) else None
    for name, spec in (props if isinstance(props, Mapping) else {}).items():  # a schema the API would refuse: no names
        spec = spec if isinstance(spec, Mapping) else {}
        desc = str(spec.get("description", "")).strip()
        out.append(f"{prefix}{name}: {desc}" if desc else f"{prefix}{name}")
        if depth < 2:
            nested = spec.get("properties") and spec or (spec.get("items") if isinstance(spec.get("items"), Mapping) else {})
            out.extend(_params(nested or {}, f"{prefix}{name}.", depth + 1))
    return out


def embedding_text(tool: ToolDef) -> str:
    """What gets embedded for a tool: its name (also split into words), description, and its
    parameters' names and descriptions."""
    words = tool.name.replace("_", " ").replace("-", " ").replace(".", " ")
    lines = [f"{tool.name} ({words})", tool.description.strip()]
    params = _params(tool.parameters)
    if params:
        lines.append("Parameters: " + "; ".join(params))
    return "\n".join(x for x in lines if x)


def content_hash(tool: ToolDef) -> str:
    """A hash of everything that defines the tool (changes when the definition changes)."""
    payload = json.dumps([tool.name, tool.description, tool.parameters, tool.category], sort_keys=True,
                         ensure_ascii=False, default=str)
    return hashlib.sha256(payload.encode()).hexdigest()[:32]


@dataclass(frozen=True)
class ToolCatalog:
    """Tools (unique names), their categories, and which categories pull in which."""

    tools: tuple[ToolDef, ...]
    expansions: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    name: str = "catalog"

    def __post_init__(self) -> None:
        seen: set[str] = set()
        for t in self.tools:
            if t.name in seen:
                raise ShapeError(f"tool {t.name!r} appears twice in the catalog", where=f"catalog {self.name}")
            seen.add(t.name)

    def __len__(self) -> int:
        return len(self.tools)

    def get(self, name: str) -> ToolDef:
        """The tool called ``name``."""
        for t in self.tools:
            if t.name == name:
                return t
        raise KeyError(name)

    @property
    def names(self) -> tuple[str, ...]:
        """Tool names in catalog order."""
        return tuple(t.name for t in self.tools)

    def categories(self) -> dict[str, list[str]]:
        """Category -> tool names."""
        out: dict[str, list[str]] = {}
        for t in self.tools:
            if t.category:
                out.setdefault(t.category, []).append(t.name)
        return out

    def expand(self, category: str) -> tuple[str, ...]:
        """The categories a category pulls in (itself when the map says nothing)."""
        return tuple(self.expansions.get(category, (category,)))

    def token_costs(self, counter: TokenCounter | None = None) -> dict[str, int]:
        """Tokens each tool's definition adds to a request (OpenAI's billing, without func_end)."""
        counter = counter or TokenCounter("gpt-4o")
        return {t.name: counter.tool(t) for t in self.tools}

    @classmethod
    def from_tools(cls, tools: Sequence[ToolDef], expansions: Mapping[str, Sequence[str]] | None = None,
                   name: str = "catalog") -> "ToolCatalog":
        """A catalog from ToolDefs; BFCL's ``x_bfcl_class`` becomes the category when none is set."""
        tools = tuple(t if t.category else replace(t, category=_category_from_extra(t)) for t in tools)
        exp = {k: tuple(v) for k, v in (expansions or {}).items()}
        return cls(tools, exp, name)

    @classmethod
    def from_data(cls, data: Any, name: str = "catalog") -> "ToolCatalog":
        """From parsed JSON: a tool list in any known shape, or a catalog object."""
        expansions: Mapping[str, Sequence[str]] = {}
        if isinstance(data, dict) and ("expansions" in data or "name" in data) and "tools" in data:
            name = str(data.get("name") or name)
            expansions = data.get("expansions") or {}
            if not isinstance(expansions, dict) or not all(isinstance(v, list) for v in expansions.values()):
                raise ShapeError("'expansions' must map a category to a list of categories", where="$.expansions")
            data = data["tools"]
        return cls.from_tools(parse_tools(data, "$"), expansions, name)

    @classmethod
    def load(cls, path: str | Path) -> "ToolCatalog":
        """From a JSON file."""
        docs, _ = load_json_documents(read_path(path))
        return cls.from_data(docs[0], name=Path(path).stem)


def _category_from_extra(t: ToolDef) -> str | None:
    for key in ("x_bfcl_class", "x_category"):
        value = t.extra.get(key)
        if isinstance(value, str):
            return value
    return None
