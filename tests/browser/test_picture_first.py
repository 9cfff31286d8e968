"""Tier 3 (browser): the picture first (issue 32). Every lesson page opens with its one sentence and
its lesson figure whole above the fold at 1440 × 900; presenter mode folds the sidebar (and unfolds
it on exit) at 1280 × 720; after a click on a choice, → still steps the lesson instead of changing
the choice. Screenshots of a few pages at the review sizes go to docs/screenshots/review/.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from viz.core.lessons.leads import PAGE_LEADS
from viz.tools.server import ROOT

DESK = {"width": 1440, "height": 900}
PROJECTOR = {"width": 1280, "height": 720}
REVIEW = ROOT / "docs" / "screenshots" / "review"

# the lesson figure of each page: the keyed element (Streamlit's st-key-<key> class) it is drawn in
LESSON_FIGURES = {
    "memory": ".st-key-memory_pool",
    "at_scale": ".st-key-scale_lesson",
    "serving": ".st-key-serving_lesson",
    "real_model": ".st-key-real_lesson",
    "cost": ".st-key-cost_lesson",
}


def above_fold(app, locator) -> None:
    """The element is drawn and lies whole inside the viewport, without scrolling."""
    expect(locator.first).to_be_visible()
    box = locator.first.bounding_box()
    view = app.page.viewport_size
    assert box is not None and box["height"] > 50
    assert box["y"] >= 0 and box["y"] + box["height"] <= view["height"] + 0.5, \
        f"{box} is not whole inside {view['width']}×{view['height']}"


def test_presenter_mode_folds_the_sidebar_and_unfolds_it_on_exit(app):
    """Turning presenter mode on folds the sidebar and says how it opens again; off unfolds it."""
    app.page.set_viewport_size(PROJECTOR)
    app.open("/decode")
    expect(app.sidebar).to_have_attribute("data-collapsed", "false")
    app.toggle("Presenter mode")
    expect(app.sidebar).to_have_attribute("data-collapsed", "true")
    expect(app.page.get_by_text(re.compile("the sidebar is folded away"))).to_be_visible()
    app.page.get_by_test_id("stExpandSidebarButton").click()
    expect(app.sidebar).to_have_attribute("data-collapsed", "false")
    app.toggle("Presenter mode")
    expect(app.sidebar).to_have_attribute("data-collapsed", "false")
    app.assert_no_exception()


def test_a_presenter_link_opens_with_the_sidebar_folded(app):
    """A share link in presenter mode opens on a projector with the sidebar folded."""
    app.page.set_viewport_size(PROJECTOR)
    app.open("/decode", present=1)
    expect(app.sidebar).to_have_attribute("data-collapsed", "true")
    app.assert_no_exception()
