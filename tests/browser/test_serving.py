"""Tier 3 (browser): the Serving page in Chromium: every section renders and steps, opens with its step
control and lesson figure whole in the first screen, visitor text in a request name stays text, and
presenter mode fits the projector sizes. Screenshots of each."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from viz import load_preset
from viz.core.engine.presets import varied_opening
from viz.core.serving.scheduler import serve
from viz.core.serving.explain import narrate_iteration
from viz.core.serving.workload import ServingConfig, serving_refusal, workload_preset

from .test_picture_first import DESK, FIGURE_TOP_PX, PHONE, PROJECTOR, PROJECTOR_HD, above_fold
from .test_review_layout import narration
from .visitor import SCREENSHOTS

SECTIONS = ("Chunked prefill", "Prefix caching", "Speculative decoding", "FlashAttention")
HOSTILE = "<b>R1</b>"  # short enough for a request name; it must show as typed
# each section after the first (whose figure tests/browser/test_picture_first.py measures): its step
# control's forward button and its lesson figure, keyed elements (Streamlit's st-key-<key> class)
LESSONS = {"Chunked prefill": ("serving_step_chunked_forward", "serving_timeline_chunked"),
           "Prefix caching": ("serving_step_prefix_forward", "serving_timeline_prefix"),
           "Speculative decoding": ("serving_round_forward", "serving_rounds"),
           "FlashAttention": ("serving_tile_forward", "serving_tiles")}
SCREENS = {"desk": (DESK, {}), "projector": (PROJECTOR, {"present": 1}), "projector-hd": (PROJECTOR_HD, {"present": 1})}
# what is cut short in the main area, as "testid: text": a control, label, fold or table past the window's
# right edge, or whose content is wider than its box (text cut, a table scrolling sideways; ``phone``: a
# table may scroll inside a box that stays in the window); what a closed fold hides is not on screen
CUT_SHORT_JS = """phone => {
  const picks = ['stWidgetLabel', 'stButtonGroup', 'stSlider', 'stTable', 'stDataFrame']
    .map(id => `[data-testid=stMain] [data-testid=${id}]`).concat(['[data-testid=stMain] summary']).join(',');
  const found = [];
  for (const e of document.querySelectorAll(picks)) {
    const box = e.getBoundingClientRect();
    if (!box.width || !box.height || e.closest('details:not([open]) > :not(summary)')) continue;
    const id = e.dataset.testid || e.tagName;
    const inner = id === 'stSlider' || (phone && (id === 'stTable' || id === 'stDataFrame')) ? [] : [e, ...e.querySelectorAll('*')];
    if (box.right > window.innerWidth + 0.5 || inner.some(x => x.clientWidth > 0 && x.scrollWidth > x.clientWidth + 1))
      found.push(`${id}: ${e.innerText.slice(0, 40)}`);
  }
  return found;
}"""


# how far under a figure's plot area its legend starts (px): the pool's legend stood 90 px under its blocks
# at 1440 x 900, the room a phone's rows need left above it
LEGEND_GAP_JS = """key => {
  const fig = document.querySelector(`.st-key-${key} .js-plotly-plot`);
  return fig.querySelector('.legend .bg').getBoundingClientRect().top
         - fig.querySelector('.nsewdrag').getBoundingClientRect().bottom;
}"""


def legend_gap(app, key: str) -> float:
    expect(app.main.locator(f".st-key-{key} .js-plotly-plot .legend").first).to_be_attached()
    return app.page.evaluate(LEGEND_GAP_JS, key)


def cut_short(app, phone: bool = False) -> list[str]:
    return app.page.evaluate(CUT_SHORT_JS, phone)


def opening_scenario():
    """The scenario Serving opens on for a new visitor: the varied preset in place of the unedited
    seed (presets.varied_opening), in its cache-safe form where serving refuses it as it is."""
    scenario = varied_opening(load_preset("seed"), "Serving").scenario
    return scenario.cache_safe() if serving_refusal(scenario) else scenario


def show(app, section: str) -> None:
    with app.rerun():
        app.page.get_by_role("radio", name=section, exact=True).click()
    app.assert_no_exception()


def test_continuous_batching_steps_and_every_section_renders(app):
    """The first iteration's narration is the engine's (on the scenario the page opens on); → moves to
    the next; each section draws without errors; the pool's legend (continuous batching's, prefix
    caching's) starts right under its blocks, no gap between them."""
    app.open("/serving")
    app.assert_no_exception()
    scenario = opening_scenario()
    run = serve(scenario, workload_preset(scenario, "a burst"), ServingConfig(num_blocks=32))
    expect(app.main.get_by_text(narrate_iteration(run, 0), exact=True)).to_be_visible()
    expect(app.main.get_by_text("identical, bit for bit", exact=False)).to_be_visible()
    app.screenshot("serving-continuous")
    with app.rerun():
        app.page.locator(".st-key-serving_step_continuous_forward button").first.click()
    expect(app.main.get_by_text(narrate_iteration(run, 1), exact=True)).to_be_visible()
    assert 0 <= legend_gap(app, "serving_memory_continuous") <= 12
    for section in SECTIONS:
        show(app, section)
        expect(app.main.get_by_test_id("stAlert").first).to_be_visible()
        if section == "Prefix caching":
            assert 0 <= legend_gap(app, "serving_memory_prefix") <= 12
        app.screenshot(f"serving-{section.lower().replace(' ', '-')}")
    expect(app.main.get_by_text(re.compile(r"^Tile 1 of \d+: queries 1–8"))).to_be_visible()


