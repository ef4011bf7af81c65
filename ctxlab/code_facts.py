"""Facts that fit code: the identifiers a coding agent reuses and the edits it makes by shell or patch.

``ctxlab.fidelity`` finds the facts a call needs; this module holds what it knows about code:

* ``code_identifiers(text)``: names of classes, functions, variables and files specific enough to be
  facts (``EnumSerializer``, ``serializer_factory``, ``Header.fromstring``, ``numpy_handler.py``),
  by ``specific(name)``: a casing that code uses (CamelCase, snake_case, a dotted chain of two names
  that are not common vocabulary, a file name), at least ``IDENT_MIN`` characters, not a Python
  builtin, keyword, standard-library module or common method (``assertEqual``, ``os.path.join``).
* ``shell_edits(command)``: the old text of every edit a command makes, each as the lines that must
  be in the prompt: ``sed -i 's/old/new/'`` patterns and ``/address/`` patterns, python
  ``.replace("old", "new")`` in a script that writes a file, ``apply_patch`` hunks and unified diffs
  (context and removed lines, one need per hunk), SWE-agent's text action ``str_replace_editor
  str_replace PATH --old_str '...'``.
* ``heredoc_rewrites(messages, lowered, j, call_args)``: a ``cat > file <<EOF`` rewrite of a file
  an earlier call read needs the lines it keeps, as that read's result shows them.
* ``scrub_command(text)``: what a call types that is not a fact it took from earlier: heredoc,
  patch and SWE-agent ``edit``/``end_of_edit`` bodies (new code), ``sed -i`` scripts, and line
  positions (``sed -n '120,220p'``, ``head -n 40``, ``tail -n +40``, ``open f.py 120``, ``grep -A 5``).
"""
from __future__ import annotations

import builtins
import json
import keyword
import re
import shlex
import sys
from functools import lru_cache
from typing import Any, Sequence

from .conversation import Message

IDENT_MIN = 6
"""Shortest identifier (characters, dots included) counted as a fact. Tuned on the ``needs_tune``
split of ``benchmarks/coding_traces.py`` by reading the names each threshold adds: 6 adds to 8 four
names, all real (``_add_q``, ``is_Poly``, ``msg.enc``, ``field_1``); 5 adds ``dim_0``, ``dim_1``,
``mod_l``, too short to tell from a chance match."""
FILE_STEM_MIN = 4
"""Shortest stem of a bare file name counted as a fact (``card.py`` no, ``header.py`` yes)."""
SED_PATTERN_MIN = 6
"""A sed pattern whose literal pieces are shorter than this in all (``s/    sql/sql/``) needs nothing."""
HEREDOC_LINE_MIN, HEREDOC_SHARED_MIN = 8, 3
"""A heredoc rewrite needs the lines (at least this long) it shares with one earlier message, when
it shares at least that many: the lines of the file it kept from the read."""

_CODE_EXT = frozenset("py pyi pyx js jsx ts tsx mjs cjs rs go rb java kt c h cc cpp hpp cs php sh bash zsh "
                      "md rst txt json yaml yml toml cfg ini lock sql html css scss vue svelte ex exs swift "
                      "lua pl r m mm scala clj el hs ml erl xml csv ipynb".split())
_COMMON_FILES = frozenset({"setup", "__init__", "__main__", "readme", "conftest", "index", "main", "test", "tests",
                           "utils", "util", "config", "conf", "settings", "package", "requirements", "makefile",
                           "license", "changelog", "changes", "manage", "pyproject", "tox", "reproduce", "repro",
                           "temp", "tmp", "output", "input", "script", "debug", "example", "models", "views",
                           "urls", "admin", "apps", "forms", "wsgi", "asgi", "base", "core", "helpers", "constants",
                           "exceptions", "errors", "types", "version", "app", "server", "client", "api", "cli", "run",
                           "runtests", "package-lock", "dockerfile", "docker-compose"})
