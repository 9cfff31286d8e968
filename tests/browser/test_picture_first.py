"""Tier 3 (browser): the picture first (issue 32). Memory, At scale, Serving, Real model and Cost open
with their one sentence and their lesson figure whole in the first screen at 1440 × 900 and in
presenter mode at 1280 × 720 (the cases that do not fit yet are strict xfails with the measured
gap); presenter mode folds the sidebar and unfolds it on exit; after a click on a choice → never
changes it, and steps once the focus is off it. First screens go to docs/screenshots/review/.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from viz.core.lessons.leads import PAGE_LEADS
from viz.tools.server import ROOT

from .visitor import SCREENSHOTS

DESK = {"width": 1440, "height": 900}
PROJECTOR = {"width": 1280, "height": 720}
REVIEW = ROOT / "docs" / "screenshots" / "review"
REVIEWED = ("memory", "serving", "cost")  # the pages whose first screens the docs keep (small PNGs)

# the lesson figure of each page: the keyed element (Streamlit's st-key-<key> class) it is drawn in
LESSON_FIGURES = {
    "memory": ".st-key-memory_pool",
    "at_scale": ".st-key-scale_curve",
    "serving": ".st-key-serving_timeline_continuous",
    "real_model": ".st-key-real_detail",
    "cost": ".st-key-cost_decode",
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


# Where the lesson figure is not yet whole in the first screen, measured (issue 32 stays open for
# these): strict, so a fix shows up as an unexpected pass.
TOO_TALL = {
    ("real_model", "desk"): "its one-head attention figure is 644 px tall and starts at y = 654",
    ("memory", "projector"): "the pool board ends about 11 px below 720",
    ("at_scale", "projector"): "the 444 px curve starts at y = 397",
    ("serving", "projector"): "the 398 px timeline starts at y = 465",
    ("real_model", "projector"): "the model picker, prompt and tabs come first",
}
SCREENS = {"desk": (DESK, {}), "projector": (PROJECTOR, {"present": 1})}


def _cases():
    for page in LESSON_FIGURES:
        for screen in SCREENS:
            reason = TOO_TALL.get((page, screen))
            marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
            yield pytest.param(page, screen, id=f"{page}-{screen}", marks=marks)


@pytest.mark.parametrize(("page", "screen"), list(_cases()))
def test_the_lesson_figure_opens_above_the_fold(app, page, screen):
    """At 1440 × 900 (sidebar open) and in presenter mode at 1280 × 720 (sidebar folded), the page's
    one sentence and its lesson figure lie whole in the first screen."""
    size, params = SCREENS[screen]
    app.page.set_viewport_size(size)
    app.open(f"/{page}", **params)
    expect(app.main.get_by_text(PAGE_LEADS[page].sentence)).to_have_count(1)
    if params:  # presenter mode
        expect(app.sidebar).to_have_attribute("data-collapsed", "true")
    folder = REVIEW if page in REVIEWED else SCREENSHOTS  # a few pages in the docs, the rest as artifacts
    folder.mkdir(parents=True, exist_ok=True)
    app.page.screenshot(path=str(folder / f"{page}-{size['width']}x{size['height']}.png"))  # the first screen
    above_fold(app, app.main.locator(LESSON_FIGURES[page]))
    app.assert_no_exception()


def test_a_key_never_changes_a_choice_and_steps_wherever_the_focus_is(app):
    """Decode in presenter mode at 1280 × 720: after a click on a head, → steps and leaves the head
    as it was (the lesson's keys, viz/ui/board/README.md); with the focus on the page, → steps."""
    app.page.set_viewport_size(PROJECTOR)
    app.open("/decode", present=1, step=1)
    app.pick("Head", "first")
    assert app.query.get("head") == "3"
    with app.rerun():
        app.page.keyboard.press("ArrowRight")
    assert app.query.get("head") == "3" and app.query.get("step") == "2"
    app.main.get_by_test_id("stAlertContentInfo").first.click()  # the focus off the choice
    with app.rerun():
        app.page.keyboard.press("ArrowRight")
    assert app.query.get("step") == "3" and app.query.get("head") == "3"
    app.assert_no_exception()


def test_the_arrow_keys_step_memorys_pool(app):
    """Memory's pool has the same step control and keys as Decode: ← goes back one iteration."""
    app.page.set_viewport_size(DESK)
    app.open("/memory")
    slider = app.main.get_by_role("slider", name="Scheduler iteration")
    start = slider.get_attribute("aria-valuetext")
    with app.rerun():
        app.page.keyboard.press("ArrowLeft")
    expect(slider).not_to_have_attribute("aria-valuetext", start)
    app.assert_no_exception()


@pytest.mark.parametrize("size", [{"width": 1920, "height": 1080}, {"width": 390, "height": 844}])
def test_review_screenshots(app, size):
    """The first screen of Memory and Serving in presenter mode at 1920 × 1080 and on a phone, for review."""
    app.page.set_viewport_size(size)
    for page in ("memory", "serving"):
        app.open(f"/{page}", **({"present": 1} if size["width"] > 1000 else {}))
        expect(app.main.get_by_text(PAGE_LEADS[page].sentence)).to_have_count(1)
        expect(app.main.locator(LESSON_FIGURES[page]).first).to_be_attached()
        app.page.screenshot(path=str(REVIEW / f"{page}-{size['width']}x{size['height']}.png"))
        app.assert_no_exception()
