"""Browser tests (tier 3): the real app served by `streamlit run`, driven by Playwright in Chromium.

What this file provides:

* ``app_server`` (session): one ``streamlit run app.py`` for the whole run, on a free loopback port
  (headless, usage stats off, file watcher off, the repository's ``.streamlit/config.toml``
  otherwise), ready once ``/_stcore/health`` answers and stopped at the end, also when tests fail.
  Its output goes to ``artifacts/browser-server.log``; a failed check quotes the tail.
* ``app``: one visitor, i.e. a fresh browser context with one page (1400 x 1000), wrapped in
  :class:`App`. ``new_app()`` gives further independent visitors in the same test (a second
  person opening a shared link). Contexts close after each test.
* ``start_server()``: a private server for a test that needs a cold one (costs a few seconds).
* Every test that takes a ``registered_page`` argument runs once per ``st.Page`` in app.py;
  ``app_pages`` is the whole list (title, script, url path).

How to write a browser test here
--------------------------------
Add ``tests/browser/test_<area>.py``; the fixtures need no import (``expect`` does)::

    from playwright.sync_api import expect

    def test_step_adds_a_token(app):
        \"\"\"Clicking Step on Decode appends one generated token.\"\"\"
        app.open("/decode", step=0)            # url path as in app.py (``app_pages``), query params
        app.click_button("Step")               # waits until the rerun it causes has finished
        expect(app.main.get_by_text("Timeline (tokens generated)")).to_be_visible()
        app.assert_no_exception()
        app.screenshot("decode-after-step")    # artifacts/screenshots/decode-after-step.png

Rules that keep the suite reliable on a slow, shared 2-core machine:

* Wrap every action that makes Streamlit rerun in ``with app.rerun(): ...`` (``type_text``,
  ``click_button``, ``toggle`` and ``edit_cell`` already do). It returns once the server has sent
  the end of a complete script run (read from the app's websocket, so a run that ends early for
  ``st.rerun()`` does not count) and the page has settled: no status widget, spinner or skeleton.
  It never sleeps for a fixed time. An action that causes no rerun (typing the value a box already
  holds) fails there after ``RUN_TIMEOUT_MS``, so don't wrap those.
* Assert with ``playwright.sync_api.expect``; this file raises its default timeout to
  ``EXPECT_TIMEOUT_MS`` so a slow render is waited for rather than reported as a failure.
  Never assert how long something took (speed belongs to ``python -m viz bench``).
* Call ``app.assert_no_exception()`` after anything that renders, and look at the screenshots.
* ``app.dialogs`` records every JavaScript dialog (``alert()``); assert it stays empty where user
  text could have been run.
* Data-editor cells are drawn on a canvas; read them through :meth:`App.cell` (glide-data-grid's
  accessibility table, which it fills a moment after drawing, so use ``expect``, not ``inner_text``).

Chromium comes from Debian (``/usr/bin/chromium``), launched with the flags in
``CHROMIUM_FLAGS``; Playwright's own browser download does not work here.
"""

from __future__ import annotations

import ast
import contextlib
import ctypes
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator
from urllib.parse import parse_qsl, urlencode, urlsplit

import pytest
from google.protobuf.message import DecodeError
from playwright.sync_api import (Browser, BrowserContext, Dialog, Error as PlaywrightError, Locator,
                                 WebSocket, expect, sync_playwright)
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.source_util import page_icon_and_name

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "artifacts"
SCREENSHOTS = ARTIFACTS / "screenshots"
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync"]
VIEWPORT = {"width": 1400, "height": 1000}
SERVER_START_S = 180  # a cold start imports torch, pandas and plotly on 2 shared cores
RUN_TIMEOUT_MS = 180_000  # one script run, including a page's live measurements
EXPECT_TIMEOUT_MS = 60_000  # expect(...) retries this long before failing
MAX_SCREENSHOT_HEIGHT = 16_000  # px; a longer page is cut there
PR_SET_PDEATHSIG = 1  # prctl option: a signal for this process when its parent dies
STREAM_PATH = "/_stcore/stream"  # the app's websocket
TRACEBACK_MARKERS = ("Traceback (most recent call last)", "This app has encountered an error")

# Streamlit's data editor: 35 px rows under a 35 px header; x = 40 px is past the ~30 px row
# markers of an editor and inside the first column of a dataframe.
GRID_ROW_PX = 35
GRID_FIRST_COLUMN_X = 40

