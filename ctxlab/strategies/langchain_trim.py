"""LangChain's ``trim_messages`` as a strategy: the baseline LangChain users know, run as is.

``langchain_trim`` converts the view's messages to langchain-core messages once per view, calls
``langchain_core.messages.trim_messages`` with its own parameters and a token counter that returns
ctxlab's tiktoken counts, and maps what comes back to the input messages by object identity. It
does **not** settle its decisions: whatever ``trim_messages`` returns goes through the same
validator as every other strategy, and the findings are reported in ``stats`` and ``warnings``, so
a user sees when the baseline breaks a tool call from its result.

Known LangChain problem (langchain-ai/langchain issue 33245, open): with ``strategy="last"`` and no
``start_on``, ``trim_messages`` can return a history that starts with a ``ToolMessage`` whose
``AIMessage`` with the call was trimmed away; OpenAI and Anthropic reject it. ``start_on="human"``
(the default here) avoids that case; ``start_on="none"`` reproduces it.
"""
from __future__ import annotations

from dataclasses import dataclass
from itertools import accumulate
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Sequence

from ..i18n import N_, T
from ..formats.langchain import to_langchain
from ..conversation import Message, Part, ToolCall, compact_json
from ..tokens import TokenCounter
from ..findings import Finding
from ..validate import validate
from .base import Strategy, StrategyError, works_on_param, param, register
from .plan import Plan, make_plan
from .view import MEMO_EXTENDERS, Budget, View

if TYPE_CHECKING:  # langchain-core is imported when the baseline runs, not when strategies are listed
    from langchain_core.messages import BaseMessage


def langchain_core_version() -> str:
    """The installed langchain-core version (plans record it: the baseline's behaviour is its own)."""
    import langchain_core
    return langchain_core.__version__


def __getattr__(name: str) -> Any:
    """``LANGCHAIN_CORE_VERSION``, read on first use so importing the strategy registry stays light."""
    if name == "LANGCHAIN_CORE_VERSION":
        return langchain_core_version()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

MESSAGE_TYPES = ("human", "ai", "tool", "system")
_ROLE_OF = {"system": "system", "human": "user", "ai": "assistant", "tool": "tool"}


def _part(block: object) -> Part:
    """One LangChain content block as a Part (text, image, thinking or reasoning text)."""
    if isinstance(block, str):
        return Part("text", block)
    if not isinstance(block, dict):
        return Part("text", str(block))
    kind = str(block.get("type", "text"))
    if kind in ("image_url", "image"):
        img = block.get("image_url")
        detail = img.get("detail") if isinstance(img, dict) else block.get("detail")
        return Part("image", data={"detail": detail} if detail else {})
    if kind == "thinking":
        return Part("thinking", str(block.get("thinking", "")))
    if kind == "reasoning":
        summary = block.get("summary") if isinstance(block.get("summary"), list) else []
        return Part("thinking", "\n".join(str(s.get("text", "")) for s in summary if isinstance(s, dict)))
    return Part(kind, str(block.get("text", "")))


def _calls(lc: BaseMessage) -> tuple[ToolCall, ...]:
    """Tool calls of an AI message, with the original arguments text when ctxlab wrote it."""
    from langchain_core.messages import AIMessage
    if not isinstance(lc, AIMessage):
        return ()
    raw = lc.additional_kwargs.get("tool_calls")
    if isinstance(raw, list) and raw:
        return tuple(ToolCall(str(c.get("id", "")), str(c["function"].get("name", "")),
                              str(c["function"].get("arguments", "{}"))) for c in raw if isinstance(c, dict))
    return tuple(ToolCall(str(c.get("id") or ""), c["name"], compact_json(c["args"])) for c in lc.tool_calls)


def message_from_langchain(lc: BaseMessage) -> Message:
    """A langchain-core message as a ctxlab Message, for counting: role, content (text, images,
    thinking), name, tool calls and call id, and the marks that change a count (a text action, the
    unlogged prefix's size). Other fields are left out (they are not counted)."""
    from langchain_core.messages import ToolMessage
    content = lc.content if isinstance(lc.content, str) else tuple(_part(b) for b in lc.content)
    role = _ROLE_OF.get(lc.type, "user")
    from ..formats.langchain import count_marks
    call_id = lc.tool_call_id if isinstance(lc, ToolMessage) else None
    return Message(role, content, name=lc.name, tool_calls=_calls(lc), tool_call_id=call_id,  # type: ignore[arg-type]
                   extra=count_marks(lc.additional_kwargs))


