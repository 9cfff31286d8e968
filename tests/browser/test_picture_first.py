"""Tier 3 (browser): the picture first (issue 32). Memory, At scale, Serving, Real model and Cost open
with their one sentence and their lesson figure whole in the first screen at 1440 × 900 and in
presenter mode at 1280 × 720 and 1920 × 1080; on a 390 × 844 phone the pages that step show their
step control and their lesson figure on one screen (Prefill, Memory and Decode as they open); presenter
mode folds the sidebar, says beside the page's sentence how it opens again, and unfolds it on exit;
the sidebar is one width on every visit; after a click on a choice → never changes it, and steps
(the lesson's keys). First screens go to docs/screenshots/review/.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from viz.core.lessons import words_decode, words_prefill
from viz.core.lessons.leads import PAGE_LEADS, PRESENTER_HINT
from viz.tools.server import ROOT
from viz.ui.sidebar import WIDTH_PX

from .visitor import SCREENSHOTS

DESK = {"width": 1440, "height": 900}
PROJECTOR = {"width": 1280, "height": 720}
PROJECTOR_HD = {"width": 1920, "height": 1080}
PHONE = {"width": 390, "height": 844}
REVIEW = ROOT / "docs" / "screenshots" / "review"
# the pages whose first screens the docs keep (small PNGs)
REVIEWED = ("memory", "at_scale", "serving", "real_model", "cost", "decode")

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


# the element's width once it has stopped changing (the sidebar slides open)
SETTLED_WIDTH_JS = """box => new Promise(done => {
    let last = -1;
    const look = () => { const width = box.getBoundingClientRect().width;
                         if (width === last) done(width); else { last = width; setTimeout(look, 150); } };
    look(); })"""


def sidebar_px(app) -> float:
    """The open sidebar's width (px), once it has slid open."""
    expect(app.sidebar).to_have_attribute("data-collapsed", "false")
    return app.sidebar.evaluate(SETTLED_WIDTH_JS)


def test_presenter_mode_folds_the_sidebar_and_unfolds_it_on_exit(app):
    """Turning presenter mode on folds the sidebar and says how it opens again on the page's first
    line, beside its sentence and above the narration (no toast over the lesson); off unfolds it, as
    wide as before."""
    app.page.set_viewport_size(PROJECTOR)
    app.open("/")  # a cold server lists the pages/ folder (300 px) until a first session has run app.py
    app.open("/decode")
    assert sidebar_px(app) == WIDTH_PX
    app.toggle("Presenter mode")
    expect(app.sidebar).to_have_attribute("data-collapsed", "true")
    app.main.evaluate(SETTLED_WIDTH_JS)  # measured once the page has widened as the sidebar slid shut
    hint, sentence = app.main.get_by_text(PRESENTER_HINT, exact=True), app.main.get_by_text(words_decode.LEAD)
    above_fold(app, app.main.locator(".st-key-lesson_attention"))
    narration = app.main.get_by_test_id("stAlertContentInfo").first.bounding_box()
    for said in (hint, sentence):
        expect(said).to_be_visible()
        box = said.bounding_box()
        assert box["y"] >= 0 and box["y"] + box["height"] <= narration["y"], (box, narration)
    assert abs(hint.bounding_box()["y"] - sentence.bounding_box()["y"]) < 2  # one line at 1280 px
    expect(app.page.get_by_test_id("stToast")).to_have_count(0)
    app.page.get_by_test_id("stExpandSidebarButton").click()
    assert sidebar_px(app) == WIDTH_PX
    app.toggle("Presenter mode")
    assert sidebar_px(app) == WIDTH_PX
    app.assert_no_exception()