def test_real_model_speculation_runs_in_the_browser(app):
    """The shipped GPT-2 drafts with prompt lookup; the page says the output is the model's own."""
    app.open("/serving")
    show(app, "Speculative decoding")
    with app.rerun():
        app.page.get_by_role("radio", name="real model", exact=True).click()
    app.assert_no_exception()
    expect(app.main.get_by_text("identical to the target alone", exact=False)).to_be_visible()
    app.screenshot("serving-speculative-real")


def test_a_request_name_that_looks_like_html_stays_text(app):
    """A request renamed to HTML shows as typed in the tables and charts, and no script runs."""
    app.open("/serving")
    editor = app.expander("Edit the requests").get_by_test_id("stDataFrame")
    app.edit_cell(editor, 0, "request", HOSTILE)
    app.assert_no_exception()
    expect(app.main.get_by_test_id("stAlert").filter(has_text=f"{HOSTILE} computes its whole prompt")).to_be_visible()
    expect(app.main.locator(".ytick text", has_text=HOSTILE).first).to_be_visible()  # the timeline's row label
    assert app.dialogs == []
    assert app.main.locator("b", has_text="R1").count() == 0


def test_presenter_mode_fits_projectors_and_phones(app):
    """Presenter mode at 1280 × 720 and 1920 × 1080, a phone at 390 × 844 and a desk at 1440 × 900: no
    control, label or table cut short, in continuous batching (its settings open) and speculative decoding."""
    for width, height, present in ((1280, 720, 1), (1920, 1080, 1), (390, 844, 0), (1440, 900, 0)):
        app.page.set_viewport_size({"width": width, "height": height})
        app.open("/serving", present=present)
        app.assert_no_exception()
        settings = app.expander("Server settings", scope=app.main)  # folded since the page leads with its lesson
        controls = settings.get_by_test_id("stSlider").filter(has_text="Blocks in the pool")
        expect(controls).to_be_visible()
        assert not app.clipped(app.main.get_by_test_id("stButtonGroup").first)  # the section picker
        assert not app.clipped(settings.get_by_test_id("stButtonGroup").first)  # when blocks run out
        app.screenshot(f"serving-{'presenter' if present else 'phone'}-{width}x{height}")
        assert cut_short(app, phone=width < 500) == []
        show(app, "Speculative decoding")  # its five controls: stacked beside the lesson, or wrapped on a phone
        assert cut_short(app, phone=width < 500) == []


@pytest.mark.parametrize("screen", [*SCREENS, "phone"])
def test_every_section_opens_with_its_step_control_and_figure_whole(app, screen):
    """At 1440 × 900 and in presenter mode at 1280 × 720 and 1920 × 1080, each section, once chosen,
    shows its step control and, below it or at its left, its lesson figure whole in the first screen,
    the start of its narration (above the figure, beside it or just under it) too, and no control,
    label or table cut short; on a 390 × 844 phone the step control and the figure's top (its title and first row)
    open the first screen, the section's controls stacked under the lesson (issue 32: the workload,
    the settings and the speculative and tile controls stood above the step control, up to 722 px)."""
    size, params = SCREENS[screen] if screen in SCREENS else (PHONE, {})
    app.page.set_viewport_size(size)
    app.open("/serving", **params)
    for section, (forward, figure) in LESSONS.items():
        show(app, section)
        step = app.main.locator(f".st-key-{forward} button >> visible=true").first
        drawn = app.main.locator(f".st-key-{figure}")
        expect(step).to_be_visible()
        at, box = step.bounding_box(), drawn.bounding_box()  # above the figure, or beside it at its left
        assert at["y"] < box["y"] or at["x"] + at["width"] <= box["x"], (section, at, box)
        if screen == "phone":
            assert step.bounding_box()["y"] + step.bounding_box()["height"] <= size["height"], section
            assert drawn.bounding_box()["y"] + FIGURE_TOP_PX <= size["height"], (section, drawn.bounding_box())
        else:
            above_fold(app, drawn)
            assert narration(app).bounding_box()["y"] < size["height"] - 24, section  # its first line shows
        assert cut_short(app, phone=screen == "phone") == [], section
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        name = section.lower().replace(" ", "-")
        app.page.screenshot(path=str(SCREENSHOTS / f"serving-{name}-{size['width']}x{size['height']}.png"))