def tiktoken_counter(counter: TokenCounter) -> Callable[[list[BaseMessage]], int]:
    """A ``token_counter`` for ``trim_messages`` that gives ctxlab's counts (a list counter)."""
    def count(messages: list[BaseMessage]) -> int:
        return sum(counter.message(message_from_langchain(m)) for m in messages)
    return count


def langchain_messages(view: View) -> tuple[list[BaseMessage], dict[int, int]]:
    """The view's messages as langchain-core messages and the input index of each, keyed by ``id()``
    of the LangChain object. Converted once: a view grown by ``append`` is handed what its parent
    converted (a view memo, so a live agent that lets go of the parent does not convert the whole
    history again) and converts only the messages past it. The list is shared along a line of
    views (each reads its first entries); a view grown from a parent that another view already
    extended the list from copies the part it shares. The index is shared too and may hold other
    views' entries: read it through ``_index_of``."""
    cached = view.memo.get("langchain_trim")
    n = len(view)
    if cached is None:
        lcs, index, done = [], {}, 0
    else:
        lcs, index, done = cached
    if done < n:
        if len(lcs) != done:
            lcs = lcs[:done]
        notes: list[str] = []
        given = view.entries("messages")
        added = [to_langchain(m, done + k, notes) for k, m in enumerate(given[done:n])]
        index.update((id(m), done + k) for k, m in enumerate(added))
        lcs.extend(added)
        view.memo["langchain_trim"] = (lcs, index, n)
    return (lcs if len(lcs) == n else lcs[:n]), index


MEMO_EXTENDERS["langchain_trim"] = lambda old, new, converted: converted  # the new messages: at first use


def _index_of(lcs: Sequence[BaseMessage], index: dict[int, int], m: BaseMessage) -> int | None:
    """The input index of ``m`` when it is one of ``lcs`` (not a partial copy), else None."""
    i = index.get(id(m))
    return i if i is not None and i < len(lcs) and lcs[i] is m else None


def _view_counter(view: View, lcs: list[BaseMessage], index: dict[int, int]) -> Callable[[list[BaseMessage]], int]:
    """A list counter: the view's counts for its own messages, a fresh count for partial copies.
    trim_messages counts the whole list, then ever shorter runs of it, newest first: a list that is a
    run of the view's messages (in order or reversed) is counted from running totals, after one
    C-speed comparison with that run."""
    tokens = view.tokens
    log = view.__dict__.get("_log")
    if log is not None:
        cum = log.cum
    else:
        cum = view.memo.get("langchain_trim.cum")
        if cum is None:
            cum = view.memo["langchain_trim.cum"] = list(accumulate(tokens))

    def count(messages: list[BaseMessage]) -> int:
        if len(messages) > 16:
            a, b = _index_of(lcs, index, messages[0]), _index_of(lcs, index, messages[-1])
            if a is not None and b is not None and abs(a - b) == len(messages) - 1:
                lo, hi = min(a, b), max(a, b)
                run = lcs[lo:hi + 1]
                if a > b:
                    run.reverse()
                if run == messages:  # the same objects (list equality tries identity first)
                    return cum[hi] - (cum[lo - 1] if lo else 0)
        total = 0
        for m in messages:
            i = _index_of(lcs, index, m)
            total += tokens[i] if i is not None else view.counter.message(message_from_langchain(m))
        return total
    return count


def _origins(out: Sequence[BaseMessage], index: dict[int, int], lcs: Sequence[BaseMessage],
             strategy: str) -> list[int]:
    """Input index of each output message. A partial message (``allow_partial``) is a copy:
    ``trim_messages`` cuts the message next to its window, which gives its index."""
    found = [_index_of(lcs, index, m) for m in out]
    for k, o in enumerate(found):
        if o is not None:
            continue
        if strategy == "first":
            prev = found[k - 1] if k else None
            found[k] = prev + 1 if prev is not None else 0
        elif k + 1 < len(found) and found[k + 1] is not None:
            found[k] = found[k + 1] - 1  # type: ignore[operator]
        else:  # nothing whole kept after it: the newest message of its type (end_on filtering)
            found[k] = max(i for i, m in enumerate(lcs) if type(m) is type(out[k]))
    return found  # type: ignore[return-value]


