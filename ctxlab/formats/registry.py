"""The registry of conversation formats: ``register`` a ``Format``, ``get_format`` by name, and
``detect`` which one best explains a message list (naming the item that breaks it when none does).
The built-in formats register themselves when ``ctxlab.formats`` is imported."""
from __future__ import annotations

from typing import Any

from ..errors import CtxlabError, ShapeError, UnknownFormatError, shown
from ..i18n import T
from ._base import Format, ReadContext, shared_shape


FORMATS: dict[str, Format] = {}


def register(fmt: Format) -> Format:
    """Add a format to the registry (built-in formats use this too)."""
    FORMATS[fmt.name] = fmt
    return fmt


def get_format(name: str) -> Format:
    """The registered format called ``name``; an unknown name lists the known ones."""
    try:
        return FORMATS[name]
    except KeyError:
        raise UnknownFormatError(T("unknown format {name}", name=shown(name)), where="format",
                                 hint=T("Known formats: {formats}", formats=", ".join(sorted(FORMATS)))) from None


def detect(items: list[Any], ctx: ReadContext | None = None) -> str:
    """The name of the format that best explains a message list (``openai`` on a tie). When none
    does, the error names the first item that breaks the format its predecessors are in."""
    ctx = ctx or ReadContext()
    if not items:
        raise ShapeError("the conversation is empty (no messages)", where=ctx.base,
                         hint="Give at least one message")
    with shared_shape(items):  # the detectors share one pass over the items (see _base)
        scores = {name: f.detect(items) for name, f in FORMATS.items()}
    best = max(scores.values(), default=0)
    if best <= 0 and all(isinstance(m, dict) and "role" in m for m in items):
        return "openai"  # role-keyed but odd: the OpenAI reader names the message that is wrong
    if best <= 0:
        _explain_misfit(items, ctx)
    return "openai" if scores.get("openai") == best else max(scores, key=scores.__getitem__)


def _fitting_prefix(fmt: Format, items: list[Any]) -> int:
    """How many leading items ``fmt`` recognises (binary search: one misfit spoils a list)."""
    lo, hi = 0, len(items)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if fmt.detect(items[:mid]) > 0:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _explain_misfit(items: list[Any], ctx: ReadContext) -> None:
    """Raise the error that names the item where detection fails: read the list as the format
    that fits the longest prefix (its reader names the bad item), else describe item 0."""
    fits = {name: _fitting_prefix(f, items) for name, f in FORMATS.items()}
    name = max(fits, key=fits.__getitem__)
    known = T("Expected messages of one of: {formats}; or pass the format explicitly", formats=", ".join(sorted(FORMATS)))
    if fits[name] == 0:
        first = items[0]
        problem = (T("the messages match no known format (item 0 has keys {keys})",
                     keys=", ".join(shown(k, 20) for k in sorted(first)[:6])) if isinstance(first, dict) else
                   T("the messages match no known format (item 0 has a {kind})", kind=type(first).__name__))
        raise ShapeError(problem, where=ctx.where(0), hint=known)
    fmt = FORMATS[name]
    probe = ReadContext(base=ctx.base, lines=ctx.lines, max_depth=ctx.max_depth)
    try:
        fmt.read(items, probe)
    except CtxlabError as e:
        e.args = (f"{e.args[0]} (items 0-{fits[name] - 1} read as {fmt.title})",)
        raise
    raise ShapeError(f"item {fits[name]} does not look like the {fmt.title} items before it",
                     where=ctx.where(fits[name]), hint=known)
