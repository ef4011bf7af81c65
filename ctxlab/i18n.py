"""The interface's languages: standard gettext message catalogs, read with Babel.

Catalogs are PO files under ``ctxlab/locale/<lang>/``, one file per part of the interface
(``app.po``, ``strategy_lab.po``, ``engine.po``...); every file of a language is merged into one
catalog, so parts can be translated separately. English is the source language and has no catalog.

Code marks text with :func:`_` (translated now) or :func:`N_` (marked for extraction, translated
where it is shown: module-level constants). Placeholders are named and filled after translation
(``_("{n} calls over the limit").format(n=k)``), never built by concatenating translated pieces,
so a translator sees the whole sentence. ``pybabel extract -k N_ -k _`` finds every marked string;
``tests/test_i18n.py`` checks each has a translation with the same placeholders.

Text the engine writes (a strategy's reason for a message, why it did not act, the validator's
findings, export notes) stays English wherever it goes (JSON, CLI, exports) but is a :class:`Text`:
an English ``str`` that also carries its template and named parameters, made by :func:`T` (marked
for extraction like ``_``). :func:`local` renders any string in the language in use, a ``Text`` by
translating its template and filling it with its parameters (themselves localized when they are
``Text``), a plain string through :func:`_`. Pages call it where they show engine text.

The language is per thread of execution (a :class:`contextvars.ContextVar`): each Streamlit script
run sets its session's language with :func:`use`, so two browser sessions in one server never see
each other's choice. The CLI stays in English unless ``CTXLAB_LANG`` names another language.
"""
from __future__ import annotations

import gettext
import io
import os
import re
from contextvars import ContextVar
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable, Sequence

LANGUAGES: dict[str, str] = {"en": "English", "zh": "中文"}
"""Each language the interface speaks, by code, with its own name for itself."""
SOURCE = "en"
LOCALE_DIR = Path(__file__).with_name("locale")
PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)?(?:[:!][^{}]*)?\}")

_current: ContextVar[str] = ContextVar("ctxlab_language", default=os.environ.get("CTXLAB_LANG", SOURCE))


def use(lang: str | None) -> str:
    """Make ``lang`` the language of this run (an unknown or empty code means English). Returns it."""
    code = lang if lang in LANGUAGES else SOURCE
    _current.set(code)
    return code


def language() -> str:
    """The code of the language in use."""
    code = _current.get()
    return code if code in LANGUAGES else SOURCE


def pick(locale: str | None) -> str:
    """The language for a browser locale such as ``zh-CN``, ``zh-Hans-TW`` or ``en-US`` (English if none fits)."""
    if not locale:
        return SOURCE
    primary = locale.replace("_", "-").split("-")[0].lower()
    return primary if primary in LANGUAGES else SOURCE


def catalog_files(lang: str) -> list[Path]:
    """The PO files of ``lang``, in a stable order."""
    return sorted((LOCALE_DIR / lang).glob("*.po"))


@lru_cache(maxsize=None)
def translations(lang: str) -> gettext.NullTranslations:
    """Every catalog of ``lang`` merged into one gettext translation (English: the identity)."""
    files = catalog_files(lang) if lang != SOURCE else []
    if not files:
        return gettext.NullTranslations()
    from babel.messages.catalog import Catalog
    from babel.messages.mofile import write_mo
    from babel.messages.pofile import read_po

    merged = Catalog(locale=lang)
    for path in files:
        with path.open("rb") as fh:
            part = read_po(fh, locale=lang)
        for message in part:
            if message.id and message.string and not message.fuzzy:
                merged[message.id] = message
    buf = io.BytesIO()
    write_mo(buf, merged)
    buf.seek(0)
    return gettext.GNUTranslations(buf)


def _(message: str) -> str:
    """``message`` in the language in use (itself when it has no translation)."""
    lang = language()
    if lang == SOURCE or not message:
        return message
    return translations(lang).gettext(message)


def ngettext(singular: str, plural: str, n: int) -> str:
    """The singular or plural form for ``n`` in the language in use."""
    lang = language()
    if lang == SOURCE:
        return singular if n == 1 else plural
    return translations(lang).ngettext(singular, plural, n)


def N_(message: str) -> str:
    """Mark ``message`` for the catalogs without translating it (translate it where it is shown)."""
    return message


class Text(str):
    """An English sentence that can be shown later in another language.

    Its ``str`` value is the English rendering (it compares, hashes, joins, pickles and serializes
    to JSON as that string), and it carries ``msg`` -- the template, or ``(singular, plural, n)``
    for a count -- and the named ``params`` it was filled with. :func:`local` renders it in the
    language in use. Make one with :func:`T` or :func:`Tn`; share one object for a sentence that
    repeats (``[T("sent as is")] * n``): a plan of 10,000 messages must stay cheap.
    """

    msg: str | tuple[str, str, int]
    params: dict[str, Any]

    def __new__(cls, english: str, msg: str | tuple[str, str, int], params: dict[str, Any]) -> "Text":
        self = str.__new__(cls, english)
        self.msg = msg
        self.params = params
        return self

    def __reduce__(self) -> tuple[Any, ...]:
        return (Text, (str(self), self.msg, self.params))


class Listing(Text):
    """Items (strings or :class:`Text`) joined by ``", "`` in English; :func:`local` joins the
    localized items with the language's own separator (a catalog entry for ``", "``)."""

    def __new__(cls, items: Sequence[str]) -> "Listing":
        items = tuple(items)
        return super().__new__(cls, ", ".join(items), ", ", {"items": items})

    def __reduce__(self) -> tuple[Any, ...]:
        return (Listing, (self.params["items"],))