expect.set_options(timeout=EXPECT_TIMEOUT_MS)

# Ready when a script run is over and nothing on the page is still loading.
SETTLED_JS = """() => {
  const app = document.querySelector('[data-testid="stApp"]');
  return !!app && app.dataset.testConnectionState === 'CONNECTED'
    && app.dataset.testScriptState === 'notRunning'
    && !document.querySelector('[data-testid="stStatusWidget"], [data-testid="stSpinner"], '
                               + '[data-testid="stSkeleton"]');
}"""

# Two animation frames: the browser has laid out and painted after a viewport change.
NEXT_PAINT_JS = "() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)))"

# Height of everything that scrolls (Streamlit scrolls its main area and sidebar, not the document).
CONTENT_HEIGHT_JS = """() => Math.max(document.documentElement.scrollHeight,
  ...['stMain', 'stSidebarContent'].map(id => {
      const el = document.querySelector(`[data-testid="${id}"]`);
      return el ? el.scrollHeight + el.getBoundingClientRect().top : 0; }))"""


# -- the pages app.py registers ----------------------------------------------------------------
@dataclass(frozen=True)
class RegisteredPage:
    """One ``st.Page`` from app.py, as a visitor reaches it."""

    title: str  # shown in the sidebar navigation
    script: str  # e.g. "pages/decode.py"
    url_path: str  # "/" for the default page, else "/decode"

    @property
    def name(self) -> str:
        """A file-name-safe id: the script's stem ("decode")."""
        return Path(self.script).stem


def registered_pages(app_file: Path = ROOT / "app.py") -> list[RegisteredPage]:
    """Every ``st.Page("pages/….py", …)`` call in app.py, read with ``ast`` (app.py is not run)."""
    pages = []
    for node in ast.walk(ast.parse(app_file.read_text(encoding="utf-8"))):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "Page"):
            continue
        try:
            script = ast.literal_eval(node.args[0])
            options = {kw.arg: ast.literal_eval(kw.value) for kw in node.keywords}
        except (IndexError, ValueError) as err:
            raise ValueError(f"app.py line {node.lineno}: st.Page needs literal arguments here") from err
        _, inferred = page_icon_and_name(Path(script))  # Streamlit's own name-from-file rule
        title = options.get("title") or inferred.replace("_", " ")
        if options.get("default"):
            url_path = "/"
        else:
            url_path = "/" + (options.get("url_path") or inferred).strip("/")
        pages.append(RegisteredPage(title, script, url_path))
    if not pages:
        raise ValueError("app.py registers no st.Page")
    return pages


@pytest.fixture(scope="session")
def app_pages() -> list[RegisteredPage]:
    """Every page app.py registers, in navigation order."""
    return registered_pages()


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """A test with a ``registered_page`` argument runs once per page in app.py."""
    if "registered_page" in metafunc.fixturenames:
        pages = registered_pages()
        metafunc.parametrize("registered_page", pages, ids=[page.name for page in pages])


# -- the server --------------------------------------------------------------------------------
def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


try:  # looked up here, not in the forked child, where only the call itself is safe
    _prctl = ctypes.CDLL(None, use_errno=True).prctl  # the C library's, on Linux
except (OSError, AttributeError):
    _prctl = None


def _die_with_parent() -> None:
    """In the server process: get SIGTERM when pytest dies, even by SIGKILL or `timeout`, so no
    server outlives its run (fixture teardown covers every other ending). Linux only."""
    if _prctl is not None:
        _prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


