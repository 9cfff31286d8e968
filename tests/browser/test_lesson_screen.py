"""Tier 3 (browser): Decode and Prefill as one-screen lessons in presenter mode, measured from element
positions at the projector sizes, and the decode view's fragment keeping the share link.

The seed after one decode step (its stale 'last' head) and a 35-token scenario with the same heads
(15 stale cached keys) are opened from share links; nothing may need scrolling: the page's one
sentence, the step controls, the narration, the stale-cache warning and its Fix button, the
attention heatmap with its newest row, the KV cache and, in the next word's place, head 'last''s
cache against recomputation lie inside the viewport, and every text inside those figures is at
least 16 px.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from lesson_fixtures import long_scenario
from viz import generate, load_preset
from viz.core.engine.explain import narrate_step
from viz.core.engine.share import View, decode_scenario, encode_view
from viz.core.lessons import words_decode, words_prefill
from viz.tools.server import ROOT
from viz.ui.common import PRESENTER_TEXT_PX

SIZES = [(1280, 720), (1920, 1080)]
REVIEW = ROOT / "docs" / "screenshots" / "review"  # the seed's first screens, for review

# Every element of a lesson board holding text of its own (ticks, cells, titles, legends, bars), with
# its computed size.
FIGURE_TEXT_JS = """board => [...board.querySelectorAll('*')]
    .filter(e => [...e.childNodes].some(n => n.nodeType === 3 && n.textContent.trim())
                 && e.getBoundingClientRect().width > 0)
    .map(e => [e.textContent.trim(), parseFloat(getComputedStyle(e).fontSize)])"""


CASES = {"seed": (load_preset("seed"), 1), "35 tokens": (long_scenario(), 15)}


LESSON_BOARDS = ".st-key-lesson_attention, .st-key-lesson_cache, .st-key-lesson_words"


def chart(app, title: str):
    """The lesson screen's board (viz.ui.board) whose title starts with ``title`` (Prefill's
    "Every head" tab below has attention boards with the same titles)."""
    return app.main.locator(LESSON_BOARDS).locator("figure.board").filter(
        has=app.page.locator("figcaption", has_text=title))


def button(app, name: str):
    """A button of the main area by its label (a keyboard shortcut adds " Shortcut →" to its name)."""
    return app.main.get_by_role("button", name=re.compile(rf"^{re.escape(name)}(?: Shortcut .+)?$"))


def assert_inside(app, name: str, locator) -> None:
    """The element lies fully inside the viewport, with no scrolling."""
    expect(locator).to_have_count(1)
    box = locator.bounding_box()
    view = app.page.viewport_size
    assert box is not None, name
    inside = (box["x"] >= 0 and box["y"] >= 0 and box["x"] + box["width"] <= view["width"] + 0.5
              and box["y"] + box["height"] <= view["height"] + 0.5)
    assert inside, f"{name} at {box} is not inside {view['width']}×{view['height']}"


def assert_big_text(app, name: str, locator) -> None:
    """Every text inside the figure is at least PRESENTER_TEXT_PX."""
    texts = locator.evaluate(FIGURE_TEXT_JS)
    assert texts, name
    small = [(text, px) for text, px in texts if px < PRESENTER_TEXT_PX]
    assert not small, f"{name}: text under {PRESENTER_TEXT_PX} px: {small[:6]}"


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("width, height", SIZES)
def test_decode_is_one_screen_in_presenter_mode(app, case, width, height):
    """At 1280×720 and 1920×1080 the whole decode lesson is on screen, the stale head's cache against
    recomputation in the next word's place, figure text ≥ 16 px."""
    scenario, step = CASES[case]
    app.page.set_viewport_size({"width": width, "height": height})
    app.open("/decode", **encode_view(View(scenario, step=step, presenter=True, head=1)))
    main = app.main
    expect(main.get_by_test_id("stAlertContentInfo").first).to_contain_text(
        narrate_step(generate(scenario, step + 1, "kv"), step))
    parts = {
        "lead": main.get_by_text(words_decode.LEAD, exact=True),  # the page's one sentence, kept
        "Step": button(app, "Step"),
        "Back": button(app, "Back"),
        "Run": button(app, "Run 8"),
        "timeline": main.get_by_role("slider", name="Timeline (tokens generated)"),
        "narration": main.get_by_test_id("stAlertContentInfo").first,
        "stale-cache warning": main.get_by_test_id("stAlertContentWarning").filter(has_text="went stale"),
        "Fix": button(app, "Fix: n → q.pos"),
        "attention heatmap": chart(app, "Attention · head 'last'"),
        "KV cache": chart(app, "KV cache:"),
        "cache vs recomputation": chart(app, "Head 'last': context"),
    }
    if step < 3:  # the timeline shows once three tokens have been generated (pages/decode.py)
        expect(parts.pop("timeline")).to_have_count(0)
    for name, locator in parts.items():
        assert_inside(app, name, locator)
    for name in ("attention heatmap", "KV cache", "cache vs recomputation"):
        assert_big_text(app, name, parts[name])
    expect(chart(app, "Next word:")).to_have_count(0)  # the narration names the next word and its p
    newest = f"{len(scenario.tokens) + step} · nice"  # the newest query row is labelled and in view
    expect(parts["attention heatmap"].locator(".rowlabel", has_text=newest).first).to_be_visible()
    app.assert_no_exception()
    app.screenshot(f"lesson-decode-{case.replace(' ', '')}-{width}x{height}")
    if case == "seed":
        app.page.screenshot(path=str(REVIEW / f"decode-{width}x{height}.png"))  # the first screen


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("width, height", SIZES)
def test_prefill_is_one_screen_in_presenter_mode(app, case, width, height):
    """At 1280×720 and 1920×1080 the prefill lesson (stepper, narration, figures) is on screen."""
    scenario, _ = CASES[case]
    app.page.set_viewport_size({"width": width, "height": height})
    app.open("/prefill", **encode_view(View(scenario, presenter=True, head=1, position=4)))
    main = app.main
    parts = {
        "lead": main.get_by_text(words_prefill.CAPTION, exact=True),
        "stepper back": main.locator(".st-key-prefill_position_back button").first,
        "stepper forward": main.locator(".st-key-prefill_position_forward button").first,
        "position": main.locator(".st-key-prefill_position_range"),  # the seed's chips, the long prompt's slider
        "narration": main.get_by_test_id("stAlertContentInfo").first,
        "attention heatmap": chart(app, "Attention · head 'last'"),
        "cache": chart(app, "Cache after prefill"),
        "next word": chart(app, "Next word:"),
    }
    expect(parts["narration"]).to_contain_text("(position 4) sees")
    for name, locator in parts.items():
        assert_inside(app, name, locator)
    for name in ("attention heatmap", "cache", "next word"):
        assert_big_text(app, name, parts[name])
    app.assert_no_exception()
    app.screenshot(f"lesson-prefill-{case.replace(' ', '')}-{width}x{height}")


