"""The page object of the browser tests: :class:`App`, one visitor of the served app.

Every step a test takes in the browser goes through here: opening a url path, clicking, typing,
toggling, editing a data-editor cell, waiting for the rerun an action causes (read from the app's
websocket with :class:`viz.tools.protocol.RunLog`, the definition of a finished run that the load
test and the latency command share), checking for exceptions and taking screenshots.
"""

from __future__ import annotations

import contextlib
import re
import time
from pathlib import Path
from typing import Iterator
from urllib.parse import parse_qsl, urlencode, urlsplit

import pytest
from playwright.sync_api import (Browser, BrowserContext, Dialog, Error as PlaywrightError, Locator,
                                 WebSocket, expect)

from viz.tools.chromium import CONTENT_HEIGHT_JS, NEXT_PAINT_JS, SETTLED_JS
from viz.tools.protocol import RunLog
from viz.tools.server import ROOT, STREAM_PATH, StreamlitServer
from viz.ui.common import SHOW, SWITCH_ICONS

# what a switch's icon reads as text (its ligature) while on and while off
SWITCH_FACES = {on: icon.removeprefix(":material/").removesuffix(":") for on, icon in SWITCH_ICONS.items()}

ARTIFACTS = ROOT / "artifacts"
SCREENSHOTS = ARTIFACTS / "screenshots"
VIEWPORT = {"width": 1400, "height": 1000}
RUN_TIMEOUT_MS = 180_000  # one script run, including a page's live measurements
EXPECT_TIMEOUT_MS = 60_000  # expect(...) retries this long before failing
MAX_SCREENSHOT_HEIGHT = 16_000  # px; a longer page is cut there
TRACEBACK_MARKERS = ("Traceback (most recent call last)", "This app has encountered an error")

# Streamlit's data editor: 35 px rows under a 35 px header; x = 40 px is past the ~30 px row
# markers of an editor and inside the first column of a dataframe.
GRID_ROW_PX = 35
GRID_FIRST_COLUMN_X = 40

def new_context(browser: Browser) -> BrowserContext:
    """A fresh context (its own Streamlit session) that records and dismisses JavaScript dialogs."""
    context = browser.new_context(viewport=VIEWPORT)
    context.set_default_timeout(EXPECT_TIMEOUT_MS)
    context.dialogs = []

    def record(dialog: Dialog) -> None:
        context.dialogs.append(f"{dialog.type}: {dialog.message}")
        dialog.dismiss()

    context.on("dialog", record)
    return context


