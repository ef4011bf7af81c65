"""Reading untrusted JSON / JSONL text with limits and error positions."""
from __future__ import annotations

import json
import math
import os
import re
import sys
import uuid
from types import GeneratorType
from typing import Any, BinaryIO, Iterator

from ..errors import InputTooLargeError, NestingTooDeepError, NotJSONError, path_key
from ._plain import PlainMessages, PlainParse
from ..i18n import T

MB = 1024 * 1024  #: the CLI's --max-mb and the messages count megabytes of 1,048,576 bytes
DEFAULT_MAX_BYTES = 50 * MB
DEFAULT_MAX_DEPTH = 64


def size_check(text: str | bytes, max_bytes: int) -> None:
    """An InputTooLargeError when ``text`` is over ``max_bytes`` bytes (UTF-8)."""
    if isinstance(text, bytes):
        size = len(text)
    else:  # no UTF-8 copy of a large ASCII paste just to measure it
        size = len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))
    _limit(size, max_bytes)


def _limit(size: int, max_bytes: int, more: bool = False) -> None:
    if size > max_bytes:
        raise InputTooLargeError(
            f"input is over the {max_bytes / MB:,.4g} MB limit" if more else
            f"input is {size / MB:,.1f} MB, over the {max_bytes / MB:,.4g} MB limit",
            where="input",
            hint="Split the file, or raise the limit (max_bytes= in Python, --max-mb on the CLI)",
        )


def read_limited(stream: BinaryIO, max_bytes: int, size: int | None = None) -> bytes:
    """The bytes of a file or stream, refused before they are read when over ``max_bytes``: a
    file's size (``size``, from ``stat``) is checked first, and at most ``max_bytes + 1`` bytes are
    ever read (a pipe, ``/dev/zero`` or a file growing while read says nothing of its size), so a
    3 GB file never fills memory to be told it is too large."""
    if size is not None:
        _limit(size, max_bytes)
    data = stream.read(max_bytes + 1)
    _limit(len(data), max_bytes, more=len(data) > max_bytes and size is None)
    return data


def read_path(path: str | os.PathLike, max_bytes: int = DEFAULT_MAX_BYTES) -> bytes:
    """The bytes of the file at ``path`` under the size limit (see ``read_limited``)."""
    with open(path, "rb") as f:
        return read_limited(f, max_bytes, os.fstat(f.fileno()).st_size)


def json_path(where: str, keys: list[str | int]) -> str:
    """``where`` followed by the keys, with the middle of a very deep path elided."""
    steps = [path_key(k) for k in keys]
    if len(steps) > 10:
        steps = steps[:4] + [f"...({len(steps) - 8} levels)..."] + steps[-4:]
    return where + "".join(steps)


_RECURSIVE_UP_TO = 200  #: a deeper limit is checked by the iterative walk alone (no RecursionError)


def depth_check(value: Any, max_depth: int, where: str = "$") -> None:
    """Raise NestingTooDeepError naming the JSON path where nesting passes ``max_depth``."""
    if not isinstance(value, (dict, list)):
        return
    if max_depth > _RECURSIVE_UP_TO or _deeper_than(value, max_depth):
        _raise_too_deep(value, max_depth, where)


_SCALARS = frozenset({str, int, float, bool, type(None)})


def _deeper_than(node: dict | list, levels: int) -> bool:
    """Whether objects and lists nest more than ``levels`` deep from ``node`` (``node`` is level
    1). Only containers are entered, at most ``levels`` deep; a scalar costs one set lookup, and a
    dict's values are checked in its parent's loop (a message list is one call, not one per
    message), so the half a million messages of a 50 MB file take a fraction of a second."""
    if levels < 1:
        return True
    if node.__class__ is PlainMessages:  # Messages made from {"role": str, "content": str}: 2 levels
        return levels < 2 and len(node) > 0
    scalars = _SCALARS
    for child in (node.values() if isinstance(node, dict) else node):
        cls = child.__class__
        if cls in scalars:
            continue
        if cls is dict:
            if levels < 2:
                return True
            for grand in child.values():
                if grand.__class__ not in scalars and isinstance(grand, (dict, list)) and \
                        _deeper_than(grand, levels - 2):
                    return True
        elif isinstance(child, (dict, list)) and _deeper_than(child, levels - 1):
            return True
    return False


