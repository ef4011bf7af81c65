"""CLI commands that call a model: ``answer`` (answer replay) and ``probe`` (probe scores).

The model comes from the environment (``OPENAI_API_KEY``, ``OPENAI_BASE_URL``,
``CTXLAB_LLM_MODEL``); ``--model`` and ``--base-url`` override the last two. The key is read from
the environment only (a command line is visible to every user of the machine). With neither a key
nor a base URL both commands exit 2 with one line saying how to configure a model.

Both print JSON. A call that fails is kept in the JSON with its ``error`` (and ``ctxlab: warning:
...`` on stderr); the exit code is 0 when at least one call succeeded, else 2.
"""
from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any, Sequence

from .core import EXIT_BAD_INPUT, EXIT_OK, _conversations, _emit, _input_args, command, finite_number, whole_number
from ..errors import CtxlabError

if TYPE_CHECKING:  # the strategy engine and the model client load when a command runs
    from ..llm import LLM


def _model_args(p: argparse.ArgumentParser) -> None:
    _input_args(p)
    p.add_argument("--strategy", action="append", default=[], required=True,
                   help="a strategy name or pipeline 'a >> b' (repeat for up to 4)")
    p.add_argument("--param", action="append", default=[], metavar="NAME.KEY=VALUE",
                   help="a strategy parameter, prefixed with its strategy's name (repeatable), "
                        "e.g. summarize.summarizer=llm")
    p.add_argument("--model", help="the model to ask (default $CTXLAB_LLM_MODEL, else gpt-4o-mini)")
    p.add_argument("--base-url", help="an OpenAI-compatible server (default $OPENAI_BASE_URL), e.g. "
                                      "http://127.0.0.1:11434/v1; the key comes from $OPENAI_API_KEY only")
    p.add_argument("--max-tokens", type=whole_number(1), help="context limit the strategies work to (default: the "
                                                  "conversation's model window)")
    p.add_argument("--timeout", type=finite_number(0, above=True), help="seconds to wait for each reply (default 30)")


def _answer_args(p: argparse.ArgumentParser) -> None:
    from ..answers import DEFAULT_ANSWER_TOKENS
    _model_args(p)
    p.add_argument("--question", required=True, help="the final question, asked from each strategy's context")
    p.add_argument("--answer-tokens", type=whole_number(1), default=DEFAULT_ANSWER_TOKENS,
                   help=f"longest answer in tokens (default {DEFAULT_ANSWER_TOKENS})")


def _probe_args(p: argparse.ArgumentParser) -> None:
    _model_args(p)
    p.add_argument("--n", type=whole_number(0), default=5, help="probes generated from the conversation's facts (default 5)")
    p.add_argument("--question", action="append", default=[], help="a probe question of your own (repeatable; "
                                                                    "each followed by its --expect)")
    p.add_argument("--expect", action="append", default=[], help="the fact the answer to the matching --question "
                                                                 "must contain")


def _llm(args: argparse.Namespace) -> LLM:
    """The model from the environment and the flags, or exit 2 with how to configure one."""
    from ..llm import LLM, LLMConfig, require_configured
    config = LLMConfig.from_env(model=args.model, base_url=args.base_url, timeout=args.timeout)
    return require_configured(LLM(config))


def _strategies(args: argparse.Namespace) -> list:
    if len(args.strategy) > 4:
        raise CtxlabError(f"give at most 4 strategies, got {len(args.strategy)}", where="--strategy")
    from ..answers import strategy_from_spec
    return [strategy_from_spec(spec, args.param) for spec in args.strategy]


def _warn(failed: Sequence[tuple[str, str]]) -> None:
    """One stderr line per distinct error, naming the strategies it hit."""
    by_error: dict[str, list[str]] = {}
    for label, error in failed:
        by_error.setdefault(error, []).append(label)
    for error, labels in by_error.items():
        print(f"ctxlab: warning: no answer for {', '.join(labels)}: {error}", file=sys.stderr)


@command("answer", _answer_args)
def _answer(args: argparse.Namespace) -> int:
    """Ask the same question from each strategy's context; print the answers side by side as JSON."""
    from ..answers import answer_replay
    llm = _llm(args)
    strategies = _strategies(args)
    out: list[dict[str, Any]] = []
    failed: list[tuple[str, str]] = []
    answered = 0
    for _, conv in _conversations(args):
        answers = answer_replay(conv, strategies, args.question, llm, context_limit=args.max_tokens,
                                max_answer_tokens=args.answer_tokens)
        failed += [(a.label, a.error) for a in answers if a.error]
        answered += sum(a.ok for a in answers)
        out.append({"model": llm.config.to_dict(), "question": args.question.strip(),
                    "answers": [a.to_dict() for a in answers]})
    _emit(out)
    _warn(failed)
    return EXIT_OK if answered else EXIT_BAD_INPUT


@command("probe", _probe_args)
def _probe(args: argparse.Namespace) -> int:
    """Ask probe questions about early facts from each strategy's context; print scores as JSON."""
    from ..probes import MATCH_RULE, generate_probes, score_probes, user_probes
    llm = _llm(args)
    strategies = _strategies(args)
    mine = user_probes(args.question, args.expect) if args.question or args.expect else None
    out: list[dict[str, Any]] = []
    failed: list[tuple[str, str]] = []
    answered = 0
    for index, conv in _conversations(args):
        probes = mine or generate_probes(conv, args.n)
        if not probes:
            raise CtxlabError("the conversation has no early facts to probe", where=f"conversation {index}",
                              hint="Write probes with --question and --expect")
        scores = score_probes(conv, strategies, probes, llm, context_limit=args.max_tokens)
        failed += [(s.label, e) for s in scores for e in s.errors]
        answered += sum(s.answered for s in scores)
        out.append({"model": llm.config.to_dict(), "match_rule": MATCH_RULE,
                    "probes": [p.to_dict() for p in probes], "scores": [s.to_dict() for s in scores]})
    _emit(out)
    _warn(failed)
    return EXIT_OK if answered else EXIT_BAD_INPUT

