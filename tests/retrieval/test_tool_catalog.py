"""The tool catalog: the e-commerce sample and its labeled queries, categories and expansions,
what gets embedded for a tool, its content hash, the three tool shapes, and token costs."""
from __future__ import annotations

import copy
import json
from dataclasses import replace

import pytest

from ctxlab.errors import ShapeError
from ctxlab.formats.tools import tools_to_anthropic, tools_to_mcp, tools_to_openai
from ctxlab.tokens import TokenCounter
from ctxlab.tools.catalog import ToolCatalog, content_hash, embedding_text

from ..conftest import SAMPLES

CATALOG_FILE = SAMPLES / "tools_ecommerce.json"
QUERIES_FILE = SAMPLES / "tool_queries_ecommerce.jsonl"
CATEGORIES = ("orders", "refunds", "payments", "customers", "events", "tickets", "marketing", "contests")
EXPANSIONS = {
    "refunds": ("orders", "refunds", "payments"),
    "events": ("events", "tickets"),
    "tickets": ("tickets", "events"),
    "contests": ("contests", "marketing"),
    "orders": ("orders",),
    "payments": ("payments",),
    "customers": ("customers",),
    "marketing": ("marketing",),
}


@pytest.fixture(scope="module")
def catalog() -> ToolCatalog:
    """The sample catalog, read the way a user would read it."""
    return ToolCatalog.load(CATALOG_FILE)


@pytest.fixture(scope="module")
def queries() -> list[dict]:
    """The labeled queries, one JSON object a line."""
    lines = QUERIES_FILE.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def _with_category(shaped: list[dict], tools) -> list[dict]:
    """Tool dicts of another shape with the ``category`` key a catalog file would carry."""
    return [{**d, "category": t.category} for d, t in zip(shaped, tools)]


# -- the sample catalog ------------------------------------------------------------------------

def test_sample_catalog_loads_with_its_name_and_about_forty_tools(catalog):
    assert catalog.name == "ecommerce"
    assert 38 <= len(catalog) <= 45
    assert len(set(catalog.names)) == len(catalog)


def test_every_sample_tool_has_one_of_the_eight_categories_and_a_documented_schema(catalog):
    for tool in catalog.tools:
        assert tool.category in CATEGORIES, tool.name
        assert len(tool.description) > 60, tool.name
        props = tool.parameters["properties"]
        assert props, tool.name
        assert set(tool.parameters.get("required", [])) <= set(props), tool.name
        for pname, spec in props.items():
            assert spec.get("description"), f"{tool.name}.{pname} has no description"
    assert set(catalog.categories()) == set(CATEGORIES)
    assert all(len(names) >= 3 for names in catalog.categories().values())


def test_sample_catalog_has_enums_and_nested_objects(catalog):
    props = [spec for t in catalog.tools for spec in t.parameters["properties"].values()]
    assert sum("enum" in p or "enum" in p.get("items", {}) for p in props) >= 10
    nested = [p for p in props if p.get("type") == "object" or p.get("items", {}).get("type") == "object"]
    assert len(nested) >= 5


def test_sample_expansion_map_is_the_specified_one(catalog):
    assert dict(catalog.expansions) == EXPANSIONS
    for category, expected in EXPANSIONS.items():
        assert catalog.expand(category) == expected


def test_every_labeled_query_names_existing_tools_and_its_category(catalog, queries):
    assert len(queries) >= 60
    assert len({q["query"] for q in queries}) == len(queries), "duplicate query text"
    for q in queries:
        assert set(q) == {"query", "gold_tools", "category"}, q
        assert q["query"].strip()
        assert 1 <= len(q["gold_tools"]) <= 3, q
        assert len(set(q["gold_tools"])) == len(q["gold_tools"]), q
        for name in q["gold_tools"]:
            assert name in catalog.names, f"unknown gold tool {name!r} in {q['query']!r}"
        assert q["category"] in {catalog.get(n).category for n in q["gold_tools"]}, q


def test_labeled_queries_cover_every_category_and_include_multi_tool_requests(queries):
    assert {q["category"] for q in queries} == set(CATEGORIES)
    assert sum(len(q["gold_tools"]) > 1 for q in queries) >= 5


# -- categories and expansion ------------------------------------------------------------------

def test_categories_lists_tool_names_per_category_in_catalog_order(catalog):
    cats = catalog.categories()
    assert sorted(n for names in cats.values() for n in names) == sorted(catalog.names)
    for names in cats.values():
        assert list(names) == [n for n in catalog.names if n in names]
    assert {"create_refund", "get_refund_status", "issue_store_credit"} <= set(cats["refunds"])
    assert {"check_in_ticket", "transfer_ticket"} <= set(cats["tickets"])