def _raise_too_deep(value: dict | list, max_depth: int, where: str) -> None:
    """Find the first path that passes ``max_depth`` and raise the error naming it."""
    # one iterator per open level, a path built only on error: memory grows with the depth,
    # not with the number of values (a 50 MB file of short messages holds half a million)
    stack: list[tuple[Any, Any]] = [(None, iter(_children(value)))]
    while stack:
        child = next(stack[-1][1], _DONE)
        if child is _DONE:
            stack.pop()
            continue
        key, node = child
        if isinstance(node, (dict, list)):
            if len(stack) >= max_depth:
                raise NestingTooDeepError(
                    f"JSON nests deeper than {max_depth} levels",
                    where=json_path(where, [k for k, _ in stack[1:]] + [key]),
                    hint="Conversations never nest this deep; check the file, or raise max_depth",
                )
            stack.append((key, iter(_children(node))))


_DONE = object()


def _children(node: dict | list) -> Any:
    return node.items() if isinstance(node, dict) else enumerate(node)


_SHARED_VALUES = ("role", "type")


def _share_small_values(obj: dict, _intern: Any = sys.intern) -> dict:
    """json ``object_hook``: one shared string for each distinct ``role`` / ``type`` value, not
    one per message (half a million copies of "user" in a 50 MB file of short messages: 25 MB)."""
    for key in _SHARED_VALUES:
        value = obj.get(key)
        if value.__class__ is str and len(value) < 32:
            obj[key] = _intern(value)
    return obj


def decode_error_text(e: json.JSONDecodeError) -> str:
    """``Unterminated string starting at line 1, column 5``: the decoder's message and position,
    without the doubled "at" of messages that already end with it."""
    msg = e.msg[:-3] if e.msg.endswith(" at") else e.msg
    return T("{msg} at line {line}, column {column}", msg=T(msg), line=e.lineno, column=e.colno)


# ---------------------------------------------------------------- one policy for numbers
#: integers longer than this are refused with their position (Python's own limit on converting
#: digits to int: longer ones take quadratic time, and ``int()`` refuses them)
MAX_INT_DIGITS = 4300
NUMBER_HINT = ("JSON numbers must be finite (no NaN or Infinity) and integers at most 4,300 digits; "
               "write such a value as a string")
_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|(-?(?:Infinity|\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)|NaN)', re.S)


class _BadNumber(ValueError):
    """Raised inside the decoder for a number ctxlab does not read."""


def _finite_float(literal: str) -> float:
    value = float(literal)
    if not math.isfinite(value):
        raise _BadNumber(literal)
    return value


def _no_constant(literal: str) -> Any:
    raise _BadNumber(literal)


def number_problem(literal: str) -> str | None:
    """Why ctxlab refuses a JSON number literal, or None when it reads it."""
    if literal in ("NaN", "Infinity", "-Infinity"):
        return f"{literal} is not a JSON number"
    digits = literal.lstrip("-")
    if digits.isdigit():
        return f"an integer of {len(digits):,} digits" if len(digits) > MAX_INT_DIGITS else None
    return None if math.isfinite(float(literal)) else f"the number {shown_literal(literal)} is beyond a double's range"


def shown_literal(literal: str) -> str:
    return literal if len(literal) <= 40 else f"{literal[:20]}...{literal[-10:]} ({len(literal):,} characters)"


def _locate_number(text: str) -> str:
    """The first refused number of ``text``: what it is and its line and column."""
    for m in _TOKENS.finditer(text):
        literal = m.group(1)
        problem = literal and number_problem(literal)
        if problem:
            line = text.count("\n", 0, m.start(1)) + 1
            column = m.start(1) - (text.rfind("\n", 0, m.start(1)) + 1) + 1
            return f"{problem} at line {line}, column {column}"
    return "a number ctxlab cannot read"


