"""head_tail: Codex's cut of each large tool result to its head and tail (256 lines, 10 KiB), on a
real SWE-agent run and on a build log whose error sits in the cut middle (openai/codex #6415)."""
from __future__ import annotations

import json
import re
from pathlib import Path

import ctxlab
from ctxlab.conversation import Conversation, Message, ToolCall
from ctxlab.measure import measure
from ctxlab.strategies import Budget, get_strategy, make_view
from ctxlab.strategies.head_tail import head_tail

from ..builders import assistant, system, tool, user

# SWE-agent/SWE-agent @3ea751c, trajectories/demonstrations/ctf/forensics/flash.traj (MIT): a 374-line,
# 24 KB `strings | grep flag` output whose last lines hold the flag the agent submits
FLASH = Path(__file__).parent.parent / "data" / "coding" / "swe_agent_ctf_forensics_flash.traj"


def test_codex_rule_keeps_the_first_and_last_128_lines_with_a_marker():
    log = "".join(f"line {i}\n" for i in range(600))
    lines = head_tail(log).splitlines()
    assert lines[:128] == [f"line {i}" for i in range(128)]
    assert lines[128] == "[... omitted 344 of 600 lines ...]"
    assert lines[129:] == [f"line {i}" for i in range(472, 600)]
    assert head_tail("".join(f"line {i}\n" for i in range(256))) is None  # within both limits: sent whole


def test_a_long_line_is_cut_by_bytes_within_ten_kib():
    out = head_tail("x" * 30_000)
    assert "[... omitted 19,760 of 30,000 bytes ...]" in out and len(out.encode()) < 10_240 + 64


def test_on_a_real_swe_agent_run_the_flag_in_the_tail_survives():
    conv = ctxlab.load(FLASH)
    plan = get_strategy("head_tail").apply(make_view(conv), Budget(128_000))
    cut = [i for i, a in enumerate(plan.actions) if a == "truncate"]
    assert cut == [7] and plan.tokens_after < plan.tokens_before
    sent = plan.messages[plan.origin.index(7)].text
    assert re.search(r"\[\.\.\. omitted \d+ of 375 lines \.\.\.\]", sent) and "flag{b3l0w_th3_r4dar}" in sent
    assert len(sent.encode()) <= 10_240 + 64  # 24 KB in 374 lines: the byte limit cuts deeper than 256 lines


def _build_with_an_error_in_the_middle() -> Conversation:
    log = ["[1/900] Compiling src/module_%d.c" % k for k in range(450)]
    log.append("src/net/socket.c:212: error: undefined reference to `ssl3_read_bytes`")
    log += ["[%d/900] Compiling src/module_%d.c" % (k + 452, k) for k in range(448)]
    log.append("Build finished.")
    return Conversation((system("You are a build agent."), user("Build the project and fix what fails."),
                         assistant("", "b1"), tool("b1", "\n".join(log)),
                         assistant("The link step failed on ssl3_read_bytes; looking at socket.c.", "g1"),
                         tool("g1", "212: int r = ssl3_read_bytes(ctx);"),
                         assistant("Fixed the missing declaration of ssl3_read_bytes.")))


def test_an_error_in_the_cut_middle_is_lost_and_the_log_reads_as_a_success():
    conv = _build_with_an_error_in_the_middle()
    plan = get_strategy("head_tail").apply(make_view(conv), Budget(128_000))
    sent = plan.messages[plan.origin.index(3)].text
    assert "error" not in sent and sent.rstrip().endswith("Build finished.")  # openai/codex #6415
    budget = Budget(128_000)
    cut = measure(conv, get_strategy("head_tail"), budget)
    whole = measure(conv, get_strategy("none"), budget)
    assert whole.needed_recall == 1.0
    assert cut.needed_recall < 1.0
    assert any("ssl3_read_bytes" in m.fact for m in cut.fidelity.misses)


def test_pins_and_small_results_stay_and_the_idle_sentence_says_why():
    conv = _build_with_an_error_in_the_middle()
    view = make_view(conv, pins=[3])
    plan = get_strategy("head_tail").apply(view, Budget(128_000))
    assert plan.actions[3] == "keep" and "pinned" in plan.reasons[3]
    small = Conversation((system(), user("hi"), assistant("", "a"), tool("a", "ok"), assistant("done")))
    idle = get_strategy("head_tail").apply(make_view(small), Budget(128_000)).idle
    assert idle and "none of the 1 results" in idle


# mozilla/treeherder @56ea501, tests/sample_data/logs/build-fail.log.gz (MPL-2.0): a Firefox build on
# Taskcluster whose crashreporter fails to link; lines 137,580-138,014 of 138,014 (tests/data/coding/README.md)
FIREFOX = Path(__file__).parent.parent / "data" / "coding" / "firefox_build_link_error.log"
VARIANT_RS = "/builds/worker/checkouts/gecko/third_party/rust/windows-core/src/variant.rs"  # named by the linker


def _real_build() -> Conversation:
    """A build agent reads the real failed build log, then opens the source file the linker names."""
    log = FIREFOX.read_text(encoding="utf-8")
    read = ToolCall("g1", "Read", json.dumps({"file_path": VARIANT_RS}))
    return Conversation((system("You are a build agent."), user("Build Firefox for Windows and fix what fails."),
                         assistant("", "b1"), tool("b1", log),
                         Message("assistant", "crashreporter fails to link: PropVariantCompareEx is undefined.",
                                 tool_calls=(read,)),
                         tool("g1", "127: unsafe { PropVariantCompareEx(&self.0, &other.0, 0, 0) }"),
                         assistant("The symbol lives in propsys.lib, which crashreporter does not link.")))


def test_on_a_real_firefox_build_log_the_link_error_in_the_middle_is_cut_and_lost():
    lines = FIREFOX.read_text(encoding="utf-8").splitlines()
    at = next(i for i, line in enumerate(lines) if "undefined symbol: PropVariantCompareEx" in line)
    assert 128 < at < len(lines) - 128  # the error sits in the middle Codex's rule leaves out
    conv = _real_build()
    plan = get_strategy("head_tail").apply(make_view(conv), Budget(128_000))
    assert plan.actions[3] == "truncate"
    sent = plan.messages[plan.origin.index(3)].text
    assert "PropVariantCompareEx" not in sent and "undefined symbol" not in sent
    assert "Unsuccessful task run with exit code: 255" in sent  # the tail says it failed, not why
    budget = Budget(128_000)
    whole = measure(conv, get_strategy("none"), budget)
    cut = measure(conv, get_strategy("head_tail"), budget)
    assert not whole.fidelity.misses
    assert [(m.fact, m.source, m.needed_by) for m in cut.fidelity.misses] == [(VARIANT_RS, 3, 4)]
    assert cut.needed_recall < whole.needed_recall
