"""Billed vs counted on traces that carry usage: how far ctxlab's prompt count and prompt-cache
model are from what providers reported.

    PYTHONPATH=. python3 benchmarks/billed_vs_counted.py FILE_OR_FOLDER... [--model M] [--no-prefix]

Each conversation carries the unlogged prefix ``ctxlab.prefix`` infers from its first calls'
bill (unless --no-prefix); the table at the end gives, per format, how many calls the estimate
(prefix + tokenizer factor x counted) puts within 1% and 5% of the billed prompt, over all calls
and over the calls after those the prefix was inferred from. Folders are searched recursively
(.json, .jsonl, .traj).

For every conversation with reported usage (production traces, Claude Code sessions) it prints the
billed and counted prompt tokens over all calls, their ratio, and the billed and modelled cached
tokens. Because some traces leave out part of the prompt (Claude Code logs no system prompt and no
tool definitions), it also compares the *growth* of the prompt from one call to the next, where
such a constant part cancels: sum over consecutive calls of billed(c+1) - billed(c) against the
same for counted (pairs with a compaction between them, or whose billed prompt shrank, left out);
and the median of billed - counted, which estimates the part the trace left out. A compaction
summary replaces the history for the model, while ctxlab's as-sent replay keeps it: calls after
the first compaction are reported apart.
"""
from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

from ctxlab.formats import load_all
from ctxlab.formats._trace import is_compaction
from ctxlab.prefix import apply_prefix, check_against_bill
from ctxlab.usage import compare_total, compare_usage, has_usage


def _files(paths: list[str]) -> list[Path]:
    out: list[Path] = []
    for raw in paths:
        p = Path(raw)
        out += sorted(f for f in p.rglob("*") if f.suffix in (".json", ".jsonl", ".traj")) if p.is_dir() else [p]
    return out


