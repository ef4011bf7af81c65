"""Each lesson's text says what its mitigation does; these check the page shows exactly that
. Before: confusion claimed retrieval removes "both the noise and the look-alikes"
and then listed "Still there: overlapping_tools x2; lookalike_switch"; poisoning's fixes each
applied to the original, so zero findings was out of reach, and mistyped_id showed as both gone
and new; needed facts served fell 100% -> 75% without a word; tool loadout's "top 5" sent 3."""
from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from .helpers import metric, open_page, set_widget

PAGE = "failure_modes.py"


@pytest.fixture(autouse=True)
def _own_data_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("CTXLAB_DATA_DIR", str(tmp_path))


def _lesson(monkeypatch, name: str) -> AppTest:
    at = open_page(PAGE, monkeypatch, timeout=180)
    set_widget(at, "fm_lesson", name)
    return at


def _apply(at: AppTest) -> None:
    at.button(key="fm_apply").click().run()
    assert not at.exception, at.exception


def _texts(elements) -> list[str]:
    return [e.value.replace("\\", "") for e in elements]


def _after(at: AppTest, title: str) -> int:
    return int(metric(at, title))


def test_confusion_retrieval_removes_the_noise_and_the_lookalikes(monkeypatch):
    at = _lesson(monkeypatch, "confusion")
    assert any("removes both the noise and the look-alikes" in m for m in _texts(at.markdown))
    _apply(at)
    assert _after(at, "Confusion findings") == 0
    assert not any(w.startswith("Still there") for w in _texts(at.warning))


def test_tool_loadout_sends_the_top_5_its_button_names(monkeypatch):
    at = _lesson(monkeypatch, "tool_loadout")
    button = at.button(key="fm_apply")
    assert "top 5" in button.label
    _apply(at)
    before, after = [list(t.value["tool"]) for t in at.dataframe if list(t.value.columns) == ["tool"]]
    assert len(after) == 5 and len(before) == 60


def test_clash_keeping_the_newest_observation_resolves_it(monkeypatch):
    at = _lesson(monkeypatch, "clash")
    assert any("Keeping only the newest observation of each fact resolves it" in m for m in _texts(at.markdown))
    _apply(at)
    assert _after(at, "Clash findings") == 0


def test_distraction_the_mitigation_shrinks_the_context_and_its_findings(monkeypatch):
    at = _lesson(monkeypatch, "distraction")
    _apply(at)
    findings = next(m for m in at.metric if m.label == "Distraction findings")
    assert int(findings.value) < int(findings.help.split(": ")[1])


def test_poisoning_fixes_apply_one_after_another_until_no_poison_is_left(monkeypatch):
    at = _lesson(monkeypatch, "poisoning")
    assert any("find the poisoned messages and remove them" in m for m in _texts(at.markdown))
    for step in range(6):
        _apply(at)
        gone = " ".join(s for s in _texts(at.success) if s.startswith("Gone"))
        new = " ".join(c for c in _texts(at.caption) if c.startswith("New after"))
        for code in ("mistyped_id", "contradicted_claim", "summary_carries_claim", "repeated_failing_call"):
            assert not (code in gone and code in new), f"{code} listed as both gone and new"
        served = next(m for m in at.metric if m.label == "Needed facts served")
        before = served.help.split(";")[0].removeprefix("before: ")
        if served.value != before and float(served.value.rstrip("%")) < float(before.rstrip("%")):
            fell = next((c for c in _texts(at.caption) if c.startswith("Needed facts served fell")), None)
            assert fell is not None, "a drop with no word why"
            assert "Of these: 1 the agent had written first itself" in fell  # the priced loss: the claim is its own
        if _after(at, "Poisoning findings") == 0:
            break
        at.button(key="fm_continue").click().run()
        assert not at.exception, at.exception
        assert any("Fixes applied so far" in i for i in _texts(at.info))
    assert _after(at, "Poisoning findings") == 0, "the fixes, applied one after another, never reach zero"
    at.button(key="fm_restart").click().run()
    assert not [i for i in _texts(at.info) if "Fixes applied so far" in i]
