"""Tier 3 (browser): the issue 32 review's layout defects stay fixed. Serving's narration sits above its
timeline, as Decode's does, with the timeline still whole in the first screen; Memory narrates its pool
(above it at a desk, beside it in presenter mode); on a 390 × 844 phone nothing scrolls sideways,
every section's name is in view, a stepper keeps ←, its slider and → on one row and Serving's
timeline title is not cut; a revealed tour question shows its options as text in full contrast, not
as a grey disabled control."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from viz.core.lessons.tour import RIGHT_MARK
from viz.figures.room import READABLE_PX
from viz.ui.common import SHOW

DESK = {"width": 1440, "height": 900}
PROJECTOR = {"width": 1280, "height": 720}
PHONE = {"width": 390, "height": 844}
SCREENS = {"desk": (DESK, {}), "projector": (PROJECTOR, {"present": 1})}

# the contrast ratio (WCAG) of an element's text colour on white, the page's background
CONTRAST_JS = """e => {
    const [r, g, b] = getComputedStyle(e).color.match(/[\\d.]+/g).map(Number).map(v => v / 255)
        .map(v => v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4);
    return 1.05 / (0.2126 * r + 0.7152 * g + 0.0722 * b + 0.05); }"""


def narration(app):
    """The page's narration: the info box with the speaking icon."""
    return app.main.get_by_test_id("stAlert").filter(
        has=app.page.get_by_test_id("stAlertDynamicIcon").filter(has_text="record_voice_over")).first


def whole_on_screen(app, box: dict, name: str) -> None:
    view = app.page.viewport_size
    assert box["y"] >= 0 and box["y"] + box["height"] <= view["height"] + 0.5, \
        f"{name} at {box} is not whole inside {view['width']}×{view['height']}"


@pytest.mark.parametrize("screen", list(SCREENS))
def test_servings_narration_sits_above_its_whole_timeline(app, screen):
    """At 1440 × 900 Serving's narration ends above the stepped timeline; in presenter mode at 1280 ×
    720 it stands under the step control, left of the timeline (so the pool under it fits too); both
    lie whole in the first screen."""
    size, params = SCREENS[screen]
    app.page.set_viewport_size(size)
    app.open("/serving", **params)
    said = narration(app).bounding_box()
    timeline = app.main.locator(".st-key-serving_timeline_continuous").bounding_box()
    if params:
        assert said["x"] + said["width"] <= timeline["x"], (said, timeline)
    else:
        assert said["y"] + said["height"] <= timeline["y"], (said, timeline)
    whole_on_screen(app, said, "the narration")
    whole_on_screen(app, timeline, "the timeline")
    app.assert_no_exception()


@pytest.mark.parametrize("screen", list(SCREENS))
def test_memory_narrates_its_pool_above_it_or_beside_it(app, screen):
    """Memory narrates the iteration its pool shows: above the pool at a desk, in the controls' column
    beside it in presenter mode; the narration and the pool are whole in the first screen, at the
    first iteration (where the pool opens) and at the last (its most blocks)."""
    size, params = SCREENS[screen]
    app.page.set_viewport_size(size)
    app.open("/memory", **params)

    def narrated(text: str) -> None:
        expect(narration(app)).to_contain_text(text)
        said = narration(app).bounding_box()
        pool = app.main.locator(".st-key-memory_pool").bounding_box()
        if params:
            assert said["x"] + said["width"] <= pool["x"], (said, pool)
        else:
            assert said["y"] + said["height"] <= pool["y"], (said, pool)
        whole_on_screen(app, said, "the narration")
        whole_on_screen(app, pool, "the pool")
        expect(app.main.get_by_text("sequence A", exact=True)).to_be_visible()  # the legend says what A is

    narrated("The pool starts empty")
    app.step_to_last("memory_snapshot")
    narrated("Decode")
    app.assert_no_exception()


