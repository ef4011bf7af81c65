"""The four ways a context fails, detected in a conversation: poisoning, distraction, confusion
and clash.

    >>> from ctxlab.diagnostics import diagnose, MODES
    >>> findings = diagnose(conv, tools=None, query=None, model=None)       # doctest: +SKIP
    >>> [(f.mode, f.code, f.severity, f.messages) for f in findings]        # doctest: +SKIP

Each finding names the messages (indexes) and tools involved, its evidence in one sentence, and a
mitigation that ``apply_mitigation`` applies as it is. ``MODES`` explains each mode and points at
its lesson conversation in ``sample_data/lessons``. Detectors register per mode with
``detector(mode, name)``, the way the built-ins do.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..i18n import N_
from .base import (DETECTORS, MITIGATION_KINDS, MODE_NAMES, SEVERITIES, DiagnosticsError, Finding, Inputs,
                   Mitigation, detector, diagnose, summarize_findings)
# the built-in detectors register themselves on import, in the order they run
from . import poisoning, distraction, confusion, clash  # noqa: F401,I001
from .mitigate import MitigationResult, apply_mitigation, prune
from .quarantine import QuarantineReport, quarantine_report, split_into_subagents, threads

LESSONS_DIR = Path(__file__).resolve().parents[2] / "sample_data" / "lessons"
LESSON_LANGUAGES: tuple[str, ...] = ("zh",)
"""Languages with lesson conversations of their own, in ``LESSONS_DIR / <lang>`` (English is the default)."""


@dataclass(frozen=True)
class ModeInfo:
    """A failure mode for a lesson: its title, a plain explanation, and its lesson conversation."""

    name: str
    title: str
    explanation: str
    lesson: Path

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"name": self.name, "title": self.title, "explanation": self.explanation, "lesson": str(self.lesson)}


MODES: dict[str, ModeInfo] = {m.name: m for m in (
    ModeInfo("poisoning", N_("Context poisoning"),
             N_("A mistake gets into the context (a mistyped order id, a failed call, a status the agent made up) and "
                "the agent keeps building on it, because everything in the context looks equally true. A summary "
                "can make it worse: it copies the mistake and drops the evidence against it. The cure is to find the "
                "poisoned messages and remove them, not to add more context."), LESSONS_DIR / "poisoning.json"),
    ModeInfo("distraction", N_("Context distraction"),
             N_("The context grows until old tool results and history outweigh the request in front of the model. "
                "Long before the window is full, accuracy drops measurably, and the agent leans on what it already "
                "saw instead of the task. Clearing old results, summarizing, or splitting the work keeps the current "
                "turn in focus."), LESSONS_DIR / "distraction.json"),
    ModeInfo("confusion", N_("Context confusion"),
             N_("Every tool definition is a choice the model must weigh, and they cost tokens before the user says a "
                "word. With dozens of tools, or two tools that describe the same job, the model calls the wrong one "
                "and has to try again. Sending only the few tools retrieved for the turn removes both the noise and "
                "the look-alikes."), LESSONS_DIR / "confusion.json"),
    ModeInfo("clash", N_("Context clash"),
             N_("Two parts of the context disagree: one tool result says an order is shipped, a later one says it "
                "was cancelled, and nothing in between changed it. The model has to pick a side without knowing "
                "which is current. Keeping only the newest observation of each fact resolves it."),
             LESSONS_DIR / "clash.json"),
)}
"""Mode name -> title, explanation (written for ctxlab) and lesson path."""

STRUCTURAL_LESSONS = {"quarantine": LESSONS_DIR / "quarantine.json", "tool_loadout": LESSONS_DIR / "tool_loadout.json"}
"""The two structural mitigations' lessons: sub-agent contexts, and a tool loadout under 30 tools."""


def lesson_path(name: str, lang: str = "en") -> Path:
    """The lesson conversation of a failure mode or structural lesson for an interface in ``lang``:
    the one written in that language when there is one (``sample_data/lessons/zh/clash.json``), else
    the English one."""
    english = MODES[name].lesson if name in MODES else STRUCTURAL_LESSONS[name]
    own = LESSONS_DIR / lang / english.name
    return own if lang in LESSON_LANGUAGES and own.is_file() else english


__all__ = ["DETECTORS", "LESSONS_DIR", "LESSON_LANGUAGES", "MITIGATION_KINDS", "MODES", "MODE_NAMES", "SEVERITIES",
           "STRUCTURAL_LESSONS", "DiagnosticsError", "Finding", "Inputs", "Mitigation", "MitigationResult",
           "ModeInfo", "QuarantineReport", "apply_mitigation", "detector", "diagnose", "lesson_path", "prune",
           "quarantine_report", "split_into_subagents", "summarize_findings", "threads"]