def strict_loads(text: str, where: str, **kwargs: Any) -> Any:
    """``json.loads`` under ctxlab's one policy for numbers: NaN, Infinity and numbers that
    overflow a double are refused, integers of more than 4,300 digits too, each with its line and
    column (a :class:`NotJSONError`; JSONDecodeError and RecursionError pass through)."""
    try:
        if kwargs or text.__class__ is not str or text[:1] == "\ufeff":  # json.loads' own BOM message
            return json.loads(text, parse_float=_finite_float, parse_constant=_no_constant, **kwargs)
        return _STRICT.decode(text)  # one decoder for the many small texts of tool-call arguments
    except _BadNumber:
        pass
    except ValueError as e:
        if isinstance(e, json.JSONDecodeError) or "digits" not in str(e):
            raise
    raise NotJSONError(f"not valid JSON: {_locate_number(text)}", where=where, hint=NUMBER_HINT) from None


_STRICT = json.JSONDecoder(parse_float=_finite_float, parse_constant=_no_constant)


def finite_or_none(node: Any) -> Any:
    """A float that is not finite becomes None (JSON null): ctxlab never writes NaN or Infinity."""
    return None if node.__class__ is float and not math.isfinite(node) else node


def _decode(text: str, where: str) -> Any:
    try:
        return strict_loads(text, where, object_hook=_share_small_values)
    except json.JSONDecodeError as e:
        raise NotJSONError(
            T("not valid JSON: {detail}", detail=decode_error_text(e)),
            where=where,
            hint=T("Paste a JSON list of messages, an object with 'messages', or JSONL"),
        ) from None
    except RecursionError:
        raise NestingTooDeepError(
            "JSON nests too deep to read", where=where, hint="Check the file for runaway nesting"
        ) from None


_OTHER_BOMS = ((b"\xff\xfe\x00\x00", "UTF-32 (little-endian)"), (b"\x00\x00\xfe\xff", "UTF-32 (big-endian)"),
               (b"\xff\xfe", "UTF-16 (little-endian)"), (b"\xfe\xff", "UTF-16 (big-endian)"))


def decode_text(data: str | bytes) -> str:
    """The input as text: UTF-8 (a leading byte-order mark is dropped), or an error naming the
    line and byte offset of the first byte that is not UTF-8 (a UTF-16 or UTF-32 file is named as
    such). The CLI and the app's upload read files through this one function."""
    if isinstance(data, str):
        return data.lstrip("\ufeff")
    for bom, name in _OTHER_BOMS:
        if data.startswith(bom) or (bom == b"\xff\xfe" and len(data) > 1 and data[1:2] == b"\x00" and data[:1] != b"\x00"):
            raise NotJSONError(f"not UTF-8 text: the file is {name}", where="input",
                               hint="Save the file as UTF-8 (most editors: Save As, encoding UTF-8)")
    try:
        return data.decode("utf-8-sig").lstrip("\ufeff")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise NotJSONError(
            f"not UTF-8 text (byte {data[e.start:e.start + 1].hex()} at line {line}, byte offset {e.start})",
            where="input", hint="Save the file as UTF-8",
        ) from None


def jsonl_lines(text: str) -> Iterator[tuple[int, str]]:
    """(line number, text) of each non-blank JSONL line. Lines end at ``\\n`` only: U+2028,
    U+2029 and U+0085 are ordinary characters inside JSON strings (``str.splitlines`` would cut
    a string in two there)."""
    start, n = 0, 1
    while start <= len(text):  # one line at a time: no list of every line of a 50 MB file
        end = text.find("\n", start)
        end = len(text) if end < 0 else end
        line = text[start:end].rstrip("\r").lstrip("\ufeff")
        if line.strip():
            yield n, line
        start, n = end + 1, n + 1


def load_json_documents(
    text: str | bytes, *, max_bytes: int = DEFAULT_MAX_BYTES, max_depth: int = DEFAULT_MAX_DEPTH
) -> tuple[list[Any], list[int] | None]:
    """Parse JSON, or JSONL when the text is several JSON values one per line.

    Returns ``(documents, lines)``: ``lines`` is None for JSON, else the line number of each
    JSONL document. Errors name the line of a bad JSONL record.
    """
    docs, lines, _ = load_with_text(text, max_bytes=max_bytes, max_depth=max_depth)
    return docs, lines