# the smallest type (px) of any text drawn in an element: its own and its figure's
SMALLEST_TYPE_JS = """e => Math.min(...[e, ...e.querySelectorAll('*')]
    .filter(x => x.textContent.trim() && !x.children.length && x.getClientRects().length)
    .map(x => parseFloat(getComputedStyle(x).fontSize)))"""
TO_TOP_JS = "() => { for (const e of document.querySelectorAll('*')) if (e.scrollTop) e.scrollTop = 0; }"


def test_presenter_mode_shows_the_whole_stepped_lesson_at_1280(app):
    """Presenter mode at 1280 × 720, each stepped section (continuous batching and, flipped, static; chunked
    prefill; prefix caching) at its first and its busiest step: the step control, the narration, the
    timeline and the memory figure under it (the pool, or static batching's reservation) lie whole in the
    first screen, their text at least 16 px (a teacher's review: the pool ran to 940-967 px, under a
    "Terms" fold and the narration above the timeline)."""
    app.page.set_viewport_size(PROJECTOR)
    app.open("/serving", present=1)
    shown = (("Continuous batching", None, "continuous"), ("Continuous batching", "static", "static"),
             ("Chunked prefill", None, "chunked"), ("Prefix caching", None, "prefix"))
    for section, policy, name in shown:
        if section != "Continuous batching":  # the section the page opens on: a click reruns nothing
            show(app, section)
        if policy:
            show(app, policy)
        for moment in ("first", "busiest"):
            if moment == "busiest":  # iteration 5: the burst's whole batch in the pool, its longest narration
                for _ in range(4):
                    with app.rerun():
                        app.main.locator(f".st-key-serving_step_{name}_forward button").first.click()
            app.page.evaluate(TO_TOP_JS)
            parts = {"step control": app.main.locator(f".st-key-serving_step_{name}_forward button").first,
                     "narration": narration(app), "timeline": app.main.locator(f".st-key-serving_timeline_{name}"),
                     "memory": app.main.locator(f".st-key-serving_memory_{name}")}
            for part, drawn in parts.items():
                expect(drawn).to_be_visible()
                box = drawn.bounding_box()
                assert box["y"] >= 0 and box["y"] + box["height"] <= PROJECTOR["height"], \
                    (section, policy, moment, part, box)
                assert drawn.evaluate(SMALLEST_TYPE_JS) >= 16, (section, policy, moment, part)
    app.assert_no_exception()


# a figure's tick labels that overlap another of the same axis, and its plot area's share of its width
TICKS_JS = """key => {
  const fig = document.querySelector(`.st-key-${key} .js-plotly-plot`);
  const clash = [];
  for (const axis of ['.xtick text', '.ytick text']) {
    const boxes = [...fig.querySelectorAll(axis)].map(t => [t.textContent, t.getBoundingClientRect()]);
    boxes.forEach(([a, p], i) => boxes.slice(i + 1).forEach(([b, q]) => {
      if (p.left < q.right && q.left < p.right && p.top < q.bottom && q.top < p.bottom) clash.push(`${a} / ${b}`); }));
  }
  const width = box => box.getBoundingClientRect().width;
  return {clash, share: width(fig.querySelector('.nsewdrag')) / width(fig),
          ticks: fig.querySelectorAll('.xtick text, .ytick text').length};
}"""


def test_flash_tiles_fill_their_column_in_presenter_mode(app):
    """Presenter mode at 1280 × 720, FlashAttention's 32-token grid: whole in the first screen, its cells
    take most of the column's width, its labels 16 px or more and none running into another (a teacher's
    review: a 215-px grid in a 450-px column, turned key labels colliding)."""
    app.page.set_viewport_size(PROJECTOR)
    app.open("/serving", present=1)
    show(app, "FlashAttention")
    tiles = app.main.locator(".st-key-serving_tiles")
    above_fold(app, tiles)
    ticks = app.page.evaluate(TICKS_JS, "serving_tiles")
    assert ticks["clash"] == [] and ticks["ticks"] >= 10, ticks
    assert ticks["share"] >= 0.6, ticks
    assert tiles.evaluate(SMALLEST_TYPE_JS) >= 16
    app.assert_no_exception()
