"""The message catalogs: every marked string has a Chinese translation with the same placeholders,
no two catalogs disagree, and the language is chosen per run and per browser locale."""
from __future__ import annotations

import threading
from pathlib import Path

import pytest

babel = pytest.importorskip("babel")
from babel.messages.extract import extract_from_file  # noqa: E402
from babel.messages.pofile import read_po  # noqa: E402

from ctxlab import i18n  # noqa: E402
from ctxlab.i18n import _, N_, ngettext, pick, placeholders, use  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SOURCES = sorted([*ROOT.glob("*.py"), *(ROOT / "pages").glob("*.py"), *(ROOT / "playground").glob("*.py"),
                  *(ROOT / "ctxlab").rglob("*.py")])
KEYWORDS = {"_": None, "N_": None, "ngettext": (1, 2), "T": None, "Tn": (1, 2)}


def marked() -> dict[str, list[str]]:
    """Every string marked for translation in the sources, with the files it is in."""
    found: dict[str, list[str]] = {}
    for path in SOURCES:
        for _line, message, _comments, _context in extract_from_file("python", str(path), keywords=KEYWORDS):
            for text in (message if isinstance(message, tuple) else (message,)):
                if text:
                    found.setdefault(text, []).append(str(path.relative_to(ROOT)))
    return found


def zh_entries() -> dict[str, list[tuple[str, str]]]:
    entries: dict[str, list[tuple[str, str]]] = {}
    for path in i18n.catalog_files("zh"):
        with path.open("rb") as fh:
            for message in read_po(fh, locale="zh"):
                if message.id:  # a plural entry counts for its singular and its plural source
                    idents = (message.id,) if isinstance(message.id, str) else message.id
                    string = message.string if isinstance(message.string, str) else message.string[0]
                    for ident in idents:
                        entries.setdefault(ident, []).append((path.name, string))
    return entries


def test_every_marked_string_has_a_chinese_translation():
    entries = zh_entries()
    missing = {text: files for text, files in marked().items()
               if not any(string for _f, string in entries.get(text, []))}
    assert not missing, f"{len(missing)} strings have no Chinese translation, e.g. {list(missing.items())[:5]}"


def test_translations_keep_the_placeholders_of_their_source():
    wrong = [(ident, string) for ident, found in zh_entries().items() for _f, string in found
             if string and placeholders(string) != placeholders(ident)]
    assert not wrong, wrong[:5]


def test_catalogs_never_disagree_on_a_string():
    clash = {ident: found for ident, found in zh_entries().items() if len({s for _f, s in found if s}) > 1}
    assert not clash, list(clash.items())[:5]


def test_the_browser_locale_picks_the_language():
    assert pick("zh-CN") == "zh" and pick("zh_Hans_TW") == "zh" and pick("ZH") == "zh"
    assert pick("en-US") == "en" and pick("fr-FR") == "en" and pick(None) == "en" and pick("") == "en"


def test_english_is_the_source_and_unknown_codes_fall_back_to_it():
    assert use("xx") == "en" and _("Strategy Lab") == "Strategy Lab"
    assert ngettext("{n} call", "{n} calls", 2) == "{n} calls" and N_("Compare") == "Compare"


def test_a_translated_string_reads_in_chinese_and_each_thread_keeps_its_own_language():
    entries = {ident: s for ident, found in zh_entries().items() for _f, s in found if s}
    if not entries:
        pytest.fail("the Chinese catalogs are empty")
    ident, expected = next(iter(sorted(entries.items())))
    seen: dict[str, str] = {}

    def run(lang: str) -> None:
        use(lang)
        seen[lang] = _(ident)

    threads = [threading.Thread(target=run, args=(lang,)) for lang in ("zh", "en")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert seen == {"zh": expected, "en": ident}