@pytest.mark.parametrize("width, height, presenter", [(1440, 900, False), (1280, 720, True), (390, 844, False)])
def test_decode_choices_have_their_labels_at_the_left_and_one_row_in_presenter_mode(app, width, height, presenter):
    """Step 1 on the seed with head 'even' shown (the stale-cache state, both of its buttons shown): each
    picker's label ("Head", "Keys") stands right at its left, on its line, at a desk, in presenter mode
    and on a phone (where the row wraps); in presenter mode at 1280×720 Head and its picker, Whole, Keys
    and its picker, Fix and "Show head 'last'" share one row inside the screen. (At a desk beside the
    400 px sidebar the row, about 965 px, is wider than the 880 px main column: "Show head 'last'" goes
    under it, as it did before the labels.)"""
    app.page.set_viewport_size({"width": width, "height": height})
    app.open("/decode", **encode_view(View(load_preset("seed"), step=1, presenter=presenter, head=0)))
    main = app.main
    caption = main.get_by_test_id("stCaptionContainer")
    picker = lambda key: main.locator(f".st-key-{key}").get_by_test_id("stButtonGroup")  # noqa: E731
    pairs = {"Head": picker("decode_head"), "Keys": picker("decode_mode_picker")}
    parts = {**{f"{name} label": caption.filter(has=app.page.get_by_text(name, exact=True)) for name in pairs},
             **{f"{name} text": caption.get_by_text(name, exact=True) for name in pairs}, **pairs,
             "Whole": app.switch("Whole", main),
             "Fix": button(app, "Fix: n → q.pos"), "Show head": button(app, "Show head 'last'")}
    boxes = {}
    for name, locator in parts.items():
        expect(locator).to_have_count(1)
        boxes[name] = locator.bounding_box()
    for name in pairs:  # the label right at its picker's left, on the same line
        said, text, box = boxes[f"{name} label"], boxes[f"{name} text"], boxes[name]
        assert 0 <= box["x"] - (said["x"] + said["width"]) <= 12, (name, said, box)
        assert abs((text["y"] + text["height"] / 2) - (box["y"] + box["height"] / 2)) <= 8, (name, text, box)
    if presenter:
        middle = boxes["Head"]["y"] + boxes["Head"]["height"] / 2
        for name, box in ((name, box) for name, box in boxes.items() if not name.endswith(" label")):
            assert abs(box["y"] + box["height"] / 2 - middle) <= 8, f"{name} at {box} is not on the row at {middle}"
            assert box["x"] + box["width"] <= width, f"{name} at {box} is past the screen's {width} px"
    app.assert_no_exception()
    app.screenshot(f"decode-choices-{width}x{height}")


