"""Key redaction: the one filter every text that comes back from a model passes before ctxlab
stores, caches, prints or shows it (answers, summaries, probe replies, chat replies, errors).

A server can echo the bearer key it was sent: verbatim, upper-cased, base64-encoded, hex-encoded,
URL-encoded, reversed, or broken by line breaks and spaces (a reply built from chunks). :class:`KeyRedactor` hides every
run of at least :data:`FRAGMENT` consecutive characters of the key in any of those forms, in any
letter case, ignoring white space and zero-width characters between them, so a half of the key is
hidden as surely as the whole. A key shorter than :data:`SHORT_KEY` characters (``ollama``,
``EMPTY``: the placeholders local servers accept) is no secret and would match ordinary words in
any case: it is hidden only where it appears exactly as typed.
"""
from __future__ import annotations

import base64
from typing import Iterable
from urllib.parse import quote

#: the shortest run of a key's characters that is hidden (10 characters: about 60 bits of a random key)
FRAGMENT = 10
#: keys shorter than this are placeholders, hidden only where they appear exactly
SHORT_KEY = 12
MASK = "***"
_SEPARATORS = frozenset(" \t\r\n\f\v\u00a0\u200b\u200c\u200d\u2060\ufeff")
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def encoded_forms(secret: str) -> list[str]:
    """The key and its common encodings, lower-cased: the text, base64 (standard and URL-safe, at
    each of the three byte alignments a key can have inside a longer encoded text, without the
    characters the neighbouring bytes change) and hex; each also URL-encoded (a server quoting the
    request's URL or form) and reversed (a server that echoes the key back to front)."""
    raw = secret.encode("utf-8")
    forms = [secret, raw.hex()]
    for offset in range(3):
        encoded = base64.b64encode(b"\0" * offset + raw).decode("ascii").rstrip("=")
        core = encoded[4 if offset else 0:-2]  # the edges depend on the bytes around the key
        forms += [core, core.replace("+", "-").replace("/", "_")]
    forms += [quote(f, safe="") for f in forms]
    forms += [f[::-1] for f in forms]
    return list(dict.fromkeys(f.translate(_ASCII_LOWER) for f in forms if len(f) >= FRAGMENT))


class KeyRedactor:
    """Hides the given secrets (API keys, URL passwords) in any text: ``redactor(text)``."""

    def __init__(self, secrets: Iterable[str | None]) -> None:
        self.exact: list[str] = []
        self.grams: set[str] = set()
        for secret in secrets:
            if not secret:
                continue
            if len(secret) < SHORT_KEY:
                self.exact.append(secret)
                continue
            for form in encoded_forms(secret):
                self.grams.update(form[i:i + FRAGMENT] for i in range(len(form) - FRAGMENT + 1))

    def __bool__(self) -> bool:
        return bool(self.exact or self.grams)

    def __call__(self, text: str) -> str:
        """``text`` with every run of a secret's characters (any form, any case) as ``***``."""
        if not isinstance(text, str) or not text:
            return text
        for secret in self.exact:
            text = text.replace(secret, MASK)
        if not self.grams or len(text) < FRAGMENT:
            return text
        positions = [i for i, c in enumerate(text) if c not in _SEPARATORS]
        compact = "".join(text[i] for i in positions).translate(_ASCII_LOWER)
        spans: list[list[int]] = []
        grams, n = self.grams, FRAGMENT
        for j in range(len(compact) - n + 1):
            if compact[j:j + n] in grams:
                if spans and j <= spans[-1][1]:
                    spans[-1][1] = j + n
                else:
                    spans.append([j, j + n])
        if not spans:
            return text
        out, last = [], 0
        for start, end in spans:
            out += [text[last:positions[start]], MASK]
            last = positions[end - 1] + 1
        out.append(text[last:])
        return "".join(out)


def redact_all(value: object, redactor: KeyRedactor) -> object:
    """``value`` (text, or lists and dicts of them, as JSON holds) with every string redacted."""
    if isinstance(value, str):
        return redactor(value)
    if isinstance(value, list):
        return [redact_all(v, redactor) for v in value]
    if isinstance(value, dict):
        return {k: redact_all(v, redactor) for k, v in value.items()}
    return value


__all__ = ["FRAGMENT", "KeyRedactor", "MASK", "SHORT_KEY", "encoded_forms", "redact_all"]
