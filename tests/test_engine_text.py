"""What the engine writes (reasons, idle sentences, warnings, notes, the validator's findings,
retrieval's unsure reasons) stays English in JSON, the CLI and exports, and reads in Chinese where a
page shows it through :func:`ctxlab.i18n.local`."""
from __future__ import annotations

import json
import pickle
from pathlib import Path

import pytest

import ctxlab
from ctxlab import i18n
from ctxlab.i18n import T, Text, Tn, listing, local, local_all, use
from ctxlab.strategies import STRATEGIES, Budget, get_strategy, make_view
from ctxlab.tokens import TokenCounter
from ctxlab.validate import validate

ROOT = Path(__file__).resolve().parents[1]
CJK = "\u4e00-\u9fff"


@pytest.fixture
def zh():
    use("zh")
    yield
    use("en")


def _plans(sample: str = "zh_support_agent.json", max_tokens: int = 16_000):
    """Every registered strategy's plan of a bundled sample, at scaled and documented defaults."""
    conv = ctxlab.load(ROOT / "sample_data" / sample)
    counter = TokenCounter("gpt-4o")
    view = make_view(conv, counter=counter)
    budget = Budget(max_tokens, 0.15, counter.tools(conv.tools))
    for name, cls in STRATEGIES.items():
        for params in (cls.scaled_defaults(budget), {}):
            try:
                yield name, get_strategy(name, **params).apply(view, budget)
            except ctxlab.CtxlabError:
                continue


def test_a_text_is_its_english_string_everywhere_outside_local():
    t = T("cut by {call}: {kept:,} of {tokens:,} tokens kept", call="trim", kept=1200, tokens=3400)
    assert t == "cut by trim: 1,200 of 3,400 tokens kept" and hash(t) == hash(str(t))
    assert json.dumps({"reason": t}) == '{"reason": "cut by trim: 1,200 of 3,400 tokens kept"}'
    assert f"{t}" == str(t) and type(str(t)) is str
    assert Tn("{n} turn old", "{n} turns old", 1) == "1 turn old" and Tn("{n} turn old", "{n} turns old", 4) == "4 turns old"


def test_texts_survive_pickling_with_their_template(zh):
    inner = T("always kept: the system prompt")
    t = T("{step}: {reason}", step="sliding_window", reason=inner)
    items = listing([T("{count:,} pinned", count=2), T("{count:,} of excluded tools", count=1)])
    back, back_items = pickle.loads(pickle.dumps((t, items)))
    assert type(back) is Text and back == t and back.msg == "{step}: {reason}"
    assert local(back) == "sliding_window：始终保留：系统提示词"
    assert back_items == "2 pinned, 1 of excluded tools" and local(back_items) == "2 个已固定、1 个来自被排除的工具"


def test_local_renders_a_text_in_the_language_in_use_and_plain_strings_through_the_catalog(zh):
    t = T("outside the {target:,}-token window", target=12000)
    assert local(t) == "在 12,000 token 的窗口之外"
    assert local("sent as is") == "原样发送"  # a plain marked string: through the catalog
    assert local("an unmarked sentence") == "an unmarked sentence" and local(None) is None
    use("en")
    assert local(t) == "outside the 12,000-token window"


def test_a_translation_that_does_not_fit_falls_back_to_english(zh, monkeypatch):
    class Broken:
        def gettext(self, m):
            return "{missing} 坏了"

        def ngettext(self, s, p, n):
            return "{missing}"
    monkeypatch.setattr(i18n, "translations", lambda lang: Broken())
    t = T("outside the {target:,}-token window", target=5)
    assert local(t) == "outside the 5-token window"


def test_a_plans_reasons_read_in_chinese_and_stay_english_in_its_json(zh):
    conv = ctxlab.load(ROOT / "sample_data" / "zh_support_agent.json")
    counter = TokenCounter("gpt-4o")
    view = make_view(conv, counter=counter)
    plan = get_strategy("sliding_window").apply(view, Budget(4_000, 0.15, counter.tools(conv.tools)))
    assert plan.removed > 0, "the budget must make the window act"
    shown = local_all(plan.reasons)
    assert all(any("\u4e00" <= c <= "\u9fff" for c in r) for r in shown), shown[:5]
    assert "在 " in " ".join(shown) and "token 的窗口" in " ".join(shown)
    data = json.dumps(plan.to_dict(), ensure_ascii=False)  # the CLI's JSON: English whatever the language
    assert "outside the" in data and "窗口" not in data
    assert plan.reasons[0] in ("always kept: the system prompt", "always kept: the newest user message") or \
        plan.reasons[0].startswith(("outside", "inside"))


