"""CLI command ``sweep``: many parameter values and budgets over many conversations, the Pareto
front and a recommendation, as JSON or CSV."""
from __future__ import annotations

import argparse
import json
import sys
import time

from .core import EXIT_OK, command, finite_number
from ..errors import CtxlabError


def _sweep_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("files", nargs="+", metavar="FILE", help=".json / .jsonl / .traj files, or folders of them (subfolders included)")
    p.add_argument("--strategy", action="append", default=[], required=True,
                   help="a strategy to sweep (repeatable)")
    p.add_argument("--grid", action="append", default=[], metavar="NAME.KEY=V1,V2",
                   help="values to try for one parameter (repeatable; others keep their defaults)")
    p.add_argument("--max-tokens", required=True, metavar="N[,N...]", help="context limits to try, e.g. 3000,6000")
    p.add_argument("--model", help="model: tokenizer and price (default: the conversations', else gpt-4o)")
    p.add_argument("--reserve", type=finite_number(0, 1), default=0.15,
                   help="share kept free for the response (default 0.15)")
    p.add_argument("--min-recall", type=finite_number(0, 1), default=0.95,
                   help="recall level of the recommendation (default 0.95)")
    p.add_argument("--allow-unrecoverable", action="store_true",
                   help="let the recommendation pick a point that loses a fact no re-fetch recovers (a fact the user "
                        "gave, or from a result that changed since); by default such a point is picked only when "
                        "every other qualifying point loses one too")
    p.add_argument("--sample", type=int, help="try only this many parameter combinations, drawn at random")
    p.add_argument("--seed", type=int, default=0, help="seed of --sample (default 0)")
    p.add_argument("--axes", default="cost_usd,needed_recall", help="the two Pareto axes (default cost_usd,needed_recall; total_cost_usd adds the modelled "
                        "re-fetches of lost facts, and the recommendation then ranks by it)")
    p.add_argument("--workers", type=int, help="local processes (default: every core; 1 = this process)")
    p.add_argument("--scheduler", metavar="tcp://HOST:PORT", help="run on a Dask cluster instead of local processes")
    p.add_argument("--prices", metavar="FILE", help="a JSON price table (the shape of ctxlab/prices.json)")
    p.add_argument("--price", metavar="input=..,cached=..,output=..", help="the model's price, USD per million tokens")
    p.add_argument("--format", dest="out_format", choices=["json", "csv"], default="json", help="output (default json)")
    p.add_argument("--tools", choices=("all", "retrieval", "deferred"), default="all",
                   help="the tool definitions each replayed call sends, counted in its prompt: all (default), a "
                        "retrieval's pick per call, or deferred loading (a search tool plus those found so far)")
    p.add_argument("--progress", action="store_true", help="show progress on stderr even when it is not a terminal")


def _budgets(text: str) -> list[int]:
    try:
        out = [int(v.replace("_", "")) for v in text.split(",") if v.strip()]
    except ValueError:
        raise CtxlabError(f"--max-tokens must be whole numbers separated by commas, got {text!r}",
                          where="--max-tokens", hint="e.g. --max-tokens 3000,6000") from None
    if not out:
        raise CtxlabError("--max-tokens is empty", where="--max-tokens", hint="e.g. --max-tokens 3000,6000")
    return out


def _progress_bar(force: bool):
    if not (force or sys.stderr.isatty()):
        return None
    start = time.perf_counter()

    def show(done: int, total: int) -> None:
        width = 30
        fill = width * done // total
        print(f"\rsweep [{'#' * fill}{'.' * (width - fill)}] {done}/{total} chunks, {time.perf_counter() - start:.1f} s",
              end="\n" if done == total else "", file=sys.stderr, flush=True)
    return show


@command("sweep", _sweep_args)
def _sweep(args: argparse.Namespace) -> int:
    """Sweep strategies' parameters and budgets over conversations; print points, Pareto front, recommendation."""
    from ..pricing import load_prices, parse_price_override
    from ..sweep import Grid, load_conversations, run_sweep
    grid = Grid.parse(args.strategy, args.grid)
    budgets = _budgets(args.max_tokens)
    axes = tuple(a.strip() for a in args.axes.split(","))
    if len(axes) != 2:
        raise CtxlabError(f"--axes needs two names, got {args.axes!r}", where="--axes", hint="e.g. cost_usd,needed_recall")
    if args.workers is not None and args.workers < 1:
        raise CtxlabError("--workers must be at least 1", where="--workers")
    skipped: list[str] = []
    convs = load_conversations(args.files, max_bytes=50 * 1024 * 1024, notes=skipped)
    for note in skipped:
        print(f"note: {note}", file=sys.stderr)
    prices = load_prices(args.prices)
    if args.price:
        model = args.model or (convs[0].model if convs else None)
        prices = prices.with_price(parse_price_override(args.price, model))
        prices = prices.get(model) or prices
    result = run_sweep(convs, grid, budgets, model=args.model, prices=prices, workers=args.workers,
                       scheduler=args.scheduler, sample=args.sample, seed=args.seed, min_recall=args.min_recall,
                       axes=axes, reserve=args.reserve, progress=_progress_bar(args.progress), tools=args.tools,
                       allow_unrecoverable=args.allow_unrecoverable)
    for note in result.notes:
        print(f"note: {note}", file=sys.stderr)
    if args.out_format == "csv":
        sys.stdout.write(result.to_csv())
    else:
        print(json.dumps(result.to_dict(), indent=2))
    return EXIT_OK