def test_presenter_mode_folds_a_sidebar_opened_by_hand_and_unfolds_it_on_exit(app):
    """A teacher's review: in presenter mode she opened the sidebar (») to edit, left presenter mode and
    turned it on again: the sidebar stayed open (Streamlit's browser keeps a choice made by hand over the
    page's initial state). Each turn on folds an open sidebar; each turn off unfolds the one it folded,
    as wide as before; a sidebar opened during presenter mode stays open until the next turn."""
    app.page.set_viewport_size(PROJECTOR)
    app.open("/")  # a cold server lists the pages/ folder (300 px) until a first session has run app.py
    app.open("/decode")
    app.toggle("Presenter mode")
    expect(app.sidebar).to_have_attribute("data-collapsed", "true")
    app.page.get_by_test_id("stExpandSidebarButton").click()  # opened by hand, to edit
    assert sidebar_px(app) == WIDTH_PX
    with app.rerun():
        app.main.get_by_role("button", name="Step", exact=True).click()
    expect(app.sidebar).to_have_attribute("data-collapsed", "false")  # a run later: still open
    for _ in range(2):
        app.toggle("Presenter mode")  # off, from the open sidebar (where the toggle is): it stays open
        assert sidebar_px(app) == WIDTH_PX
        app.toggle("Presenter mode")  # on again: folded, whatever the hand did before
        expect(app.sidebar).to_have_attribute("data-collapsed", "true")
        app.page.get_by_test_id("stExpandSidebarButton").click()  # opened by hand again
        assert sidebar_px(app) == WIDTH_PX
    app.assert_no_exception()


def test_the_sidebar_is_one_width_on_every_visit(app, new_app):
    """The sidebar opens WIDTH_PX wide (app.py's st.set_page_config) on a page, on the next page, after
    a reload and once a presenter link leaves presenter mode: Streamlit reads the width once, when it
    first draws the sidebar (it was 300 px, Streamlit's default, on some visits)."""
    app.open("/")  # a cold server lists the pages/ folder (300 px) until a first session has run app.py
    for opened in ({}, {"present": 1}):
        visitor = new_app()
        visitor.page.set_viewport_size(DESK)
        visitor.open("/decode", **opened)
        if opened:  # a presenter link: the sidebar opened by hand, presenter mode turned off
            expect(visitor.sidebar).to_have_attribute("data-collapsed", "true")
            visitor.page.get_by_test_id("stExpandSidebarButton").click()
            visitor.toggle("Presenter mode")
        assert sidebar_px(visitor) == WIDTH_PX
        with visitor.rerun():
            visitor.sidebar.get_by_role("link", name="Memory").click()
        assert sidebar_px(visitor) == WIDTH_PX
        visitor.open_url(visitor.page.url)  # a reload
        assert sidebar_px(visitor) == WIDTH_PX
        visitor.assert_no_exception()


def test_a_presenter_link_opens_with_the_sidebar_folded(app):
    """A share link in presenter mode opens on a projector with the sidebar folded."""
    app.page.set_viewport_size(PROJECTOR)
    app.open("/decode", present=1)
    expect(app.sidebar).to_have_attribute("data-collapsed", "true")
    app.assert_no_exception()


SCREENS = {"desk": (DESK, {}), "projector": (PROJECTOR, {"present": 1}),
           "projector-hd": (PROJECTOR_HD, {"present": 1})}


@pytest.mark.parametrize("screen", list(SCREENS))
@pytest.mark.parametrize("page", list(LESSON_FIGURES))
def test_the_lesson_figure_opens_above_the_fold(app, page, screen):
    """At 1440 × 900 (sidebar open) and in presenter mode at 1280 × 720 and 1920 × 1080 (sidebar
    folded), the page's one sentence and its lesson figure lie whole in the first screen."""
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
    """Memory's pool has the same step control and keys as Decode: it opens at its first iteration,
    → goes forward one iteration and ← back one."""
    app.page.set_viewport_size(DESK)
    app.open("/memory")
    slider = app.main.get_by_role("slider", name="Step · scheduler iteration")
    expect(slider).to_have_attribute("aria-valuetext", "prefill A")
    with app.rerun():
        app.page.keyboard.press("ArrowRight")
    expect(slider).to_have_attribute("aria-valuetext", "prefill B")
    with app.rerun():
        app.page.keyboard.press("ArrowLeft")
    expect(slider).to_have_attribute("aria-valuetext", "prefill A")
    app.assert_no_exception()


