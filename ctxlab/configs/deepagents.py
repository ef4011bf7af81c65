"""``offload`` as LangChain Deep Agents' filesystem offload (``FilesystemMiddleware``).

Deep Agents (``deepagents``, ``deepagents.middleware.filesystem``) evicts a tool result whose text
is longer than ``4 * tool_token_limit_before_evict`` characters (default 20,000 tokens) to
``/large_tool_results/<tool_call_id>`` in its backend and sends a message with the path and a
preview: the first and last 5 lines, line-numbered, each cut to 1,000 characters (read from
deepagents 0.7.32's source). The agent reads the rest with its ``read_file`` tool. Only the
threshold maps to a setting; the preview's size and shape and the path are Deep Agents' own.
"""
from __future__ import annotations

from ..i18n import T
from .lab_config import LabConfig
from .native import NativeExport, common_notes, notes_block, pretty, target

CHECKED_WITH = {"deepagents": "0.7.32"}

_CODE = '''\
"""LangChain Deep Agents filesystem offload exported by ctxlab {version} from an offload config.

Needs: pip install deepagents  (checked with {checked})
"""
{notes}
from deepagents.middleware.filesystem import FilesystemMiddleware

TOOL_TOKEN_LIMIT_BEFORE_EVICT = {limit}


def offload_middleware(backend=None) -> FilesystemMiddleware:
    """The filesystem middleware that writes tool results over the limit to /large_tool_results/."""
    return FilesystemMiddleware(backend=backend, tool_token_limit_before_evict=TOOL_TOKEN_LIMIT_BEFORE_EVICT)

# Use it in create_agent(..., middleware=[offload_middleware()]); create_deep_agent includes it already.
# As data:
{json}
'''


def _notes(lab: LabConfig) -> list[str]:
    """What Deep Agents does differently from the replayed offload."""
    s = lab.strategy
    notes = [*common_notes(lab, budget_used=False),
             T("tool_token_limit_before_evict {limit:,}: Deep Agents compares 4 characters a token (the result's "
               "length over {chars:,} characters), ctxlab counts the model's tokens", limit=s.min_tokens,
               chars=4 * s.min_tokens),
             T("preview: Deep Agents shows the first and last 5 lines (each cut to 1,000 characters), not "
               "preview_tokens {tokens:,} (preview_tail {tail})", tokens=s.preview_tokens, tail=s.preview_tail)]
    if s.path != "/large_tool_results/{tool_call_id}":
        notes.append(T("path {path}: Deep Agents writes to /large_tool_results/<tool_call_id>", path=s.path))
    return notes


def _export(lab: LabConfig) -> NativeExport:
    from ..version import __version__
    limit = lab.strategy.min_tokens
    notes = _notes(lab)
    data = {"middleware": [{"class": "FilesystemMiddleware", "kwargs": {"tool_token_limit_before_evict": limit}}],
            "checked_with": CHECKED_WITH}
    code = _CODE.format(version=__version__, checked=CHECKED_WITH["deepagents"], notes=notes_block(notes).rstrip("\n"),
                        limit=limit, json="\n".join("# " + ln for ln in pretty(data).splitlines()))
    return NativeExport("deepagents", "offload", data, code, tuple(notes))


target("deepagents", {"offload": _export},
       hint=T("Deep Agents' filesystem middleware offloads large tool results; for the other strategies, use the "
              "langchain target or run the ctxlab snippet."))

__all__ = ["CHECKED_WITH"]