@pytest.mark.parametrize("page", ["serving", "memory", "tour"])
def test_on_a_phone_nothing_scrolls_sideways_and_the_stepper_is_one_row(app, page):
    """At 390 × 844 the page is no wider than the screen, and the stepper's ←, slider and → share one
    row inside it (each button level with the slider, not stacked above or below it); the step's name
    over the thumb stays within the slider (the tour's last, 44 characters, ran over the ← button)."""
    app.page.set_viewport_size(PHONE)
    app.open(f"/{page}", **({"tour": 10} if page == "tour" else {}))
    assert app.page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    row = app.main.locator("[class*='st-key-'][class*='_row']").filter(has=app.page.get_by_role("slider")).first
    parts = [row.locator("[class*='_back'] button >> visible=true").first, row.get_by_test_id("stSlider"),
             row.locator("[class*='_forward'] button >> visible=true").first]
    boxes = [part.bounding_box() for part in parts]
    back, slider, forward = boxes
    for button in (back, forward):  # beside the slider (its label above, its track level with them)
        assert slider["y"] <= button["y"] and button["y"] + button["height"] <= slider["y"] + slider["height"] + 0.5, boxes
    assert boxes[0]["x"] >= 0 and boxes[2]["x"] + boxes[2]["width"] <= PHONE["width"], boxes
    assert boxes[0]["x"] < boxes[1]["x"] < boxes[2]["x"], boxes
    name = row.get_by_test_id("stSliderThumbValue").bounding_box()
    assert back["x"] + back["width"] < name["x"] and name["x"] + name["width"] < forward["x"], (name, boxes)
    app.assert_no_exception()


@pytest.mark.parametrize("page", ["prefill", "decode", "memory", "serving"])
def test_on_a_phone_every_sections_name_is_in_view(app, page):
    """At 390 × 844 the page's "Show" picker wraps its sections' names onto rows inside the screen:
    every one is visible whole without scrolling sideways (a row of tabs scrolled Decode's last two,
    "Replay in the browser" and "Figures as tables", out of sight behind an arrow), and choosing the
    last one shows it."""
    app.page.set_viewport_size(PHONE)
    app.open(f"/{page}")
    picker = app.main.get_by_role("radiogroup", name=SHOW, exact=True)
    picker.scroll_into_view_if_needed()
    options = picker.get_by_role("radio")
    names = options.all_inner_texts()
    assert len(names) >= 2, names
    for option in options.all():
        box = option.bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"] + 0.5, \
            (option.inner_text(), box)
    assert app.page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    app.show(names[-1].strip())
    app.assert_no_exception()


# every Plotly title on the page that runs past its figure's right edge: [title, pixels past]
TITLES_CUT_JS = """() => [...document.querySelectorAll('[data-testid=stMain] .js-plotly-plot')].map(p => {
    const title = p.querySelector('.gtitle');
    return title && [title.textContent, title.getBoundingClientRect().right - p.getBoundingClientRect().right]; })
  .filter(cut => cut && cut[1] > 0)"""


def test_on_a_phone_servings_figure_titles_are_whole(app):
    """At 390 × 844 the timeline's title and every other figure's title on Serving's first section end
    inside their figures (Plotly titles do not wrap)."""
    app.page.set_viewport_size(PHONE)
    app.open("/serving")
    expect(app.main.locator(".st-key-serving_timeline_continuous .gtitle")).to_contain_text("batching")
    expect(app.main.locator(".js-plotly-plot")).to_have_count(5)  # timeline, pool, other timeline, metrics, use
    assert app.page.evaluate(TITLES_CUT_JS) == []
    app.assert_no_exception()


def test_a_revealed_question_shows_its_options_as_readable_text(app):
    """On a phone, after Reveal, the options are a line of text in the page's text colour (at least
    7 : 1 on white), the right one bold with ✓ right, the pick named; no disabled control is left."""
    app.page.set_viewport_size(PHONE)
    app.open("/tour", tour=3)
    app.pick("Your answer", "9")
    app.click_button("Reveal")
    box = app.main.locator(".st-key-tour_question_1")
    line = box.locator("p", has_text=RIGHT_MARK)
    expect(line).to_contain_text("9 (your pick)")
    expect(box.get_by_role("radio")).to_have_count(0)
    for element in (line, line.locator("strong", has_text=RIGHT_MARK)):
        assert element.evaluate(CONTRAST_JS) >= 7
    assert app.page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    app.assert_no_exception()


