"""Browser tests (tier 3): the real app served by ``streamlit run``, driven by Playwright in Debian's
Chromium at /usr/bin/chromium (Playwright's own browser download does not work here).

How to write one (tests/browser/test_<area>.py):

    from browser_helpers import wait_idle, assert_clean, screenshot

    def test_my_page(open_page):
        page = open_page("my-page", step=2)        # url path + query parameters, waits for the app
        page.get_by_role("button", name="Step").click()
        wait_idle(page)                            # the rerun has finished and nothing is loading
        assert_clean(page)                         # no exception element, no traceback, no alert()
        screenshot(page, "my-page-after-step")     # artifacts/screenshots/my-page-after-step.png

One server serves the whole session; each test gets a fresh browser context (a new session).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from urllib.parse import urlencode

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parent))  # `from browser_helpers import …` in every test file
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def server() -> str:
    """`streamlit run app.py` on a free loopback port; its base URL. Stopped at the end of the session."""
    port = _free_port()
    (ROOT / "artifacts").mkdir(exist_ok=True)
    log = open(ROOT / "artifacts" / "browser-server.log", "w")
    process = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port),
         "--server.address", "127.0.0.1", "--server.headless", "true", "--browser.gatherUsageStats", "false",
         "--server.fileWatcherType", "none"],
        cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "KVLAB_TORCH_THREADS": "1"})
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while True:
            try:
                with urllib.request.urlopen(f"{base}/_stcore/health", timeout=5) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            if process.poll() is not None:
                pytest.fail("streamlit run app.py exited before serving (see artifacts/browser-server.log)")
            if time.monotonic() > deadline:
                pytest.fail("streamlit run app.py did not answer /_stcore/health within 180 s")
            time.sleep(0.5)
        yield base
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()


@pytest.fixture(scope="session")
def browser():
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: install Debian's Chromium with `apt-get install -y chromium`")
    from playwright.sync_api import sync_playwright
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def context(browser):
    """A fresh browser context (a new Streamlit session); records any JavaScript dialog."""
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
    ctx.dialogs = []

    def on_page(page):
        page.on("dialog", lambda dialog: (ctx.dialogs.append(dialog.message), dialog.dismiss()))

    ctx.on("page", on_page)
    yield ctx
    ctx.close()


@pytest.fixture
def open_page(server, context):
    """Open a page of the app by url path (``""`` for Prefill) with query parameters, and wait."""
    from browser_helpers import wait_idle

    def open_(path: str = "", params: dict | None = None, **kwargs):
        page = context.new_page()
        query = {**(params or {}), **{k: str(v) for k, v in kwargs.items()}}
        page.goto(f"{server}/{path}" + (f"?{urlencode(query)}" if query else ""))
        page.wait_for_selector('[data-testid="stSidebar"]', timeout=120_000)
        wait_idle(page)
        return page

    return open_