def test_a_step_reruns_only_the_decode_view_and_keeps_the_link(app):
    """Step, the → key and the mode picker rerun the fragment; the address bar follows each of them."""
    app.open("/decode")
    link = app.expander("Copy link", app.sidebar, reruns=True)  # opened first: the fragment's reruns refresh it
    app.click_button("Step")
    assert app.query.get("step") == "1"
    expect(app.main.get_by_test_id("stAlertContentWarning").filter(has_text="went stale")).to_have_count(1)
    app.main.get_by_test_id("stAlertContentInfo").first.click()  # focus off the button: shortcuts skip it
    with app.rerun():
        app.page.keyboard.press("ArrowRight")
    assert app.query.get("step") == "2"
    # the sidebar's Copy link box follows the fragment too (it is not rerun with it)
    expect(link.get_by_test_id("stCode")).to_contain_text("step=2")
    app.pick("Keys", "recompute")
    assert app.query.get("mode") == "recompute"
    app.pick("Head", "first")
    assert app.query.get("head") == "3"
    expect(chart(app, "Attention · head 'first'")).to_have_count(1)
    app.assert_no_exception()


def test_fix_reruns_the_whole_app(app):
    """Fix rewrites the rules: the sidebar's heads table shows the cache-safe rule at once."""
    app.open("/decode", step=1)
    app.click_button("Fix: n → q.pos")
    expect(app.main.get_by_test_id("stAlertContentWarning").filter(has_text="went stale")).to_have_count(0)
    assert decode_scenario(app.query["s"]).heads[1].rule == "k.pos == q.pos"
    heads = app.expander("Heads", app.sidebar, reruns=True)
    expect(app.cell(heads.get_by_test_id("stDataFrame"), 1, "rule")).to_have_text("k.pos == q.pos")
    app.assert_no_exception()


def test_phone_stacks_the_lesson_in_pipeline_order(app):
    """At 390×844 the lesson figures stack attention → cache → the stale head's cache against
    recomputation (the next word's place), right after the controls, each as wide as the screen
    allows and none wider."""
    app.page.set_viewport_size({"width": 390, "height": 844})
    app.open("/decode", **encode_view(View(load_preset("seed"), step=1, head=1)))
    titles = ("Attention · head", "KV cache:", "Head 'last': context")
    tops = [chart(app, title).bounding_box()["y"] for title in titles]
    assert tops == sorted(tops), tops
    step = button(app, "Step").bounding_box()
    assert step["y"] < tops[0]
    for title in titles:
        box = chart(app, title).bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= 390, (title, box)
    app.assert_no_exception()
    app.screenshot("lesson-decode-phone")


def test_step_repaints_the_board_with_a_hover_on_every_cell(app):
    """The board follows a Step: the newest row appears, outlined, and every cell explains itself on
    hover (its title) as the Plotly heatmap did."""
    app.open("/decode", **encode_view(View(load_preset("seed"), step=1, head=1)))
    attention = chart(app, "Attention · head 'last'")
    expect(attention.locator(".rowlabel").last).to_have_text("5 · nice")
    app.click_button("Step")
    expect(attention.locator(".rowlabel").last).to_have_text("6 · nice")
    tips = attention.locator(".cell").evaluate_all("cells => cells.map(c => c.title)")
    assert len(tips) == 6 * 6 and all(tip.startswith("query ") for tip in tips), tips[:3]
    assert all("\nweight " in tip or "masked" in tip for tip in tips), tips
    assert tips[-6].startswith("query 6 · nice\nkey 1 · Today\n"), tips[-6]
    expect(chart(app, "KV cache:").locator(".ring")).not_to_have_count(0)
    app.assert_no_exception()


