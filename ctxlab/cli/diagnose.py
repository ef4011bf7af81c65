"""CLI command of the failure-mode diagnostics: ``diagnose``."""
from __future__ import annotations

import argparse
from pathlib import Path

from .core import EXIT_OK, _conversations, _emit, _input_args, command
from ..errors import CtxlabError


def _diagnose_args(p: argparse.ArgumentParser) -> None:
    _input_args(p)
    p.add_argument("--tools", metavar="CATALOG", help="a tool catalog offered with the conversation "
                   "(OpenAI, Anthropic or MCP tools, or a catalog object); default: the file's own tools")
    p.add_argument("--query", help="the current request tools are judged against (default: the newest user message)")
    p.add_argument("--model", help="model for token counts and window (default: the file's, else gpt-4o)")
    p.add_argument("--modes", help="comma-separated failure modes to check (default: all): "
                   "poisoning,distraction,confusion,clash")
    p.add_argument("--provider", default="local", choices=["local", "openai", "hash"],
                   help="embedding provider for tool overlap and relevance (default: local, offline)")


def _catalog(path: str):
    from ..retrieval import ToolCatalog
    if not Path(path).is_file():
        raise CtxlabError(f"no such file: {path}", where="--tools", hint="Give the path of a JSON tool catalog")
    return ToolCatalog.load(path).tools


@command("diagnose", _diagnose_args)
def _diagnose(args: argparse.Namespace) -> int:
    """Find context poisoning, distraction, confusion and clash; print the findings as JSON."""
    from ..diagnostics import diagnose, summarize_findings
    modes = [m.strip() for m in args.modes.split(",") if m.strip()] if args.modes else None
    tools = _catalog(args.tools) if args.tools else None
    out = []
    for _, conv in _conversations(args):
        findings = diagnose(conv, tools=tools, query=args.query, model=args.model, modes=modes,
                            provider=args.provider)
        out.append({"findings": [f.to_dict() for f in findings], "summary": summarize_findings(findings)})
    _emit(out)
    return EXIT_OK
