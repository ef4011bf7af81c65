"""offload: large tool results written to a store, a pointer and a preview kept (Manus, Cursor, Deep
Agents' FilesystemMiddleware); a fact outside the preview is read back, and that read is priced as one
more call (a model), on a real SWE-agent run whose flag sits in the tail of a 24 KB result."""
from __future__ import annotations

import json

import ctxlab
from ctxlab.cli import main
from ctxlab.measure import measure
from ctxlab.pricing import READ_BACK_MODEL
from ctxlab.strategies import Budget, get_strategy, make_view
from ctxlab.strategies.offload import OFFLOADED, preview_text

from .test_strategies_head_tail import FLASH

FLAG = "b3l0w_th3_r4dar"  # the fact the submit call uses, in flag{...}


def test_a_large_result_becomes_a_pointer_and_a_head_preview_on_a_real_run():
    conv = ctxlab.load(FLASH)
    plan = get_strategy("offload", min_tokens=2_000, preview_tokens=100, preview_tail=False).apply(make_view(conv),
                                                                                                Budget(128_000))
    assert [i for i, a in enumerate(plan.actions) if a == "truncate"] == [7]
    sent = plan.messages[plan.origin.index(7)]
    assert sent.text.startswith("[Tool result of ") and "/large_tool_results/" in sent.text
    assert FLAG not in sent.text and sent.extra[OFFLOADED]["tokens"] > 2_000
    assert plan.tokens_after < plan.tokens_before - 2_000


def test_a_fact_only_in_the_offloaded_part_is_read_back_and_priced_as_one_more_call():
    conv = ctxlab.load(FLASH)
    budget = Budget(128_000)
    off = measure(conv, get_strategy("offload", min_tokens=2_000, preview_tail=False), budget, model="gpt-4o")
    whole = measure(conv, get_strategy("none"), budget, model="gpt-4o")
    assert any(FLAG in m.fact for m in off.fidelity.misses)  # the prompt lacked it
    [rb] = off.fidelity.read_backs
    assert rb.source == 7 and any(FLAG in f for f in rb.facts) and rb.read_tokens > 2_000
    assert off.fidelity.recall_with_read_backs == 1.0 > off.needed_recall
    assert off.cost.read_backs == 1 and len(off.cost.calls) == len(whole.cost.calls) + 1
    read = next(c for c in off.cost.calls if c.read_back)
    assert read.prompt_tokens == rb.prompt_tokens + rb.read_tokens and read.cached_tokens > 0
    assert off.summary()["read_backs_model"] == 1
    assert off.cost.to_dict()["read_back_model"] == READ_BACK_MODEL


def test_a_head_and_tail_preview_holds_the_flag_so_nothing_is_read_back():
    conv = ctxlab.load(FLASH)
    off = measure(conv, get_strategy("offload", min_tokens=2_000), Budget(128_000))  # head_tail, the default
    assert off.fidelity.read_backs == () and off.cost.read_backs == 0
    assert not any(FLAG in m.fact for m in off.fidelity.misses)


def test_an_offloaded_result_stays_offloaded_so_later_calls_extend_the_cached_prefix():
    conv = ctxlab.load(FLASH)
    from ctxlab.replay import replay
    r = replay(conv, get_strategy("offload", min_tokens=2_000), Budget(128_000))
    after = [c for c in r.calls if c.index > 7]
    assert after and all(c.extends_previous for c in after[1:])
    assert sum(c.triggered for c in r.calls) == 1


def test_the_replay_json_carries_the_read_backs_as_a_model(capsys):
    code = main(["replay", str(FLASH), "--strategy", "offload", "--param", "offload.min_tokens=2000",
                 "--param", "offload.preview_tail=false",
                 "--model", "gpt-4o", "--max-tokens", "128000"])
    out = json.loads(capsys.readouterr().out)
    d = out[0] if isinstance(out, list) else out
    assert code == 0
    assert d["cost"]["read_back_calls_model"] == 1 and "one more call" in d["cost"]["read_back_model"]
    assert d["fidelity"]["read_backs_model"][0]["source"] == 7


def test_preview_text_keeps_head_or_head_and_tail():
    text = "A" * 1000 + "B" * 1000
    assert preview_text(text, 10, False) == "A" * 40
    assert preview_text(text, 10, True) == "A" * 20 + "\n[...]\n" + "B" * 20
    assert preview_text("short", 10, False) == "short"


