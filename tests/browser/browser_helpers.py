"""Helpers for the browser tests: wait for Streamlit to settle, check the page, save screenshots."""

from __future__ import annotations

from pathlib import Path

SCREENSHOTS = Path(__file__).resolve().parents[2] / "artifacts" / "screenshots"
APP = '[data-testid="stApp"]'


def wait_idle(page, timeout: float = 120_000) -> None:
    """Wait until the script has finished (twice in a row: an edit may trigger a second run) and no
    element is still loading."""
    quiet = 0
    waited = 0
    while quiet < 3:
        state = page.get_attribute(APP, "data-test-script-state")
        busy = state != "notRunning" or page.locator('[data-testid="stSkeleton"]').count() > 0
        quiet = 0 if busy else quiet + 1
        page.wait_for_timeout(250)
        waited += 250
        if waited > timeout:
            raise TimeoutError(f"the app did not settle within {timeout / 1000:.0f} s")
    page.wait_for_function(
        "() => [...document.querySelectorAll('.js-plotly-plot')].every(p => p.querySelector('.main-svg'))",
        timeout=timeout)


def assert_clean(page) -> None:
    """No Streamlit exception element, no Python traceback text, no JavaScript dialog."""
    assert page.locator('[data-testid="stException"]').count() == 0, "an exception is shown"
    body = page.inner_text("body")
    assert "Traceback (most recent call last)" not in body
    assert not getattr(page.context, "dialogs", []), f"a dialog fired: {page.context.dialogs}"


def screenshot(page, name: str) -> Path:
    """A full-page screenshot in artifacts/screenshots/ (the app scrolls inside its own container,
    so the viewport is stretched to the content first)."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    height = page.evaluate("() => Math.max(...[...document.querySelectorAll('section, [data-testid=stMain]')]"
                           ".map(e => e.scrollHeight), document.body.scrollHeight)")
    size = page.viewport_size
    page.set_viewport_size({"width": size["width"], "height": min(max(height + 40, size["height"]), 12_000)})
    page.wait_for_timeout(400)
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    page.set_viewport_size(size)
    return path


def sidebar_text_input(page, label: str):
    return page.locator('[data-testid="stSidebar"]').get_by_label(label, exact=True)