def test_expand_returns_the_category_itself_when_the_map_is_silent():
    catalog = ToolCatalog.from_data({"name": "x", "expansions": {"a": ["a", "b"]},
                                     "tools": [{"name": "t", "description": "d", "category": "a"}]})
    assert catalog.expand("a") == ("a", "b")
    assert catalog.expand("b") == ("b",)
    assert catalog.expand("not-a-category") == ("not-a-category",)


def test_bad_expansions_are_reported_with_their_json_path():
    with pytest.raises(ShapeError) as err:
        ToolCatalog.from_data({"name": "x", "expansions": {"a": "b"}, "tools": []})
    assert "$.expansions" in str(err.value)


def test_a_tool_defined_twice_is_refused_with_its_name():
    tool = {"type": "function", "function": {"name": "get_order", "description": "d"}}
    with pytest.raises(ShapeError, match="get_order"):
        ToolCatalog.from_data([tool, tool])


# -- what gets embedded ------------------------------------------------------------------------

def test_embedding_text_has_name_words_description_and_parameters(catalog):
    tool = catalog.get("track_shipment")
    text = embedding_text(tool)
    assert "track_shipment" in text and "track shipment" in text
    assert tool.description in text
    for pname, spec in tool.parameters["properties"].items():
        assert f"{pname}: {spec['description']}" in text


def test_embedding_text_includes_nested_parameters_of_objects_and_arrays(catalog):
    refund = embedding_text(catalog.get("create_refund"))  # array of objects
    assert "line_items.sku: SKU of the line item." in refund
    assert "line_items.restock" in refund
    customer = embedding_text(catalog.get("update_customer"))  # object in an object
    assert "changes.default_address.postal_code: ZIP or postal code." in customer


# -- content hash ------------------------------------------------------------------------------

def test_content_hash_is_stable_across_reloads_and_distinct_per_tool(catalog):
    again = ToolCatalog.load(CATALOG_FILE)
    assert [content_hash(t) for t in catalog.tools] == [content_hash(t) for t in again.tools]
    assert len({content_hash(t) for t in catalog.tools}) == len(catalog)


def test_content_hash_changes_when_a_description_changes(catalog):
    tool = catalog.get("cancel_order")
    before = content_hash(tool)
    assert content_hash(replace(tool, description=tool.description + " Needs a reason.")) != before
    params = copy.deepcopy(dict(tool.parameters))
    params["properties"]["reason"]["description"] = "Why."
    assert content_hash(replace(tool, parameters=params)) != before
    assert content_hash(replace(tool, category="refunds")) != before
    assert content_hash(replace(tool, parameters=copy.deepcopy(dict(tool.parameters)))) == before


# -- the same tools in three shapes ------------------------------------------------------------

@pytest.mark.parametrize("to_shape", [tools_to_openai, tools_to_anthropic, tools_to_mcp],
                         ids=["openai", "anthropic", "mcp"])
def test_openai_anthropic_and_mcp_shapes_give_the_same_catalog(catalog, to_shape):
    tools = catalog.tools
    doc = {"name": catalog.name, "expansions": {k: list(v) for k, v in catalog.expansions.items()},
           "tools": _with_category(to_shape(tools), tools)}
    other = ToolCatalog.from_data(json.loads(json.dumps(doc)))
    assert other == catalog
    assert [content_hash(t) for t in other.tools] == [content_hash(t) for t in tools]
    assert [embedding_text(t) for t in other.tools] == [embedding_text(t) for t in tools]


def test_an_mcp_tools_list_response_gives_the_same_tools(catalog):
    response = {"jsonrpc": "2.0", "id": 1, "result": {"tools": _with_category(tools_to_mcp(catalog.tools), catalog.tools)}}
    assert ToolCatalog.from_data(response).tools == catalog.tools


# -- token costs -------------------------------------------------------------------------------

def test_token_costs_are_positive_and_sum_to_the_request_cost_without_func_end(catalog):
    counter = TokenCounter("gpt-4o")
    costs = catalog.token_costs(counter)
    assert list(costs) == list(catalog.names)
    assert all(n > 0 for n in costs.values())
    assert sum(costs.values()) == counter.tools(catalog.tools) - 12
    assert catalog.token_costs() == costs  # gpt-4o is the default


def test_a_longer_definition_costs_more_tokens(catalog):
    tool = catalog.get("get_ticket")
    longer = replace(tool, description=tool.description + " Also shows the seat section, row and the gate to use.")
    small = ToolCatalog.from_tools([tool]).token_costs()["get_ticket"]
    big = ToolCatalog.from_tools([longer]).token_costs()["get_ticket"]
    assert big > small


def test_embedding_text_of_a_tool_built_in_python_with_a_schema_the_api_would_refuse():
    """A ToolDef made in code (not read from a file, where the reader refuses it) whose
    ``properties`` is not an object gives its name and description to embed, not an AttributeError."""
    from ctxlab.conversation import ToolDef
    text = embedding_text(ToolDef("odd_tool", "Looks up an order.", {"type": "object", "properties": 5}))
    assert "odd_tool" in text and "Looks up an order." in text