def test_decodes_lesson_screen_opens_whole_at_a_desk(app):
    """At 1440 × 900 with the sidebar open, Decode after one step (the stale-cache warning with its
    two buttons above the boards) shows its three lesson boards whole in the first screen."""
    app.page.set_viewport_size(DESK)
    app.open("/decode", step=1)
    for key in ("lesson_attention", "lesson_cache", "lesson_words"):
        above_fold(app, app.main.locator(f".st-key-{key}"))
    app.page.screenshot(path=str(REVIEW / f"decode-{DESK['width']}x{DESK['height']}.png"))
    app.assert_no_exception()


# the pages that step: their forward control, and the figure it steps
STEPPED = {
    "memory": (".st-key-memory_snapshot_forward button", LESSON_FIGURES["memory"]),
    "serving": (".st-key-serving_step_continuous_forward button", LESSON_FIGURES["serving"]),
    # on a phone Decode's forward is the step bar over its board (the page's Step stands above the
    # narration, the warning and the choices: test_on_a_phone_decodes_board_steps_from_its_own_bar...)
    "decode": (".st-key-lesson_attention button.step.primary", ".st-key-lesson_attention"),
    "prefill": (".st-key-prefill_position_forward button", ".st-key-lesson_attention"),
}
# each stepped page's one sentence (Prefill's and Decode's in their words modules)
SENTENCES = {**{page: lead.sentence for page, lead in PAGE_LEADS.items()},
             "prefill": words_prefill.CAPTION, "decode": words_decode.LEAD}
# The pages whose first screen on a phone, before any scroll, shows the sentence, the step control and
# the figure's top (its title and first row: FIGURE_TOP_PX): every stepped page (Serving's workload and
# settings stood above its step control, at 602 px, and its timeline started at 874; they stack under
# the lesson now, tests/browser/test_serving.py measures each of its sections).
OPENS_STEPPING = tuple(STEPPED)
FIGURE_TOP_PX = 48


# Scroll the step control to the top of the screen, just under Streamlit's header (which covers the
# page's top); returns the header's height. The scrolling box is found through a shadow root's host
# (the board's step bar lives in the component's shadow root).
SCROLL_UNDER_HEADER_JS = """control => {
    control.scrollIntoView({block: 'start'});
    const header = document.querySelector('[data-testid=stHeader]').getBoundingClientRect().bottom;
    const up = node => node.parentElement || (node.getRootNode().host || null);
    let box = up(control);
    while (box && !(box.scrollHeight > box.clientHeight && getComputedStyle(box).overflowY !== 'visible'))
        box = up(box);
    if (box) box.scrollTop -= header;
    return header; }"""


def scrolled_to_step(app, forward, figure) -> tuple[float, dict, dict]:
    """Scroll the step control ``forward`` to the top of a phone's screen (under Streamlit's header) and
    check that ``figure`` lies whole below it on that screen; (header height, step box, figure box)."""
    header = forward.evaluate(SCROLL_UNDER_HEADER_JS)
    app.page.wait_for_timeout(300)  # the scroll lands
    step, drawn = forward.bounding_box(), figure.bounding_box()
    assert step["y"] > header - 1 and step["y"] <= drawn["y"] + 0.5, (header, step, drawn)  # above it, or its top
    assert drawn["y"] + drawn["height"] <= PHONE["height"] + 0.5, \
        f"the figure {drawn} does not end on the screen whose top (under the {header:.0f} px header) is the step control {step}"
    return header, step, drawn


