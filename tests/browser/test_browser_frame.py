"""Tier 3 (browser): every page loads in a real browser; prompt typing, presenter mode, share links
and HTML-looking tokens behave."""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlparse

import pytest
from browser_helpers import assert_clean, screenshot, sidebar_text_input, wait_idle

from viz import Scenario, load_preset
from viz.share import View, encode_view

APP_PAGES = re.findall(r'st\.Page\("pages/(\w+)\.py".*?(?:url_path="([\w-]+)")?\)',
                       open(__file__.rsplit("/tests/", 1)[0] + "/app.py").read())


@pytest.mark.parametrize("page_file, url_path", APP_PAGES)
def test_every_page_loads_without_an_exception(open_page, page_file, url_path):
    """Each registered page renders in Chromium with no exception, traceback or dialog."""
    page = open_page(url_path)
    assert_clean(page)
    assert page.locator("h1").count() >= 1
    screenshot(page, f"page-{page_file}")


def test_typing_a_prompt_retokenises(open_page):
    """A new prompt typed in the sidebar shows up as tokens in the Prefill page."""
    page = open_page("")
    box = sidebar_text_input(page, "Prompt")
    box.fill("The cat sat on the mat")
    box.press("Enter")
    wait_idle(page)
    assert_clean(page)
    main = page.locator('[data-testid="stMain"]')
    assert "The (position 1) sees The:" in main.inner_text()
    assert "6 tokens" in main.inner_text()
    screenshot(page, "prefill-after-typing")


def test_presenter_mode_enlarges_type_and_folds_editors(open_page):
    """Presenter mode hides the editors, makes the type larger, and switches back."""
    page = open_page("decode")
    size = float(page.evaluate("() => parseFloat(getComputedStyle(document.documentElement).fontSize)"))
    page.locator('[data-testid="stSidebar"]').get_by_text("Presenter mode").click()
    wait_idle(page)
    larger = float(page.evaluate("() => parseFloat(getComputedStyle(document.documentElement).fontSize)"))
    assert larger > size
    assert sidebar_text_input(page, "Prompt").count() == 0
    page.locator("h1").first.click()  # move focus off the toggle: shortcuts skip focused inputs
    page.keyboard.press("ArrowRight")  # the Step shortcut
    wait_idle(page)
    assert "Step 1:" in page.locator('[data-testid="stMain"]').inner_text()
    assert_clean(page)
    screenshot(page, "decode-presenter")
    page.locator('[data-testid="stSidebar"]').get_by_text("Presenter mode").click()
    wait_idle(page)
    assert sidebar_text_input(page, "Prompt").count() == 1


def test_shared_url_restores_the_view(open_page, context):
    """Edit, step, copy the address bar into a fresh session: the same scenario and step come back."""
    page = open_page("decode")
    box = sidebar_text_input(page, "Prompt")
    box.fill("Today's weather is so very")
    box.press("Enter")
    wait_idle(page)
    for _ in range(2):
        page.get_by_role("button", name="Step").click()
        wait_idle(page)
    url = page.url
    assert parse_qs(urlparse(url).query)["step"] == ["2"]
    fresh = context.browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        other = fresh.new_page()
        other.goto(url)
        other.wait_for_selector('[data-testid="stSidebar"]', timeout=120_000)
        wait_idle(other)
        assert sidebar_text_input(other, "Prompt").input_value() == "Today's weather is so very"
        assert "Step 2:" in other.locator('[data-testid="stMain"]').inner_text()
        assert_clean(other)
        screenshot(other, "decode-restored-from-link")
    finally:
        fresh.close()


def test_html_looking_tokens_show_as_text(open_page):
    """A token '<img src=x onerror=alert(1)>' is displayed literally and never becomes an element."""
    hostile = "<img src=x onerror=alert(1)>"
    scenario = Scenario.from_dict({**load_preset("seed").to_dict(), "tokens": ["Today", hostile, "is", "so"]})
    page = open_page("", params=encode_view(View(scenario)))
    assert hostile in page.locator('[data-testid="stMain"]').inner_text()
    assert page.locator('img[src="x"]').count() == 0
    page.wait_for_timeout(500)
    assert_clean(page)
    screenshot(page, "prefill-html-token")