"""Stems of file names every project of a kind has (``conf.py``, ``models.py``, ``runtests.py``):
an agent types them without reading them anywhere."""
_EXTRA_COMMON = ("self cls np pd plt tf torch os sys re json str int dict list set tuple bytes "
                 "assertEqual assertTrue assertFalse assertIn assertIs assertIsNone assertIsNotNone assertRaises "
                 "assertRaisesRegex assertAlmostEqual assertNotEqual assertNotIn assertIsInstance setUp tearDown "
                 "setUpClass tearDownClass mark parametrize raises fixture monkeypatch capsys tmp_path "
                 "path join exists isfile isdir dirname basename abspath realpath splitext getcwd listdir makedirs "
                 "environ argv stdout stderr stdin exit append extend insert remove items keys values update "
                 "format encode decode strip split splitlines startswith endswith replace lower upper "
                 "read write readlines close open print getattr setattr hasattr isinstance issubclass "
                 "__init__ __name__ __main__ __class__ __dict__ __repr__ __str__ __call__ __eq__ __hash__ "
                 "__len__ __iter__ __next__ __getitem__ __setitem__ __enter__ __exit__ __file__ __doc__ "
                 "objects filter get create save delete all first last count exclude order_by "
                 "models forms views admin urls tests test_ fields field value name data result results args "
                 "kwargs params param options config settings logger logging error message response request "
                 "console log document window module exports require function return import from "
                 "python python3 pytest pip git echo grep find sed cat head tail bash env")
_COMMON = frozenset(w.lower() for w in (*dir(builtins), *keyword.kwlist, *sys.stdlib_module_names,
                                        *dir(str), *dir(list), *dir(dict), *_EXTRA_COMMON.split()))

_IDENT = re.compile(r"(?<![\w$@/\\.-])(?:--?)?[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")
_CAMEL = re.compile(r"[a-z0-9][A-Z]|[A-Z]{2}[a-z]")
_SNAKE = re.compile(r"[A-Za-z0-9]_[A-Za-z0-9]")


def _common(part: str) -> bool:
    return part.lower() in _COMMON or len(part) < 3


@lru_cache(maxsize=65536)
def specific(name: str) -> bool:
    """Whether an identifier-shaped token is specific enough to be a fact (see the module docstring)."""
    if len(name) < IDENT_MIN or name.startswith("-") or (name.startswith("__") and name.endswith("__")):
        return False
    parts = name.split(".")
    if len(parts) > 1:
        if parts[-1].lower() in _CODE_EXT:
            stem = ".".join(parts[:-1])
            return len(stem) >= FILE_STEM_MIN and stem.lower() not in _COMMON_FILES and not stem.startswith("_")
        return sum(not _common(p) for p in parts) >= 2 or any(_shaped(p) for p in parts)
    return _shaped(name)


def _shaped(part: str) -> bool:
    """A single name with a casing only code uses, long enough, not common vocabulary."""
    if len(part) < IDENT_MIN or _common(part) or part.isupper():
        return False
    return bool(_CAMEL.search(part) or _SNAKE.search(part.strip("_")))


def code_identifiers(text: str) -> set[str]:
    """The specific identifiers of ``text``: names, dotted chains and file names (see ``specific``)."""
    out: set[str] = set()
    for m in _IDENT.finditer(text):
        tok = m.group()
        if len(tok) >= IDENT_MIN and specific(tok):
            out.add(tok)
    return out


_HEREDOC = re.compile(r"<<-?\s*(['\"]?)(\w+)\1([^\n]*)\n(.*?)\n\s*\2\b", re.S)
_EDIT_BODY = re.compile(r"^edit\s+\d+:\d+\n.*?^end_of_edit\b", re.S | re.M)
"""SWE-agent's text action ``edit 287:295`` ... ``end_of_edit``: its body is new code."""
_PATCH_BODY = re.compile(r"\*\*\* Begin Patch.*?(?:\*\*\* End Patch|\Z)", re.S)
_SED_SCRIPT = re.compile(r"\bsed\s+(?:-[a-zA-Z]*\s+)*(?:-i\S*\s+|--in-place\S*\s+)(?:-e\s+)?(['\"])(.*?)(?<!\\)\1",
                         re.S)