@pytest.mark.parametrize("page", list(STEPPED))
def test_on_a_phone_the_step_control_and_the_figure_share_one_screen(app, page):
    """At 390 × 844, as the page opens, its first screen shows its sentence, its step control and the
    top of its figure (OPENS_STEPPING); scrolled to the step control, the lesson figure it steps lies
    whole below it on the same screen: a student taps forward and sees the change without scrolling."""
    app.page.set_viewport_size(PHONE)
    app.open(f"/{page}", **({"step": 1} if page == "decode" else {}))
    forward, figure = (app.main.locator(f"{selector} >> visible=true").first for selector in STEPPED[page])
    expect(figure).to_be_visible()
    if page in OPENS_STEPPING:  # the first screen, as the page opens: no scrolling to the step control
        for said in (app.main.get_by_text(SENTENCES[page]).first, forward):
            box = said.bounding_box()
            assert box["y"] >= 0 and box["y"] + box["height"] <= PHONE["height"], (page, box)
        assert figure.bounding_box()["y"] + FIGURE_TOP_PX <= PHONE["height"], (page, figure.bounding_box())
    scrolled_to_step(app, forward, figure)
    app.page.screenshot(path=str(REVIEW / f"{page}-{PHONE['width']}x{PHONE['height']}.png"))
    app.assert_no_exception()


@pytest.mark.parametrize("step", [6, 12])
def test_on_a_phone_decodes_board_steps_from_its_own_bar_with_the_whole_board_on_one_screen(app, step):
    """At 390 × 844 Decode's controls, narration, stale-cache warning and choices stack above the
    attention board: at step 12 its last row ended at 964 px on the screen whose top (under the header)
    was the page's Step. The board carries its own step bar (← Back, Step →) over its title: scrolled
    there, the whole board lies on that screen, and a tap is the page's Step (the next step drawn, the
    narration moves on) with the bar still on the screen. At a desk the bar is not shown."""
    app.page.set_viewport_size(PHONE)
    app.open("/decode", step=step)
    figure = app.main.locator(f"{STEPPED['decode'][1]} >> visible=true").first
    forward = figure.get_by_role("button", name="Step →")
    header = forward.evaluate(SCROLL_UNDER_HEADER_JS)
    app.page.wait_for_timeout(300)  # the scroll lands
    bar, drawn = forward.bounding_box(), figure.bounding_box()
    assert bar["y"] > header - 1 and drawn["y"] + drawn["height"] <= PHONE["height"] + 0.5, (header, bar, drawn)
    expect(figure.get_by_role("button", name="← Back")).to_be_enabled()
    with app.rerun():
        forward.click()
    expect(app.main.get_by_text(f"Step {step + 1}:").first).to_be_visible()
    after = forward.bounding_box()
    assert header - 1 < after["y"] and after["y"] + after["height"] <= PHONE["height"], (header, after)
    app.page.set_viewport_size({"width": 1440, "height": 900})
    expect(forward).to_be_hidden()
    app.assert_no_exception()


def test_on_a_phone_at_scales_inputs_take_two_rows_and_its_curve_starts_on_the_first_screen(app):
    """At 390 × 844 At scale's four inputs wrap two to a row (four stacked columns put the cache curve's
    title at 750 px), so the first screen shows the sentence, the inputs and the curve's top; at a desk
    they stay one row."""
    for size, rows in ((PHONE, 2), (DESK, 1)):
        app.page.set_viewport_size(size)
        app.open("/at_scale")
        inputs = [app.main.get_by_test_id(kind).nth(i) for kind in ("stSelectbox", "stNumberInput") for i in (0, 1)]
        tops = {round(box.bounding_box()["y"]) for box in inputs}
        assert len(tops) == rows, (size, tops)
        assert max(box.bounding_box()["x"] + box.bounding_box()["width"] for box in inputs) <= size["width"]
    curve = app.main.locator(LESSON_FIGURES["at_scale"])
    expect(curve).to_be_visible()
    app.page.set_viewport_size(PHONE)
    app.open("/at_scale")
    assert curve.bounding_box()["y"] + FIGURE_TOP_PX <= PHONE["height"], curve.bounding_box()
    app.assert_no_exception()