# Every Plotly figure in the main area, measured as drawn: [figure's key, faults, smallest text px].
# Faults: a legend or colour bar over a plot area, a tick label or an axis title; a legend too tall for
# its room (Plotly then scrolls it: the tour's pool on a phone hid half its entries); an axis title over a
# plot area; the figure's title over a tick label or an axis title (a matrix's keys on top); two x tick labels
# over each other (the tour's contexts read '1 · Today2 · weather' on a phone); two cell numbers of a heatmap over each other (their boxes overlap across and their
# centres are less than a line apart: the line boxes of neighbouring rows may touch, the glyphs do not).
FIGURE_FAULTS_JS = """() => {
  const box = e => { const r = e.getBoundingClientRect(); return [r.x, r.y, r.width, r.height]; };
  const over = (a, b) => a[0] < b[0] + b[2] - 0.5 && b[0] < a[0] + a[2] - 0.5
                         && a[1] < b[1] + b[3] - 0.5 && b[1] < a[1] + a[3] - 0.5;
  const drawn = (fig, selector) => [...fig.querySelectorAll(selector)]
    .filter(t => t.textContent.trim() && t.getBoundingClientRect().width > 0);
  return [...document.querySelectorAll('[data-testid=stMain] .js-plotly-plot')]
    .filter(fig => fig.getBoundingClientRect().width > 0).map(fig => {
      const key = ((fig.closest('[class*=st-key-]') || {className: ''}).className.match(/st-key-(\\S+)/) || [])[1];
      const areas = [...fig.querySelectorAll('.nsewdrag')].map(box);
      const titles = drawn(fig, '.g-xtitle text, .g-ytitle text, [class*=g-x][class*=title] text, '
                                + '[class*=g-y][class*=title] text');
      const labels = [...drawn(fig, '.xtick text, .ytick text'), ...titles]
        .map(t => [t.textContent.slice(0, 24), box(t)]);
      const faults = [];
      fig.querySelectorAll('.legend .bg, .colorbar .cbbg').forEach(e => {
        const what = e.closest('.legend') ? 'legend' : 'colour bar', b = box(e);
        areas.forEach((a, i) => over(b, a) && faults.push(`${what} over plot ${i}`));
        labels.forEach(([text, t]) => over(b, t) && faults.push(`${what} over '${text}'`));
      });
      fig.querySelectorAll('.legend .scrollbar').forEach(e => e.getBoundingClientRect().height > 0
        && faults.push('legend cut short (it scrolls)'));
      titles.forEach(t => areas.forEach((a, i) => over(box(t), a)
        && faults.push(`axis title '${t.textContent}' over plot ${i}`)));
      drawn(fig, '.gtitle').forEach(t => labels.forEach(([text, l]) => over(box(t), l)
        && faults.push(`figure title over '${text}'`)));
      const ticks = drawn(fig, '.xtick text')  // level labels (a turned one's box is taller than a line)
        .filter(t => box(t)[3] < 2 * parseFloat(getComputedStyle(t).fontSize)).map(t => [t.textContent, box(t)]);
      ticks.forEach(([a, ab], i) => ticks.slice(i + 1).forEach(([b, bb]) => over(ab, bb)
        && faults.push(`tick labels '${a}' and '${b}' run together`)));
      const cells = drawn(fig, '.heatmap-label text').map(box);
      cells.forEach((a, i) => cells.slice(i + 1).forEach(b => {
        if (over(a, b) && Math.abs(a[1] + a[3] / 2 - b[1] - b[3] / 2) < Math.min(a[3], b[3]) * 0.75)
          faults.push('cell numbers over each other'); }));
      const sizes = drawn(fig, 'text').map(t => parseFloat(getComputedStyle(t).fontSize));
      return [key, [...new Set(faults)], Math.min(...sizes)];
    });
}"""
# tables (st.table) wider than their column: [label, scroll width, visible width]
TABLES_CUT_JS = """() => [...document.querySelectorAll('[data-testid=stMain] table')]
    .filter(t => t.getBoundingClientRect().width > 0)
    .map(t => { const frame = t.parentElement;
                return [t.getAttribute('aria-label') || t.textContent.slice(0, 30), frame.scrollWidth, frame.clientWidth]; })
    .filter(([, scroll, width]) => scroll > width + 1)"""
