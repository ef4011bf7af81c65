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

from .config import LabConfig

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
        messages, source = s.trigger_tokens, f"trigger_tokens {s.trigger_tokens:,}"
    else:
        room = lab.budget().available
        messages = int(room * s.trigger_ratio)
        source = (f"trigger_ratio {s.trigger_ratio:g} of the {room:,} tokens the budget (max_tokens "
                  f"{lab.max_tokens:,}, reserve {lab.reserve:g}) leaves for messages")
    messages = max(messages, 1)
    return Trigger(messages, messages + lab.tools_tokens, source)


def trigger_note(t: Trigger, lab: LabConfig, counted_by: str) -> str:
    """Where the exported trigger comes from and how the provider counts it."""
    return (f"trigger: {t.source} = {t.messages:,} message tokens; {counted_by} counts every input token, tool "
            f"definitions included, so the export adds the config's tools_tokens ({lab.tools_tokens:,}): "
            f"{t.inputs:,}; ctxlab counted with tiktoken for {lab.model or 'gpt-4o'}, the provider counts with its "
            "own tokenizer, so it fires at a slightly different point")


def kept_notes(lab: LabConfig, provider: str, *, keeps_users: bool) -> list[str]:
    """What the strategy keeps beside its summary that ``provider``'s compaction does not (or the
    other way round); ``keeps_users``: the provider keeps every user message verbatim."""
    s = lab.strategy
    notes: list[str] = []
    if s.name == "summarize":
        notes.append(f"keep_recent {s.keep_recent:,}: {provider} keeps no recent messages verbatim; its summary "
                     "replaces " + ("everything but the user messages" if keeps_users else "the whole history")
                     + ", while summarize keeps the newest whole turns (and target_ratio "
                     f"{s.target_ratio:g} decides how many older turns fold)")
        notes.append(f"trigger_messages {s.trigger_messages:,}: {provider} has no message-count trigger; only the "
                     "token trigger is exported")
        if s.summary_prompt or s.merge_prompt:
            notes.append("summary_prompt / merge_prompt: ctxlab's prompt templates ({span}, {summary}) are not "
                         f"exported; {provider} writes the summary with its own prompt")
    elif s.keep_user_messages != keeps_users:
        notes.append(f"keep_user_messages {str(s.keep_user_messages).lower()}: {provider} "
                     + ("keeps every user message verbatim beside its summary"
                        if keeps_users else "keeps no user message beside its summary (only what arrives after it)")
                     + f"; replay server_compaction with keep_user_messages={str(keeps_users).lower()} to see that")
    notes.append(f"the summary: ctxlab's is written by its {s.summarizer!r} summarizer and capped at "
                 f"max_summary_tokens {s.max_summary_tokens:,}; {provider} writes its own with the model, of its own "
                 "length, so facts kept and summary size differ from the replay")
    if s.name == "server_compaction" and not keeps_users:
        notes.append("the newest user message: ctxlab keeps it verbatim beside the summary (the task); "
                     f"{provider} folds it into the summary with the rest")
    return notes


__all__ = ["SUMMARIZING", "Trigger", "kept_notes", "trigger_note", "tuned_trigger"]
