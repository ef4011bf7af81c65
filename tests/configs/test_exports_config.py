"""ctxlab's config: every registered strategy exports and reads back to the same plan (JSON and
YAML, pins and tool settings included); bad configs name their key; `ctxlab apply --config` uses
the file and lets flags override it; `ctxlab config export` prints native forms and notes."""
from __future__ import annotations

import json

import pytest
import yaml

import ctxlab
from ctxlab.cli import main
from ctxlab.configs import ConfigError, TARGETS, config_json, config_yaml, load_config_file, make_config, read_config
from ctxlab.strategies import STRATEGIES, Budget, get_strategy, make_view
from ctxlab.tokens import TokenCounter

from ..conftest import SAMPLES
from .test_snippets import NON_DEFAULT

MODEL = "gpt-4o"
SAMPLE = SAMPLES / "ecommerce_refund.json"
TOOLS = {"catalog": "sample_data/tools_ecommerce.json", "top_k": 4, "threshold": 0.3, "always_include": ["get_order"]}


def _strategies() -> list:
    out = [get_strategy(n) for n in STRATEGIES]
    out += [get_strategy(n, **p) for n, p in NON_DEFAULT.items()]
    return out + [get_strategy("clear_tool_results", trigger_tokens=0) >> get_strategy("tool_rounds")]


def _plan(conv, strategy, budget, pins=()):
    return strategy.apply(make_view(conv, counter=TokenCounter(MODEL), pins=pins), budget)


@pytest.mark.parametrize("strategy", _strategies(), ids=repr)
@pytest.mark.parametrize("text_of, load", [(config_json, json.loads), (config_yaml, yaml.safe_load)], ids=["json", "yaml"])
def test_export_read_back_gives_the_same_plan(strategy, text_of, load, tmp_path):
    conv = ctxlab.load(SAMPLE)
    budget = Budget.for_model(MODEL, max_tokens=6_000, tools_tokens=TokenCounter(MODEL).tools(conv.tools))
    config = make_config(strategy, budget, MODEL, pins=[5], tools=TOOLS)
    path = tmp_path / ("c.json" if text_of is config_json else "c.yaml")
    path.write_text(text_of(config))
    lab = load_config_file(path)
    assert load(path.read_text())["ctxlab_config"] == 1
    assert (lab.strategy, lab.budget(), lab.pins, dict(lab.tools)) == (strategy, budget, (5,), TOOLS)
    before, after = _plan(conv, strategy, budget, (5,)), _plan(conv, lab.strategy, lab.budget(), lab.pins)
    assert (after.actions, after.reasons, [m.text for m in after.messages]) == \
        (before.actions, before.reasons, [m.text for m in before.messages])


def test_a_config_written_before_the_version_key_still_reads():
    lab = read_config({"ctxlab": "0.1.0", "strategy": "tool_rounds", "params": {"keep_rounds": 2}, "model": MODEL})
    assert lab.strategy == get_strategy("tool_rounds", keep_rounds=2) and lab.max_tokens == 128_000


GOOD = {"ctxlab_config": 1, "strategy": "tool_rounds", "params": {"keep_rounds": 1}, "model": MODEL}


@pytest.mark.parametrize("change, where", [
    ({"colour": "blue"}, "config.colour"),
    ({"ctxlab_config": 2}, "config.ctxlab_config"),
    ({"ctxlab_config": "one"}, "config.ctxlab_config"),
    ({"pins": [1, -2]}, "config.pins[1]"),
    ({"pins": "3"}, "config.pins"),
    ({"tools": {"top_k": 5, "colour": 1}}, "config.tools.colour"),
    ({"tools": {"top_k": "5"}}, "config.tools.top_k"),
    ({"tools": [1]}, "config.tools"),
])
def test_a_bad_config_names_the_key(change, where):
    with pytest.raises(ConfigError) as e:
        read_config({**GOOD, **change})
    assert e.value.where == where and str(e.value).startswith(where)


