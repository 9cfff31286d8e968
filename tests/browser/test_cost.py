"""Tier 3 (browser): the Cost page loads in Chromium with a quick measurement, measures the full sweep on
one click, and is screenshotted."""

from __future__ import annotations

from playwright.sync_api import expect


def test_cost_page_measures_on_a_click(app):
    """On arrival the page shows a quick measurement's two plots; a click measures the full sweep."""
    app.open("/cost")
    app.assert_no_exception()
    expect(app.main.get_by_text("A quick first measurement")).to_have_count(1)
    expect(app.main.locator(".js-plotly-plot")).to_have_count(2)
    app.screenshot("cost-on-arrival")

    app.click_button("Measure")
    app.assert_no_exception()
    expect(app.main.locator(".js-plotly-plot")).to_have_count(2)
    expect(app.main.get_by_text("A quick first measurement")).to_have_count(0)
    expect(app.main.get_by_text("Where the cache wins.")).to_have_count(1)
    expect(app.main.get_by_role("button", name="Measure again")).to_have_count(1)
    app.screenshot("cost-measured")

    app.main.get_by_text("Every decode measurement").click()
    expect(app.main.get_by_test_id("stDataFrame").first).to_be_visible()
    app.screenshot("cost-decode-table")