def test_the_stale_side_by_side_follows_step_and_back(app):
    """With head 'last' shown, Step brings step 2's cache against recomputation in the next word's
    place (its newest key last), and Back to step 0, where nothing is stale, the next word again."""
    app.open("/decode", **encode_view(View(load_preset("seed"), step=1, head=1)))
    side = chart(app, "Head 'last': context")
    expect(side.locator(".rowlabel").last).to_have_text("5 · nice")
    app.click_button("Step")
    expect(side.locator(".rowlabel").last).to_have_text("6 · nice")
    expect(side.locator(".cell", has_text="stale")).to_have_count(2)
    app.click_button("Back")
    app.click_button("Back")
    expect(chart(app, "Next word:")).to_have_count(1)
    expect(side).to_have_count(0)
    app.assert_no_exception()


# The last row label of each lesson board, read in the page (the boards live in shadow roots).
LAST_ROWS_JS = """() => [...document.querySelectorAll('*')].filter(h => h.shadowRoot)
    .map(h => h.shadowRoot.querySelector('figure.board')).filter(f => f)
    .map(f => f.querySelector('figcaption').textContent + ' | '
              + ([...f.querySelectorAll('.rowlabel')].map(e => e.textContent).pop() || ''))"""
CLICK_THEN_READ_JS = "selector => { document.querySelector(selector).click(); return (" + LAST_ROWS_JS + ")(); }"
# Read the boards once more at the end of the next click's own dispatch (a listener on window, after
# the board's on document); a lesson key presses its button with a click inside the key's own event.
READ_AT_NEXT_KEY_JS = ("() => window.addEventListener('click', () => { window.__kvlabAtKey = ("
                       + LAST_ROWS_JS + ")(); }, {once: true})")


def test_step_and_arrow_keys_draw_the_next_frame_at_the_click(app):
    """Step, Back and the arrow keys redraw the boards in the click's own event, before the server
    answers, with the frame it sent ahead; the rerun then shows the same frame."""
    app.open("/decode", **encode_view(View(load_preset("seed"), step=1, head=1)))
    app.page.wait_for_function(f"() => ({LAST_ROWS_JS})().length === 3")  # the board's script loads once
    before = app.page.evaluate(LAST_ROWS_JS)
    with app.rerun():
        at_click = app.page.evaluate(CLICK_THEN_READ_JS, ".st-key-decode_step button")
    assert at_click != before and at_click[0].endswith("| 6 · nice") and at_click[1].startswith("KV cache: 6 entries")
    assert app.page.evaluate(LAST_ROWS_JS) == at_click  # the rerun brought the same frame
    app.main.get_by_test_id("stAlertContentInfo").first.click()
    app.page.evaluate(READ_AT_NEXT_KEY_JS)
    app.page.evaluate("() => window.addEventListener('keydown', () => { window.__kvlabKeyDone = true; }, {once: true})")
    with app.rerun():
        app.page.keyboard.press("ArrowLeft")
    assert app.page.evaluate("() => window.__kvlabAtKey") == before  # drawn in the key's own event
    assert app.page.evaluate("() => window.__kvlabKeyDone") is None  # the key went no further
    assert app.query.get("step") == "1" and app.page.evaluate(LAST_ROWS_JS) == before
    # typing in a field (here the sidebar's prompt box) is no lesson key: neither Step nor the board
    # moves (no click at all, so nothing is read at one)
    app.prompt().focus()
    app.page.evaluate("() => { window.__kvlabAtKey = 'no click'; }")
    app.page.evaluate(READ_AT_NEXT_KEY_JS)
    app.page.keyboard.press("ArrowRight")
    assert app.page.evaluate("() => window.__kvlabAtKey") == "no click"
    app.settle()
    assert app.query.get("step") == "1" and app.page.evaluate(LAST_ROWS_JS) == before
    app.assert_no_exception()


def test_the_cache_check_is_a_real_table(app):
    """Decode's cache check is an HTML table (st.table): named for screen readers, column headers,
    one row per head, the article's 6 against 7 for 'last'."""
    app.open("/decode", step=1)
    expect(app.main.get_by_test_id("stTable")).to_have_count(0)  # folded on a first view: built when opened
    fold = app.expander("Each head's context with the KV cache and recomputed", app.main, reruns=True)
    table = fold.get_by_test_id("stTable").locator("table").filter(has_text="k.pos == n")
    expect(table).to_have_count(1)
    expect(table).to_have_attribute("aria-label", re.compile("KV cache and recomputed"))
    expect(table.locator("thead th")).to_have_text(["head", "rule", "cacheable", "KV cache", "recompute", "|difference|"])
    expect(table.locator("tbody tr").nth(1).locator("th, td")).to_have_text(["last", "k.pos == n", "no", "6", "7", "1"])
    app.assert_no_exception()


