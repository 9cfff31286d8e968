"""Tier 3 (browser): the picture first in every section and tab (issue 32). Each of Memory's
sections and Real model's tabs, when chosen, opens with its one sentence, then the few controls that
drive its lesson figure (the step control where it steps) and the figure, whole in the first screen: at 1440 × 900 with the
sidebar open and in presenter mode at 1280 × 720. On a 390 × 844 phone the tabs that step keep their
step control and their figure on one screen, before and after a step. First screens go to the
screenshot artifacts.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from viz.core.lessons import words_memory
from viz.core.lessons.leads import PAGE_LEADS
from viz.core.real import words as real_words

from .test_picture_first import DESK, PHONE, PROJECTOR, above_fold, scrolled_to_step
from .visitor import SCREENSHOTS


def in_first_screen(app, locator) -> dict:
    """The element is drawn and lies whole inside the viewport, without scrolling; returns its box."""
    expect(locator).to_be_visible()
    box, view = locator.bounding_box(), app.page.viewport_size
    assert box is not None and box["y"] >= 0 and box["y"] + box["height"] <= view["height"] + 0.5, \
        f"{box} is not whole inside {view['width']}×{view['height']}"
    return box


def plain(markdown: str) -> str:
    """A sentence as a reader sees it (its bold marks gone)."""
    return markdown.replace("**", "")


# each tab: its name, its one sentence, the keyed element of its lesson figure, its step control's
# keyed element (None where it does not step), and a button to press first (None where none is)
TABS = {
    "memory": (
        ("Paged blocks", PAGE_LEADS["memory"].sentence, "memory_pool", "memory_snapshot_row", None),
        ("Eviction and quantisation", words_memory.COMPRESS_LEAD, "memory_attention", "memory_prediction_row",
         None)),
    "real_model": (
        ("Prefill", PAGE_LEADS["real_model"].sentence, "real_detail", None, None),
        ("Decode with the KV cache", plain(real_words.DECODE_LEAD), "real_norms", "real_next_token", None),
        ("K/V heads", "Here each of the 4 query heads has its own K/V head", "real_gqa", None, None),
        ("Cache vs no cache", plain(real_words.COMPARE_LEAD), "real_speed", None, "Run both ways"),
        ("Heads that look like rules", real_words.RULES_LEAD, "real_vs_rule", None, None)),
}
SCREENS = {"desk": (DESK, {}), "projector": (PROJECTOR, {"present": 1})}


def choose(app, page: str, tab: str) -> None:
    """Show a section or a tab: Memory's sections, in its "Show" picker, build only the one shown (a
    choice reruns); Real model's tabs are all drawn."""
    if page == "memory":
        app.show(tab)
        return
    control = app.page.get_by_role("tab", name=tab)
    if control.get_attribute("aria-selected") != "true":
        control.click()
    expect(control).to_have_attribute("aria-selected", "true")


@pytest.mark.parametrize("screen", list(SCREENS))
@pytest.mark.parametrize("page", list(TABS))
def test_every_tab_opens_with_its_sentence_and_its_figure_whole(app, page, screen):
    """Each tab, chosen, shows its one sentence above its lesson figure, and its step control, whole
    in the first screen."""
    size, params = SCREENS[screen]
    app.page.set_viewport_size(size)
    app.open(f"/{page}", **params)
    for tab, sentence, figure, step, button in TABS[page]:
        choose(app, page, tab)
        if button:
            app.click_button(button)
        lead = in_first_screen(app, app.main.get_by_text(sentence).filter(visible=True).first)
        above_fold(app, app.main.locator(f".st-key-{figure} >> visible=true"))
        drawn = app.main.locator(f".st-key-{figure} >> visible=true").first.bounding_box()
        assert lead["y"] + lead["height"] <= drawn["y"] + 0.5, f"{tab}: the sentence is not above the figure"
        if step:
            in_first_screen(app, app.main.locator(f".st-key-{step} >> visible=true").first)
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        name = f"tab-{page}-{tab.split()[0].lower().replace('/', '')}-{size['width']}x{size['height']}.png"
        app.page.screenshot(path=str(SCREENSHOTS / name))  # the first screen
        app.assert_no_exception()


def test_kivis_controls_share_one_row_and_the_figure_stays_whole_at_a_desk(app):
    """At 1440 × 900, quantising with KIVI adds two controls to the method's row, not a row of their
    own: the step control and the attention still lie whole in the first screen."""
    app.page.set_viewport_size(DESK)
    app.open("/memory")
    choose(app, "memory", "Eviction and quantisation")
    for choice in ("Quantise", "KIVI"):
        with app.rerun():
            app.page.get_by_role("radio", name=choice, exact=True).click()
    expect(app.main.get_by_text("Newest tokens in full precision (R)")).to_be_visible()
    in_first_screen(app, app.main.locator(".st-key-memory_prediction_row >> visible=true").first)
    above_fold(app, app.main.locator(".st-key-memory_attention >> visible=true"))
    app.assert_no_exception()


# the tabs that step, on a phone: their name, their forward control, and the lesson figure it steps
PHONE_TABS = {
    "memory": ("Eviction and quantisation", ".st-key-memory_prediction_forward button", ".st-key-memory_attention"),
    "real_model": ("Decode with the KV cache", ".st-key-real_next_token button", ".st-key-real_norms"),
}


def step_and_figure_share_the_screen(app, forward, figure) -> tuple[dict, dict]:
    """Scrolled so the step control is at the top of the screen (under Streamlit's header), the figure
    lies whole below it on the same 390 × 844 screen, and nothing sticks out sideways."""
    _, step, drawn = scrolled_to_step(app, forward, figure)
    assert drawn["x"] >= 0 and drawn["x"] + drawn["width"] <= PHONE["width"] + 0.5, drawn
    assert drawn["height"] >= 250, f"the figure {drawn} is squeezed"
    wide = app.page.evaluate("document.documentElement.scrollWidth")
    assert wide <= PHONE["width"], f"the page is {wide} px wide: it scrolls sideways"
    return step, drawn


@pytest.mark.parametrize("page", list(PHONE_TABS))
def test_on_a_phone_each_stepping_tab_keeps_its_step_control_and_figure_on_one_screen(app, page):
    """At 390 × 844, Memory's eviction tab and Real model's Decode tab: scrolled to the step control,
    the figure it steps lies whole below it, before and after a step (a student taps forward and
    sees the change without scrolling), and the page does not scroll sideways."""
    tab, forward_at, figure_at = PHONE_TABS[page]
    app.page.set_viewport_size(PHONE)
    app.open(f"/{page}")
    choose(app, page, tab)
    forward, figure = (app.main.locator(f"{selector} >> visible=true").first for selector in (forward_at, figure_at))
    expect(figure).to_be_visible()
    step_and_figure_share_the_screen(app, forward, figure)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    app.page.screenshot(path=str(SCREENSHOTS / f"tab-{page}-phone-{PHONE['width']}x{PHONE['height']}.png"))
    with app.rerun():
        forward.click()
    step_and_figure_share_the_screen(app, forward, figure)
    if page == "memory":  # a board: every key's cell whole at a phone's width, its weight or ✕ readable
        cells = figure.locator(".cell")
        expect(cells.first).to_be_visible()
        cut = cells.evaluate_all("cells => cells.filter(c => c.scrollWidth > c.clientWidth + 1).map(c => c.textContent)")
        assert cells.count() > 20 and not cut, f"cells cut short on a phone: {cut}"
    app.page.screenshot(path=str(SCREENSHOTS / f"tab-{page}-phone-stepped-{PHONE['width']}x{PHONE['height']}.png"))
    app.assert_no_exception()
