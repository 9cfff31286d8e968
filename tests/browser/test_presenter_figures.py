"""Tier 3 (browser): figures a teacher projects, measured in presenter mode at 1280 × 720 and
1920 × 1080 (issue 32's review): every text in the first screen of every page at least 16 px,
Streamlit's own widget text included; Decode's stale-cache side by side whole in the first screen at
1920 × 1080, Real model's one-head figure with large cell text that still fits 1280 × 720, the
tour's revealed figures with x tick labels that do not collide, and Cost's legend clear of its
axis titles.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from viz import load_preset
from viz.core.engine.share import View, encode_view
from viz.core.lessons.leads import DEVELOPERS
from viz.core.lessons.tour import POOL_INTRO, RIGHT_MARK
from viz.ui.common import PRESENTER_TEXT_PX

from .test_lesson_screen import assert_inside

PROJECTOR = {"width": 1280, "height": 720}
PROJECTOR_HD = {"width": 1920, "height": 1080}
DESK = {"width": 1440, "height": 900}

# The boxes (x, y, width, height) of a figure's SVG texts found by a selector (Plotly's classes).
TEXT_BOXES_JS = """(figure, selector) => [...figure.querySelectorAll(selector)]
    .filter(t => t.textContent.trim() && t.getBoundingClientRect().width > 0)
    .map(t => { const r = t.getBoundingClientRect(); return [t.textContent, r.x, r.y, r.width, r.height]; })"""
# a heatmap's cell numbers: Plotly's own labels, or the see-through bars' that write them where a phone's
# cells would not hold them (viz.figures.room.numbers_layer)
CELL_TEXT = ".heatmap-label text, .bartext"
CELL_TEXT_PX_JS = """figure => [...figure.querySelectorAll('.heatmap-label text, .bartext')]
    .filter(t => t.getBoundingClientRect().width > 0)
    .map(t => parseFloat(getComputedStyle(t).fontSize))"""


# Every text in the first screen, widget chrome, Plotly's SVG and the boards (in their shadow roots)
# included: [text, computed px, top, the nearest Streamlit element's test id]. Drawn text only: a box
# of at least 2 × 2 px (not the screen-reader-only title), not hidden, not transparent.
SCREEN_TEXT_JS = """() => {
  const texts = [];
  const walk = root => root.querySelectorAll('*').forEach(e => {
    if (e.shadowRoot) walk(e.shadowRoot);
    if (![...e.childNodes].some(n => n.nodeType === 3 && n.textContent.trim())) return;
    const r = e.getBoundingClientRect(), style = getComputedStyle(e);
    if (r.width < 2 || r.height < 2 || r.right <= 0 || r.x >= innerWidth || r.bottom <= 0 || r.y >= innerHeight
        || style.visibility === 'hidden' || style.opacity === '0') return;
    const owner = e.closest('[data-testid]');
    texts.push([e.textContent.trim().slice(0, 40), parseFloat(style.fontSize), Math.round(r.y),
                owner ? owner.dataset.testid : '']);
  });
  walk(document);
  return texts;
}"""
# the view each page opens on for this test: Decode after the step that makes a key stale, the tour
# at a question
OPENED_AT = {"decode": {"step": 1}, "tour": {"tour": 3}}


@pytest.mark.parametrize("size", [PROJECTOR, PROJECTOR_HD])
def test_every_text_in_a_presenter_first_screen_is_at_least_16px(app, registered_page, size):
    """In presenter mode every text the first screen shows is at least 16 px: Streamlit's buttons,
    labels, tabs, captions and slider values (0.875 of the root size) as well as figures and boards."""
    app.page.set_viewport_size(size)
    app.open(registered_page.url_path, present=1, **OPENED_AT.get(registered_page.name, {}))
    if registered_page.name in ("decode", "prefill"):  # the boards draw once their script has loaded
        expect(app.main.locator(".st-key-lesson_words figure.board")).to_have_count(1)
    texts = app.page.evaluate(SCREEN_TEXT_JS)
    assert len(texts) >= 10, texts
    small = [t for t in texts if t[1] < PRESENTER_TEXT_PX]
    assert not small, f"{registered_page.name} at {size['width']}: text under {PRESENTER_TEXT_PX} px: {small[:8]}"
    app.assert_no_exception()


def overlap(a, b) -> bool:
    """Whether two boxes (label, x, y, width, height) share any area (touching edges do not count)."""
    return (a[1] < b[1] + b[3] - 0.5 and b[1] < a[1] + a[3] - 0.5
            and a[2] < b[2] + b[4] - 0.5 and b[2] < a[2] + a[4] - 0.5)


def collisions(boxes: list) -> list:
    return [(a[0], b[0]) for i, a in enumerate(boxes) for b in boxes[i + 1:] if overlap(a, b)]


@pytest.mark.parametrize("size", [PROJECTOR, PROJECTOR_HD])
def test_decode_stale_side_by_side_is_whole_in_the_first_screen(app, size):
    """After one step with head 'last' shown, its cache against recomputation lies whole in the first
    screen at 1280 × 720 and 1920 × 1080, in the next word's place beside the cache board that marks
    the stale key; the figure of every key is in the comparison tab below."""
    app.page.set_viewport_size(size)
    app.open("/decode", **encode_view(View(load_preset("seed"), step=1, presenter=True, head=1)))
    stale = app.main.locator(".st-key-decode_stale")
    expect(stale.locator(".js-plotly-plot")).to_have_count(1)
    expect(app.main.locator(".st-key-lesson_cache .cell", has_text="stale")).to_have_count(1)
    side = app.main.locator(".st-key-lesson_words figure.board")
    expect(side.locator("figcaption")).to_contain_text("Head 'last': context 6 cached, 7 recomputed")
    expect(side.locator(".cell", has_text="stale")).to_have_count(1)
    assert_inside(app, "stale-cache side by side", side)
    assert_inside(app, "KV cache", app.main.locator(".st-key-lesson_cache"))
    app.assert_no_exception()
    app.screenshot(f"presenter-decode-stale-{size['width']}x{size['height']}")


@pytest.mark.parametrize("size, present, least", [(PROJECTOR, True, 16), (PROJECTOR_HD, True, 16),
                                                  (DESK, False, 12)])
def test_real_models_head_figure_has_large_cell_text_and_fits(app, size, present, least):
    """The one-head attention figure's cell numbers are at least 16 px in presenter mode (12 px at a
    desk), and the figure lies whole in the first screen."""
    app.page.set_viewport_size(size)
    app.open("/real_model", **({"present": 1} if present else {}))
    detail = app.main.locator(".st-key-real_detail")
    expect(detail.locator(CELL_TEXT).first).to_be_visible()
    sizes = detail.evaluate(CELL_TEXT_PX_JS)
    assert sizes and min(sizes) >= least, (min(sizes), least)
    assert_inside(app, "one-head attention", detail)
    app.assert_no_exception()
    app.screenshot(f"presenter-real-detail-{size['width']}x{size['height']}")


@pytest.mark.parametrize("size", [PROJECTOR, PROJECTOR_HD])
@pytest.mark.parametrize("tour, question, key", [(3, 1, "tour_multiples"), (5, 3, "tour_prediction")])
def test_the_tours_revealed_figure_has_ticks_that_do_not_collide(app, size, tour, question, key):
    """After Reveal, the answer's figures (every head's weights; the logits and probabilities) have
    level x tick labels, none overlapping another."""
    app.page.set_viewport_size(size)
    app.open("/tour", present=1, tour=tour)
    app.click_button("Reveal", app.main.locator(f".st-key-tour_question_{question}"))
    figure = app.main.locator(f".st-key-{key} .js-plotly-plot").first
    expect(figure).to_be_visible()
    ticks = figure.evaluate(TEXT_BOXES_JS, ".xaxislayer-above text")
    assert len(ticks) >= 3, ticks
    assert not collisions(ticks), collisions(ticks)
    assert all(box[4] < 30 for box in ticks), ticks  # one level line each, not turned on end
    app.assert_no_exception()
    app.screenshot(f"presenter-tour-{tour}-revealed-{size['width']}x{size['height']}")


@pytest.mark.parametrize("tour, question", [(8, 5), (9, 6)])
def test_a_revealed_long_question_and_its_answer_fit_the_projector(app, tour, question):
    """At 1280 × 720, after Reveal, the tour's longest questions (the stale-cache bug's, the epilogue's
    five-line one) with their marked options and their answer lie whole in the first screen: once
    revealed the question is body text, not a heading (the epilogue's box ended at 727 px)."""
    app.page.set_viewport_size(PROJECTOR)
    app.open("/tour", present=1, tour=tour)
    box = app.main.locator(f".st-key-tour_question_{question}")
    app.click_button("Reveal", box)
    expect(box.get_by_text("Answer:")).to_be_visible()
    assert_inside(app, f"step {tour}'s revealed question", box)
    app.assert_no_exception()


@pytest.mark.parametrize("size", [PROJECTOR, PROJECTOR_HD])
def test_the_pool_steps_text_stays_in_view_after_reveal(app, size):
    """Step 9 after Reveal: the pool figure takes the top of the material's column and the step's text
    under it is still whole in the first screen (the epilogue's note above it pushed it to 628 px of 720
    and cut it off; the note moves under the question once revealed)."""
    app.page.set_viewport_size(size)
    app.open("/tour", present=1, tour=9)
    app.click_button("Reveal", app.main.locator(".st-key-tour_question_6"))
    assert_inside(app, "the pool figure", app.main.locator(".st-key-tour_pool"))
    assert_inside(app, "the step's text", app.main.locator("p", has_text=POOL_INTRO.split(".")[0]))
    app.assert_no_exception()


@pytest.mark.parametrize("size, present", [(PROJECTOR, True), (PROJECTOR_HD, True), (DESK, False)])
def test_the_static_batching_timeline_is_whole_beside_its_question(app, size, present):
    """The tour's last step opens with static batching's timeline whole beside its question (under its
    three lines of text it ended at 790 px); after Reveal continuous batching's timeline is drawn under
    it in the same figure, whole in the first screen beside the option marked right (presenter mode
    drew it first and pushed the static one to y = 960; at 1440 × 900 it started at 990)."""
    app.page.set_viewport_size(size)
    app.open("/tour", tour=10, **({"present": 1} if present else {}))
    timeline = app.main.locator(".st-key-tour_batching")
    expect(timeline.locator(".js-plotly-plot .main-svg").first).to_be_visible()
    assert_inside(app, "static batching's timeline", timeline)
    box = app.main.locator(".st-key-tour_question_7")
    assert_inside(app, "the question", box)
    app.click_button("Reveal", box)
    labels = timeline.locator(".annotation-text")
    expect(labels).to_have_count(2)
    static, continuous = (labels.nth(i).bounding_box() for i in range(2))
    assert static["y"] < continuous["y"], (static, continuous)
    assert "Static" in labels.nth(0).text_content() and "Continuous" in labels.nth(1).text_content()
    assert_inside(app, "both timelines", timeline)
    assert_inside(app, "the option marked right", box.locator("strong", has_text=RIGHT_MARK))
    app.assert_no_exception()
    app.screenshot(f"tour-batching-revealed-{size['width']}x{size['height']}")


@pytest.mark.parametrize("size", [PROJECTOR, PROJECTOR_HD])
def test_costs_legend_clears_the_axis_titles(app, size):
    """Cost's decode figure: its legend overlaps neither x axis title nor any tick label, and it
    lies inside the figure."""
    app.page.set_viewport_size(size)
    app.open("/cost", present=1)
    chart = app.main.locator(".st-key-cost_decode")
    expect(chart.locator(".legend")).to_have_count(1)
    legend = chart.locator(".legend").bounding_box()
    box = chart.bounding_box()
    assert legend["y"] >= box["y"] and legend["y"] + legend["height"] <= box["y"] + box["height"] + 0.5
    legend_box = ("legend", legend["x"], legend["y"], legend["width"], legend["height"])
    below = chart.evaluate(TEXT_BOXES_JS, ".g-xtitle text, .g-x2title text, .xaxislayer-above text")
    assert len(below) >= 4, below
    assert not [b[0] for b in below if overlap(legend_box, b)], below
    assert_inside(app, "decode figure", chart)
    app.assert_no_exception()
    app.screenshot(f"presenter-cost-{size['width']}x{size['height']}")


# every inline code and code block of an element, with its computed size (px)
CODE_PX_JS = """box => [...box.querySelectorAll('code')].map(c => [c.textContent.slice(0, 30), parseFloat(getComputedStyle(c).fontSize)])"""


def test_code_in_a_presenter_fold_is_at_least_16px(app):
    """Cost's "For developers" fold in presenter mode at 1280 × 720: its inline code (Markdown's 0.75 em,
    13.8 px before) and its commands are at least 16 px, as every other text there."""
    app.page.set_viewport_size(PROJECTOR)
    app.open("/cost", present=1)
    codes = app.expander(DEVELOPERS).evaluate(CODE_PX_JS)
    assert len(codes) >= 2, codes
    assert not [c for c in codes if c[1] < PRESENTER_TEXT_PX], codes
    app.assert_no_exception()


def test_costs_panel_titles_stand_apart_on_a_phone(app):
    """On a 390 × 844 phone the two panels' titles of Cost's decode figure do not run into each other."""
    app.page.set_viewport_size({"width": 390, "height": 844})
    app.open("/cost")
    chart = app.main.locator(".st-key-cost_decode")
    expect(chart.locator(".js-plotly-plot")).to_have_count(1)
    titles = chart.evaluate(TEXT_BOXES_JS, ".annotation-text")
    assert len(titles) == 2 and not collisions(titles), titles
    app.assert_no_exception()
