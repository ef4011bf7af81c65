"""Context distraction: the context grows so long, or so full of old material, that the model
attends to the history instead of the task in front of it.

* ``oversized_results``: tool results of at least ``OVERSIZED_MIN_TOKENS`` tokens and at least
  ``OVERSIZED_FACTOR`` times the median tool result: a few documents that dwarf everything else.
  Not a ranged read of a file a later call edits (``sed -n '224,400p'`` before a ``sed -i``: the
  agent took that range to change it), nor a result no later call follows (a run's final diff).
* ``history_share``: the share of the context taken by tool results of earlier turns, by the rest
  of the history, and by the current turn (the newest user message onward). A warning when old
  tool results are at least half of a context of ``HISTORY_MIN_TOKENS`` or more; else information.
* ``context_length``: the context against the model's window (an error over it, a warning over
  ``WINDOW_WARN_SHARE`` of it), and against the length where long-context accuracy is measured
  to drop (``LONG_CONTEXT_DROPS``, with its source).

The thresholds are rules stated here, not tuned on data: they mark where a teacher should look.
"""
from __future__ import annotations

from statistics import median

from ..i18n import N_, _
from .base import Finding, Inputs, Mitigation, detector
from .code_aware import read_for_a_later_edit

OVERSIZED_MIN_TOKENS = 2_000
OVERSIZED_FACTOR = 4.0
HISTORY_MIN_TOKENS = 8_000
WINDOW_WARN_SHARE = 0.8

RULER = N_("RULER (Hsieh et al., NVIDIA, 2024; github.com/NVIDIA/RULER): effective length = the longest "
         "input where the model still beats Llama-2-7B's 85.6% at 4K")
RULER_HALF = 32_000
"""RULER: of the models claiming 32K tokens or more, only half stay above its threshold at 32K."""

LONG_CONTEXT_DROPS: dict[str, tuple[int, str]] = {
    "gpt-4-turbo": (64_000, N_("GPT-4-1106-preview: effective 64K of a claimed 128K (81.2% at 128K)")),
    "llama": (32_000, N_("Llama-3.1-8B: effective 32K of a claimed 128K (70B: 64K)")),
    "mistral": (64_000, N_("Mistral-Large-2411: effective 64K of a claimed 128K (48.1% at 128K)")),
    "qwen": (32_000, N_("Qwen2-72B: effective 32K of a claimed 128K (53.7% at 128K)")),
}
"""Model family -> (effective length in tokens, the RULER row it comes from), from RULER's README
table. Families it does not list (gpt-4o, Claude, Gemini 2.x, ...) get RULER's general finding."""


def _effective_length(model: str) -> tuple[int, str] | None:
    from ..model_specs import resolve_model
    name = resolve_model(model).name
    if name.startswith("gemini"):
        return None  # RULER: Gemini-1.5-pro stays above the threshold up to 128K; no drop measured
    return LONG_CONTEXT_DROPS.get(name)


@detector("distraction", "oversized_results")
def oversized_results(inp: Inputs) -> list[Finding]:
    """Tool results far larger than the conversation's typical result."""
    sizes = [(i, inp.message_tokens[i]) for i, m in enumerate(inp.conv.messages) if m.role == "tool"]
    if len(sizes) < 2:
        return []
    typical = median(t for _, t in sizes)
    messages, calls = inp.conv.messages, inp.observations.calls
    last_call = max((c.index for c in calls), default=-1)
    big = [(i, t) for i, t in sizes if t >= OVERSIZED_MIN_TOKENS and t >= OVERSIZED_FACTOR * typical
           and i < last_call and not read_for_a_later_edit(messages, calls, i)]
    if not big:
        return []
    total = sum(t for _, t in big)
    keep = sum(1 for i, _ in sizes if i > big[-1][0])
    return [Finding(
        "distraction", "oversized_results", "warning",
        (_("{n} tool result of {total} tokens in all, each at least {factor}x the median result ({typical} "
           "tokens), fill the context with documents the current step hardly needs.") if len(big) == 1 else
         _("{n} tool results of {total} tokens in all, each at least {factor}x the median result ({typical} "
           "tokens), fill the context with documents the current step hardly needs.")).format(
            n=f"{len(big):,}", total=f"{total:,}", factor=f"{OVERSIZED_FACTOR:g}", typical=f"{typical:,.0f}"),
        tuple(i for i, _ in big), tuple(sorted({inp.conv.messages[i].name or "" for i, _ in big} - {""})),
        Mitigation("strategy", _("Clear old tool results, keep the newest {keep}").format(keep=max(keep, 1)),
                   strategy="clear_tool_results", params={"trigger_tokens": 0, "keep": max(keep, 1)}))]