def load_with_text(
    text: str | bytes, *, max_bytes: int = DEFAULT_MAX_BYTES, max_depth: int = DEFAULT_MAX_DEPTH
) -> tuple[list[Any], list[int] | None, str]:
    """``load_json_documents`` plus the decoded source text (readers take exact spans from it)."""
    size_check(text, max_bytes)
    text = decode_text(text)
    docs, lines = parse_documents(text, max_depth)
    return docs, lines, text


def parse_documents(text: str, max_depth: int = DEFAULT_MAX_DEPTH, *,
                    plain: bool = False) -> tuple[list[Any], list[int] | None]:
    """``load_json_documents`` of text already decoded and within the size limit. ``plain``: a
    JSON document's plain chat messages come as a ``PlainMessages`` list (see ``_plain``)."""
    if not text or text.isspace():  # strip() would copy the whole text
        raise NotJSONError(T("the input is empty"), where="input",
                           hint=T("Paste a JSON list of messages or an object with 'messages'"))
    try:
        if plain:
            parse = PlainParse()
            doc = parse.settle(strict_loads(text, "input", object_pairs_hook=parse.hook), max_depth)
        else:
            doc = strict_loads(text, "input")
    except json.JSONDecodeError as first:
        if first.msg != "Extra data":
            _decode(text, "input")  # raises with the position of the first error
        docs, numbers = [], []
        for n, ln in jsonl_lines(text):
            docs.append(_decode(ln, f"JSONL line {n}"))
            depth_check(docs[-1], max_depth, f"JSONL line {n}: $")
            numbers.append(n)
        return docs, numbers
    except RecursionError:
        raise NestingTooDeepError("JSON nests too deep to read", where="input",
                                  hint="Check the file for runaway nesting") from None
    depth_check(doc, max_depth)
    return [doc], None


# ---------------------------------------------------------------- exact JSON text of objects


class JSONText(dict):
    """A JSON object that carries the exact text it stands for (tool-call arguments written as an
    Anthropic ``input`` object): it behaves as the dict everywhere, and :func:`dumps` writes the
    text itself, so spacing, key order and escapes survive a file round trip byte for byte."""

    __slots__ = ("text",)

    def __init__(self, value: dict, text: str):
        super().__init__(value)
        self.text = text


def _swapped(node: Any, raws: list[str], mark: str) -> Any:
    """``node`` with each JSONText replaced by a marker string and each non-finite float by None;
    a dict or list with nothing to replace inside is returned as it is (no copy of a large
    conversation just to write it)."""
    if isinstance(node, JSONText):
        raws.append(node.text)
        return f"{mark}{len(raws) - 1}\x00"
    if isinstance(node, dict):
        out = None
        for k, v in node.items():
            w = _swapped(v, raws, mark)
            if w is not v:
                out = dict(node) if out is None else out
                out[k] = w
        return node if out is None else out
    if isinstance(node, (list, tuple)):
        items = None
        for i, v in enumerate(node):
            w = _swapped(v, raws, mark)
            if w is not v:
                items = list(node) if items is None else items
                items[i] = w
        return node if items is None else items
    return finite_or_none(node)


def _raw_pattern(mark: str) -> re.Pattern[str]:
    return re.compile(re.escape(json.dumps(mark)[:-1]) + r"(\d+)\\u0000\"")


def dumps(data: Any, indent: int | None = None) -> str:
    """``json.dumps`` (UTF-8 characters, not ASCII escapes) that writes every :class:`JSONText`
    as its own text."""
    raws: list[str] = []
    mark = f"\x00{uuid.uuid4().hex}:"
    text = json.dumps(_swapped(data, raws, mark), indent=indent, ensure_ascii=False, allow_nan=False)
    if not raws:
        return text
    return _raw_pattern(mark).sub(lambda m: raws[int(m[1])], text)