class AppServer:
    """``streamlit run app.py`` on a free loopback port, its output kept in a log file."""

    def __init__(self, log_path: Path):
        self.log_path = log_path
        self.port = 0
        self._process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, attempts: int = 3) -> None:
        """Start and wait for the health check; a port taken in the meantime gets another try."""
        for attempt in range(attempts):
            self._launch(_free_port())
            if self._wait_healthy():
                return
            self.stop()
            if attempt == attempts - 1 or "already in use" not in self.log_tail():
                break
        pytest.fail(f"streamlit run app.py did not become healthy within {SERVER_START_S} s.\n"
                    f"{self.log_tail()}", pytrace=False)

    def _launch(self, port: int) -> None:
        self.port = port
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        command = [sys.executable, "-m", "streamlit", "run", "app.py",
                   "--server.headless", "true", "--server.address", "127.0.0.1", "--server.port", str(port),
                   "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none",
                   "--server.runOnSave", "false"]
        with open(self.log_path, "wb") as log:
            # Its own process group, so stop() also ends anything the server started.
            self._process = subprocess.Popen(command, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
                                             stdin=subprocess.DEVNULL, start_new_session=True,
                                             preexec_fn=_die_with_parent,
                                             env={**os.environ, "PYTHONUNBUFFERED": "1", "KVLAB_TORCH_THREADS": "1"})

    def _wait_healthy(self) -> bool:
        deadline = time.monotonic() + SERVER_START_S
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                return False
            try:
                with urllib.request.urlopen(f"{self.url}/_stcore/health", timeout=2) as reply:
                    if reply.status == 200 and reply.read().strip() == b"ok":
                        return True
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            time.sleep(0.25)  # polling an external process: no event to await
        return False

    def stop(self) -> None:
        """End the server's process group: politely, then by force after 15 s."""
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        try:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=15)
        except ProcessLookupError:
            pass

    def log_tail(self, lines: int = 40) -> str:
        """The last lines the server printed (uncaught exceptions land here)."""
        try:
            text = self.log_path.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            return "(no server log)"
        return "--- server log (tail) ---\n" + "\n".join(text.splitlines()[-lines:])


# -- one visitor -------------------------------------------------------------------------------
def _ends_a_run(payload: bytes) -> bool:
    """True for the message that closes a complete script run (not one cut short by st.rerun)."""
    try:
        message = ForwardMsg.FromString(payload)
    except DecodeError:
        return False
    return (message.WhichOneof("type") == "script_finished"
            and message.script_finished != ForwardMsg.FINISHED_EARLY_FOR_RERUN)


