"""The CLI's shared core: the command registry, input reading, output, and the error boundary.

Every command module depends on this one and on nothing else of the CLI.

Exit codes: 0 success, 1 ``validate`` found errors, 2 bad input or usage (one line on stderr,
never a traceback).
"""
from __future__ import annotations

import argparse
import math
import re
import sys
from pathlib import Path
from typing import Any, Callable, Sequence

from ..errors import CtxlabError, one_line, shown
from ..extras import missing_extra
from ..formats import FORMATS, dumps, load_all
from ..formats._json import iter_dumps
from ..conversation import Conversation

EXIT_OK, EXIT_INVALID, EXIT_BAD_INPUT = 0, 1, 2
#: an error line longer than this is cut in the middle (values are already capped where they are
#: echoed; this is the last guard of the one-short-line promise)
MAX_LINE = 600
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
COMMANDS: dict[str, tuple[Callable[[argparse.ArgumentParser], None], Callable[[argparse.Namespace], int]]] = {}


class _Usage(Exception):
    """A usage problem argparse reports; turned into exit code 2 and one line."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2, no usage dump
        raise _Usage(message)


def command(name: str, add_args: Callable[[argparse.ArgumentParser], None]):
    """Register a subcommand (later modules add theirs the same way)."""
    def wrap(fn: Callable[[argparse.Namespace], int]):
        COMMANDS[name] = (add_args, fn)
        return fn
    return wrap


def _read_input(path: str, max_bytes: int) -> bytes:
    """The input file's bytes (``-``: stdin), refused before reading when over ``max_bytes``."""
    from ..formats._json import read_limited, read_path
    if path == "-":
        return read_limited(sys.stdin.buffer, max_bytes)
    if not Path(path).is_file():
        raise CtxlabError(f"no such file: {shown(path, 80)}", where="FILE", hint="Give the path of a .json or .jsonl file")
    return read_path(path, max_bytes)


def _conversations(args: argparse.Namespace) -> list[tuple[int, Conversation]]:
    max_bytes = int(args.max_mb * 1024 * 1024)
    data = _read_input(args.file, max_bytes)
    if getattr(args, "agent", None):  # one sub-agent of a Claude Code session, read as its own file
        from ..formats.claude_agents import session_records, subagent_text
        data = subagent_text(session_records(data), args.agent).encode("utf-8")
    convs = load_all(data, format=args.format, max_bytes=max_bytes)
    if args.index is not None:
        if not 0 <= args.index < len(convs):
            raise CtxlabError(f"--index {args.index} is out of range", where="--index",
                              hint=f"The input holds {len(convs)} conversation(s): 0..{len(convs) - 1}")
        return [(args.index, convs[args.index])]
    return list(enumerate(convs))


def to_json(obj: Any, indent: int | None = None) -> tuple[str, int]:
    """(JSON text, how many lone surrogates it escaped). Text is written as UTF-8 characters,
    except that a lone surrogate (U+D800..U+DFFF: it can come in as a JSON escape, and is not a
    character UTF-8 can encode) is written as its ``\\uXXXX`` escape, so the output is always
    valid UTF-8 and reads back to the same string."""
    return _escaped(dumps(obj, indent=indent))


def note(text: str) -> None:
    """One ``note:`` line on stderr (control characters and lone surrogates escaped)."""
    print(f"note: {one_line(text)}", file=sys.stderr)


def _escaped(text: str) -> tuple[str, int]:
    return _LONE_SURROGATE.subn(lambda m: f"\\u{ord(m.group()):04x}", text)


def _emit(objs: list[dict[str, Any]]) -> None:
    """One conversation: an indented JSON object, written piece by piece (a plan of half a
    million messages is never one string; a generator value, such as ``Plan.to_dict(lazy=True)``'s
    decisions, is written item by item). Several: JSON Lines, one object each."""
    escaped = 0
    write = sys.stdout.write
    for o in objs:
        for piece in iter_dumps(o, indent=2 if len(objs) == 1 else None):
            text, n = _escaped(piece)
            escaped += n
            write(text)
        write("\n")
    if escaped:
        note(f"{escaped} lone surrogate(s) (U+D800..U+DFFF, not valid Unicode) are written as \\uXXXX escapes "
             "in the JSON output")


