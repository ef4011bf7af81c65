"""CLI commands of tool retrieval: ``ctxlab tools index | status | query | eval | cache``.

Each prints JSON on stdout; ``index`` and ``eval`` report progress on stderr. The index lives in
the tool-index cache folder (``$CTXLAB_CACHE_DIR/tool-index``, else the user cache folder:
``~/.cache/ctxlab/tool-index`` on Linux; ``ctxlab tools cache`` prints it, its entries and sizes,
``--clear`` empties it) unless ``--host``/``--port`` (or ``CTXLAB_CHROMA_HOST``/``CTXLAB_CHROMA_PORT``)
name a Chroma server. A built index is reused by every later process with the same catalog and model.
"""
from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .core import EXIT_OK, command
from ..errors import CtxlabError

if TYPE_CHECKING:  # the retrieval package loads when a tools command is parsed, not when the CLI starts
    from ..tools.catalog import ToolCatalog


def _threshold(text: str) -> float | str | None:
    if text.strip().lower() in ("none", "off", ""):
        return None
    if text.strip().lower() == "auto":
        return "auto"
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r} (use a cosine like 0.4, auto or none)") from None
    if not -1.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"{value} is not a cosine similarity between -1 and 1")
    return value


def _ks(text: str) -> tuple[int, ...]:
    try:
        ks = tuple(int(k) for k in text.split(",") if k.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected whole numbers separated by commas, got {text!r}") from None
    if not ks or min(ks) < 1:
        raise argparse.ArgumentTypeError(f"each k must be at least 1, got {text!r}")
    return ks


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _at_least_zero(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {value}")
    return value


def _common(p: argparse.ArgumentParser) -> None:
    from ..tools.embeddings import DEFAULT_PROVIDER, PROVIDER_NAMES
    p.add_argument("--catalog", required=True, help="tool catalog: OpenAI / Anthropic / MCP tool list or catalog JSON")
    p.add_argument("--name", help="catalog name for the collection (default: the catalog's, else DIR-FILE)")
    p.add_argument("--provider", default=DEFAULT_PROVIDER, choices=PROVIDER_NAMES,
                   help=f"embedding provider (default {DEFAULT_PROVIDER}: for a Chinese, Japanese or Korean catalog "
                        "multilingual up to 150 tools, else use; local for other catalogs; all offline)")
    p.add_argument("--data-dir", help="embedded Chroma store and cache folder (default: the tool-index cache "
                                      "folder, see ctxlab tools cache)")
    p.add_argument("--host", help="Chroma server host (default $CTXLAB_CHROMA_HOST; none: embedded store)")
    p.add_argument("--port", type=int, help="Chroma server port (default $CTXLAB_CHROMA_PORT, else 8000)")
    p.add_argument("--model", default="gpt-4o", help="model whose token billing to count (default gpt-4o)")


def _selection_args(p: argparse.ArgumentParser, threshold: str | None) -> None:
    p.add_argument("--threshold", type=_threshold, default=threshold,
                   help="minimum score of a pick (cosine, plus the BM25 bonus when hybrid), auto (the one "
                        f"tuned for the model) or none (default {threshold})")
    p.add_argument("--hybrid", action=argparse.BooleanOptionalAction, default=True,
                   help="fuse BM25 with the dense scores (default on)")


def _tools_args(p: argparse.ArgumentParser) -> None:
    from ..tools.confidence import DEFAULT_ON_NO_MATCH, ON_NO_MATCH
    from ..tools.context import TUNED_CONTEXT
    words = TUNED_CONTEXT.max_words
    subs = p.add_subparsers(dest="tools_command", required=True, metavar="{index,status,query,eval,cache}")
    sp = subs.add_parser("index", help="build or refresh the index of a catalog (incremental)")
    _common(sp)
    sp.add_argument("--rebuild", action="store_true", help="drop the stored index and embed everything again")
    sp.set_defaults(tools_run=_index)
    sp = subs.add_parser("status", help="print the stored index's model, size and build time")
    _common(sp)
    sp.set_defaults(tools_run=_status)
    sp = subs.add_parser("query", help="print the tools that would be sent for a query")
    _common(sp)
    sp.add_argument("text", nargs="?", help="the user's message (default: the newest user message of --conversation)")
    sp.add_argument("--previous", action="append", default=[], metavar="TEXT",
                    help="an earlier user message of the conversation, oldest first (repeatable): a short message "
                         "is ranked with them folded in (see --context)")
    sp.add_argument("--conversation", metavar="FILE",
                    help="a conversation file: its newest user message is the query (unless TEXT is given) and "
                         "the user messages before it are the earlier ones")
    sp.add_argument("--context", choices=("auto", "off"), default="auto",
                    help=f"auto: a message of at most {words} words is ranked with the earlier user messages folded "
                         f"in (weight {TUNED_CONTEXT.weight}, the rule tuned for retrieval); off: the message alone "
                         "(default auto)")
    sp.add_argument("--k", type=_positive, default=5, help="similarity picks (default 5)")
    _selection_args(sp, "auto")
    sp.add_argument("--no-expand", action="store_true", help="do not pull in the picks' categories")
    sp.add_argument("--max-expansion", type=_at_least_zero, default=None, metavar="N",
                    help="at most N tools added by category expansion (default: as many as --k)")
    sp.add_argument("--on-no-match", choices=ON_NO_MATCH, default=DEFAULT_ON_NO_MATCH,
                    help="what to send when the query matches no tool well: all tools or none "
                         f"(default {DEFAULT_ON_NO_MATCH}; the always-included tools are sent either way)")
    sp.add_argument("--no-match-rule", choices=("auto", "off"), default="auto",
                    help="auto: the floor and gap tuned for the model (none for models never tuned); off: "
                         "only 'no tool reached the threshold' makes a query unsure (default auto)")
    sp.add_argument("--always", action="append", default=[], metavar="TOOL", help="always send this tool (repeatable)")
    sp.add_argument("--no-build", action="store_true",
                    help="do not build a missing index first (shows the cold-start fallback: all tools)")
    sp.set_defaults(tools_run=_query)
    sp = subs.add_parser("eval", help="recall@K, MRR and token savings on labeled queries (builds the index first)")
    _common(sp)
    sp.add_argument("--queries", required=True, help="JSONL: {query, gold_tools, previous_user_turns?}")
    sp.add_argument("--k", type=_ks, default=(1, 5, 10), help="ranking cut-offs, e.g. 1,5,10 (default)")
    sp.add_argument("--top-k", type=_positive, default=5, help="similarity picks of the selection figures (default 5)")
    _selection_args(sp, None)
    sp.add_argument("--expand", action="store_true", help="count category expansions in the selection figures")
    sp.add_argument("--previous-turns", type=int, default=0,
                    help="earlier user turns joined to each query's text (default 0: none joined; short queries "
                         "are still folded with them, see --context)")
    sp.add_argument("--context", choices=("auto", "off"), default="auto",
                    help=f"auto: a query of at most {words} words is ranked with its previous_user_turns folded in, "
                         "as tools query does; off: each query alone (default auto)")
    sp.set_defaults(tools_run=_eval)
    sp = subs.add_parser("cache", help="print the tool-index cache folder, its entries and sizes (--clear: empty it)")
    sp.add_argument("--data-dir", help="the cache folder to show (default: $CTXLAB_CACHE_DIR/tool-index, else the "
                                       "user cache folder)")
    sp.add_argument("--clear", action="store_true", help="remove every cached index (the next query builds again)")
    sp.set_defaults(tools_run=_cache)


def _catalog(args: argparse.Namespace) -> ToolCatalog:
    from ..tools.catalog import ToolCatalog
    path = Path(args.catalog)
    if not path.is_file():
        raise CtxlabError(f"no such file: {args.catalog}", where="--catalog",
                          hint="Give the path of a tool catalog JSON")
    catalog = ToolCatalog.load(path)
    if args.name:
        return replace(catalog, name=args.name)
    if catalog.name == path.stem:  # a bare tool list: its file name alone says little (tools.json)
        return replace(catalog, name=f"{path.resolve().parent.name}-{path.stem}")
    return catalog


def _open(args: argparse.Namespace, rebuild: bool = False):
    from ..tools.index import ToolIndex
    return _notes(ToolIndex(_catalog(args), args.provider, path=args.data_dir, host=args.host, port=args.port,
                            rebuild=rebuild))


def _notes(index: Any) -> Any:
    for n in index.notes:
        print(f"ctxlab: note: {n}", file=sys.stderr)
    return index


def _progress(done: int, total: int, message: str) -> None:
    live = sys.stderr.isatty() and done < total
    print(f"\rctxlab: indexing: {message}" if live else f"ctxlab: indexing: {message}",
          end="" if live else "\n", file=sys.stderr, flush=True)


def _print(obj: Any) -> None:
    print(json.dumps(obj, indent=2, ensure_ascii=False))


def _index(args: argparse.Namespace) -> int:
    index = _open(args, rebuild=args.rebuild)
    report = index.build(progress=_progress)
    _print({**report.to_dict(), "status": index.status().to_dict()})
    return EXIT_OK


def _status(args: argparse.Namespace) -> int:
    _print(_open(args).status().to_dict())
    return EXIT_OK


def _turn(args: argparse.Namespace) -> tuple[str, list[str]]:
    """(the query, the earlier user messages) from TEXT, --conversation and --previous."""
    earlier: list[str] = []
    text = args.text
    if args.conversation:
        from ..formats import load
        from ..tools.select import conversation_query
        if not Path(args.conversation).is_file():
            raise CtxlabError(f"no such file: {args.conversation}", where="--conversation",
                              hint="Give the path of a conversation JSON or JSONL file")
        newest, before = conversation_query(load(args.conversation))
        if text is None:
            if not newest:
                raise CtxlabError("the conversation has no user message to use as the query", where="--conversation",
                                  hint="Give the query as TEXT")
            text, earlier = newest, list(before)
        else:
            earlier = list(before) + ([newest] if newest else [])
    if text is None:
        raise CtxlabError("no query: give TEXT or --conversation FILE", where="tools query",
                          hint='e.g. ctxlab tools query --catalog tools.json "refund order 1234"')
    return text, earlier + list(args.previous)


def _query(args: argparse.Namespace) -> int:
    from ..tools.confidence import threshold_for
    from ..tools.select import _check, select
    text, earlier = _turn(args)
    index = _open(args)
    _check(args.k, threshold_for(args.threshold, index.provider.model_id), args.always, {n: None for n in index.catalog.names},  # bad input before work
           args.max_expansion, args.on_no_match)
    if not args.no_build and index.pending():
        index.build(progress=_progress)  # incremental: a built, unchanged index costs one check
    selection = select(index, text, top_k=args.k, threshold=args.threshold,
                       expand_categories=not args.no_expand, always_include=args.always, hybrid=args.hybrid,
                       model=args.model, max_expansion=args.max_expansion, on_no_match=args.on_no_match,
                       no_match=args.no_match_rule, context=earlier, context_rule=args.context)
    for w in selection.warnings:
        print(f"ctxlab: warning: {w}", file=sys.stderr)
    _print(selection.to_dict())
    return EXIT_OK


def _eval(args: argparse.Namespace) -> int:
    from ..tools.evaluate import evaluate, load_queries
    if args.previous_turns < 0:
        raise CtxlabError("--previous-turns must be 0 or more", where="--previous-turns")
    queries = load_queries(args.queries)
    index = _open(args)
    index.build(progress=_progress)
    _print(evaluate(index, queries, ks=args.k, threshold=args.threshold, hybrid=args.hybrid,
                    previous_turns=args.previous_turns, top_k=args.top_k, expand_categories=args.expand,
                    model=args.model, context_rule=args.context))
    return EXIT_OK


def _cache(args: argparse.Namespace) -> int:
    from ..tools import cache
    folder = Path(args.data_dir) if args.data_dir else cache.tools_cache_dir()
    _print(cache.clear(folder) if args.clear else cache.describe(folder))
    return EXIT_OK


@command("tools", _tools_args)
def _tools(args: argparse.Namespace) -> int:
    """Tool retrieval: index a catalog, query it, evaluate it, show or clear its cache (see ctxlab tools --help)."""
    return args.tools_run(args)