_LINE_POSITIONS = re.compile(
    r"\bsed\s+(?:-\w+\s+)*(['\"]?)[\d,;\s$]+[pd](?:;[\d,\s]+[pd])*\1"     # sed -n '120,220p'
    r"|\b(?:head|tail)\s+(?:-[nc]\s*\+?\d+|-\d+|--lines=\+?\d+)"         # head -n 40, tail -n +40, head -50
    r"|\bgrep\b[^|;\n]*?\s-[ABCm]\s*\d+"                                  # grep -A 5
    r"|\b(?:open|goto)\s+\S*?\s*\d+\s*$|\bscroll_\w+"                     # SWE-agent open f.py 120, goto 120
    r"|--view_range\s+\[?\s*-?\d+\s*,?\s*-?\d+\s*\]?"                     # str_replace_editor view --view_range 1 50
    r"|\bnl\s+-\w+"
    r"|^[ \t]*\d+(?=\t|:\s|\s{2,}|\|)"                                  # a numbered line quoted from cat -n
    r"|\b(?:[Ll]ines?|L|around|near)\s+\d+(?:\s*(?:-|–|to|and|through|,)\s*\d+)*", re.M)  # line 548, lines 1339-1341


_CODE_SINK = re.compile(r">\s*[\w./~-]|\btee\b|\b(?:python\d?(?:\.\d+)?|node|ruby|perl|bash|sh|patch|apply)\b")
"""What a heredoc feeds that makes its body code: a file (``cat > f <<EOF``), an interpreter, a
patch. A heredoc that is a message (``git commit -m "$(cat <<'EOF' ...)"``) keeps its facts."""


def _code_heredoc(m: re.Match) -> str:
    start = m.string.rfind("\n", 0, m.start()) + 1
    head = m.string[start:m.start()] + m[3]
    return f"<<{m[2]}{m[3]}\n{m[2]}" if _CODE_SINK.search(head) else m.group()


def scrub_command(text: str) -> str:
    """``text`` without what a command types that is not a fact taken from earlier: heredoc and
    patch bodies, ``sed -i`` scripts, and line positions (see the module docstring)."""
    if "<<" in text:
        text = _HEREDOC.sub(_code_heredoc, text)
    if "*** Begin Patch" in text:
        text = _PATCH_BODY.sub(" ", text)
    if "end_of_edit" in text:
        text = _EDIT_BODY.sub(" ", text)
    if "sed" in text:
        text = _SED_SCRIPT.sub(" ", text)
    return _LINE_POSITIONS.sub(lambda m: re.sub(r"\d", " ", m.group()), text)


def _lines(text: str, minimum: int = 3) -> tuple[str, ...]:
    return tuple(dict.fromkeys(ln.strip().lower() for ln in text.splitlines() if len(ln.strip()) >= minimum))


_REGEX_META = re.compile(r"\.\*|\.\+|\.\?|(?<!\\)\[[^\]]*(?<!\\)\][*+?]?|\\[sSdDwWbB][*+?]?|\\[(){}|+?]|\\[1-9]|[\^$*]")


def _literal_pieces(pattern: str) -> tuple[str, ...]:
    """The literal pieces of a sed regex (``\\(foo\\).*bar`` -> ``foo``, ``bar``), unescaped."""
    pieces = []
    for piece in _REGEX_META.split(pattern):
        piece = re.sub(r"\\(.)", r"\1", piece).strip()
        if len(piece) >= 3:
            pieces.append(piece.lower())
    return tuple(dict.fromkeys(pieces))


