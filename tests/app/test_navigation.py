"""The app's navigation (values kept across pages are checked in the real browser test: AppTest
does not forget widget state on a page switch the way the browser runtime does)."""
from __future__ import annotations

from streamlit.testing.v1 import AppTest

from ..conftest import ROOT
from .helpers import APP_TIMEOUT


def test_the_app_opens_on_the_strategy_lab():
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=APP_TIMEOUT)
    at.run()
    assert not at.exception, at.exception
    assert at.title[0].value == "Strategy Lab"
    assert not at.error
