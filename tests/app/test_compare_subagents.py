"""Compare on a Claude Code main session with a sub-agent: each compared strategy on the
sub-agent's work isolated (as logged) and inline in the parent, figures as ``ctxlab.subagents.isolation``
gives them under the same strategy and budget, a cap on the returned result, in English and in Chinese."""
from __future__ import annotations


from streamlit.testing.v1 import AppTest

from ctxlab import i18n
from ctxlab.compare import DEFAULT_STRATEGIES
from ctxlab.strategies import STRATEGIES, Budget, get_strategy
from ctxlab.subagents import isolation

from ..conftest import ROOT
from .helpers import open_page, open_pasted
from .english_left import english_left_in, report, subagent_section_english

PARENT = ROOT / "tests" / "data" / "coding" / "claude_code_task_parent.jsonl"


def _open(monkeypatch, lang: str = "en") -> AppTest:
    at = open_pasted("compare.py", PARENT.read_text(encoding="utf-8"), monkeypatch, lang)
    assert not at.exception, at.exception
    return at


def _rows(at: AppTest) -> dict[tuple[str, str], dict]:
    frame = next(d.value for d in at.dataframe if "form" in d.value.columns)
    return {(r["strategy"], r["form"]): r for r in frame.to_dict("records")}


def _engine(at: AppTest, name: str, return_cap: int | None = None) -> dict:
    """The engine's measure with the page's budget and the parameters scaled to it (as the columns start)."""
    budget = Budget(int(at.session_state["max_tokens"]), float(at.session_state["reserve"]), 0)
    strategy = get_strategy(name, **STRATEGIES[name].scaled_defaults(budget))
    return isolation(PARENT.read_text(encoding="utf-8"), model=at.session_state["model"], return_cap=return_cap,
                     strategy=strategy, budget=budget)["measured"]


def test_each_strategy_shows_the_sub_agent_isolated_beside_inline_as_the_engine_measures_it(monkeypatch):
    at = _open(monkeypatch)
    rows = _rows(at)
    assert len(rows) == 4  # two strategies x two forms
    for name in DEFAULT_STRATEGIES[:2]:
        want = _engine(at, name)
        (label,) = {s for s, _f in rows if s.endswith(name)}
        iso, inline = rows[(label, "isolated")], rows[(label, "inline")]
        assert iso["parent prompt tokens"] == want["isolated"]["parent"]["prompt_tokens"]
        assert iso["prompt tokens, all contexts"] == want["isolated"]["total"]["prompt_tokens"]
        assert inline["prompt tokens, all contexts"] == want["inline"]["total"]["prompt_tokens"]
        assert iso["calls over limit"] == want["isolated"]["total"]["calls_over_limit"]
        assert iso["cost $"] == want["isolated"]["total"]["cost_usd"] and iso["cost $"] > 0
        assert inline["parent needed recall"] == want["inline"]["parent"]["needed_recall"]
        assert iso["parent prompt tokens"] < inline["parent prompt tokens"]
    assert any("a model of the alternative" in c.value for c in at.caption)
    at.number_input(key="cmp_subagent_cap").set_value(200).run()
    assert not at.exception, at.exception
    name = DEFAULT_STRATEGIES[0]
    (label,) = {s for s, _f in _rows(at) if s.endswith(name)}
    capped, want = _rows(at)[(label, "isolated")], _engine(at, name, return_cap=200)["isolated"]["parent"]
    assert (capped["parent prompt tokens"], capped["largest parent prompt"]) == (want["prompt_tokens"],
                                                                                 want["largest_prompt"])
    # the excerpt ends on the call that reads the returned result: the cap shows in that largest prompt
    assert capped["largest parent prompt"] < rows[(label, "isolated")]["largest parent prompt"]


def test_a_conversation_without_sub_agents_has_no_such_section(monkeypatch):
    at = open_page("compare.py", monkeypatch)
    assert not at.exception, at.exception
    assert at.dataframe and not [n for n in at.number_input if n.key == "cmp_subagent_cap"]


def _section_english() -> list[str]:
    return subagent_section_english(ROOT / "pages" / "compare.py", "_subagents_section")


def test_the_section_in_chinese_leaves_no_english(monkeypatch):
    i18n.use("zh")
    try:
        at = _open(monkeypatch, "zh")
        (cap,) = [n for n in at.number_input if n.key == "cmp_subagent_cap"]
        assert cap.label.startswith("每个返回结果的上限")
        left = english_left_in(at, _section_english())
        assert not left, report(left)
    finally:
        i18n.use("en")
