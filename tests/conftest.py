"""Shared test set-up."""

from __future__ import annotations

import pytest


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