# every heatmap cell number drawn in the main area, by the heatmap or by the bars over it that write numbers
# a phone would shrink (viz.figures.room.numbers_layer; and any bar's label): [figure's key class, px, whether
# an "As a table" fold under the figure has its numbers]
CELL_NUMBERS_PX_JS = """() => [...document.querySelectorAll('[data-testid=stMain] .heatmap-label text, '
                                                          + '[data-testid=stMain] .bartext')]
    .filter(t => t.textContent.trim() && t.getBoundingClientRect().width > 0)
    .map(t => { const keyed = t.closest('[class*=st-key-]');
                const key = keyed ? [...keyed.classList].find(c => c.startsWith('st-key-')) : '';
                return [key || '', parseFloat(getComputedStyle(t).fontSize),
                        !!key && !!document.querySelector(`.${key}_table`)]; })"""
# every text drawn inside a Plotly figure (labels, notes, ticks) that runs past the figure's left or right
# edge: [text, pixels past] (At scale's ridge-point label ran 120 px past a phone's roofline)
TEXT_CUT_JS = """() => [...document.querySelectorAll('[data-testid=stMain] .js-plotly-plot')]
  .filter(p => p.getBoundingClientRect().width > 0).flatMap(p => {
    const edge = p.getBoundingClientRect();
    return [...p.querySelectorAll('text')].filter(t => t.textContent.trim() && t.getBoundingClientRect().width > 0)
      .map(t => { const r = t.getBoundingClientRect();
                  return [t.textContent.slice(0, 40), Math.max(r.right - edge.right, edge.left - r.left)]; })
      .filter(([, past]) => past > 0.5); })"""
REVEAL = "Reveal"  # in FIGURE_VIEWS: not a tab but the tour question's button
SHOWN = ("/prefill", "/decode", "/memory", "/serving")  # pages whose sections are a "Show" picker; the others' are tabs


def open_section(app, path: str, name: str) -> None:
    """Show the section or open the tab ``name`` on the page at ``path``."""
    if path in SHOWN:
        app.show(name)
    else:
        app.page.get_by_role("tab", name=name).click()
FIGURE_VIEWS = {  # url path, tab (or REVEAL), the figures and the tables that must be there (issue 32's second review)
    "real-prefill": ("/real_model", "Prefill", {"real_detail", "real_grid", "real_topk"}, ()),
    "real-decode": ("/real_model", "Decode with the KV cache", {"real_norms", "real_growth", "real_next"},
                    ("real_cache_table",)),
    "real-kv-heads": ("/real_model", "K/V heads", {"real_gqa"}, ("real_shipped_table",)),
    "real-rules": ("/real_model", "Heads that look like rules", {"real_vs_rule", "real_scores"},  # their colour bars
                   ("real_matches_table",)),
    "cost": ("/cost", None, {"cost_decode", "cost_prefill"}, ()),
    "at-scale-roof": ("/at_scale", "What limits a decode step", {"scale_roofline", "scale_bytes", "scale_throughput"},
                      ()),
    "at-scale-gpus": ("/at_scale", "On GPUs", {"scale_split"}, ()),  # its legend wrapped over its title
    "prefill-stages": ("/prefill", "Stages of one head", {"qk", "stage_weights"}, ()),  # K's axis title on Q
    # the tour's steps ("Reveal": the answer's figures show once revealed): on a phone the mask's title lay
    # over its keys' axis title, step 3's and step 7's titles ran past their figures, the pool's legend over it
    "tour-mask": ("/tour?tour=2", REVEAL, {"tour_mask"}, ()),
    "tour-contexts": ("/tour?tour=3", REVEAL, {"tour_multiples", "tour_contexts"}, ()),
    "tour-cache": ("/tour?tour=7", None, {"tour_cache", "tour_work"}, ()),
    "tour-pool": ("/tour?tour=9", REVEAL, {"tour_pool"}, ()),
}


