"""The CLI contract under hostile trace files: the agents' and production
traces of tests/data broken in the ways of tests/fuzz_traces.py (wrong types, number-like strings,
deep trees, a long span chain, records that are no object) through ``count`` and ``convert``.

Default: 300 mutated traces, derandomized so CI sees the same cases. A long run:
``CTXLAB_FUZZ_EXAMPLES=3000 pytest tests/formats/test_fuzz_traces.py``.
"""
from __future__ import annotations

import os

from hypothesis import HealthCheck, given, settings

from ..fuzz import check_contract, run_cli
from ..fuzz_traces import mutated_trace, trace_bases

EXAMPLES = int(os.environ.get("CTXLAB_FUZZ_EXAMPLES", "0") or 0) or 300
TRACE_COMMANDS = (("count",), ("convert", "--to", "openai"), ("convert", "--to", "anthropic"))


def test_the_fuzz_bases_cover_every_trace_reader():
    from ctxlab.formats import load_all
    import json
    names = set()
    for name, jsonl, text in trace_bases():
        doc = json.loads(text)
        data = "\n".join(json.dumps(r) for r in doc) if jsonl else text
        names.update(c.format for c in load_all(data))
    assert names >= {"claude_code", "codex", "swe_agent", "mini_swe_agent", "openhands", "otel_genai", "langfuse",
                     "langsmith"}, names


@settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
          suppress_health_check=list(HealthCheck))
@given(mutated_trace())
def test_no_mutated_trace_breaks_the_cli_contract(tmp_path_factory, case):
    suffix, data, done = case
    path = tmp_path_factory.getbasetemp() / f"fuzz-trace{suffix}"
    path.write_bytes(data)
    for command in TRACE_COMMANDS:
        code, out, err = run_cli([command[0], str(path), *command[1:]])
        try:
            check_contract(command, code, out, err)
        except AssertionError as e:
            raise AssertionError(f"{' '.join(command)} on {done}: {e}") from None