def test_budget_scaling_lowers_the_threshold_and_small_results_stay():
    assert get_strategy("offload").min_tokens == 20_000
    scaled = get_strategy("offload").scaled_defaults(Budget(16_000))["min_tokens"]
    assert scaled < 2_000
    conv = ctxlab.load(FLASH)
    idle = get_strategy("offload").apply(make_view(conv), Budget(128_000))
    assert idle.idle and "min_tokens" in idle.idle


def _deepagents_export(**params):
    from ctxlab.configs import export_native, make_config
    return export_native(make_config(get_strategy("offload", **params), Budget(128_000), "gpt-4o"), "deepagents")


def test_the_export_to_deep_agents_sets_the_threshold_and_says_what_differs():
    native = _deepagents_export(min_tokens=2_000, preview_tail=False, path="/store/{tool_call_id}")
    kwargs = native.data["middleware"][0]["kwargs"]
    assert native.data["middleware"][0]["class"] == "FilesystemMiddleware"
    assert kwargs == {"tool_token_limit_before_evict": 2_000}
    notes = " ".join(native.not_carried)
    assert "8,000 characters" in notes and "first and last 5 lines" in notes and "/store/{tool_call_id}" in notes
    compile(native.python, "deepagents_export.py", "exec")


def test_a_strategy_deep_agents_has_no_setting_for_is_refused_naming_offload():
    from ctxlab.configs import NoNativeFormError, export_native, make_config
    import pytest
    with pytest.raises(NoNativeFormError, match="offload"):
        export_native(make_config(get_strategy("head_tail"), Budget(128_000), "gpt-4o"), "deepagents")


def test_the_exported_middleware_evicts_the_real_result_ctxlab_offloads(tmp_path):
    import pytest
    pytest.importorskip("deepagents", reason="deepagents is not installed (pip install deepagents==0.7.32)")
    from deepagents.backends import FilesystemBackend
    from langchain_core.messages import ToolMessage
    namespace: dict = {}
    exec(_deepagents_export(min_tokens=2_000).python, namespace)
    middleware = namespace["offload_middleware"](FilesystemBackend(root_dir=tmp_path, virtual_mode=True))
    result = ctxlab.load(FLASH).messages[7]
    sent, evicted = middleware._process_large_message(ToolMessage(content=result.text, tool_call_id="action-6"),
                                                      middleware.backend)
    assert evicted and "/large_tool_results/action-6" in sent.content
    assert FLAG in (tmp_path / "large_tool_results" / "action-6").read_text()
    assert FLAG in sent.content  # its preview's last 5 lines hold the flag, as ctxlab's head_tail preview does
    ours = get_strategy("offload", min_tokens=2_000).apply(make_view(ctxlab.load(FLASH)), Budget(128_000))
    assert FLAG in ours.messages[ours.origin.index(7)].text


def test_a_result_whose_pointer_would_not_be_shorter_is_sent_as_is_and_says_why():
    conv = ctxlab.load(FLASH)
    view = make_view(conv)
    small = min((t, i) for i, (t, r) in enumerate(zip(view.tokens, view.roles)) if r == "tool")
    plan = get_strategy("offload", min_tokens=max(small[0] - 1, 1), preview_tokens=10_000).apply(view, Budget(128_000))
    assert plan.actions[small[1]] == "keep" and "would not be shorter" in plan.reasons[small[1]]


def test_the_offload_marker_stays_inside_ctxlab_when_the_result_is_exported():
    conv = ctxlab.load(FLASH)
    plan = get_strategy("offload", min_tokens=2_000).apply(make_view(conv), Budget(128_000))
    for fmt in ("openai", "anthropic", "langchain"):
        text = json.dumps(ctxlab.export(conv.with_messages(plan.messages), fmt).data)
        assert "/large_tool_results/" in text and OFFLOADED not in text, fmt


def test_a_result_with_a_given_token_count_is_offloaded_and_its_pointer_counted():
    from ctxlab.conversation import FIXED_TOKENS, Conversation

    from ..builders import assistant, system, tool, user
    big = tool("r1", "line of a log\n" * 3_000)
    given = big.__class__(big.role, big.content, big.name, big.tool_calls, big.tool_call_id, big.is_error, big.id,
                          {FIXED_TOKENS: 12_000}, big.usage)
    conv = Conversation((system("agent"), user("build it"), assistant("", "r1"), given, assistant("done")))
    view = make_view(conv)
    assert view.tokens[3] == 12_000
    plan = get_strategy("offload", min_tokens=2_000).apply(view, Budget(128_000))
    assert plan.actions[3] == "truncate" and plan.output_tokens[plan.origin.index(3)] < 1_000