class App:
    """One visitor: a browser context with one page on the served app, and the steps a test takes
    there. ``page`` is the Playwright page for anything the helpers do not cover."""

    def __init__(self, context: BrowserContext, server: StreamlitServer):
        self.context = context
        self.server = server
        self.page = context.new_page()
        self.log = RunLog()  # the current websocket's runs (protocol.py defines "finished")
        self._finished_earlier = 0  # finished runs on this visitor's earlier websockets
        self._socket: WebSocket | None = None
        self.page.on("websocket", self._on_websocket)

    @property
    def dialogs(self) -> list[str]:
        """"alert: 1" for every JavaScript dialog any page of this visitor opened."""
        return self.context.dialogs

    def _on_websocket(self, ws: WebSocket) -> None:
        if ws.url.endswith(STREAM_PATH):
            self._finished_earlier += len(self.log.finished)
            self._socket, self.log = ws, RunLog()
            ws.on("framereceived", self.log.feed)

    @property
    def runs_finished(self) -> int:
        """Script runs (or fragment runs) finished since this visitor's page opened."""
        return self._finished_earlier + len(self.log.finished)

    # -- where things are
    @property
    def sidebar(self) -> Locator:
        return self.page.get_by_test_id("stSidebar")

    @property
    def main(self) -> Locator:
        return self.page.get_by_test_id("stMain")

    def figure_title(self, text: str) -> Locator:
        """The title of a Plotly figure in the main area that reads ``text``, wherever ``fit`` broke it
        into lines (each line is its own tspan, so the title's text runs its lines together)."""
        words = r"\s*".join(re.escape(word) for word in text.split())
        return self.main.locator(".gtitle").filter(has_text=re.compile(words))

    def stat(self, label: str) -> Locator:
        """The value of the figure labelled ``label`` in a stats row (st.metric, viz.ui.widgets.stats)."""
        return self.metric(label).get_by_test_id("stMetricValue")

    def metric(self, label: str) -> Locator:
        """The st.metric labelled ``label`` in the main area."""
        named = self.page.get_by_test_id("stMetricLabel").filter(has_text=re.compile(f"^{re.escape(label)}$"))
        return self.main.get_by_test_id("stMetric").filter(has=named).first

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
        before = self.runs_finished
        yield
        self._wait_for_run_after(before)
        self.settle()

    def _wait_for_run_after(self, before: int) -> None:
        deadline = time.monotonic() + RUN_TIMEOUT_MS / 1000
        while self.runs_finished <= before:
            left_ms = (deadline - time.monotonic()) * 1000
            if left_ms <= 0:
                pytest.fail(f"no script run finished within {RUN_TIMEOUT_MS // 1000} s of the action.\n"
                            f"{self.server.log_tail()}", pytrace=False)
            try:  # frames are fed to the run log while we wait for the next one
                if self._socket is None or self._socket.is_closed():
                    self.page.wait_for_event("websocket", timeout=left_ms)
                else:
                    self._socket.wait_for_event("framereceived", timeout=left_ms)
            except PlaywrightError:
                continue  # timed out or the socket closed: the loop decides

    def settle(self) -> None:
        """Wait until no script run is in progress and nothing on the page is still loading. Two
        painted frames first: a run's last frame reaches Chromium's network stack (where the run log
        reads it) a moment before the page has taken it, and the page then still shows the previous
        run, settled (CI once read a box the switch's run had not yet drawn anew)."""
        self.page.evaluate(NEXT_PAINT_JS)
        self.page.wait_for_function(SETTLED_JS, timeout=RUN_TIMEOUT_MS)

    # -- doing things
    def prompt(self) -> Locator:
        """The sidebar's prompt box, its fold (the first editor panel, built while open) opened first."""
        self.expander("Prompt", self.sidebar, reruns=True)
        return self.sidebar.get_by_role("textbox", name="Prompt", exact=True)

    def type_text(self, label: str, text: str) -> None:
        """Type into a text box (found by its label) and press Enter, as a person would."""
        box = self.page.get_by_role("textbox", name=label, exact=True)
        with self.rerun():
            box.fill(text)
            box.press("Enter")

    def step_to_last(self, key: str, most: int = 50) -> None:
        """Click the → of the stepper under ``key`` (viz.ui.common.stepper) until it is disabled, one
        run at a time, as a visitor does: the stepper then shows its last frame."""
        forward = self.main.locator(f".st-key-{key}_forward button").first
        for _ in range(most):
            if not forward.is_enabled():
                return
            with self.rerun():
                forward.click()
        expect(forward).to_be_disabled()

    def click_button(self, name: str, scope: Locator | None = None) -> None:
        """Click the button labelled ``name`` (a keyboard shortcut, if any, adds " Shortcut →" to its
        accessible name; an icon-only button is named by its tooltip)."""
        label = re.compile(rf"^{re.escape(name)}(?: Shortcut .+)?$")
        with self.rerun():
            (scope or self.page).get_by_role("button", name=label).click()

    def switch(self, label: str, scope: Locator | None = None) -> Locator:
        """The on/off switch named ``label`` (viz.ui.common.switch: a button whose box is ticked while on)."""
        return (scope or self.page).get_by_role("button", name=label, exact=True).first

    @staticmethod
    def expect_switched(switch: Locator, on: bool) -> None:
        """Wait until ``switch`` (:meth:`switch`) shows its box ticked (``on``) or empty."""
        expect(switch.get_by_test_id("stIconMaterial")).to_have_text(SWITCH_FACES[on])

    def toggle(self, label: str) -> None:
        """Flip the on/off switch named ``label`` by clicking it, as a visitor does."""
        with self.rerun():
            self.switch(label).click()

    def pick(self, group: str, option: str) -> None:
        """Pick ``option`` in a segmented control or pills named ``group`` by clicking it."""
        with self.rerun():
            self.page.get_by_role("radiogroup", name=group, exact=True).get_by_role(
                "radio", name=option, exact=True).click()

    def show(self, section: str) -> Locator:
        """Show the page's ``section`` (viz.ui.common.sections: its "Show" picker, whose choice reruns),
        unless it is shown already; returns the section's option, checked."""
        option = self.main.get_by_role("radiogroup", name=SHOW, exact=True).get_by_role(
            "radio", name=section, exact=True)
        if option.get_attribute("aria-checked") != "true":
            with self.rerun():
                option.click()
        expect(option).to_have_attribute("aria-checked", "true")
        return option

    def expander(self, label: str, scope: Locator | None = None, reruns: bool = False) -> Locator:
        """An ``st.expander`` by its label, opened if it was folded. Pass ``reruns`` for one that
        builds its content only while open (the sidebar's editor panels, ``folded``): opening it
        reruns the app, and this waits for that run to finish."""
        box = (scope or self.page).get_by_test_id("stExpander").filter(
            has=self.page.locator("summary", has_text=label))
        if box.locator("details").get_attribute("open") is None:
            if reruns:
                with self.rerun():
                    box.locator("summary").click()
            else:
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