class App:
    """One visitor: a browser context with one page on the served app, and the steps a test takes
    there. ``page`` is the Playwright page for anything the helpers do not cover."""

    def __init__(self, context: BrowserContext, server: AppServer):
        self.context = context
        self.server = server
        self.page = context.new_page()
        self._runs = 0  # complete script runs since the page opened
        self._socket: WebSocket | None = None
        self.page.on("websocket", self._on_websocket)

    @property
    def dialogs(self) -> list[str]:
        """"alert: 1" for every JavaScript dialog any page of this visitor opened."""
        return self.context.dialogs

    def _on_websocket(self, ws: WebSocket) -> None:
        if ws.url.endswith(STREAM_PATH):
            self._socket = ws
            ws.on("framereceived", self._on_frame)

    def _on_frame(self, payload: bytes | str) -> None:
        if isinstance(payload, bytes) and _ends_a_run(payload):
            self._runs += 1

    # -- where things are
    @property
    def sidebar(self) -> Locator:
        return self.page.get_by_test_id("stSidebar")

    @property
    def main(self) -> Locator:
        return self.page.get_by_test_id("stMain")

    @property
    def query(self) -> dict[str, str]:
        """The address bar's query parameters (the share link)."""
        return dict(parse_qsl(urlsplit(self.page.url).query))

    # -- waiting
    def open(self, path: str = "/", **params: object) -> "App":
        """Go to a url path (``/decode``) with optional query parameters; wait for the first run."""
        return self.open_url(self.server.url + path + (f"?{urlencode(params)}" if params else ""))

    def open_url(self, url: str) -> "App":
        """Go to a full address (a share link copied from another visitor); wait for the first run."""
        with self.rerun():
            # Waiting for the new page's websocket here means the wait below never listens to the
            # socket of the page being left.
            with self.page.expect_websocket(lambda ws: ws.url.endswith(STREAM_PATH), timeout=RUN_TIMEOUT_MS):
                self.page.goto(url, wait_until="domcontentloaded")
        return self

    @contextlib.contextmanager
    def rerun(self) -> Iterator[None]:
        """Around an action that makes the app rerun: on exit that run is complete and drawn."""
        before = self._runs
        yield
        self._wait_for_run_after(before)
        self.settle()

    def _wait_for_run_after(self, before: int) -> None:
        deadline = time.monotonic() + RUN_TIMEOUT_MS / 1000
        while self._runs <= before:
            left_ms = (deadline - time.monotonic()) * 1000
            if left_ms <= 0:
                pytest.fail(f"no script run finished within {RUN_TIMEOUT_MS // 1000} s of the action.\n"
                            f"{self.server.log_tail()}", pytrace=False)
            try:  # frames are counted by _on_frame while we wait for the next one
                if self._socket is None or self._socket.is_closed():
                    self.page.wait_for_event("websocket", timeout=left_ms)
                else:
                    self._socket.wait_for_event("framereceived", timeout=left_ms)
            except PlaywrightError:
                continue  # timed out or the socket closed: the loop decides

    def settle(self) -> None:
        """Wait until no script run is in progress and nothing on the page is still loading."""
        self.page.wait_for_function(SETTLED_JS, timeout=RUN_TIMEOUT_MS)

    # -- doing things
    def type_text(self, label: str, text: str) -> None:
        """Type into a text box (found by its label) and press Enter, as a person would."""
        box = self.page.get_by_role("textbox", name=label, exact=True)
        with self.rerun():
            box.fill(text)
            box.press("Enter")

    def click_button(self, name: str, scope: Locator | None = None) -> None:
        """Click the button labelled ``name`` (a keyboard shortcut, if any, adds " Shortcut →" to its
        accessible name; an icon-only button is named by its tooltip)."""
        label = re.compile(rf"^{re.escape(name)}(?: Shortcut .+)?$")
        with self.rerun():
            (scope or self.page).get_by_role("button", name=label).click()

    def toggle(self, label: str) -> None:
        """Flip an ``st.toggle`` or ``st.checkbox`` by clicking its label."""
        widget = self.page.get_by_test_id("stCheckbox").filter(has=self.page.get_by_label(label, exact=True))
        with self.rerun():
            widget.locator("label").first.click()

    def expander(self, label: str, scope: Locator | None = None) -> Locator:
        """An ``st.expander`` by its label, opened if it was folded (opening does not rerun)."""
        box = (scope or self.page).get_by_test_id("stExpander").filter(
            has=self.page.locator("summary", has_text=label))
        if box.locator("details").get_attribute("open") is None:
            box.locator("summary").click()
        expect(box.locator("details")).to_have_attribute("open", "")
        return box

    # -- data editors and dataframes (glide-data-grid, drawn on a canvas)
    def _column_index(self, grid: Locator, column: str) -> int:
        """aria-colindex of a column header in the grid's accessibility table."""
        header = grid.locator("thead th").filter(has_text=re.compile(rf"^\s*{re.escape(column)}\s*$"))
        expect(header).to_have_count(1)
        return int(header.get_attribute("aria-colindex"))

    def cell(self, grid: Locator, row: int, column: str) -> Locator:
        """One cell (row from 0, column by header text) of an ``st.dataframe``/``st.data_editor``."""
        index = self._column_index(grid, column)
        return grid.locator(f"tbody tr[aria-rowindex='{row + 2}'] td[aria-colindex='{index}']")

    def edit_cell(self, grid: Locator, row: int, column: str, text: str) -> None:
        """Type ``text`` into a data-editor cell and press Enter; waits for the rerun.

        Clicks a cell in the grid's first visible row and column, reads which cell that selected
        (the grid may be scrolled), walks to the target with the arrow keys (the grid scrolls
        along) and edits in glide's overlay editor. The column's header must be in the
        accessibility table, i.e. on screen or near it.
        """
        index = self._column_index(grid, column)
        grid.scroll_into_view_if_needed()
        selected = grid.locator("tbody td[aria-selected='true']")
        before = selected.first.get_attribute("id") if selected.count() == 1 else None  # e.g. after an edit
        grid.click(position={"x": GRID_FIRST_COLUMN_X, "y": GRID_ROW_PX * 1.5})
        expect(selected).to_have_count(1)
        if before is not None:  # let the click's selection replace the old one (unless it is the same cell)
            with contextlib.suppress(AssertionError):
                expect(selected).not_to_have_attribute("id", before, timeout=3000)
        at_column = int(selected.get_attribute("aria-colindex"))
        at_row = int(selected.locator("xpath=..").get_attribute("aria-rowindex")) - 2
        for _ in range(abs(index - at_column)):
            self.page.keyboard.press("ArrowRight" if index > at_column else "ArrowLeft")
        for _ in range(abs(row - at_row)):
            self.page.keyboard.press("ArrowDown" if row > at_row else "ArrowUp")
        expect(self.cell(grid, row, column)).to_have_attribute("aria-selected", "true")
        self.page.keyboard.press("Enter")
        overlay = self.page.get_by_test_id("portal").locator(".gdg-clip-region")
        expect(overlay).to_be_visible()
        overlay.locator("textarea, input").first.fill(text)
        with self.rerun():
            self.page.keyboard.press("Enter")

    # -- checking
    def assert_no_exception(self) -> None:
        """No Streamlit exception element and no traceback text anywhere on the page."""
        shown = self.page.get_by_test_id("stException")
        if shown.count():
            pytest.fail(f"the page shows {shown.count()} exception(s): {shown.all_inner_texts()}\n"
                        f"{self.server.log_tail()}", pytrace=False)
        text = self.page.locator("body").inner_text()
        for marker in TRACEBACK_MARKERS:
            assert marker not in text, f"the page shows {marker!r}\n{self.server.log_tail()}"

    def clipped(self, locator: Locator) -> bool:
        """Whether the first element a locator finds, or anything inside it, cuts its content short
        (an ellipsis or hidden overflow): its content is wider than its box."""
        return bool(locator.first.evaluate(
            "e => [e, ...e.querySelectorAll('*')].some(x => x.clientWidth > 0 && x.scrollWidth > x.clientWidth + 1)"))

    def font_size_px(self, locator: Locator) -> float:
        """The computed font size of the first element a locator finds."""
        return float(locator.first.evaluate("e => parseFloat(getComputedStyle(e).fontSize)"))

    def screenshot(self, name: str) -> Path:
        """The whole app, main area and sidebar unscrolled, to artifacts/screenshots/<name>.png.

        Streamlit scrolls inside its main area, so the viewport is stretched to the content's
        height for the shot and put back afterwards.
        """
        path = SCREENSHOTS / f"{name}.png"
        path.parent.mkdir(parents=True, exist_ok=True)
        height = min(int(self.page.evaluate(CONTENT_HEIGHT_JS)), MAX_SCREENSHOT_HEIGHT)
        size = self.page.viewport_size or VIEWPORT
        try:
            if height > size["height"]:
                self.page.set_viewport_size({"width": size["width"], "height": height})
                self.page.evaluate(NEXT_PAINT_JS)
            self.page.screenshot(path=str(path), full_page=True)
        finally:
            self.page.set_viewport_size(size)
        return path