def test_the_cache_figures_are_metrics_of_real_text(app):
    """Decode's cache figures are st.metric text (no canvas), in their fold of the first tab: after one
    step the engine's 5 entries with its change ↑ 1, its bytes; on a 390 px phone every figure stays
    within the screen."""
    kv = generate(load_preset("seed"), 2, "kv")  # the seed after one decode step
    app.open("/decode", step=1)
    app.expander("The cache and the check in numbers", app.main, reruns=True)  # words_decode.NUMBERS
    expect(app.stat("Entries")).to_have_text(str(len(kv.cache)))
    expect(app.stat("Bytes held (K + V)")).to_have_text(f"{kv.cache.nbytes:,}")
    expect(app.stat("Same next word?")).to_have_text("yes")
    delta = app.metric("Entries").get_by_test_id("stMetricDelta")  # the change: Streamlit's up arrow and 1
    expect(delta).to_have_text("1")
    expect(delta.get_by_test_id("stMetricDeltaIcon-Up")).to_have_count(1)
    assert app.metric("Entries").locator("canvas").count() == 0
    app.page.set_viewport_size({"width": 390, "height": 844})
    expect(app.metric("Bytes held (K + V)")).to_be_visible()
    labels = ("Entries", "Bytes held (K + V)", "Bytes reserved", "Times it grew")
    boxes = [app.metric(label).bounding_box() for label in labels]
    assert all(box["x"] >= 0 and box["x"] + box["width"] <= 390 for box in boxes), boxes  # nothing off screen
    app.assert_no_exception()


def test_a_choice_keeps_its_value_under_the_lesson_keys_and_enter_picks(app):
    """Inside a segmented control (Decode's mode) → steps the lesson and the choice and the focus stay
    (viz/ui/board/README.md, "Keys"); its options are buttons, so Tab reaches each and Enter picks.
    Space on a focused switch (a button) steps too, the switch left as it was; Shift+Space (a key with
    Shift is no lesson key) flips it. Opened at step 4, where Whole shows more than the window (the seed's first
    steps fit one window, and there Whole is off limits)."""
    app.open("/decode", step=4)
    group = app.page.get_by_role("radiogroup", name="Keys", exact=True)
    kv = group.get_by_role("radio", name="KV cache", exact=True)
    kv.focus()
    with app.rerun():
        app.page.keyboard.press("ArrowRight")
    assert app.query.get("step") == "5" and app.query.get("mode", "kv") == "kv"
    expect(kv).to_have_attribute("aria-checked", "true")
    expect(kv).to_be_focused()
    reencode = group.get_by_role("radio", name="re-encode", exact=True)
    reencode.focus()
    with app.rerun():
        app.page.keyboard.press("Enter")
    expect(reencode).to_have_attribute("aria-checked", "true")
    assert app.query.get("mode") == "reencode" and app.query.get("step") == "5"
    whole = app.switch("Whole")
    expect(whole).to_be_enabled()
    whole.focus()
    with app.rerun():
        app.page.keyboard.press("Space")
    app.expect_switched(app.switch("Whole"), False)
    assert app.query.get("step") == "6"
    app.switch("Whole").focus()
    with app.rerun():
        app.page.keyboard.press("Shift+Space")
    app.expect_switched(app.switch("Whole"), True)
    assert app.query.get("step") == "6"
    app.assert_no_exception()


def test_arrows_in_the_scenario_row_only_move_the_focus(app):
    """A pick in the scenario row loads a whole scenario, so there arrows move the focus (no rerun)
    and Space picks; the row keeps its key, so focus stays in it after the pick."""
    app.open("/decode")
    group = app.sidebar.get_by_role("radiogroup", name="Scenario", exact=True)
    seed, cache_safe = (group.get_by_role("radio", name=name, exact=True) for name in ("seed", "cache-safe"))
    seed.focus()
    runs = app.runs_finished
    app.page.keyboard.press("ArrowRight")
    expect(cache_safe).to_be_focused()
    app.page.wait_for_timeout(500)  # time for a run to start, were one asked for
    assert app.runs_finished == runs
    expect(seed).to_have_attribute("aria-checked", "true")
    with app.rerun():
        app.page.keyboard.press("Space")
    expect(cache_safe).to_have_attribute("aria-checked", "true")
    expect(cache_safe).to_be_focused()
    app.assert_no_exception()