def _partial(original: Message, lc: BaseMessage, strategy: str) -> Message:
    """The cut message as a new ctxlab Message: the text LangChain kept, or the blocks it kept
    (the first ones for strategy 'first', the last ones for 'last')."""
    if isinstance(lc.content, str):
        return original.with_content(lc.content)
    parts, k = original.parts, len(lc.content)
    return original.with_content(parts[:k] if strategy == "first" else parts[len(parts) - k:])


def _errors(messages: Sequence[Message]) -> dict[str, list[Finding]]:
    """Validator errors of the output under each provider's rules."""
    return {rules: [f for f in validate(messages, rules) if f.severity == "error"]
            for rules in ("openai", "anthropic")}


@register
@dataclass(frozen=True)
class LangChainTrim(Strategy):
    """LangChain's ``trim_messages``, run as is, with ctxlab's token counts; not settled."""

    name: ClassVar[str] = "langchain_trim"
    title: ClassVar[str] = N_("LangChain trim_messages (baseline)")
    summary: ClassVar[str] = N_("Runs langchain_core.messages.trim_messages as a LangChain user would; its output "
                              "is not repaired, so the validator shows when it breaks a tool call from its result.")
    works_on: str = works_on_param("full_history")  # trim_messages in a pre-model hook
    strategy: str = param("last", choices=("last", "first"),
                          help=N_("Keep the newest messages (last) or the oldest (first)."))
    start_on: str = param("human", choices=(*MESSAGE_TYPES, "none"),
                          help=N_("The kept window must start on this message type (strategy last only); none = anywhere."))
    end_on: str = param("none", choices=(*MESSAGE_TYPES, "none"),
                        help=N_("The kept window must end on this message type; none = anywhere."))
    include_system: bool = param(True, help=N_("Always keep a system message at position 0 (strategy last only)."))
    allow_partial: bool = param(False, help=N_("Cut the message at the window's edge by lines (or content blocks) "
                                            "instead of dropping it."))
    max_tokens: int | None = param(None, type="int", min=1,
                                   help=N_("trim_messages' max_tokens; empty = what the budget leaves for messages."))

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.strategy == "first" and (self.start_on != "none" or self.include_system):
            raise StrategyError("trim_messages accepts start_on and include_system only with strategy='last'",
                                where=f"{self.name}.strategy",
                                hint="With strategy='first', set start_on='none' and include_system=False")

    def call_text(self) -> str:
        """How the call reads in reasons: ``trim_messages(strategy='last', start_on='human')``."""
        args = [f"strategy={self.strategy!r}"]
        args += [f"{k}={v!r}" for k, v in (("start_on", self.start_on), ("end_on", self.end_on)) if v != "none"]
        if self.allow_partial:
            args.append("allow_partial=True")
        return f"trim_messages({', '.join(args)})"

    def _trim(self, lcs: list[BaseMessage], limit: int,
              counter: Callable[[list[BaseMessage]], int]) -> list[BaseMessage]:
        """Call trim_messages with this strategy's parameters."""
        optional = {"start_on": None if self.start_on == "none" else self.start_on,
                    "include_system": self.include_system} if self.strategy == "last" else {}
        from langchain_core.messages import trim_messages
        end_on = None if self.end_on == "none" else self.end_on
        try:
            return trim_messages(lcs, max_tokens=limit, token_counter=counter, strategy=self.strategy,  # type: ignore
                                 allow_partial=self.allow_partial, end_on=end_on, **optional)
        except ValueError as e:
            raise StrategyError(f"trim_messages refused the call: {e}", where=self.name) from None

    def apply(self, view: View, budget: Budget) -> Plan:
        """Run trim_messages; keep what it returns, drop the rest, report validator errors."""
        lcs, index = langchain_messages(view)
        limit = max(self.max_tokens or budget.available, 0)
        out = self._trim(lcs, limit, _view_counter(view, lcs, index))
        origins = _origins(out, index, lcs, self.strategy)
        replacements = {o: _partial(view.messages[o], m, self.strategy)
                        for o, m in zip(origins, out) if _index_of(lcs, index, m) is None}
        actions, reasons = self._decide(view, origins, replacements, limit)
        result = [replacements.get(o, view.messages[o]) for o in origins]
        errors = _errors(result)
        warnings = self._warnings(view, origins, errors)
        stats = {"max_tokens": limit, "kept": len(origins) - len(replacements),
                 "dropped": len(view) - len(origins), "partial": len(replacements),
                 "errors_openai": len(errors["openai"]),
                 "errors_anthropic": len(errors["anthropic"]),
                 "finding_codes": sorted({f.code for found in errors.values() for f in found}),
                 "langchain_core": langchain_core_version()}
        return make_plan(view, budget, self.name, self.params(), actions, reasons, replacements=replacements,
                         warnings=warnings, stats=stats, settle_first=False,
                         idle=lambda: T("{call} kept every message: the conversation's {total:,} "
                                      "message tokens fit its max_tokens of {limit:,}", call=self.call_text(), total=view.total, limit=limit))

    def _decide(self, view: View, origins: list[int], replacements: dict[int, Message],
                limit: int) -> tuple[list[str], list[str]]:
        """An action and a reason per input message, from what trim_messages returned."""
        call, n = self.call_text(), len(view)
        first_is_system = bool(n) and view.messages[0].role == "system"
        system = 0 if self.strategy == "last" and self.include_system and first_is_system and 0 in origins else None
        window = [o for o in origins if o != system]
        lo = window[0] if window else n
        actions = ["drop"] * n
        if window:
            reasons = ([T("dropped by {call}: before the window it kept within {limit:,} tokens", call=call, limit=limit)] * lo
                       + [T("dropped by {call}: after the window it kept within {limit:,} tokens", call=call, limit=limit)] * (n - lo))
        else:
            reasons = [T("dropped by {call}: it kept no message within {limit:,} tokens", call=call, limit=limit)] * n
        inside = T("kept by {call}: inside its {limit:,}-token window", call=call, limit=limit)
        for o in window:
            actions[o], reasons[o] = "keep", inside
        if system is not None:
            actions[0], reasons[0] = "keep", T("kept by {call}: include_system keeps the first system message", call=call)
        for o, new in replacements.items():
            actions[o] = "truncate"
            reasons[o] = T("cut by {call}: {message:,} of {tokens:,} tokens kept", call=call, message=view.counter.message(new), tokens=view.tokens[o])
        return actions, reasons

    def _warnings(self, view: View, origins: list[int], errors: dict[str, list[Finding]]) -> list[str]:
        """What a user must see: provider errors in the output, a lost question."""
        out = []
        found = errors["openai"] or errors["anthropic"]
        if found:
            first = found[0]
            counts = dict(call=self.call_text(), code=first.code, openai=len(errors['openai']),
                          anthropic=len(errors['anthropic']), version=langchain_core_version())
            out.append(T("{call} returned a history the providers reject: {code} at message {at:,}; "
                         "{openai} error(s) under OpenAI rules, {anthropic} under "
                         "Anthropic rules (langchain-core {version})", at=origins[first.index], **counts)
                       if first.index is not None else
                       T("{call} returned a history the providers reject: {code}; "
                         "{openai} error(s) under OpenAI rules, {anthropic} under "
                         "Anthropic rules (langchain-core {version})", **counts))
        newest = view.newest_user()
        if newest is not None and newest not in origins:
            out.append(T("{call} dropped the newest user message (message {newest:,}): "
                       "the model would not see the question", call=self.call_text(), newest=newest))
        task = next((i for i in view.compactions if view.messages[i].extra.get("ctxlab_task")), None)
        if task is not None and task != newest and task not in origins:
            out.append(T("{call} dropped the run's task (message {task:,}), which every other strategy keeps",
                         call=self.call_text(), task=task))
        return out
