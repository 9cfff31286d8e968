"""Tier 3 (browser): the Cost page loads in Chromium, measures on one click, and is screenshotted."""

from __future__ import annotations

from browser_helpers import assert_clean, screenshot, wait_idle


def test_cost_page_measures_on_a_click(open_page):
    """Before a click the page explains and plots nothing; a click measures and draws both plots."""
    page = open_page("cost")
    assert_clean(page)
    assert page.get_by_text("to time decoding on this machine").count() == 1
    assert page.locator(".js-plotly-plot").count() == 0
    screenshot(page, "cost-before")

    page.get_by_role("button", name="Measure").click()
    wait_idle(page)
    assert_clean(page)
    assert page.locator(".js-plotly-plot").count() == 2
    assert page.get_by_text("Where the cache wins.").count() == 1
    assert page.get_by_role("button", name="Measure again").count() == 1
    screenshot(page, "cost-measured")

    page.get_by_text("Every decode measurement").click()
    wait_idle(page)
    table = page.locator('[data-testid="stDataFrame"]').first
    assert table.is_visible()
    screenshot(page, "cost-decode-table")
