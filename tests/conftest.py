"""Shared test set-up."""

from __future__ import annotations

import pytest
from streamlit.runtime.pages_manager import PagesManager


@pytest.fixture(autouse=True)
def explicit_navigation(monkeypatch):
    """Make AppTest treat `pages/` as app.py does: every page registered through st.navigation.

    A real server turns `pages/` discovery off once app.py calls st.navigation; AppTest resets that
    flag before every run, so without this its second run would execute the page file alone,
    skipping app.py's shared frame.
    """
    original = PagesManager.__init__

    def init(self, *args, **kwargs):
        original(self, *args, **kwargs)
        PagesManager.uses_pages_directory = False

    monkeypatch.setattr(PagesManager, "__init__", init)


@pytest.fixture
def app():
    """The whole app (app.py's frame) on the Prefill page, the first page with the scenario editors,
    with a fresh session (the default page, Home, shows no editors) and every editor panel opened,
    as a person editing would have them."""
    from streamlit.testing.v1 import AppTest

    from apptest_helpers import open_panels

    at = AppTest.from_file("../app.py", default_timeout=120)
    at.run()
    assert not at.exception, at.exception
    open_panels(at)
    at.switch_page("pages/prefill.py").run()
    assert not at.exception, at.exception
    return at