def _sed_parts(script: str) -> list[str]:
    """The old-text patterns of a sed script: ``s/old/new/`` patterns and ``/pattern/`` addresses."""
    out = []
    i, n = 0, len(script)
    while i < n:
        c = script[i]
        if c == "s" and i + 1 < n and not script[i + 1].isalnum() and not script[i + 1].isspace():
            d = script[i + 1]
            fields, j, cur = [], i + 2, []
            while j < n and len(fields) < 2:
                if script[j] == "\\" and j + 1 < n:
                    cur.append(script[j:j + 2] if script[j + 1] != d else d)
                    j += 2
                    continue
                if script[j] == d:
                    fields.append("".join(cur))
                    cur = []
                else:
                    cur.append(script[j])
                j += 1
            if fields:
                out.append(fields[0])
            i = j
            continue
        if c in "rRwWaic":  # the rest of this command is a file name or text to insert
            while i < n and script[i] not in ";\n":
                i += 1
            continue
        if c == "/":
            j = i + 1
            while j < n and script[j] != "/":
                j += 2 if script[j] == "\\" else 1
            out.append(script[i + 1:j])
            i = j + 1
            continue
        i += 1
    return out


_PY_REPLACE = re.compile(r"\.replace\(\s*[rbu]?('''|\"\"\"|'|\")(.*?)(?<!\\)\1\s*,", re.S)
_WRITES_FILE = re.compile(r"\.write\(|write_text\(|open\([^)]*['\"][wa]\+?['\"]|\bsed\s+-i")
_STR_REPLACE = re.compile(r"\bstr_replace_editor\s+str_replace\b")
_HUNK_END = re.compile(r"^(?:\*\*\* (?:End Patch|Update File|Add File|Delete File)|diff --git|--- |\+\+\+ |@@)")


def _unescape_py(s: str) -> str:
    s = s.replace("\\\\", "\\")  # a script inside shell double quotes escapes its backslashes once more
    return re.sub(r"\\([nt'\"\\])", lambda m: {"n": "\n", "t": "\t"}.get(m[1], m[1]), s)


def _hunks(text: str) -> list[tuple[str, ...]]:
    """The old lines (context and removed) of each hunk of an apply_patch or unified diff."""
    out: list[tuple[str, ...]] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        if not lines[i].startswith("@@"):
            i += 1
            continue
        anchor = lines[i].strip("@ ").strip() if lines[i].count("@@") < 2 else ""
        old = [anchor] if anchor else []
        i += 1
        while i < len(lines) and not _HUNK_END.match(lines[i]):
            ln = lines[i]
            if ln.startswith((" ", "-")):
                old.append(ln[1:])
            elif ln.strip() in ("EOF", "PATCH", "EOP") or not ln.startswith("+"):
                if ln.strip() and not ln.startswith("\\"):
                    break
            i += 1
        kept = _lines("\n".join(old))
        if kept:
            out.append(kept)
    return out


def shell_edits(command: str) -> list[tuple[str, tuple[str, ...]]]:
    """The old text of each edit ``command`` makes (see the module docstring): (text shown, lines
    to find in one message of the prompt, stripped and lowercased)."""
    out: list[tuple[str, tuple[str, ...]]] = []
    if "sed" in command:
        for m in _SED_SCRIPT.finditer(command):
            for pattern in _sed_parts(m[2]):
                pieces = _literal_pieces(pattern)
                if sum(map(len, pieces)) >= SED_PATTERN_MIN:
                    out.append((pattern, pieces))
    if ".replace(" in command and _WRITES_FILE.search(command):
        for m in _PY_REPLACE.finditer(command):
            old = _unescape_py(m[2])
            lines = _lines(old)
            if lines:
                out.append((old, lines))
    if "@@" in command and ("*** Begin Patch" in command or re.search(r"\b(?:patch|git\s+apply)\b", command)):
        out += [("\n".join(h), h) for h in _hunks(command)]
    if _STR_REPLACE.search(command):
        old = _str_replace_old(command)
        if old and _lines(old):
            out.append((old, _lines(old)))
    return list(dict(out).items()) if len(out) > 1 else out