def whole_number(minimum: int = 1) -> Callable[[str], int]:
    """An argparse type: a whole number of at least ``minimum`` (``--max-tokens 0`` is refused,
    never read as "no limit given")."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be a whole number, got {shown(text)}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum:,}, got {value:,}")
        return value
    return parse


def finite_number(minimum: float | None = None, maximum: float | None = None, *,
                  above: bool = False) -> Callable[[str], float]:
    """An argparse type: a finite number (NaN and infinity refused) within the bounds; ``above``
    makes the minimum exclusive."""
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be a number, got {shown(text)}") from None
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"must be a finite number, got {shown(text)}")
        if minimum is not None and (value <= minimum if above else value < minimum):
            raise argparse.ArgumentTypeError(f"must be {'above' if above else 'at least'} {minimum:g}, got {value:g}")
        if maximum is not None and value > maximum:
            raise argparse.ArgumentTypeError(f"must be at most {maximum:g}, got {value:g}")
        return value
    return parse


def _input_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", help="a .json or .jsonl file, or - for standard input")
    p.add_argument("--format", choices=sorted(FORMATS), help="skip detection and read as this format")
    p.add_argument("--index", type=whole_number(0), help="which conversation of a multi-conversation file")
    p.add_argument("--agent", metavar="ID", help="a sub-agent of a Claude Code session (its id, as `ctxlab count` "
                                                 "lists them under subagents): read its own conversation")
    p.add_argument("--max-mb", type=finite_number(0, above=True), default=50.0,
                   help="refuse inputs larger than this many MB (default 50)")


def summary(doc: str | None) -> str:
    """A command's one-line help: the first paragraph of its docstring, whole (a summary that wraps
    onto a second docstring line would otherwise end mid-sentence in ``ctxlab --help``)."""
    first = (doc or "").strip().split("\n\n")[0]
    return " ".join(first.split())


def prefix_args(p: argparse.ArgumentParser) -> None:
    """``--prefix``: the part of the prompt the file does not log (see ``ctxlab.prefix``)."""
    p.add_argument("--prefix", metavar="N|FILE",
                   help="the system prompt and tools the file does not log: a number of tokens, or a file holding "
                        "them (default: inferred from the bill where the file logs usage; 0 for none)")


def with_prefix(args: argparse.Namespace, conv: Conversation) -> tuple[Conversation, dict[str, Any] | None, list[str]]:
    """The conversation with its unlogged prefix at the head (inferred, or ``--prefix``), the
    prefix as JSON (None without one) and notes."""
    from ..prefix import apply_prefix, parse_override
    out, prefix, notes = apply_prefix(conv, args.model, parse_override(getattr(args, "prefix", None)))
    return out, None if prefix is None else prefix.to_dict(), notes


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The argument parser with every registered subcommand. With ``only``, just that command's
    arguments are added (each command imports what its arguments list, say the strategies or the
    export targets, so a run builds only the one it needs); the others are listed with their help."""
    parser = _Parser(prog="ctxlab", description="Inspect, count, convert and trim LLM tool conversations.")
    subs = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for name, (add_args, fn) in COMMANDS.items():
        sp = subs.add_parser(name, help=summary(fn.__doc__))
        if only is None or name == only:
            add_args(sp)
        sp.set_defaults(run=fn)
    return parser


_BUILT: dict[tuple[str | None, ...], argparse.ArgumentParser] = {}


def _parser(argv: Sequence[str]) -> argparse.ArgumentParser:
    """The parser for the command ``argv`` names, built once (argparse takes ~15 ms to build the
    whole parser, which a script calling ``main`` in a loop would pay on every call). When argv
    names no command (``--help``, a typo), no command's arguments are needed: the usage line and
    the help list the commands by name."""
    only = argv[0] if argv and argv[0] in COMMANDS else ""
    key = (*COMMANDS, only)
    if key not in _BUILT:
        _BUILT[key] = build_parser(only)
    return _BUILT[key]


def _one_line_error(text: str) -> None:
    line = one_line(text)
    if len(line) > MAX_LINE:
        line = f"{line[:MAX_LINE - 160]} [...] {line[-150:]}"
    print(line, file=sys.stderr)


def _utf8_stdout() -> None:
    """Write stdout and stderr as UTF-8 whatever the locale says (a C locale would otherwise
    turn non-ASCII text into errors or, with surrogateescape, into invalid bytes)."""
    for stream in (sys.stdout, sys.stderr):
        encoding = (getattr(stream, "encoding", None) or "").lower().replace("-", "")
        if encoding != "utf8" and hasattr(stream, "reconfigure"):
            stream.reconfigure(encoding="utf-8", errors="backslashreplace" if stream is sys.stderr else "strict")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit code. Bad input never escapes as a traceback: a CtxlabError
    is one line naming the problem and where; anything else (a bug, a RecursionError, a panic of
    a native library, which is a BaseException) is one "internal error" line."""
    try:
        _utf8_stdout()
        argv = sys.argv[1:] if argv is None else list(argv)
        args = _parser(argv).parse_args(argv)
        return args.run(args)
    except _Usage as e:
        _one_line_error(f"ctxlab: usage: {e} (see ctxlab --help)")
    except CtxlabError as e:
        _one_line_error(f"ctxlab: {e}")
    except BrokenPipeError:
        return EXIT_OK
    except (KeyboardInterrupt, SystemExit, GeneratorExit):
        raise
    except ImportError as e:  # an optional part not installed: name the extra, else it is a bug
        missing = missing_extra(e)
        _one_line_error(f"ctxlab: {missing}" if missing else
                        f"ctxlab: internal error ({type(e).__name__}: {shown(str(e), 120)}); please report it")
    except RecursionError:
        _one_line_error("ctxlab: input: the input nests too deep to process; please report it with the input")
    except BaseException as e:  # a bug, but the user still gets one line, not a traceback
        _one_line_error(f"ctxlab: internal error ({type(e).__name__}: {shown(str(e), 120)}); "
                        "please report it with the input")
    return EXIT_BAD_INPUT
