"""The interface's languages: standard gettext message catalogs, read with Babel.

Catalogs are PO files under ``ctxlab/locale/<lang>/``, one file per part of the interface
(``app.po``, ``strategy_lab.po``, ``engine.po``...); every file of a language is merged into one
catalog, so parts can be translated separately. English is the source language and has no catalog.

Code marks text with :func:`_` (translated now) or :func:`N_` (marked for extraction, translated
where it is shown: module-level constants). Placeholders are named and filled after translation
(``_("{n} calls over the limit").format(n=k)``), never built by concatenating translated pieces,
so a translator sees the whole sentence. ``pybabel extract -k N_ -k _`` finds every marked string;
``tests/test_i18n.py`` checks each has a translation with the same placeholders.

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


def placeholders(text: str) -> list[str]:
    """The named placeholders of a format string, sorted (a translation must keep the same ones)."""
    return sorted(m.group(1) or "" for m in PLACEHOLDER.finditer(text))


__all__ = ["LANGUAGES", "LOCALE_DIR", "N_", "SOURCE", "_", "catalog_files", "language", "ngettext", "pick",
           "placeholders", "translations", "use"]
