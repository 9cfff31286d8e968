"""Browser tests (tier 3): the real app served by `streamlit run`, driven by Playwright in Chromium.

Fixtures (no import needed):

* ``app_server`` (session): one ``streamlit run app.py`` for the whole run, one per pytest-xdist worker (``viz.tools.server``:
  free loopback port, the repository's settings, ready once ``/_stcore/health`` answers, stopped at
  the end); its output goes to ``artifacts/browser-server.log`` (``-gw0.log`` … under xdist) and a failed check quotes the tail.
* ``app``: one visitor, a fresh browser context with one page (1400 x 1000), wrapped in
  :class:`visitor.App`; ``new_app()`` gives further independent visitors in the same test (a second
  person opening a shared link), ``new_app(server)`` one on another server. Contexts close after
  each test.
* ``start_server()``: a private server for a test that needs a cold one (costs a few seconds).
* A test with a ``registered_page`` argument runs once per ``st.Page`` in app.py; ``app_pages`` is
  the whole list (title, script, url path); see ``registry.py``.

How to write a browser test here
--------------------------------
Add ``tests/browser/test_<area>.py``; the fixtures need no import (``expect`` does)::

    from playwright.sync_api import expect

    def test_step_adds_a_token(app):
        \"\"\"Clicking Step on Decode appends one generated token.\"\"\"
        app.open("/decode", step=2)            # url path as in app.py (``app_pages``), query params
        app.click_button("Step")               # waits until the rerun it causes has finished
        timeline = app.main.get_by_role("slider", name="Timeline (tokens generated)")
        expect(timeline).to_have_attribute("aria-valuetext", "3 of 3")
        app.assert_no_exception()
        app.screenshot("decode-after-step")    # artifacts/screenshots/decode-after-step.png

Rules that keep the suite reliable on a slow, shared 2-core machine:

* Wrap every action that makes Streamlit rerun in ``with app.rerun(): ...`` (``type_text``,
  ``click_button``, ``toggle`` and ``edit_cell`` already do). It returns once the run the action
  caused has finished (``viz.tools.protocol``: read from the app's websocket; a run cut short for
  ``st.rerun()`` does not count, a fragment's run does) and the page has settled: no status widget,
  spinner or skeleton. It never sleeps for a fixed time. An action that causes no rerun (typing the
  value a box already holds) fails there after ``RUN_TIMEOUT_MS``, so don't wrap those.
* Assert with ``playwright.sync_api.expect``; its default timeout is raised to ``EXPECT_TIMEOUT_MS``
  so a slow render is waited for rather than reported as a failure. Never assert how long
  something took (speed belongs to ``python -m viz bench`` and ``python -m viz.tools.paint``).
* Call ``app.assert_no_exception()`` after anything that renders, and look at the screenshots.
* ``app.dialogs`` records every JavaScript dialog (``alert()``); assert it stays empty where user
  text could have been run.
* Data-editor cells are drawn on a canvas; read them through :meth:`App.cell` (glide-data-grid's
  accessibility table, which it fills a moment after drawing, so use ``expect``, not ``inner_text``).

Chromium comes from Debian (``/usr/bin/chromium``, flags in ``viz.tools.chromium``); Playwright's
own browser download does not work here.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable, Iterator

import pytest
from playwright.sync_api import Browser, BrowserContext, expect, sync_playwright

from viz.tools.chromium import CHROMIUM, MISSING, launch_options
from viz.tools.server import ServerError, StreamlitServer

from .registry import RegisteredPage, registered_pages
from .visitor import ARTIFACTS, EXPECT_TIMEOUT_MS, App, new_context

expect.set_options(timeout=EXPECT_TIMEOUT_MS)


def _started(server: StreamlitServer) -> StreamlitServer:
    """Start a server; one that does not come up fails the test with its log, not a traceback."""
    try:
        return server.start()
    except ServerError as err:
        pytest.fail(str(err), pytrace=False)


@pytest.fixture(scope="session")
def app_pages() -> list[RegisteredPage]:
    """Every page app.py registers, in navigation order."""
    return registered_pages()


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """A test with a ``registered_page`` argument runs once per page in app.py."""
    if "registered_page" in metafunc.fixturenames:
        pages = registered_pages()
        metafunc.parametrize("registered_page", pages, ids=[page.name for page in pages])


@pytest.fixture(scope="session")
def app_server() -> Iterator[StreamlitServer]:
    """The app, served once for the whole browser run (once per pytest-xdist worker, each its own log)."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    server = StreamlitServer(ARTIFACTS / (f"browser-server-{worker}.log" if worker else "browser-server.log"))
    try:
        yield _started(server)
    finally:
        server.stop()


@pytest.fixture
def start_server(tmp_path: Path) -> Iterator[Callable[[], StreamlitServer]]:
    """Start a private, cold server (e.g. to test what its very first visitor sees)."""
    servers: list[StreamlitServer] = []

    def start() -> StreamlitServer:
        servers.append(StreamlitServer(ARTIFACTS / f"browser-server-{tmp_path.name}-{len(servers) + 1}.log"))
        return _started(servers[-1])

    try:
        yield start
    finally:
        for started in servers:
            started.stop()


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    """Debian's Chromium through Playwright; missing Chromium is a failure, never a skip."""
    if not CHROMIUM.exists():
        pytest.fail(MISSING, pytrace=False)
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(**launch_options())
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture
def new_app(browser: Browser, app_server: StreamlitServer) -> Iterator[Callable[..., App]]:
    """Make a visitor in a fresh browser context; ``new_app(server)`` for a private server."""
    contexts: list[BrowserContext] = []

    def make(on: StreamlitServer | None = None) -> App:
        contexts.append(new_context(browser))
        return App(contexts[-1], on or app_server)

    try:
        yield make
    finally:
        for context in contexts:
            context.close()


@pytest.fixture
def app(new_app: Callable[..., App]) -> App:
    """The test's first visitor (a fresh browser context); call ``app.open(path)`` first."""
    return new_app()