@detector("distraction", "history_share")
def history_share(inp: Inputs) -> list[Finding]:
    """How much of the context is old tool results and history versus the current turn."""
    messages, tokens = inp.conv.messages, inp.message_tokens
    users = [i for i, m in enumerate(messages) if m.role == "user"]
    if len(users) < 2:
        return []
    current = users[-1]
    total = sum(tokens)
    old_results = sum(t for i, t in enumerate(tokens[:current]) if messages[i].role == "tool")
    history = sum(tokens[:current]) - old_results
    now = total - old_results - history
    share = old_results / total if total else 0.0
    text = _("Of {total} message tokens, tool results of earlier turns take {share}, the rest of the history "
             "{history} and the current turn (message {index} onward) {now}.").format(
        total=f"{total:,}", share=f"{share:.0%}", history=f"{history / total:.0%}", index=current,
        now=f"{now / total:.0%}")
    warn = share >= 0.5 and total >= HISTORY_MIN_TOKENS
    mitigation = _quarantine_or_clear(inp, current)
    return [Finding("distraction", "history_share", "warning" if warn else "info", text,
                    tuple(i for i in range(current) if messages[i].role == "tool") if warn else (),
                    (), mitigation if warn else None)]


def _quarantine_or_clear(inp: Inputs, current: int) -> Mitigation:
    from .quarantine import split_into_subagents
    parts = split_into_subagents(inp.conv)
    if len(parts) > 1:
        return Mitigation("quarantine", _("Split into {n} sub-agent contexts, one per independent task").format(
            n=len(parts)))
    keep = sum(1 for m in inp.conv.messages[current:] if m.role == "tool")
    return Mitigation("strategy", _("Clear tool results of earlier turns"), strategy="clear_tool_results",
                      params={"trigger_tokens": 0, "keep": max(keep, 1)})


@detector("distraction", "context_length")
def context_length(inp: Inputs) -> list[Finding]:
    """The context against the model's window and where long-context accuracy drops."""
    from ..model_specs import resolve_model
    spec = resolve_model(inp.model_name)
    total = sum(inp.message_tokens) + inp.tool_tokens
    window = spec.context_window
    out = []
    fit = Mitigation("strategy", _("Summarize older turns to half the window"), strategy="summarize",
                     params={"trigger_ratio": 0.5, "target_ratio": 0.3})
    if total > window:
        out.append(Finding("distraction", "context_length", "error",
                           _("The context is {total} tokens, over {model}'s {window}-token window.").format(
                               total=f"{total:,}", model=spec.name, window=f"{window:,}"),
                           mitigation=fit))
    elif total > WINDOW_WARN_SHARE * window:
        out.append(Finding("distraction", "context_length", "warning",
                           _("The context is {total} tokens, {share} of {model}'s {window}-token window.").format(
                               total=f"{total:,}", share=f"{total / window:.0%}", model=spec.name,
                               window=f"{window:,}"), mitigation=fit))
    drop = _effective_length(inp.model_name)
    if drop is not None and total > drop[0] and total <= window:
        out.append(Finding("distraction", "long_context", "warning",
                           _("The context is {total} tokens, past {limit}, where accuracy drops per {ruler}: "
                             "{row}.").format(total=f"{total:,}", limit=f"{drop[0]:,}", ruler=_(RULER), row=_(drop[1])),
                           mitigation=_window(drop[0])))
    elif drop is None and total > RULER_HALF and total <= window and not spec.name.startswith("gemini"):
        out.append(Finding("distraction", "long_context", "info",
                           _("The context is {total} tokens; {ruler} found only half of the models that claim 32K "
                             "or more still above that bar at 32K ({model} was not measured).").format(
                               total=f"{total:,}", ruler=_(RULER), model=spec.name),
                           mitigation=_window(RULER_HALF)))
    return out


def _window(tokens: int) -> Mitigation:
    return Mitigation("strategy", _("Keep a sliding window of {tokens} tokens").format(tokens=f"{tokens:,}"), strategy="sliding_window",
                      params={"max_tokens": tokens})