def _english_runs(text: str) -> list[str]:
    from .app.english_left import english_runs, _names
    return english_runs(text, _names())


def test_every_strategy_writes_nothing_left_in_english_under_chinese(zh):
    """Each reason, idle sentence, warning and note of every strategy on the Chinese sample (budgets
    where strategies act and where they do not) and the validator's findings on the result read in
    Chinese: a string built without T would show up here as English."""
    left: dict[str, set[str]] = {}
    for sample, tokens in (("zh_support_agent.json", 16_000), ("zh_support_agent.json", 3_000),
                           ("ecommerce_refund.json", 2_000)):
        for name, plan in _plans(sample, tokens):
            texts = [*set(plan.reasons), *plan.warnings, *plan.notes, *([plan.idle] if plan.idle else [])]
            for rules in ("openai", "anthropic"):
                texts += [f.message for f in validate(list(plan.messages), rules)]
            for t in texts:
                runs = _english_runs(local(t))
                if runs:
                    left.setdefault(name, set()).add(f"{t!s} -> {local(t)} {runs}")
    assert not left, {k: sorted(v)[:3] for k, v in left.items()}


def test_local_all_renders_each_shared_reason_once(zh, monkeypatch):
    shared = T("sent as is")
    calls = []
    real = i18n.local
    monkeypatch.setattr(i18n, "local", lambda t: calls.append(t) or real(t))
    out = local_all([shared] * 1000)
    assert out == ["原样发送"] * 1000 and len(calls) == 1


def test_the_validators_findings_read_in_chinese(zh):
    conv = ctxlab.loads(json.dumps([{"role": "user", "content": "hi"},
                                    {"role": "assistant", "content": None, "tool_calls": [
                                        {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
                                    {"role": "user", "content": "again"}]))
    found = validate(conv.messages, "openai")
    assert found and all(f.message.startswith("Message") for f in found)
    assert all(local(f.message).startswith("消息") for f in found), [local(f.message) for f in found]


def test_a_repeated_sentence_is_one_object_and_a_look_alike_parameter_is_not_taken_for_it(zh):
    a = T("{step}: {reason}", step="x", reason=T("sent as is"))
    assert T("{step}: {reason}", step="x", reason=T("sent as is")) is a  # a loop's repeats share one text
    plain = T("{step}: {reason}", step="x", reason="sent as is")  # equal English, but not a Text
    assert plain == a and plain is not a
    assert local(a) == "x：原样发送" and local(plain) == "x：sent as is"
    assert Tn("{n} turn old", "{n} turns old", 3) is Tn("{n} turn old", "{n} turns old", 3)


def test_an_upload_error_reads_in_chinese_and_stays_english_on_the_cli(zh):
    from ctxlab.i18n import local_error
    with pytest.raises(ctxlab.CtxlabError) as bad_json:
        ctxlab.loads('[{"role": "user", "content": "hi"}')
    with pytest.raises(ctxlab.CtxlabError) as no_id:
        ctxlab.loads('[{"role": "tool", "content": "x"}]')
    for e in (bad_json.value, no_id.value):
        assert str(e).isascii()  # what the CLI prints
        assert not _english_runs(local_error(e).replace("input", "").replace("message", "")), local_error(e)
    assert "不是有效的 JSON" in local_error(bad_json.value) and "缺少 tool_call_id" in local_error(no_id.value)
    e = ctxlab.CtxlabError(T("the input is empty"), where="input")
    e.args = ("input: the input is empty (read as OpenAI Chat)",)  # a reader that added context to the text
    assert local_error(e) == "input: the input is empty (read as OpenAI Chat)"


def test_a_sweeps_notes_read_in_chinese_on_the_page_after_running_in_english(zh):
    """The Tune page runs a sweep in a worker thread, in English; the page shows its notes in Chinese."""
    from ctxlab.sweep import recommendation_notes
    use("en")  # the worker's language
    point = {"calls_over_limit": 3, "calls": 40, "max_tokens": 8_000, "worst_prompt": 9_512}
    notes = [*recommendation_notes([point], 0, 0.9), *recommendation_notes([point], None, 0.9)]
    assert notes[0].startswith("no point fits every model call") and "3 of 40 calls" in notes[0]
    assert notes[1].startswith("no point serves at least 90%")
    use("zh")
    for note in notes:
        shown = local(note)
        assert shown != note and not _english_runs(shown), shown
    assert "9,512" in local(notes[0]) and "90%" in local(notes[1])
