"""``summarize`` and ``server_compaction`` as Google ADK's event compaction, with its context cache.

ADK (google-adk, ``google.adk.apps.app``) takes ``App(..., events_compaction_config=...,
context_cache_config=...)``. ``EventsCompactionConfig`` has two trigger pairs, each set together:
``token_threshold`` + ``event_retention_size`` (after an invocation whose prompt reached the
threshold, older events are summarized and the newest ``event_retention_size`` raw events kept) and
``compaction_interval`` + ``overlap_size`` (a sliding window over user invocations); ``summarizer``
defaults to an LLM summarizer on the root agent's model. ``ContextCacheConfig``
(``google.adk.agents.context_cache_config``): ``cache_intervals`` (default 10, 1-100),
``ttl_seconds`` (default 1,800), ``min_tokens`` (default 0). Field names and defaults read from
ADK's source (``apps/app.py``, ``agents/context_cache_config.py``).

The export sets the token pair from the tuned trigger; the sliding window counts user invocations,
which no ctxlab parameter holds, so it is left unset and the notes say so.
"""
from __future__ import annotations

from ..i18n import T
from .compaction import kept_notes, trigger_note, tuned_trigger
from .lab_config import LabConfig
from .native import NativeExport, common_notes, notes_block, pretty, target

CACHE_DEFAULTS = {"cache_intervals": 10, "ttl_seconds": 1800, "min_tokens": 0}

_CODE = '''\
"""Google ADK app settings exported by ctxlab {version} from a {strategy} config.

Needs: pip install google-adk
"""
{notes}
from google.adk.agents.context_cache_config import ContextCacheConfig
from google.adk.apps.app import App, EventsCompactionConfig

EVENTS_COMPACTION = EventsCompactionConfig(token_threshold={threshold}, event_retention_size={retention})
CONTEXT_CACHE = ContextCacheConfig(cache_intervals={cache_intervals}, ttl_seconds={ttl_seconds}, min_tokens={min_tokens})


def make_app(root_agent, name: str = "agent_app") -> App:
    """The App with event compaction (a summary past the token threshold) and the context cache."""
    return App(name=name, root_agent=root_agent, events_compaction_config=EVENTS_COMPACTION,
               context_cache_config=CONTEXT_CACHE)

# As data:
{json}
'''


def _export(lab: LabConfig) -> NativeExport:
    from ..version import __version__
    s = lab.strategy
    t = tuned_trigger(lab)
    retention = s.keep_recent if s.name == "summarize" else 0
    compaction = {"token_threshold": t.inputs, "event_retention_size": retention}
    notes = [*common_notes(lab, budget_used=s.name == "summarize", runs="turn_start"),
             trigger_note(t, lab, T("ADK (from the prompt's token count)")),
             T("ADK compacts after an invocation (a user turn) ends, not before each model call inside it: a long turn "
             "can pass the threshold until it ends"),
             (T("event_retention_size {retention:,}: ADK counts events, ctxlab counts messages (a model event "
                "may hold several function calls, and their responses one event), so the same number keeps a different "
                "amount", retention=retention) if retention else
              T("event_retention_size 0: nothing but the summary is kept raw, as in server_compaction")),
             T("compaction_interval / overlap_size (ADK's sliding window over user invocations): no ctxlab parameter "
             "counts invocations, so they are left unset"),
             T("context_cache_config: ctxlab's config holds no cache setting; these are ADK's defaults "
             "({items}). A compaction rewrites the prompt's "
             "prefix, so the cache is rebuilt after each", items=', '.join(f'{k}={v}' for k, v in CACHE_DEFAULTS.items())),
             *[n for n in kept_notes(lab, T("ADK's compaction"), keeps_users=False) if not n.startswith("keep_recent")]]
    data = {"events_compaction_config": compaction, "context_cache_config": dict(CACHE_DEFAULTS)}
    code = _CODE.format(version=__version__, strategy=s.name, notes=notes_block(notes).rstrip("\n"),
                        threshold=t.inputs, retention=retention, **CACHE_DEFAULTS,
                        json="\n".join("# " + ln for ln in pretty(data).splitlines()))
    return NativeExport("adk", s.name, data, code, tuple(notes))


target("adk", {"summarize": _export, "server_compaction": _export},
       hint=T("ADK's event compaction summarizes past a token threshold; for the other strategies, run the ctxlab "
            "snippet in a before_model_callback."))

__all__ = ["CACHE_DEFAULTS"]