@pytest.mark.parametrize("screen", ["desk", "phone"])
@pytest.mark.parametrize("view", list(FIGURE_VIEWS))
def test_figures_keep_legends_titles_and_cell_numbers_apart_and_tables_fit(app, view, screen):
    """At 1440 × 900 and on a 390 × 844 phone: no legend or colour bar covers a plot, a tick label or an
    axis title; no axis title lies over a plot (Cost's two panels), and the figure's title over no tick
    label or axis title (a matrix's keys drawn on top); a heatmap's cell numbers never run
    into each other and none is under 12 px (on a phone under 9 px: Plotly drew the 16 × 16 weights' numbers
    3-4 px high there); Real model's titles end inside their figures on a phone; every
    table fits its column; at a desk no figure text is under 12 px (log axes'
    minor labels were 9 px); on Real model and At scale no text runs past its figure's edge."""
    app.page.set_viewport_size(DESK if screen == "desk" else PHONE)
    path, tab, wanted, tables = FIGURE_VIEWS[view]
    app.open(path)
    if tab == REVEAL:
        app.click_button(REVEAL)
    elif tab:
        open_section(app, path, tab)
    for key in wanted:
        expect(app.main.locator(f".st-key-{key} .js-plotly-plot .main-svg").first).to_be_visible()
    for key in tables:  # small tables as st.table, which wraps its cells to the column
        expect(app.main.locator(f".st-key-{key} table")).to_be_visible()
    measured = app.page.evaluate(FIGURE_FAULTS_JS)
    assert wanted <= {key for key, _, _ in measured}, measured
    assert not [(key, faults) for key, faults, _ in measured if faults], measured
    if screen == "desk":
        assert min(least for _, _, least in measured) >= 12, measured
    cells = app.page.evaluate(CELL_NUMBERS_PX_JS)  # on a phone Plotly shrank a dense matrix's numbers to 3-4 px
    # (a student's review): bars write them now, none under READABLE_PX (the hover and "As a table" have them)
    assert not [cell for cell in cells if cell[1] < (12 if screen == "desk" else READABLE_PX)], cells
    if path == "/real_model" or path.startswith("/tour"):  # Plotly titles do not wrap: the grid's ran 170 px
        # past a phone's figure, the tour's cache title 201 px
        assert app.page.evaluate(TITLES_CUT_JS) == []
    if path in ("/real_model", "/at_scale"):  # no label or note past the figure's edge either
        assert app.page.evaluate(TEXT_CUT_JS) == []
    assert app.page.evaluate(TABLES_CUT_JS) == []
    app.assert_no_exception()