class PerFormat:
    """The per-call check against the bill after the inferred prefix, per format:
    every call, and the calls after the first ones the prefix was inferred from (held out)."""

    def __init__(self) -> None:
        self.rows: dict[str, list[tuple[float, bool, bool]]] = {}  # format -> (error, held out, exact tokenizer)

    def add(self, fmt: str, u) -> None:
        """The calls of one comparison (``ctxlab.prefix.check_against_bill``)."""
        for c in u.calls:
            if c.estimate_error is not None:
                self.rows.setdefault(fmt, []).append((c.estimate_error, not c.fitted, u.exact))

    def print(self) -> None:
        """One line per format (and per held-out part)."""
        print(f"\nper call, estimated (inferred prefix + factor x counted) vs billed:")
        print(f"{'format':14} {'calls':>6} {'within 1%':>10} {'within 5%':>10} {'median |e|':>11} {'max |e|':>9}  part")
        for fmt, rows in sorted(self.rows.items()):
            for part, keep in (("all calls", lambda r: True), ("not used to infer a prefix", lambda r: r[1])):
                errs = sorted(abs(r[0]) for r in rows if keep(r))
                if errs:
                    print(f"{fmt:14} {len(errs):6,} {sum(e <= .01 for e in errs) / len(errs):10.1%} "
                          f"{sum(e <= .05 for e in errs) / len(errs):10.1%} {statistics.median(errs):11.2%} "
                          f"{errs[-1]:9.2%}  {part}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("paths", nargs="+")
    ap.add_argument("--model", help="count with this model (default: each trace's)")
    ap.add_argument("--holdout", type=int, metavar="N",
                    help="also tune on the first N files and report on the others: the growth factor "
                         "(calibrate_from_usage) and a fit billed = a + b x counted, per billing model")
    ap.add_argument("--no-prefix", action="store_true", help="compare without the inferred unlogged prefix")
    ap.add_argument("--factor", type=float, help="the tokenizer factor of an estimating counter (default: each "
                                                 "trace's own growth factor); tune it on other traces to hold out")
    args = ap.parse_args(argv)
    loaded: list[list] = []
    per_format = PerFormat()
    totals: list[str] = []
    billed = counted = b_cached = m_cached = grow_b = grow_c = calls = pre_b = pre_c = pre_n = 0
    gaps: list[int] = []
    print(f"{'file':48} {'calls':>5} {'billed':>11} {'counted':>11} {'ratio':>6} {'billed cached':>13} "
          f"{'modelled':>11} {'growth b/c':>10}")
    for f in _files(args.paths):
        try:
            convs = load_all(f.read_bytes())
        except Exception as e:  # noqa: BLE001 - a measurement script reports and goes on
            print(f"{f.name[:48]:48} skipped: {str(e)[:80]}", file=sys.stderr)
            continue
        loaded.append(convs)
        for k, conv in enumerate(convs):
            if not args.no_prefix:
                conv = apply_prefix(conv, args.model, factor=args.factor)[0]
            total = compare_total(conv, model=args.model)
            if total is not None:
                totals.append(f"{f.name[:44]:48} billed {total['billed_prompt_tokens']:,} over {total['billed_calls']} "
                              f"calls, counted {total['counted_prompt_tokens']:,} over {total['counted_calls']} "
                              f"({total['counted_prompt_tokens'] / total['billed_prompt_tokens'] - 1:+.1%})")
            if not has_usage(conv):
                continue
            u = check_against_bill(conv, model=args.model)
            per_format.add(conv.format, u)
            if not u.calls:
                continue
            marks = [i for i, m in enumerate(conv.messages) if is_compaction(m)]
            pairs = [(a, b) for a, b in zip(u.calls, u.calls[1:])  # same model, no compaction between, prompt grew
                     if a.reported.model == b.reported.model and not any(a.index < i < b.index for i in marks)
                     and b.reported.prompt_tokens >= a.reported.prompt_tokens]
            gb = sum(b.reported.prompt_tokens - a.reported.prompt_tokens for a, b in pairs)
            gc = sum(b.counted - a.counted for a, b in pairs)
            before = [c for c in u.calls if not marks or c.index < marks[0]]
            pre_b += sum(c.reported.prompt_tokens for c in before)
            pre_c += sum(c.counted for c in before)
            pre_n += len(before)
            gaps += [c.prompt_difference for c in u.calls]
            name = f"{f.name[:44]}#{k}"
            print(f"{name:48} {len(u.calls):5,} {u.reported_prompt_tokens:11,} {u.counted_prompt_tokens:11,} "
                  f"{u.prompt_ratio or 0:6.3f} {u.reported_cached_tokens or 0:13,} {u.modelled_cached_tokens:11,} "
                  f"{(gb / gc if gc else float('nan')):10.3f}   model {u.model} ({'exact' if u.exact else 'estimated'})")
            billed += u.reported_prompt_tokens
            counted += u.counted_prompt_tokens
            b_cached += u.reported_cached_tokens or 0
            m_cached += u.modelled_cached_tokens
            grow_b += gb
            grow_c += gc
            calls += len(u.calls)
    if totals:
        print("\nruns that log billed totals only (SWE-agent model_stats):\n" + "\n".join(totals))
    if not calls:
        print("no call with reported usage")
        return 1
    per_format.print()
    print(f"\nall: {calls:,} calls; billed {billed:,} prompt tokens, counted {counted:,} "
          f"(difference {billed - counted:+,}, billed/counted {billed / counted:.3f})")
    print(f"calls before any compaction: {pre_n:,}; billed {pre_b:,}, counted {pre_c:,} "
          f"(billed/counted {pre_b / pre_c if pre_c else float('nan'):.3f})")
    print(f"growth between consecutive calls (no compaction between, billed prompt grew): billed {grow_b:+,}, counted {grow_c:+,} "
          f"(billed/counted {grow_b / grow_c if grow_c else float('nan'):.3f})")
    print(f"median billed - counted per call: {statistics.median(gaps):+,.0f} tokens "
          f"({'what the trace does not log, if constant' if args.no_prefix else 'prefix included: the tokenizer gap'})")
    print(f"cached: billed {b_cached:,}, modelled {m_cached:,} (difference {b_cached - m_cached:+,}, "
          f"modelled/billed {m_cached / b_cached if b_cached else float('nan'):.3f})")
    if args.holdout:
        holdout([c for cs in loaded[:args.holdout] for c in cs], [c for cs in loaded[args.holdout:] for c in cs],
                args.model)
    return 0


def _fit(rows: list) -> tuple[float, float]:
    """Least squares billed = a + b x counted over calls (a: what the trace does not hold)."""
    n = len(rows)
    xs, ys = [r.counted for r in rows], [r.reported.prompt_tokens for r in rows]
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx if sxx else 1.0
    return my - b * mx, b


def holdout(train: list, test: list, model: str | None) -> None:
    """Tune on ``train`` conversations, report on ``test``: per billing model, the growth factor
    of ``calibrate_from_usage`` and the fit billed = a + b x counted."""
    from ctxlab.calibration import calibrate_from_usage
    tuned = {c.model: c for c in calibrate_from_usage(train, model)}
    for cal in calibrate_from_usage(test, model):
        if cal.model not in tuned:
            continue
        t = tuned[cal.model]
        print(f"\nheld out, {cal.model} ({cal.method}): factor tuned {t.factor:.4f} ({t.calls} pairs); on the others "
              f"billed {cal.reported:,} vs counted {cal.counted:,} (error {cal.counted / cal.reported - 1:+.1%}), "
              f"calibrated {t.apply(cal.counted):,} (error {t.apply(cal.counted) / cal.reported - 1:+.1%})")
    rows = lambda convs, m: [r for c in convs if has_usage(c) for r in compare_usage(c, model=model).calls  # noqa: E731
                             if (r.reported.model or m) == m]
    for name in tuned:
        fit_rows, test_rows = rows(train, name), rows(test, name)
        if len(fit_rows) < 2 or not test_rows:
            continue
        a, b = _fit(fit_rows)
        pred = [a + b * r.counted for r in test_rows]
        real = [r.reported.prompt_tokens for r in test_rows]
        err = sorted(abs(p / t - 1) for p, t in zip(pred, real))
        raw = sorted(abs(r.counted / r.reported.prompt_tokens - 1) for r in test_rows)
        print(f"fit on {len(fit_rows)} {name} calls: billed = {a:,.0f} + {b:.3f} x counted; on {len(test_rows)} "
              f"others: median per-call error {statistics.median(err):.1%} (uncalibrated {statistics.median(raw):.1%}), "
              f"total {sum(pred) / sum(real) - 1:+.1%} (uncalibrated {sum(r.counted for r in test_rows) / sum(real) - 1:+.1%})")


if __name__ == "__main__":
    sys.exit(main())
