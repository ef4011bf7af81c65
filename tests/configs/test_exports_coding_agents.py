"""The condensers exported to SWE-agent's YAML and OpenHands' config.toml, with what does not carry."""
from __future__ import annotations

import tomllib

import pytest
import yaml

from ctxlab.configs import NoNativeFormError, export_native, make_config
from ctxlab.strategies import Budget, get_strategy


def _cfg(name: str, **params):
    return make_config(get_strategy(name, **params), Budget(32_000), "gpt-4o")


def test_observation_masking_to_swe_agent_yaml_reads_back():
    out = export_native(_cfg("observation_masking", window=7, polling=3), "swe_agent")
    doc = yaml.safe_load(out.python)
    assert doc == {"agent": {"history_processors": [{"type": "last_n_observations", "n": 7, "polling": 3}]}}
    assert doc == out.data
    assert any("placeholder" in n for n in out.not_carried)


def test_a_custom_placeholder_is_said_not_to_carry():
    out = export_native(_cfg("observation_masking", placeholder="<gone>"), "swe_agent")
    assert any("'<gone>' is not exported" in n for n in out.not_carried)


@pytest.mark.parametrize("name, params, section", [
    ("observation_masking", {"window": 5}, {"type": "observation_masking", "attention_window": 10}),
    ("recent_events", {"keep_first": 2, "max_events": 40}, {"type": "recent", "keep_first": 2, "max_events": 40}),
    ("amortized_forgetting", {"max_size": 60}, {"type": "amortized", "max_size": 60, "keep_first": 1}),
    ("llm_attention", {"max_size": 40}, {"type": "llm_attention", "llm_config": "condenser", "max_size": 40,
                                         "keep_first": 1}),
])
def test_condensers_to_openhands_toml_read_back(name, params, section):
    out = export_native(_cfg(name, **params), "openhands")
    assert tomllib.loads(out.python) == {"condenser": section} == dict(out.data)
    assert any("events" in n for n in out.not_carried)


def test_strategies_without_a_native_form_name_the_ones_that_have_one():
    with pytest.raises(NoNativeFormError) as e:
        export_native(_cfg("recent_events"), "swe_agent")
    assert "observation_masking" in str(e.value)
