"""The coding agents' condensers in the agents' own configuration files.

* SWE-agent: ``observation_masking`` as the ``last_n_observations`` history processor in the agent's
  YAML config (``agent.history_processors``, with ``n`` and ``polling``).
* OpenHands: ``observation_masking``, ``recent_events``, ``amortized_forgetting`` and ``llm_attention``
  as the ``[condenser]`` section of ``config.toml`` (types ``observation_masking``, ``recent``,
  ``amortized``, ``llm_attention``).

``NativeExport.python`` holds the config file's text here (YAML or TOML; the notes are ``#``
comments at its top), ``data`` the same settings as JSON-ready data. What does not carry over is
in ``not_carried``: OpenHands counts events where ctxlab counts messages; both agents use their
own placeholder text; ctxlab leaves a result alone when its placeholder would not shrink it.
"""
from __future__ import annotations

from typing import Any

from ..i18n import T
from .lab_config import LabConfig
from .native import NativeExport, common_notes, notes_block, target

SMALL_RESULTS = (T("ctxlab leaves an observation alone when its placeholder would not make it smaller; the agent "
                 "masks every older one"))
PINS_AND_BUDGET = T("the budget is ctxlab's planning limit; the agent's condenser does not read one")


def _placeholder_note(lab: LabConfig, agent: str, theirs: str) -> str:
    mine = lab.strategy.placeholder
    return (T("placeholder: {agent} writes its own text ({theirs}); ctxlab's {mine!r} is not exported", agent=agent, theirs=theirs, mine=mine)
            if mine != theirs else T("placeholder: {agent}'s own text, as in ctxlab", agent=agent))


def _yaml(processor: dict[str, Any]) -> str:
    lines = ["agent:", "  history_processors:", f"    - type: {processor['type']}"]
    lines += [f"      {k}: {v}" for k, v in processor.items() if k != "type"]
    return "\n".join(lines) + "\n"


def _swe_agent_masking(lab: LabConfig) -> NativeExport:
    s = lab.strategy
    processor = {"type": "last_n_observations", "n": max(s.window, 1), "polling": s.polling}
    notes = [*common_notes(lab, budget_used=False),
             _placeholder_note(lab, "SWE-agent", "Old environment output: ({lines} lines omitted)"), SMALL_RESULTS]
    if s.window == 0:
        notes.append(T("window 0 (mask every observation) becomes n: 1: SWE-agent requires n to be positive"))
    notes.append(T("SWE-agent's always_keep_output_for_tags / always_remove_output_for_tags have no ctxlab "
                 "equivalent; their defaults are kept"))
    data = {"agent": {"history_processors": [processor]}}
    return NativeExport("swe_agent", s.name, data, notes_block(notes) + _yaml(processor), tuple(notes))


_EVENTS = (T("OpenHands counts events (each tool call is an action event and its result an observation event), "
           "ctxlab counts messages (an assistant message with several calls is one)"))


def _toml(section: dict[str, Any]) -> str:
    def value(v: Any) -> str:
        return f'"{v}"' if isinstance(v, str) else str(v).lower() if isinstance(v, bool) else str(v)
    return "[condenser]\n" + "".join(f"{k} = {value(v)}\n" for k, v in section.items())


def _openhands(lab: LabConfig, section: dict[str, Any], extra: list[str]) -> NativeExport:
    notes = [*common_notes(lab, budget_used=False), *extra]
    return NativeExport("openhands", lab.strategy.name, {"condenser": section},
                        notes_block(notes) + _toml(section), tuple(notes))


def _openhands_masking(lab: LabConfig) -> NativeExport:
    s = lab.strategy
    window = max(2 * s.window, 1)
    return _openhands(lab, {"type": "observation_masking", "attention_window": window}, [
        T("attention_window counts the newest events, not observations: window {window} observations, each "
        "answering one action, span {span} events (more calls per action need a larger window)", window=s.window, span=window),
        _placeholder_note(lab, "OpenHands", "<MASKED>"), SMALL_RESULTS,
        *([T("polling has no OpenHands equivalent (it masks at every step)")] if s.polling > 1 else [])])


def _openhands_recent(lab: LabConfig) -> NativeExport:
    s = lab.strategy
    return _openhands(lab, {"type": "recent", "keep_first": s.keep_first, "max_events": s.max_events}, [
        T("{events}: keep_first and max_events keep fewer messages there when the agent makes parallel calls",
          events=_EVENTS),
        T("ctxlab never counts or drops the system prompt; OpenHands keeps it outside the events too")])


def _openhands_amortized(lab: LabConfig) -> NativeExport:
    s = lab.strategy
    return _openhands(lab, {"type": "amortized", "max_size": s.max_size, "keep_first": s.keep_first}, [
        T("{events}: max_size is reached sooner there when the agent makes parallel calls", events=_EVENTS),
        T("ctxlab replays the forgetting over the conversation's growth to know what is kept at its end; OpenHands "
        "forgets as the events arrive, to the same rule")])


def _openhands_attention(lab: LabConfig) -> NativeExport:
    s = lab.strategy
    section = {"type": "llm_attention", "llm_config": "condenser", "max_size": s.max_size, "keep_first": s.keep_first}
    return _openhands(lab, section, [
        T("{events}: max_size is reached sooner there when the agent makes parallel calls", events=_EVENTS),
        T("llm_config names an [llm.condenser] section you add to config.toml (its model, key); without it OpenHands "
        "uses the default LLM"),
        T("the model's prompt is OpenHands' own, not ctxlab's ATTENTION_PROMPT; ctxlab's offline fallback (keep the "
        "newest) has no OpenHands equivalent")])


target("swe_agent", {"observation_masking": _swe_agent_masking},
       hint=T("SWE-agent's history processors mask old observations; its other processors have no ctxlab strategy."))
target("openhands", {"observation_masking": _openhands_masking, "recent_events": _openhands_recent,
                     "amortized_forgetting": _openhands_amortized, "llm_attention": _openhands_attention},
       hint=T("OpenHands' llm and structured condensers map to ctxlab's summarize (summarizer llm / llm_structured), "
            "which is not exported here."))

__all__ = ["SMALL_RESULTS"]