def iter_dumps(data: Any, indent: int | None = None, block: int = 1 << 16) -> Iterator[str]:
    """The text of :func:`dumps` in pieces of about ``block`` characters, made as they are
    written: a large conversation is never held as one string (nor as the encoder's list of
    millions of small pieces, which took ten times the file's size).

    A value of a top-level object may be a generator: it is written as a JSON array, item by
    item, as :func:`dumps` would write the list (a plan's half a million decisions are never all
    held as dicts at once)."""
    writer = _Writer(indent)
    pieces: list[str] = []
    size = 0
    for piece in writer.pieces(data):
        pieces.append(piece)
        size += len(piece)
        if size >= block:
            yield writer.text(pieces)
            pieces, size = [], 0
    if pieces:
        yield writer.text(pieces)


class _Writer:
    """The encoder, the JSONText marker and the raw texts of one :func:`iter_dumps` call."""

    def __init__(self, indent: int | None) -> None:
        self.indent = indent
        self.raws: list[str] = []
        self.mark = f"\x00{uuid.uuid4().hex}:"
        self.pattern = _raw_pattern(self.mark)
        self.encoder = json.JSONEncoder(indent=indent, ensure_ascii=False, allow_nan=False)

    def text(self, pieces: list[str]) -> str:
        """Pieces joined, each JSONText marker replaced by its text (a JSON string is always one
        piece of the encoder's, so no marker is cut)."""
        text = "".join(pieces)
        return self.pattern.sub(lambda m: self.raws[int(m[1])], text) if self.raws else text

    def pieces(self, data: Any) -> Iterator[str]:
        """The encoder's pieces of ``data`` (JSONText still as markers)."""
        if not (isinstance(data, dict) and any(isinstance(v, GeneratorType) for v in data.values())):
            yield from self.encoder.iterencode(_swapped(data, self.raws, self.mark))
            return
        step = "" if self.indent is None else "\n" + " " * self.indent
        comma = ", " if self.indent is None else ","
        yield "{"
        for k, (key, value) in enumerate(data.items()):
            yield f"{comma if k else ''}{step}{self.encoder.encode(key)}: "
            if isinstance(value, GeneratorType):
                yield from self._array(value, step, comma)
            else:
                yield from self._nested(value, step)
        yield step[:1] + "}"

    def _array(self, items: Iterator[Any], step: str, comma: str) -> Iterator[str]:
        """A generator's items as the JSON array ``dumps`` writes one level down."""
        inner, empty = step + step[1:], True
        for item in items:
            yield ("[" if empty else comma) + inner
            yield from self._nested(item, inner)
            empty = False
        yield "[]" if empty else step + "]"

    def _nested(self, value: Any, step: str) -> Iterator[str]:
        """``value``'s pieces with each line after its first indented to the level of ``step``."""
        pad = step[1:]
        for piece in self.encoder.iterencode(_swapped(value, self.raws, self.mark)):
            yield piece.replace("\n", step) if pad and "\n" in piece else piece  # a JSON string has no raw newline


class SourceObjects:
    """Finds, in the source text, the exact text of each object under ``"input"`` (Anthropic
    tool_use inputs), in document order: the reader asks for the next one equal to the object it
    has, so arguments written by :func:`dumps` read back as the same text."""

    _KEY = re.compile(r'"input"\s*:\s*(?=\{)')

    def __init__(self, text: str):
        self.text = text
        self.pos = 0
        self.budget = 4 * len(text) + 4096  # characters decoded at most: no quadratic rescans

    def take(self, value: dict) -> str | None:
        """The source text of the next ``"input"`` object equal to ``value`` (None if not found)."""
        want = json.dumps(value, sort_keys=True)
        pos = self.pos
        while self.budget > 0:
            m = self._KEY.search(self.text, pos)
            if m is None:
                return None
            try:
                obj, end = _DECODER.raw_decode(self.text, m.end())
            except (ValueError, RecursionError):
                pos = m.end()
                continue
            self.budget -= end - m.end()
            if json.dumps(obj, sort_keys=True) == want:
                self.pos = end
                return self.text[m.end():end]
            pos = m.end()
        return None


_DECODER = json.JSONDecoder()