# every small table of Serving, At scale, Memory and Real model, per page: (section picked in "Show" or tab
# opened, fold opened, the tables' keys there); issue 32's review: Serving's iteration, request and tile tables
# scrolled 25-45 px sideways on a phone, At scale's, Memory's and Real model's data grids up to 630 px
PHONE_TABLES = {
    "/serving": [(None, None, ("serving_iteration_table_continuous", "serving_requests_table")),
                 ("Chunked prefill", None, ("serving_iteration_table_chunked",)),
                 ("Prefix caching", None, ("serving_iteration_table_prefix",)),
                 ("Speculative decoding", None, ("serving_spec_table",)),
                 ("FlashAttention", None, ("serving_running_table", "serving_traffic_table"))],
    "/at_scale": [(None, None, ("scale_dtype_table", "scale_toy_table")), ("On GPUs", None, ("scale_gpu_table",)),
                  ("What limits a decode step", None, ("scale_steps_table",))],
    "/memory": [(None, None, ("memory_block_tables", "memory_sequences")),
                ("Eviction and quantisation", None, ("memory_comparison_table",))],
    "/real_model": [(None, "The prompt's tokens, one by one", ("real_pieces_table",)),
                    ("Decode with the KV cache", None, ("real_cache_table",)),
                    ("K/V heads", None, ("real_shipped_table",)),
                    ("Heads that look like rules", None, ("real_matches_table",))],
}
# a table's scroll width and visible width, by its container's key
TABLE_WIDTHS_JS = """key => { const frame = document.querySelector(`.st-key-${key} table`).parentElement;
                             return [frame.scrollWidth, frame.clientWidth]; }"""


@pytest.mark.parametrize("path", list(PHONE_TABLES))
def test_on_a_phone_every_table_fits_its_column(app, path):
    """At 390 × 844 every small table of each section or tab (folds opened) is laid out inside its
    column: it never scrolls sideways, and neither does the page."""
    app.page.set_viewport_size(PHONE)
    app.open(path)
    for opened, fold, keys in PHONE_TABLES[path]:
        if opened:
            open_section(app, path, opened)
        if fold:
            app.expander(fold)
        for key in keys:
            expect(app.main.locator(f".st-key-{key} table")).to_be_visible()
            scroll, width = app.page.evaluate(TABLE_WIDTHS_JS, key)
            assert scroll <= width + 1, f"{key} scrolls {scroll - width} px sideways ({opened or 'first view'})"
        assert app.page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"], opened
    app.assert_no_exception()


# the lesson figure of each further section or tab of Serving, At scale, Memory and Real model: (path, section
# picked in "Show" or tab opened, the figure's key); At scale's roofline opened under its paragraph and prompt
# input, half below a projector's first screen
TAB_FIGURES = {
    "serving-chunked": ("/serving", "Chunked prefill", "serving_timeline_chunked"),
    "serving-prefix": ("/serving", "Prefix caching", "serving_timeline_prefix"),
    "serving-speculative": ("/serving", "Speculative decoding", "serving_rounds"),
    "serving-flash": ("/serving", "FlashAttention", "serving_tiles"),
    "at-scale-gpus": ("/at_scale", "On GPUs", "scale_split"),
    "at-scale-roof": ("/at_scale", "What limits a decode step", "scale_roofline"),
    "memory-eviction": ("/memory", "Eviction and quantisation", "memory_attention"),
    "real-decode": ("/real_model", "Decode with the KV cache", "real_norms"),
    "real-kv-heads": ("/real_model", "K/V heads", "real_gqa"),
    "real-rules": ("/real_model", "Heads that look like rules", "real_vs_rule"),
}


@pytest.mark.parametrize("screen", list(SCREENS))
@pytest.mark.parametrize("view", list(TAB_FIGURES))
def test_each_sections_lesson_figure_is_whole_in_the_first_screen(app, view, screen):
    """At 1440 × 900 and in presenter mode at 1280 × 720, the lesson figure of every section and tab lies
    whole in the first screen once that section or tab is opened."""
    size, params = SCREENS[screen]
    path, opened, key = TAB_FIGURES[view]
    app.page.set_viewport_size(size)
    app.open(path, **params)
    open_section(app, path, opened)
    figure = app.main.locator(f".st-key-{key}")
    expect(figure).to_be_visible()  # a Plotly figure or a board, drawn once it is more than its frame
    app.page.wait_for_function("k => document.querySelector(`.st-key-${k}`).getBoundingClientRect().height > 100",
                               arg=key)
    whole_on_screen(app, figure.bounding_box(), f"{view}'s figure")
    app.assert_no_exception()
