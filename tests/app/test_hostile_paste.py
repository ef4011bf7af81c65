"""The Strategy Lab after a hostile paste: an integer of 5,000 digits, NaN or
1e400 in the pasted conversation is one located error in the sidebar, never a traceback, and the
Lab works again with the next good paste."""
from __future__ import annotations

from ..conftest import SAMPLES
from .helpers import open_page_without_conversation


def test_a_huge_integer_in_a_paste_is_one_error_and_the_lab_recovers(monkeypatch):
    good = (SAMPLES / "ecommerce_refund.json").read_text(encoding="utf-8")
    at = open_page_without_conversation("strategy_lab.py", monkeypatch)
    for planted, expected in (("9" * 5_000, "an integer of 5,000 digits"), ("NaN", "NaN is not a JSON number"),
                              ("1e400", "beyond a double")):
        bad = good.replace('"facts"', f'"x": {planted}, "facts"', 1)
        assert bad != good
        at.sidebar.text_area(key="paste_text").input(bad)
        at.sidebar.button(key="use_paste").click().run()
        assert not at.exception, at.exception
        shown = " ".join([e.value for e in at.error] + [e.value for e in at.sidebar.error]).replace("\\", "")
        assert expected in shown and "column" in shown, shown
    at.sidebar.text_area(key="paste_text").input(good)
    at.sidebar.button(key="use_paste").click().run()
    assert not at.exception and not at.sidebar.error
    assert at.session_state["conversation_text"] == good
