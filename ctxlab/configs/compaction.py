"""What the compaction exports share: the tuned trigger and the notes on what a summarizing
strategy does that a provider's compaction does not.

The summarizing strategies are ``summarize`` (fold the oldest whole turns, keep the newest
``keep_recent`` messages) and ``server_compaction`` (one summary of everything before the trigger
point, the providers' own behaviour simulated). A provider's compaction fires on an input-token
count, so the exports take the token trigger the strategy was tuned with:

* ``server_compaction``: ``trigger_tokens``;
* ``summarize``: ``trigger_ratio`` of the tokens the budget leaves for messages (its token trigger;
  ``trigger_messages`` has no provider equivalent and is reported in ``not_carried``).

Providers count every input token (tool definitions, the system prompt), ctxlab's trigger counts the
messages, so :func:`tuned_trigger` adds the config's ``tools_tokens``, as the
``clear_tool_uses_20250919`` export does.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..i18n import T
from .lab_config import LabConfig

SUMMARIZING = ("summarize", "server_compaction")


@dataclass(frozen=True)
class Trigger:
    """A tuned compaction trigger: ``messages`` (ctxlab's, messages only), ``inputs`` (what a
    provider counts: messages plus tool definitions) and where the number came from."""

    messages: int
    inputs: int
    source: str


def tuned_trigger(lab: LabConfig) -> Trigger:
    """The input-token trigger a summarizing config was tuned with."""
    s = lab.strategy
    if s.name == "server_compaction":
        messages, source = s.trigger_tokens, T("trigger_tokens {trigger_tokens:,}", trigger_tokens=s.trigger_tokens)
    else:
        room = lab.budget().available
        messages = int(room * s.trigger_ratio)
        source = (T("trigger_ratio {trigger_ratio:g} of the {room:,} tokens the budget (max_tokens "
                  "{max_tokens:,}, reserve {reserve:g}) leaves for messages", trigger_ratio=s.trigger_ratio, room=room, max_tokens=lab.max_tokens, reserve=lab.reserve))
    messages = max(messages, 1)
    return Trigger(messages, messages + lab.tools_tokens, source)


def trigger_note(t: Trigger, lab: LabConfig, counted_by: str) -> str:
    """Where the exported trigger comes from and how the provider counts it."""
    return (T("trigger: {source} = {messages:,} message tokens; {counted_by} counts every input token, tool "
            "definitions included, so the export adds the config's tools_tokens ({tools_tokens:,}): "
            "{inputs:,}; ctxlab counted with tiktoken for {model}, the provider counts with its "
            "own tokenizer, so it fires at a slightly different point", source=t.source, messages=t.messages, counted_by=counted_by, tools_tokens=lab.tools_tokens, inputs=t.inputs, model=lab.model or 'gpt-4o'))


def kept_notes(lab: LabConfig, provider: str, *, keeps_users: bool) -> list[str]:
    """What the strategy keeps beside its summary that ``provider``'s compaction does not (or the
    other way round); ``keeps_users``: the provider keeps every user message verbatim."""
    s = lab.strategy
    notes: list[str] = []
    if s.name == "summarize":
        notes.append(T("keep_recent {keep_recent:,}: {provider} keeps no recent messages verbatim; its summary "
                       "replaces everything but the user messages, while summarize keeps the newest whole turns (and "
                       "target_ratio {target_ratio:g} decides how many older turns fold)", keep_recent=s.keep_recent,
                       provider=provider, target_ratio=s.target_ratio) if keeps_users else
                     T("keep_recent {keep_recent:,}: {provider} keeps no recent messages verbatim; its summary "
                       "replaces the whole history, while summarize keeps the newest whole turns (and "
                       "target_ratio {target_ratio:g} decides how many older turns fold)", keep_recent=s.keep_recent,
                       provider=provider, target_ratio=s.target_ratio))
        notes.append(T("trigger_messages {trigger_messages:,}: {provider} has no message-count trigger; only the "
                       "token trigger is exported", trigger_messages=s.trigger_messages, provider=provider))
        if s.summary_prompt or s.merge_prompt:
            notes.append(T("summary_prompt / merge_prompt: ctxlab's prompt templates ({{span}}, {{summary}}) are not "
                           "exported; {provider} writes the summary with its own prompt", provider=provider))
    elif s.keep_user_messages != keeps_users:
        flags = dict(setting=str(s.keep_user_messages).lower(), provider=provider, other=str(keeps_users).lower())
        notes.append(T("keep_user_messages {setting}: {provider} keeps every user message verbatim beside its summary; "
                       "replay server_compaction with keep_user_messages={other} to see that", **flags) if keeps_users else
                     T("keep_user_messages {setting}: {provider} keeps no user message beside its summary (only what "
                       "arrives after it); replay server_compaction with keep_user_messages={other} to see that", **flags))
    notes.append(T("the summary: ctxlab's is written by its {summarizer!r} summarizer and capped at "
                   "max_summary_tokens {max_summary_tokens:,}; {provider} writes its own with the model, of its own "
                   "length, so facts kept and summary size differ from the replay", summarizer=s.summarizer,
                   max_summary_tokens=s.max_summary_tokens, provider=provider))
    if s.name == "server_compaction" and not keeps_users:
        notes.append(T("the newest user message: ctxlab keeps it verbatim beside the summary (the task); "
                       "{provider} folds it into the summary with the rest", provider=provider))
    return notes


__all__ = ["SUMMARIZING", "Trigger", "kept_notes", "trigger_note", "tuned_trigger"]
