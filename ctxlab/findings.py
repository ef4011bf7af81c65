"""One finding type for everything ctxlab reports about a context, and one before/after diff.

A ``Finding`` comes from a ``source``: a provider's rule set (``validate``: ``openai``,
``anthropic``, ... a request that provider rejects or warns about) or a failure mode
(``diagnostics``: ``poisoning``, ``distraction``, ``confusion``, ``clash``). It has a ``code``,
a ``severity``, a sentence (``text``), the messages it is about (indexes) and, for a failure
mode, the tools involved and a mitigation that can be applied as it is.

``diff_findings(before, after, origin)`` says what a change (a strategy's plan, a mitigation) did
to the findings: which are ``gone``, which are ``still`` there, which are ``new``. ``origin`` maps
each message of the result to its index before the change (None for an inserted message), so a
finding is matched at the same original message; ``loose`` also matches a finding whose messages
moved (the same code and tools), which a mitigation that blanks a message causes.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Sequence

MODE_NAMES: tuple[str, ...] = ("poisoning", "distraction", "confusion", "clash")
"""The failure modes ``ctxlab.diagnostics`` detects."""
SEVERITIES: tuple[str, ...] = ("error", "warning", "info")


@dataclass(frozen=True)
class Finding:
    """One problem found (see the module docstring). ``mode`` / ``rules`` name the source by its
    kind, ``index`` is the first message it is about (None: the whole conversation), ``evidence``
    and ``message`` are its sentence."""

    source: str
    code: str
    severity: str
    text: str
    messages: tuple[int, ...] = ()
    tools: tuple[str, ...] = ()
    mitigation: Any = None

    def __post_init__(self) -> None:
        if self.severity not in SEVERITIES:
            raise ValueError(f"unknown severity {self.severity!r}")
        if not self.source:
            raise ValueError("a finding needs its source: a rule set or a failure mode")

    @property
    def kind(self) -> str:
        """``mode`` for a failure mode's finding, ``rules`` for a provider rule set's."""
        return "mode" if self.source in MODE_NAMES else "rules"

    @property
    def mode(self) -> str:
        """The failure mode that found it ("" for a provider rule set's finding)."""
        return self.source if self.kind == "mode" else ""

    @property
    def rules(self) -> str:
        """The rule set that found it ("" for a failure mode's finding)."""
        return self.source if self.kind == "rules" else ""

    @property
    def index(self) -> int | None:
        """The (first) message it is about; None for the whole conversation."""
        return self.messages[0] if self.messages else None

    @property
    def evidence(self) -> str:
        """Its sentence (a failure mode's evidence)."""
        return self.text

    @property
    def message(self) -> str:
        """Its sentence (a rule set's message)."""
        return self.text

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form, in the words of its kind (the CLI's output)."""
        if self.kind == "rules":
            return {"code": self.code, "severity": self.severity, "index": self.index, "message": self.text,
                    "rules": self.source}
        return {"mode": self.source, "code": self.code, "severity": self.severity, "messages": list(self.messages),
                "tools": list(self.tools), "evidence": self.text,
                "mitigation": self.mitigation.to_dict() if self.mitigation else None}


def rule_finding(code: str, severity: str, index: int | None, text: str, rules: str) -> Finding:
    """A provider rule set's finding about message ``index`` (None: the whole conversation)."""
    return Finding(rules, code, severity, text, () if index is None else (index,))


def mapped(f: Finding, origin: Sequence[int | None]) -> Finding:
    """``f`` with its messages mapped through ``origin`` (a result's message -> its index before);
    messages with no index before (inserted) are left out."""
    at = (origin[i] if 0 <= i < len(origin) else None for i in f.messages)
    return replace(f, messages=tuple(o for o in at if o is not None))


@dataclass(frozen=True)
class FindingDiff:
    """What a change did to the findings: ``gone`` (before's, not found after), ``still`` (after's,
    found before too) and ``new`` (after's, not found before). After's findings are as found in the
    changed context (their messages its indexes; ``mapped`` gives them the indexes before)."""

    gone: tuple[Finding, ...]
    still: tuple[Finding, ...]
    new: tuple[Finding, ...]


def _identity(f: Finding) -> tuple:
    return f.source, f.code, f.messages, frozenset(f.tools)


def _kind(f: Finding) -> tuple:
    return f.source, f.code, frozenset(f.tools)


def diff_findings(before: Sequence[Finding], after: Sequence[Finding], origin: Sequence[int | None] | None = None,
                  *, loose: bool = False) -> FindingDiff:
    """Match ``after`` (a changed context's findings; ``origin`` maps its messages to the indexes
    before, None when they already are) with ``before``. A finding is the same when its source,
    code, messages and tools are; with ``loose``, also when only its messages differ. A finding
    about inserted messages only (none of them maps back) is always new: the change made it."""
    inserted: list[Finding] = []
    kept: list[tuple[Finding, Finding]] = []  # (as found after, mapped to the messages before)
    for f in after:
        g = mapped(f, origin) if origin is not None else f
        if f.messages and not g.messages:
            inserted.append(f)
        else:
            kept.append((f, g))
    before_ids = {_identity(f) for f in before}
    after_ids = {_identity(g) for _, g in kept}
    before_kinds = {_kind(f) for f in before} if loose else set()
    after_kinds = {_kind(g) for _, g in kept} if loose else set()
    gone = tuple(f for f in before if _identity(f) not in after_ids and _kind(f) not in after_kinds)
    still = tuple(f for f, g in kept if _identity(g) in before_ids or _kind(g) in before_kinds)
    new = tuple(f for f, g in kept if _identity(g) not in before_ids and _kind(g) not in before_kinds) + tuple(inserted)
    return FindingDiff(gone, still, new)


__all__ = ["Finding", "FindingDiff", "MODE_NAMES", "SEVERITIES", "diff_findings", "mapped", "rule_finding"]