def listing(items: Iterable[str]) -> Listing:
    """``items`` as one list in a sentence (``"3 pinned, 2 of excluded tools"``), localizable."""
    return Listing(tuple(items))


_LAST: dict[str, Text] = {}
"""Per template, the text made last: a strategy fills one sentence into message after message of a
loop, mostly with the same parameters, and then gets one shared object (cheap to make, pickle and
render). One entry per template of the program, so it stays small and costs the collector nothing."""


_CONSTANT: dict[str, Text] = {}
"""The texts without parameters, by template (one per sentence of the program)."""


def _same_kind(a: Any, b: Any) -> bool:
    """Equal values of one type (a plain string and a Text with the same English render differently)."""
    return type(a) is type(b)


def T(template: str, /, **params: Any) -> Text:
    """``template`` filled with ``params`` in English, translatable later by :func:`local`.
    ``pybabel extract -k T`` finds the template; placeholders are named (``{tokens:,}`` is fine).
    Asked twice in a row with the same parameters, it returns the same object (see ``_LAST``)."""
    if not params:  # a constant sentence: one object for good
        made = _CONSTANT.get(template)
        if made is None:
            made = _CONSTANT[template] = Text(template, template, {})
        return made
    last = _LAST.get(template)
    if last is not None and last.params == params and all(map(_same_kind, params.values(), last.params.values())):
        return last
    made = _LAST[template] = Text(template.format_map(params), template, params)
    return made


_COUNTED: dict[tuple[str, int], Text] = {}
"""Texts of :func:`Tn` with no parameter but the count, by singular form and count (ages in turns,
counts of messages: a few thousand at most; cleared past that)."""


def Tn(singular: str, plural: str, n: int, /, **params: Any) -> Text:
    """Like :func:`T` with a singular and a plural form chosen by ``n`` (available as ``{n}``)."""
    if not params:
        made = _COUNTED.get((singular, n))
        if made is None:
            if len(_COUNTED) > 4096:
                _COUNTED.clear()
            made = _COUNTED[singular, n] = Text((singular if n == 1 else plural).format(n=n), (singular, plural, n), {"n": n})
        return made
    params["n"] = n
    return Text((singular if n == 1 else plural).format_map(params), (singular, plural, n), params)


ROLES: dict[str, Text] = {"system": T("system"), "user": T("user"), "assistant": T("assistant"), "tool": T("tool")}
"""The message roles as words a sentence can hold (``T("Message {i} ({role})", role=role_text(r))``)."""


def role_text(role: str) -> str:
    """The role's word, localizable (an unknown role stays as it is)."""
    return ROLES.get(role, role)


def local(text: str | None) -> str:
    """``text`` in the language in use: a :class:`Text` rendered from its translated template
    (its parameters localized in turn when they are ``Text``), any other string through :func:`_`.
    A translation that does not fit its parameters falls back to the English text."""
    if text is None or language() == SOURCE:
        return text  # type: ignore[return-value]
    if not isinstance(text, Text):
        return _(text)
    msg, params = text.msg, text.params
    if isinstance(text, Listing):
        return _(", ").join(local(item) if isinstance(item, Text) else item for item in params["items"])
    template = _(msg) if isinstance(msg, str) else ngettext(*msg)
    if not params:
        return template
    try:
        return template.format_map({k: local(v) if isinstance(v, Text) else v for k, v in params.items()})
    except (KeyError, IndexError, ValueError):
        return str(text)


def error_text(error: BaseException) -> str:
    """``str(error)`` as a :class:`Text` when the error is a ``CtxlabError`` (its ``problem``,
    ``where`` and ``hint``, each localizable), so a sentence that quotes an error reads in the
    language in use too; any other error's plain text."""
    problem = getattr(error, "problem", None)
    if problem is None:
        return str(error)
    where, hint = getattr(error, "where", None), getattr(error, "hint", None)
    text = problem if where is None else T("{where}: {problem}", where=where, problem=problem)
    return T("{text}. {hint}", text=text, hint=hint) if hint else text


def local_error(error: BaseException) -> str:
    """An error as a page shows it, in the language in use (see :func:`error_text`); its own text
    when that differs from what its parts make (a reader that rewrote ``args`` to add context)."""
    text = error_text(error)
    return local(text) if text == str(error) else str(error)


def local_all(texts: Iterable[str]) -> list[str]:
    """:func:`local` of each text, rendering each distinct object once (a plan shares one text
    between the messages with the same reason, so 10,000 reasons are a few renderings)."""
    if language() == SOURCE:
        return list(texts)
    done: dict[int, str] = {}
    out = []
    for t in texts:
        shown = done.get(id(t))
        if shown is None:
            shown = done[id(t)] = local(t)
        out.append(shown)
    return out


def placeholders(text: str) -> list[str]:
    """The named placeholders of a format string, sorted (a translation must keep the same ones)."""
    return sorted(m.group(1) or "" for m in PLACEHOLDER.finditer(text))


__all__ = ["LANGUAGES", "LOCALE_DIR", "Listing", "N_", "SOURCE", "T", "Text", "Tn", "_", "catalog_files", "error_text", "language", "listing", "local", "local_all", "local_error",
           "ngettext", "pick", "placeholders", "role_text", "translations", "use"]
