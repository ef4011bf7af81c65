"""Reading untrusted JSON / JSONL text with limits and error positions."""
from __future__ import annotations

import json
from typing import Any

from ..errors import InputTooLargeError, NestingTooDeepError, NotJSONError

DEFAULT_MAX_BYTES = 50 * 1024 * 1024
DEFAULT_MAX_DEPTH = 64


def _size_check(text: str | bytes, max_bytes: int) -> None:
    size = len(text.encode("utf-8") if isinstance(text, str) else text)
    if size > max_bytes:
        raise InputTooLargeError(
            f"input is {size / 1e6:.1f} MB, over the {max_bytes / 1e6:.1f} MB limit",
            where="input",
            hint="Split the file, or raise the limit (max_bytes= in Python, --max-mb on the CLI)",
        )


def depth_check(value: Any, max_depth: int, where: str = "$") -> None:
    """Raise NestingTooDeepError naming the JSON path where nesting passes ``max_depth``."""
    stack: list[tuple[Any, str, int]] = [(value, where, 1)]
    while stack:
        node, path, depth = stack.pop()
        if isinstance(node, dict):
            items = node.items()
        elif isinstance(node, list):
            items = enumerate(node)
        else:
            continue
        if depth > max_depth:
            raise NestingTooDeepError(
                f"JSON nests deeper than {max_depth} levels",
                where=path,
                hint="Conversations never nest this deep; check the file, or raise max_depth",
            )
        for key, child in items:
            if isinstance(child, (dict, list)):
                sub = f"{path}[{key}]" if isinstance(key, int) else f"{path}.{key}"
                stack.append((child, sub, depth + 1))


def _decode(text: str, where: str) -> Any:
    try:
        return json.loads(text)
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
    if not text.strip():
        raise NotJSONError("the input is empty", where="input",
                           hint="Paste a JSON list of messages or an object with 'messages'")
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as first:
        if first.msg != "Extra data":
            _decode(text, "input")  # raises with the position of the first error
        lines = [(n, ln) for n, ln in enumerate(text.splitlines(), 1) if ln.strip()]
        docs = []
        for n, ln in lines:
            docs.append(_decode(ln, f"JSONL line {n}"))
        for i, d in enumerate(docs):
            depth_check(d, max_depth, f"JSONL line {lines[i][0]}")
        return docs, True
    except RecursionError:
        raise NestingTooDeepError("JSON nests too deep to read", where="input",
                                  hint="Check the file for runaway nesting") from None
    depth_check(doc, max_depth)
    return [doc], False
