"""What the poisoning detectors need to know about code, so coding agents' traces do not raise
false alarms (7 of 11 findings on real coding traces were false before it).

* ``not_a_typo(token, near, text)``: two identifier-shaped tokens one edit apart that are not a
  mistyped id: hex colours (``#1a3a1a`` / ``#4a3a1a``), one number in two notations or two nearby
  numbers (``0040060d`` / ``0x40060d``), names made in sequence (``pub1``, ``pub2``, ``pub3``), one
  name written with and without a separator (``msg1`` / ``msg-1``), the line positions of commands
  that read or edit by line (``sed -n '120,220p'`` then ``'200,260p'``, ``sed -i '857i ...'`` after
  ``856i``, ``head -n40``).
* ``read_for_a_later_edit(messages, calls, index)``: a ranged read of a file a later call edits
  (the agent took that range to change it: not a document the steps hardly need).
* ``files_used(call)``: the file names a call's arguments mention (``python decrypt.py`` uses
  ``decrypt.py``); ``edited_between(...)``: whether a call between two runs changed one of them
  (any file, for a command that names none: ``pytest``), so a repeated failure is the agent
  testing its fix, not feeding itself the same error.
"""
from __future__ import annotations

import re
from typing import Sequence

from ..conversation import Message, ToolCall, json_leaves

_HEX = re.compile(r"(?:0[xX])?[0-9a-fA-F]+")
_SEQUENCE = re.compile(r"(.*?\D|)(\d{1,2})(\D*)")
_SEPARATORS = re.compile(r"[-_.]")
LONG_HASH = 9
"""Pure hex strings of at least this many characters (no ``0x``) are hashes, still checked: a
commit or object hash one character off is a made-up one."""


def _hex_value(token: str) -> int | None:
    """The value of a hex numeral (``0x40060d``, ``0040060d``, ``1a3a1a``), else None."""
    if not _HEX.fullmatch(token):
        return None
    return int(token[2:] if token[:2].lower() == "0x" else token, 16)


def _numeral(token: str, context: str) -> bool:
    """A colour, an address, an offset: hex digits with ``0x``, after ``#`` in ``context``, or in
    lower case and too short for a hash (``ABC123``-style booking codes stay names)."""
    if _hex_value(token) is None:
        return False
    return (token[:2].lower() == "0x" or f"#{token}" in context
            or (len(token) < LONG_HASH and token == token.lower()))


def _in_sequence(a: str, b: str) -> bool:
    """Names that differ only in a short number (``pub1`` / ``pub3``, ``step_2`` / ``step_12``,
    ``0-based`` / ``1-based``: a leading number needs a separator after it, so a code such as
    ``4NQLHD`` against ``5NQLHD`` is still checked)."""
    ma, mb = _SEQUENCE.fullmatch(a), _SEQUENCE.fullmatch(b)
    return bool(ma and mb and ma[1] == mb[1] and ma[3] == mb[3] and ma[2] != mb[2]
                and (ma[1] or ma[3][:1] in ("-", "_")))


_LINE_ADDRESS = re.compile(r"\d{1,7}[pdqiacrwsylnNDPGHx=]|[nABCLl]\d{1,7}")
"""A line position as a shell command writes it: a line number with a sed command letter (``220p``,
``857i``, ``142r``) or a flag written against its number (``-n40``, ``-A5``, ``L120``)."""
_SHELL_LINES = re.compile(r"\bsed\s+(?:-\w+\s+)*['\"]?\d|\b\d{1,7}\s*,\s*\d{1,7}[pdq]\b|\b(?:head|tail|grep|nl|awk)\b"
                          r"[^|;\n]*\s-[nABCl]\s*\+?\d|#L\d")
"""A command that addresses lines: ``sed -n '120,220p'``, ``sed -i '857i ...'``, ``head -n40``, ``grep -A5``."""


def _line_addresses(token: str, near: str, context: str) -> bool:
    """Both are line positions (``120p`` / ``220p``, ``857i`` / ``856i``, ``n40`` / ``n400``) in a
    context that addresses lines with sed, head, tail or grep: an agent reading or editing on,
    not a name mistyped. An order code ``W120p`` outside such a context is still checked."""
    return bool(_LINE_ADDRESS.fullmatch(token) and _LINE_ADDRESS.fullmatch(near) and _SHELL_LINES.search(context))


