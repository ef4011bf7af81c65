"""CLI commands of the engine's foundation: ``count``, ``convert``, ``validate``.

Each imports what it runs inside its function, so ``ctxlab count`` loads no strategy engine."""
from __future__ import annotations

import argparse

from ..formats import FORMATS, export
from .core import EXIT_INVALID, EXIT_OK, _conversations, _emit, _input_args, command, note, prefix_args, with_prefix


def _count_args(p: argparse.ArgumentParser) -> None:
    _input_args(p)
    p.add_argument("--model", help="model whose encoding and framing to use (default: the file's, else gpt-4o)")
    p.add_argument("--prompt-tokens", type=int, metavar="N",
                   help="usage.prompt_tokens the provider reported for this request: adds a calibrated total")
    prefix_args(p)


@command("count", _count_args)
def _count(args: argparse.Namespace) -> int:
    """Print token counts as the API would bill them."""
    from ..calibration import calibrate, calibrate_from_usage
    from ..tokens import count_tokens
    from ..formats.claude_agents import subagent_summary
    from ..prefix import check_against_bill
    from ..usage import compare_total, has_usage
    convs = _conversations(args)
    out = []
    for i, conv in convs:
        conv, prefix, notes = with_prefix(args, conv)
        d = {"format": conv.format, **count_tokens(conv, model=args.model).to_dict(),
             "notes": [*conv.notes, *notes], "unlogged_prefix": prefix}
        if conv.metadata.get("subagents"):  # a Claude Code session: each sub-agent, where it returned, what came back
            d["subagents"] = subagent_summary(conv, args.model)
        total = compare_total(conv, model=args.model)
        if total is not None:  # a run that logs its billed totals only (SWE-agent's model_stats)
            d["billed_total"] = total
        if args.prompt_tokens is not None:
            cal = calibrate(conv, args.prompt_tokens, model=args.model)
            d["calibration"] = cal.to_dict()
            d["calibrated_total"] = cal.reported
        if has_usage(conv):  # a production trace: what each call was billed beside ctxlab's count
            d["reported_usage"] = check_against_bill(conv, model=args.model).to_dict()
            d["calibration_from_usage"] = [c.to_dict() for c in calibrate_from_usage([conv], model=args.model)]
        out.append({"index": i, **d} if len(convs) > 1 else d)
    _emit(out)
    return EXIT_OK


def _convert_args(p: argparse.ArgumentParser) -> None:
    _input_args(p)
    p.add_argument("--to", required=True, choices=sorted(n for n, f in FORMATS.items() if f.write))


@command("convert", _convert_args)
def _convert(args: argparse.Namespace) -> int:
    """Print the conversation in another format; notes on anything left out go to stderr."""
    out = []
    convs = _conversations(args)
    for i, conv in convs:
        result = export(conv, args.to)
        which = f"conversation {i}: " if len(convs) > 1 else ""
        for text in (*conv.notes, *result.notes):  # what reading interpreted, then what writing left out
            note(which + text)
        out.append(result.data)
    _emit(out)
    return EXIT_OK


def _validate_args(p: argparse.ArgumentParser) -> None:
    from ..validate import RULES
    _input_args(p)
    p.add_argument("--rules", default="openai", choices=sorted(RULES))


@command("validate", _validate_args)
def _validate(args: argparse.Namespace) -> int:
    """Print the provider-rule findings as JSON; exit 1 when any is an error."""
    from ..validate import is_valid, validate
    out, ok = [], True
    for i, conv in _conversations(args):
        findings = validate(conv, rules=args.rules)
        valid = is_valid(findings)
        ok = ok and valid
        out.append({"index": i, "rules": args.rules, "valid": valid, "messages": len(conv),
                    "findings": [f.to_dict() for f in findings]})
    _emit(out)
    return EXIT_OK if ok else EXIT_INVALID
