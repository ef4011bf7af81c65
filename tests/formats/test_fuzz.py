"""The CLI contract under hostile input: real conversations (the samples and tau-bench
runs) in OpenAI, Anthropic and LangChain form, broken in the ways of tests/fuzz.py, through
``count``, ``validate``, ``convert --to anthropic`` and two ``apply`` runs, in this process.

Default: 1,000 mutated documents (5,000 CLI runs: `apply --strategy hybrid` runs middle_out and
oldest_first too), derandomized so CI sees the same cases.
A long run: ``CTXLAB_FUZZ_EXAMPLES=20000 pytest tests/formats/test_fuzz.py`` (then all 100 tau-bench runs
feed the mutations and huge strings are 1 MB).
"""
from __future__ import annotations

import os

from hypothesis import HealthCheck, given, settings

from ..fuzz import COMMANDS, base_documents, check_contract, mutated_document, run_cli

EXAMPLES = int(os.environ.get("CTXLAB_FUZZ_EXAMPLES", "0") or 0) or 1000


def test_the_fuzz_bases_are_real_conversations_in_three_formats():
    bases = base_documents()
    assert {fmt for fmt, _, _ in bases} == {"openai", "anthropic", "langchain"}
    assert len({name for _, name, _ in bases}) >= 3


@settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
          suppress_health_check=list(HealthCheck))
@given(mutated_document())
def test_no_mutated_conversation_breaks_the_cli_contract(tmp_path_factory, case):
    fmt, data, done = case
    path = tmp_path_factory.getbasetemp() / "fuzz-input.json"
    path.write_bytes(data)
    for command in COMMANDS:
        code, out, err = run_cli([command[0], str(path), *command[1:]])
        try:
            check_contract(command, code, out, err)
        except AssertionError as e:
            raise AssertionError(f"{' '.join(command)} on {done}: {e}") from None