# -- fixtures ---------------------------------------------------------------------------------
def _new_context(browser: Browser) -> BrowserContext:
    """A fresh context (its own Streamlit session) that records and dismisses JavaScript dialogs."""
    context = browser.new_context(viewport=VIEWPORT)
    context.set_default_timeout(EXPECT_TIMEOUT_MS)
    context.dialogs = []

    def record(dialog: Dialog) -> None:
        context.dialogs.append(f"{dialog.type}: {dialog.message}")
        dialog.dismiss()

    context.on("dialog", record)
    return context


@pytest.fixture(scope="session")
def app_server() -> Iterator[AppServer]:
    """The app, served once for the whole browser run."""
    server = AppServer(ARTIFACTS / "browser-server.log")
    try:
        server.start()
        yield server
    finally:
        server.stop()


@pytest.fixture
def start_server(tmp_path: Path) -> Iterator[Callable[[], AppServer]]:
    """Start a private, cold server (e.g. to test what its very first visitor sees)."""
    servers: list[AppServer] = []

    def start() -> AppServer:
        server = AppServer(ARTIFACTS / f"browser-server-{tmp_path.name}-{len(servers) + 1}.log")
        servers.append(server)
        server.start()
        return server

    try:
        yield start
    finally:
        for started in servers:
            started.stop()


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    """Debian's Chromium through Playwright; missing Chromium is a failure, never a skip."""
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} is missing: the browser tests need Debian's Chromium. "
                    "Run `apt-get install -y chromium`.", pytrace=False)
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_FLAGS)
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture
def new_app(browser: Browser, app_server: AppServer) -> Iterator[Callable[..., App]]:
    """Make a visitor in a fresh browser context; ``new_app(server)`` for a private server."""
    contexts: list[BrowserContext] = []

    def make(on: AppServer | None = None) -> App:
        contexts.append(_new_context(browser))
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