def _str_replace_old(command: str) -> str | None:
    """The ``--old_str`` of a SWE-agent text action ``str_replace_editor str_replace PATH --old_str ...``."""
    try:
        tokens = shlex.split(command[_STR_REPLACE.search(command).start():])
    except ValueError:
        m = re.search(r"--old_str\s+(['\"])(.*?)\1\s+--new_str", command, re.S)
        return m[2] if m else None
    if "--old_str" in tokens:
        k = tokens.index("--old_str")
        return tokens[k + 1] if k + 1 < len(tokens) else None
    return None


_WRITE_TARGET = re.compile(r"(?:\bcat\s*(?:<<-?\s*['\"]?\w+['\"]?\s*)?>\s*|\btee\s+)([\w./~-]+)")


def heredoc_writes(command: str) -> list[tuple[str, str]]:
    """(file path, body) of every heredoc that writes a file (``cat > f <<EOF``, ``cat <<'EOF' > f``,
    ``tee f <<EOF``)."""
    if "<<" not in command:
        return []
    out = []
    for m in _HEREDOC.finditer(command):
        start = command.rfind("\n", 0, m.start()) + 1
        head = command[start:m.start()] + m[3]
        t = _WRITE_TARGET.search(head)
        if t:
            out.append((t[1], m[4]))
    return out


def heredoc_lines(body: str) -> tuple[str, ...]:
    """The lines of a heredoc body a rewrite may keep from the file it replaces."""
    return _lines(body, HEREDOC_LINE_MIN)


def command_strings(args: Any, keys: Sequence[str]) -> list[str]:
    """The shell commands or patches of a call's arguments under ``keys`` (a list is joined)."""
    if not isinstance(args, dict):
        return []
    out = []
    for key in keys:
        v = args.get(key)
        if isinstance(v, list):
            v = " ".join(str(x) for x in v)
        if isinstance(v, str) and v.strip():
            out.append(v)
    return out


def heredoc_rewrites(messages: Sequence[Message], lowered: Sequence[str], j: int, call_args: dict[str, str],
                     keys: Sequence[str] = ("command", "cmd", "input", "script")) -> list[tuple[str, tuple[str, ...]]]:
    """Heredoc rewrites (``cat > f <<EOF``) by message ``j`` of a file read earlier: the lines of the
    new body that the result of an earlier call naming the file holds (the file as read; the most
    such lines), when there are at least ``HEREDOC_SHARED_MIN`` of them. A script the agent wrote
    itself and writes again, or lines copied from the task, are not a read file. ``lowered``: each
    message's text in lower case; ``call_args``: the arguments of every call, by call id."""
    out = []
    for call in messages[j].tool_calls:
        try:
            args = json.loads(call.arguments) if call.arguments.strip() else {}
        except ValueError:
            continue
        for command in command_strings(args, keys):
            for path, body in heredoc_writes(command):
                lines = heredoc_lines(body)
                if len(lines) < HEREDOC_SHARED_MIN:
                    continue
                best: tuple[str, ...] = ()
                named = "/".join(path.split("/")[-2:])  # ./a/b.py, /testbed/a/b.py and a/b.py alike
                for i in range(j):
                    m = messages[i]
                    if m.role != "tool" or named not in call_args.get(m.tool_call_id or "", ""):
                        continue
                    shared = tuple(ln for ln in lines if ln in lowered[i])
                    if len(shared) >= len(best):
                        best = shared
                if len(best) >= HEREDOC_SHARED_MIN:
                    out.append((f"{path} (rewritten)\n" + "\n".join(best), best))
    return out


__all__ = ["FILE_STEM_MIN", "IDENT_MIN", "SED_PATTERN_MIN", "code_identifiers", "command_strings",
           "heredoc_lines", "heredoc_rewrites", "heredoc_writes", "scrub_command", "shell_edits", "specific"]
