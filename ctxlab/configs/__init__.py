"""Exports of a tuned strategy: ctxlab's own config (JSON or YAML, read back by ``ctxlab apply
--config`` and the production snippet) and, where the semantics map, the native configuration of
the framework a team runs: the Anthropic Messages API's context editing, LangChain v1 agent
middleware and ``trim_messages``, the OpenAI Agents SDK's session settings, and the
providers' compaction: Anthropic compact_20260112, OpenAI Responses compaction and truncation, Google
ADK event compaction, Claude Code and Codex auto-compact thresholds, and Deep Agents' filesystem offload.

``export_native(config, "langchain")`` returns a :class:`NativeExport` (``data``, ``python``,
``not_carried``); ``TARGETS`` maps each target to the strategies it has a native form for.
"""
from .lab_config import (CONFIG_VERSION, ConfigError, LabConfig, config_json, config_yaml, load_config_file, make_config,
                     parse_config_text, read_config)
from .native import TARGETS, NativeExport, NoNativeFormError, export_native, mapped
from . import anthropic, langchain, openai_agents  # noqa: F401,I001  (each registers its target)
from . import coding_agents  # noqa: F401,I001  (swe_agent, openhands: the coding agents' condensers)
from . import anthropic_compaction, openai_responses, adk, autocompact  # noqa: F401,I001  (compaction exports)
from . import deepagents  # noqa: F401,I001  (offload: Deep Agents' filesystem middleware)

__all__ = ["CONFIG_VERSION", "ConfigError", "LabConfig", "NativeExport", "NoNativeFormError", "TARGETS",
           "config_json", "config_yaml", "export_native", "load_config_file", "make_config", "mapped",
           "parse_config_text", "read_config"]