def test_a_config_file_that_is_neither_json_nor_yaml_names_the_line(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("strategy: tool_rounds\nparams: {keep_rounds: 1\n")
    with pytest.raises(ConfigError, match=r"line \d"):
        load_config_file(path)


def _run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def _write(tmp_path, config, name="c.yaml"):
    path = tmp_path / name
    path.write_text(config_yaml(config) if name.endswith(".yaml") else config_json(config))
    return path


def test_apply_with_a_config_gives_the_plan_of_the_same_flags(capsys, tmp_path):
    config = make_config(get_strategy("tool_rounds", keep_rounds=2), Budget(9_000, 0.2), MODEL, pins=[3])
    by_file = json.loads(_run(capsys, "apply", SAMPLE, "--config", _write(tmp_path, config))[1])
    by_flags = json.loads(_run(capsys, "apply", SAMPLE, "--strategy", "tool_rounds", "--param", "keep_rounds=2",
                               "--max-tokens", 9000, "--reserve", 0.2, "--pin", 3, "--model", MODEL)[1])
    assert by_file == by_flags
    assert by_file["budget"]["max_tokens"] == 9000
    assert by_file["params"] == {"keep_rounds": 2, "apply_at": "every_call", "works_on": "kept_history"}


def test_flags_override_the_config(capsys, tmp_path):
    config = make_config(get_strategy("sliding_window", buffer_ratio=0.3) >> get_strategy("tool_rounds"),
                         Budget(9_000, 0.2), MODEL)
    path = _write(tmp_path, config, "c.json")
    d = json.loads(_run(capsys, "apply", SAMPLE, "--config", path, "--param", "sliding_window.buffer_ratio=0.1",
                        "--max-tokens", 7000)[1])
    assert d["params"]["steps"][0]["params"]["buffer_ratio"] == 0.1 and d["budget"]["max_tokens"] == 7000
    assert d["budget"]["reserve"] == 0.2  # not overridden: the file's
    d = json.loads(_run(capsys, "apply", SAMPLE, "--config", path, "--strategy", "turn_safe")[1])
    assert d["strategy"] == "turn_safe"


@pytest.mark.parametrize("config, needle", [
    ({**GOOD, "colour": 1}, "config.colour: unknown key 'colour'"),
    ({**GOOD, "params": {"keep_rounds": -1}}, "config.params.keep_rounds"),
])
def test_apply_with_a_bad_config_exits_2_with_one_line(capsys, tmp_path, config, needle):
    code, out, err = _run(capsys, "apply", SAMPLE, "--config", _write(tmp_path, config, "c.json"))
    assert code == 2 and out == "" and needle in err and err.count("\n") == 1


def test_apply_needs_a_strategy_or_a_config(capsys):
    code, _, err = _run(capsys, "apply", SAMPLE)
    assert code == 2 and "--config" in err


def test_config_export_prints_the_native_form_and_notes(capsys, tmp_path):
    path = _write(tmp_path, make_config(get_strategy("clear_tool_results", keep=2), Budget(16_000), MODEL, pins=[4]))
    code, out, err = _run(capsys, "config", "export", path, "--to", "anthropic")
    assert code == 0, err
    d = json.loads(out)
    assert d["context_management"]["edits"][0]["keep"] == {"type": "tool_uses", "value": 2}
    assert d["not_carried"] and all(f"note: {n}" in err for n in d["not_carried"])
    assert any("pins (messages 4)" in n for n in d["not_carried"])
    code, out, _ = _run(capsys, "config", "export", path, "--to", "langchain", "--format", "python")
    assert code == 0 and "ClearToolUsesEdit(trigger=100000, keep=2" in out
    compile(out, "exported.py", "exec")


@pytest.mark.parametrize("strategy, to, needles", [
    ("tool_rounds", "langchain", ["tool_rounds has no native form in langchain", "clear_tool_results, summarize"]),
    ("tool_rounds", "openai_agents", ["Strategies that map to openai_agents: turn_safe"]),
    ("summarize", "crewai", ["unknown target 'crewai'", ", ".join(TARGETS)]),
])
def test_config_export_without_a_mapping_exits_2_naming_what_maps(capsys, tmp_path, strategy, to, needles):
    path = _write(tmp_path, make_config(get_strategy(strategy), Budget(16_000), MODEL))
    code, out, err = _run(capsys, "config", "export", path, "--to", to)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert all(n in err for n in needles), err
