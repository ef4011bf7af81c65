"""The CLI's shared core: the command registry, input reading, output, and the error boundary.

Every command module depends on this one and on nothing else of the CLI.

Exit codes: 0 success, 1 ``validate`` found errors, 2 bad input or usage (one line on stderr,
never a traceback).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Callable, Sequence

from ..errors import CtxlabError
from ..formats import FORMATS, load_all
from ..conversation import Conversation

EXIT_OK, EXIT_INVALID, EXIT_BAD_INPUT = 0, 1, 2
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


def _read_input(path: str) -> bytes:
    if path == "-":
        return sys.stdin.buffer.read()
    p = Path(path)
    if not p.is_file():
        raise CtxlabError(f"no such file: {path}", where="FILE", hint="Give the path of a .json or .jsonl file")
    return p.read_bytes()


def _conversations(args: argparse.Namespace) -> list[tuple[int, Conversation]]:
    convs = load_all(_read_input(args.file), format=args.format, max_bytes=int(args.max_mb * 1024 * 1024))
    if args.index is not None:
        if not 0 <= args.index < len(convs):
            raise CtxlabError(f"--index {args.index} is out of range", where="--index",
                              hint=f"The input holds {len(convs)} conversation(s): 0..{len(convs) - 1}")
        return [(args.index, convs[args.index])]
    return list(enumerate(convs))


def _emit(objs: list[dict[str, Any]]) -> None:
    """One conversation: an indented JSON object. Several: JSON Lines, one object each."""
    if len(objs) == 1:
        print(json.dumps(objs[0], indent=2, ensure_ascii=False))
    else:
        for o in objs:
            print(json.dumps(o, ensure_ascii=False))


def _input_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", help="a .json or .jsonl file, or - for standard input")
    p.add_argument("--format", choices=sorted(FORMATS), help="skip detection and read as this format")
    p.add_argument("--index", type=int, help="which conversation of a multi-conversation file")
    p.add_argument("--max-mb", type=float, default=50.0, help="refuse inputs larger than this (default 50)")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every registered subcommand."""
    parser = _Parser(prog="ctxlab", description="Inspect, count, convert and trim LLM tool conversations.")
    subs = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for name, (add_args, fn) in COMMANDS.items():
        sp = subs.add_parser(name, help=(fn.__doc__ or "").strip().splitlines()[0])
        add_args(sp)
        sp.set_defaults(run=fn)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit code. Bad input never escapes as a traceback."""
    try:
        args = build_parser().parse_args(argv)
        return args.run(args)
    except _Usage as e:
        print(f"ctxlab: usage: {e} (see ctxlab --help)", file=sys.stderr)
    except CtxlabError as e:
        print(f"ctxlab: {e}", file=sys.stderr)
    except BrokenPipeError:
        return EXIT_OK
    except Exception as e:  # a bug, but the user still gets one line, not a traceback
        print(f"ctxlab: internal error ({type(e).__name__}: {e}); please report it with the input", file=sys.stderr)
    return EXIT_BAD_INPUT