def not_a_typo(token: str, near: str, context: str = "") -> str | None:
    """Why ``token`` is not a mistyped ``near`` (one edit apart), or None when it may be one.
    ``context``: the text both appear in (a ``#`` before them marks colours; ``sed -n`` ranges)."""
    if _numeral(token, context) and _numeral(near, context):
        return "numbers (colours, addresses, offsets), not names"
    if _line_addresses(token, near, context):
        return "line positions of a command that reads or edits by line (sed -n '120,220p', sed -i '857i'), not names"
    if _SEPARATORS.sub("", token).lower() == _SEPARATORS.sub("", near).lower():
        return "the same name with and without a separator"
    if _in_sequence(token, near) and not (_hex_value(token) is not None and len(token) >= LONG_HASH):
        return "names made in sequence"
    return None


_FILE = re.compile(r"(?<![\w.])((?:[\w.~-]+/)*[\w-][\w.-]*\.[A-Za-z][A-Za-z0-9]{0,5})(?![\w/])")
_EDIT_TOOLS = frozenset({"edit", "write", "create", "str_replace_editor", "str_replace", "apply_patch", "patch",
                         "insert", "replace", "multiedit", "notebookedit", "edit_file", "write_file", "create_file",
                         "str_replace_based_edit_tool", "append", "edit_linting"})
_WRITING_COMMAND = re.compile(r"\bsed\s+-i|>>?\s*\S|\btee\b|\bpatch\b|\bmv\b|\bcp\b|\bgit\s+(apply|checkout|restore)"
                              r"|\bapply_patch\b|<<\s*['\"]?EOF")


def files_used(call: ToolCall) -> set[str]:
    """Base names of the files a call's argument values mention."""
    try:
        values = [v for v in json_leaves(call.parsed_arguments()) if isinstance(v, str)]
    except ValueError:
        values = [call.arguments]
    return {m.rsplit("/", 1)[-1] for v in values for m in _FILE.findall(v)}


def _command(call: ToolCall) -> str:
    try:
        args = call.parsed_arguments()
    except ValueError:
        return call.arguments
    return " ".join(str(v) for v in json_leaves(args) if isinstance(v, str))


def changes_file(call: ToolCall, result: Message | None, names: set[str]) -> bool:
    """Whether ``call`` edits one of the files ``names``: an editing tool (or a writing shell
    command) whose arguments or result name the file (an editor's result names the file it edited).
    With no names (a command such as ``pytest`` or ``make`` that names no file uses the project's
    files), any edit counts."""
    text = _command(call)
    first = text.strip().split(None, 1)[0].lower() if text.strip() else ""
    editing = call.name.lower() in _EDIT_TOOLS or first in _EDIT_TOOLS or bool(_WRITING_COMMAND.search(text))
    if not editing:
        return False
    if not names:
        return True
    seen = text + "\n" + (result.text[:2000] if result is not None else "")
    return any(re.search(r"(?<![\w.])" + re.escape(n) + r"(?![\w])", seen) for n in names)


def edited_between(messages: Sequence[Message], calls: Sequence, start: int, end: int, names: set[str]) -> int | None:
    """The index of a call after message ``start`` and before ``end`` that changes one of ``names``
    (any file when ``names`` is empty; ``calls``: the observations' CallInfo list), or None."""
    for c in calls:
        if start < c.index < end:
            result = messages[c.result_index] if c.result_index is not None else None
            if changes_file(c.call, result, names):
                return c.index
    return None


def read_for_a_later_edit(messages: Sequence[Message], calls: Sequence, index: int) -> bool:
    """Whether tool result ``index`` is a ranged read (``nl -ba f.py | sed -n '224,400p'``, ``head -n``,
    a view range, an offset) of a file that a later call edits: the agent took that range to change
    it, so the steps up to the edit need it. A whole file dumped (``cat f.py``) is not exempt
    (``calls``: the observations' CallInfo list)."""
    call = next((c for c in calls if c.result_index == index), None)
    if call is None:
        return False
    text = _command(call.call)
    ranged = bool(_SHELL_LINES.search(text)) or any(k in call.call.arguments for k in
                                                      ('"view_range"', '"offset"', '"limit"'))
    names = files_used(call.call)
    if not ranged or not names or changes_file(call.call, messages[index], names):
        return False
    return edited_between(messages, calls, index, len(messages), names) is not None
