"""The Strategy Lab after a hostile trace: a trace of each reader with a value of
the wrong type (an id that is a list, usage written as '²' or 5,000 digits, content that is an
int...) is one located error on the page, in English and in Chinese, never a traceback."""
from __future__ import annotations

import json

import pytest
from streamlit.testing.v1 import AppTest

from ctxlab import i18n

from ..conftest import ROOT
from .helpers import APP_TIMEOUT
from ..test_hostile_round3 import BAD_TYPES

CASES = ("openhands response id a list", "openhands v1 response id a list", "otel usage a superscript",
         "langfuse usage of 5,000 digits", "claude code content an int", "swe-agent action content an int")


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_trace_with_a_wrong_type_is_one_error_on_the_lab_never_a_traceback(monkeypatch, lang):
    monkeypatch.chdir(ROOT)
    at = AppTest.from_file(str(ROOT / "pages" / "strategy_lab.py"), default_timeout=APP_TIMEOUT)
    at.query_params["lang"] = lang
    at.session_state["source"] = "paste"
    at.run()
    i18n.use(lang)  # AppTest formats the widgets' options in this thread: in the page's language
    try:
        _paste_each(at)
    finally:
        i18n.use("en")


def _paste_each(at: AppTest) -> None:
    for case in CASES:
        doc, jsonl = BAD_TYPES[case][0]()
        text = "\n".join(json.dumps(r) for r in doc) if jsonl else json.dumps(doc)
        at.sidebar.text_area(key="paste_text").input(text)
        at.sidebar.button(key="use_paste").click().run()
        assert not at.exception, (case, at.exception)
        shown = " ".join([e.value for e in at.error] + [e.value for e in at.sidebar.error]).replace("\\", "")
        assert shown and "Traceback" not in shown and "internal error" not in shown, (case, shown)
        assert BAD_TYPES[case][1][-1].split(".")[-1] in shown, (case, shown)
