"""CLI commands of configs: ``ctxlab config export CONFIG --to TARGET``, a target of
``ctxlab.configs.TARGETS`` (anthropic, langchain, openai_agents, openai_responses, adk, claude_code,
codex, swe_agent, openhands).

``export`` prints the native form on stdout (JSON with a ``not_carried`` list, or with ``--format
python`` the target's own text: Python code with the same list as comments, Codex's TOML, Claude
Code's shell lines) and each thing that does not carry over on stderr as ``note: ...``.
An unknown target or a strategy with no native form exits 2 naming the strategies that map.
"""
from __future__ import annotations

import argparse
import json
import sys

from .core import EXIT_OK, command


def _config_args(p: argparse.ArgumentParser) -> None:
    from ..configs import TARGETS  # the export targets and the strategies they map: built for this command only
    subs = p.add_subparsers(dest="config_command", required=True, metavar="{export}")
    sp = subs.add_parser("export", help="print the config in a framework's own configuration")
    sp.add_argument("config", help="a ctxlab config (.json or .yaml), as the Strategy Lab exports it")
    sp.add_argument("--to", required=True, metavar="{" + ",".join(TARGETS) + "}",
                    help="the framework: " + ", ".join(TARGETS))
    sp.add_argument("--format", default="json", choices=["json", "python"],
                    help="json: the native configuration; python: code that builds it (default json)")
    sp.set_defaults(config_run=_export)


def _export(args: argparse.Namespace) -> int:
    from ..configs import export_native, load_config_file
    native = export_native(load_config_file(args.config), args.to)
    for note in native.not_carried:
        print(f"note: {note}", file=sys.stderr)
    if args.format == "python":
        print(native.python, end="")
    else:
        print(json.dumps(native.to_dict(), indent=2, ensure_ascii=False))
    return EXIT_OK


@command("config", _config_args)
def _config(args: argparse.Namespace) -> int:
    """Configs: export one in a framework's own terms (see ctxlab config --help)."""
    return args.config_run(args)
