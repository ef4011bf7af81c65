"""Reading untrusted JSON / JSONL text with limits and error positions."""
from __future__ import annotations

import json
import sys
from typing import Any, Iterator

from ..errors import InputTooLargeError, NestingTooDeepError, NotJSONError

DEFAULT_MAX_BYTES = 50 * 1024 * 1024
DEFAULT_MAX_DEPTH = 64


def _size_check(text: str | bytes, max_bytes: int) -> None:
    if isinstance(text, bytes):
        size = len(text)
    else:  # no UTF-8 copy of a large ASCII paste just to measure it
        size = len(text) if text.isascii() else len(text.encode("utf-8"))
    if size > max_bytes:
        raise InputTooLargeError(
            f"input is {size / 1e6:.1f} MB, over the {max_bytes / 1e6:.1f} MB limit",
            where="input",
            hint="Split the file, or raise the limit (max_bytes= in Python, --max-mb on the CLI)",
        )


def depth_check(value: Any, max_depth: int, where: str = "$") -> None:
    """Raise NestingTooDeepError naming the JSON path where nesting passes ``max_depth``.

    Walks depth-first holding one iterator per open level, and builds a path only on error:
    memory stays proportional to the depth, not to the number of values (a 50 MB file of
    short messages holds half a million of them)."""
    if not isinstance(value, (dict, list)):
        return
    stack: list[tuple[Any, Any]] = [(None, iter(_children(value)))]
    while stack:
        child = next(stack[-1][1], _DONE)
        if child is _DONE:
            stack.pop()
            continue
        key, node = child
        if isinstance(node, (dict, list)):
            if len(stack) >= max_depth:
                path = where + "".join(_step(k) for k, _ in stack[1:]) + _step(key)
                raise NestingTooDeepError(
                    f"JSON nests deeper than {max_depth} levels",
                    where=path,
                    hint="Conversations never nest this deep; check the file, or raise max_depth",
                )
            stack.append((key, iter(_children(node))))


_DONE = object()


def _children(node: dict | list) -> Any:
    return node.items() if isinstance(node, dict) else enumerate(node)


def _step(key: Any) -> str:
    return f"[{key}]" if isinstance(key, int) else f".{key}"


_SHARED_VALUES = ("role", "type")


def _share_small_values(obj: dict, _intern: Any = sys.intern) -> dict:
    """json ``object_hook``: one shared string for each distinct ``role`` / ``type`` value, not
    one per message (half a million copies of "user" in a 50 MB file of short messages: 25 MB)."""
    for key in _SHARED_VALUES:
        value = obj.get(key)
        if value.__class__ is str and len(value) < 32:
            obj[key] = _intern(value)
    return obj


def _decode(text: str, where: str) -> Any:
    try:
        return json.loads(text, object_hook=_share_small_values)
    except json.JSONDecodeError as e:
        raise NotJSONError(
            f"not valid JSON: {e.msg} at line {e.lineno}, column {e.colno}",
            where=where,
            hint="Paste a JSON list of messages, an object with 'messages', or JSONL",
        ) from None
    except RecursionError:
        raise NestingTooDeepError(
            "JSON nests too deep to read", where=where, hint="Check the file for runaway nesting"
        ) from None


def _lines(text: str) -> Iterator[tuple[int, str]]:
    """(line number, line) for each ``\n``-separated line, one at a time: no list of copies of
    the whole text. Only ``\n`` ends a record: U+2028 and the like may sit raw in JSON strings."""
    start, n = 0, 0
    while start <= len(text):
        end = text.find("\n", start)
        end = len(text) if end < 0 else end
        n += 1
        yield n, text[start:end]
        start = end + 1


def load_json_documents(
    text: str | bytes, *, max_bytes: int = DEFAULT_MAX_BYTES, max_depth: int = DEFAULT_MAX_DEPTH
) -> tuple[list[Any], bool]:
    """Parse JSON, or JSONL when the text is several JSON values one per line.

    Returns ``(documents, is_jsonl)``. Errors name the line of a bad JSONL record.
    """
    _size_check(text, max_bytes)
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8-sig")
        except UnicodeDecodeError as e:
            raise NotJSONError(
                f"not UTF-8 text (bad byte at offset {e.start})", where="input",
                hint="Save the file as UTF-8",
            ) from None
    text = text.lstrip("\ufeff")
    if not text or text.isspace():  # strip() would copy the whole text
        raise NotJSONError("the input is empty", where="input",
                           hint="Paste a JSON list of messages or an object with 'messages'")
    try:
        doc = json.loads(text, object_hook=_share_small_values)
    except json.JSONDecodeError as first:
        if first.msg != "Extra data":
            _decode(text, "input")  # raises with the position of the first error
        docs = []
        for n, ln in _lines(text):
            if ln.strip():
                docs.append(_decode(ln, f"JSONL line {n}"))
                depth_check(docs[-1], max_depth, f"JSONL line {n}")
        return docs, True
    except RecursionError:
        raise NestingTooDeepError("JSON nests too deep to read", where="input",
                                  hint="Check the file for runaway nesting") from None
    depth_check(doc, max_depth)
    return [doc], False
