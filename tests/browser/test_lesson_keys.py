"""Tier 3 (browser): the lesson's keys and the tour's vote screen on a projector (issue 32).

→, PageDown and Space step the lesson and ← and PageUp step back (viz/ui/board/README.md, "Keys"),
whatever has focus in the lesson (a head just clicked, an answer just picked), exactly one step a
key press, and never change a choice; in a text field Space and the arrows type. Every step of the
tour fits a 1280 × 720 and a 1920 × 1080 projector: question, options and Reveal, then the answer's
figure beside the option marked right; a step that asks nothing, whole. Screenshots go to docs/screenshots/review/.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from viz import generate, load_preset
from viz.core.lessons.tour import RIGHT_MARK, question_even, tour_view
from viz.tools.chromium import NEXT_PAINT_JS
from viz.tools.screenshots import compress
from viz.tools.server import ROOT

PROJECTOR = {"width": 1280, "height": 720}
PHONE = {"width": 390, "height": 844}
PROJECTORS = (PROJECTOR, {"width": 1920, "height": 1080})
REVIEW = ROOT / "docs" / "screenshots" / "review"


def press(app, key: str) -> None:
    """Press ``key`` and wait for the run it starts, then long enough for a second run to start,
    were one asked for (a key must step exactly once)."""
    runs = app.runs_finished
    with app.rerun():
        app.page.keyboard.press(key)
    app.page.wait_for_timeout(600)
    app.settle()
    assert app.runs_finished == runs + 1, f"{key}: {app.runs_finished - runs} runs"


def inside(app, name: str, locator) -> dict:
    """The element's box, checked to lie whole inside the viewport (no scrolling)."""
    expect(locator).to_be_visible()
    box = locator.bounding_box()
    view = app.page.viewport_size
    assert box["y"] >= 0 and box["y"] + box["height"] <= view["height"] + 0.5, \
        f"{name} at {box} is not inside {view['width']}×{view['height']}"
    return box


def beside_or_under(figure: dict, option: dict) -> bool:
    """Whether a box lies beside another (in another column: no x in common) or under it (in its column,
    starting below it)."""
    columns = figure["x"] < option["x"] + option["width"] and option["x"] < figure["x"] + figure["width"]
    return not columns or figure["y"] >= option["y"] + option["height"]


def test_the_keys_step_decode_once_each_and_never_change_the_head(app):
    """Decode in presenter mode at 1280 × 720: after a click on head 'last', →, PageDown and Space
    each go one step forward, PageUp and ← one back, and 'last' stays chosen (and focused)."""
    app.page.set_viewport_size(PROJECTOR)
    app.open("/decode", present=1, step=1, head=1)
    app.pick("Head", "last")
    heads = app.page.get_by_role("radiogroup", name="Head", exact=True)
    last = heads.get_by_role("radio", name="last", exact=True)
    expect(last).to_be_focused()
    for key, step in (("ArrowRight", 2), ("PageDown", 3), ("Space", 4), ("PageUp", 3), ("ArrowLeft", 2)):
        press(app, key)
        assert app.query.get("step") == str(step), key
        assert app.query.get("head") == "2", key  # 1-based in a link
        expect(last).to_have_attribute("aria-checked", "true")
    expect(app.main.get_by_test_id("stAlertContentInfo").first).to_contain_text("Step 2:")
    app.assert_no_exception()
    REVIEW.mkdir(parents=True, exist_ok=True)
    app.page.screenshot(path=str(REVIEW / "decode-keys-1280x720.png"))


def test_space_on_a_focused_button_steps_once_and_back_at_zero_changes_nothing(app):
    """Space with Step focused (after a click on it) is one step, not two (the button's own Space
    is swallowed); at step 0 ← takes the key (Back is disabled) and nothing moves."""
    app.open("/decode", step=0)
    app.click_button("Step")
    assert app.query.get("step") == "1"
    expect(app.main.get_by_role("button", name=re.compile("^Step"))).to_be_focused()
    press(app, "Space")
    assert app.query.get("step") == "2"
    app.click_button("Back")
    app.click_button("Back")
    assert app.query.get("step", "0") == "0"
    runs = app.runs_finished
    app.page.keyboard.press("ArrowLeft")
    app.page.wait_for_timeout(600)
    assert app.runs_finished == runs and app.query.get("step", "0") == "0"
    app.assert_no_exception()


def test_in_a_text_field_space_and_arrows_type_and_page_down_steps(app):
    """In a text field (the sidebar's prompt box) Space types a space and → moves the caret, the
    step stays; PageDown still steps."""
    app.open("/decode", step=1)
    box = app.prompt()
    box.click()
    before = box.input_value()
    runs = app.runs_finished
    app.page.keyboard.press("End")
    app.page.keyboard.press("Space")
    app.page.keyboard.press("ArrowLeft")
    app.page.wait_for_timeout(600)
    expect(box).to_have_value(before + " ")
    assert app.runs_finished == runs and app.query.get("step") == "1"
    press(app, "PageDown")
    assert app.query.get("step") == "2"
    app.assert_no_exception()


def test_the_keys_step_the_tour_and_never_change_the_answer(app):
    """In the tour, after a click on an answer, → goes to the next step and ← back; the answer is
    still the one clicked, and Reveal records it."""
    app.open("/tour", tour=3)
    app.pick("Your answer", "20")
    press(app, "ArrowRight")
    assert app.query.get("tour") == "4"
    press(app, "PageUp")
    assert app.query.get("tour") == "3"
    answers = app.page.get_by_role("radiogroup", name="Your answer", exact=True)
    expect(answers.get_by_role("radio", name="20", exact=True)).to_have_attribute("aria-checked", "true")
    app.click_button("Reveal")
    expect(app.main.get_by_test_id("stAlertContentError")).to_contain_text("you chose 20, it is 12.5")
    app.assert_no_exception()


# What each tour step shows: with a question, the element that holds its revealed answer (step 3's the
# contexts, where the 'even' head's 12.5 is read); asking nothing (steps 1 and 7), the elements it shows,
# all of which must lie whole in a projector's first screen
SHOWN = {1: (".st-key-tour_tokens", ".st-key-tour_heads"), 2: ".st-key-tour_mask", 3: ".st-key-tour_contexts",
         4: ".st-key-tour_nothing", 5: ".st-key-tour_prediction", 6: "[data-testid=stAlertContentInfo]",
         7: (".st-key-tour_cache", ".st-key-tour_work"), 8: ".st-key-tour_compare", 9: ".st-key-tour_pool",
         10: ".st-key-tour_batching"}
STEPS = tour_view().steps  # each step's question (index) from the core, None where it asks nothing
QUESTION_STEPS = [(step, STEPS[step - 1].question, SHOWN[step]) for step in SHOWN if STEPS[step - 1].question is not None]


@pytest.mark.parametrize("screen", PROJECTORS, ids=[f"{s['width']}x{s['height']}" for s in PROJECTORS])
@pytest.mark.parametrize("step", list(SHOWN), ids=[f"step{step}" for step in SHOWN])
def test_every_tour_step_fits_a_projector(app, step, screen):
    """Presenter mode at 1280 × 720 and 1920 × 1080, every step of the tour: a step that asks nothing
    shows what it shows whole in the first screen, and no Reveal (step 7's work chart started below the
    fold); a step with a question has the question, every option and Reveal in the first screen; after
    Reveal the top of the answer's figure is too, and the right option reads "✓ right", bold (in the
    options' line of text that replaces the control)."""
    assert len(SHOWN) == len(STEPS)
    app.page.set_viewport_size(screen)
    app.open("/tour", tour=step, present=1)
    index = STEPS[step - 1].question
    if index is None:
        for selector in SHOWN[step]:
            inside(app, selector, app.main.locator(selector).first)
        expect(app.main.get_by_role("button", name="Reveal")).to_have_count(0)
        app.assert_no_exception()
        return
    box = app.main.locator(f".st-key-tour_question_{index}")
    inside(app, "the question", box.get_by_role("heading", name=re.compile("^Vote first:")))
    options = box.get_by_role("radio")
    assert options.count() >= 2
    for i in range(options.count()):
        inside(app, f"option {i + 1}", options.nth(i))
    inside(app, "Reveal", box.get_by_role("button", name="Reveal"))
    if step == 3 and screen == PROJECTOR:
        REVIEW.mkdir(parents=True, exist_ok=True)
        app.page.screenshot(path=str(REVIEW / "tour-1280x720.png"))
    app.click_button("Reveal")
    marked = box.locator("strong", has_text=RIGHT_MARK)
    expect(marked).to_have_count(1)
    option = inside(app, "the marked option", marked)
    figure = inside(app, f"step {step}'s answer", app.main.locator(SHOWN[step]).first)
    assert beside_or_under(figure, option), f"step {step}'s answer at {figure}, the marked option at {option}"
    assert float(marked.evaluate("e => getComputedStyle(e).fontWeight")) >= 600
    app.assert_no_exception()
    if step == 3 and screen == PROJECTOR:
        app.page.screenshot(path=str(REVIEW / "tour-revealed-1280x720.png"))


@pytest.mark.parametrize(("step", "index", "answer"), QUESTION_STEPS, ids=[f"step{s[0]}" for s in QUESTION_STEPS])
def test_at_a_desk_the_revealed_answer_is_whole_beside_the_marked_option(app, step, index, answer):
    """At 1440 × 900 (the sidebar open), after Reveal, the answer's figure (or table, or line) lies whole
    in the first screen beside the option marked right: under the question it started at 809 px."""
    app.page.set_viewport_size({"width": 1440, "height": 900})
    app.open("/tour", tour=step)
    box = app.main.locator(f".st-key-tour_question_{index}")
    app.click_button("Reveal", box)
    top = app.main.locator(answer).first
    expect(top).to_be_visible()
    inside(app, "the answer", top)
    inside(app, "the marked option", box.locator("strong", has_text=RIGHT_MARK))
    app.assert_no_exception()


def test_the_vote_screen_at_1920x1080(app):
    """The tour's vote screen on a 1920 × 1080 projector, before and after Reveal, for review."""
    app.page.set_viewport_size({"width": 1920, "height": 1080})
    app.open("/tour", tour=3, present=1)
    question = question_even(generate(load_preset("seed"), 1))
    expect(app.main.get_by_role("radio", name=f"C. {question.options[2]}")).to_be_visible()
    REVIEW.mkdir(parents=True, exist_ok=True)
    app.page.screenshot(path=str(REVIEW / "tour-1920x1080.png"))
    app.click_button("Reveal")
    inside(app, "the contexts", app.main.locator(".st-key-tour_contexts"))
    app.page.screenshot(path=str(REVIEW / "tour-revealed-1920x1080.png"))
    app.assert_no_exception()


def review_shot(screen, name: str) -> None:
    """The first screen of ``screen``, as a 128-colour PNG in the review folder."""
    REVIEW.mkdir(parents=True, exist_ok=True)
    path = REVIEW / f"{name}.png"
    screen.page.screenshot(path=str(path))
    compress(path, width=screen.page.viewport_size["width"], colours=128)


def vote_screen_whole(screen, box, where: str) -> None:
    """A class's question in the teacher's first screen: its prompt, every option, Reveal and the
    live count of every option."""
    size = f"{where} at {screen.page.viewport_size['width']}"
    inside(screen, f"{size}: the question", box.get_by_role("heading", name=re.compile("^Vote first:")))
    options = box.get_by_role("radio")
    for i in range(options.count()):
        inside(screen, f"{size}: option {i + 1}", options.nth(i))
    inside(screen, f"{size}: Reveal", box.get_by_role("button", name="Reveal"))
    bars = box.get_by_test_id("stProgress")
    expect(bars).to_have_count(options.count())
    for i in range(bars.count()):
        inside(screen, f"{size}: count {i + 1}", bars.nth(i))
    counts = [bars.nth(i).bounding_box() for i in range(bars.count())]  # one row, under the options
    assert len({round(c["y"]) for c in counts}) == 1, f"{size}: the counts are not one row: {counts}"
    for i in range(options.count()):  # no option cut or covered by a count
        edge = options.nth(i).bounding_box()
        assert edge["y"] + edge["height"] <= min(c["y"] for c in counts), \
            f"{size}: option {i + 1} at {edge} runs into the counts"


def test_the_class_vote_fits_a_projector_with_its_live_count(new_app, tmp_path):
    """In a class (the teacher in presenter mode, two students voting from phones) the question, its
    options, the live count of each option and Reveal are in the teacher's first screen at 1280 × 720
    and 1920 × 1080, under a one-line class bar; after Reveal the answer's figure is in the first
    screen too, the right option marked, and each student is told whether they were right. A
    student's phone (390 × 844) shows the options with the vote just sent."""
    from viz.tools.server import StreamlitServer

    from .visitor import ARTIFACTS

    with StreamlitServer(ARTIFACTS / "browser-vote-screen.log",
                         env={"KVLAB_STORE": f"sqlite:///{tmp_path / 'classes.sqlite3'}"}) as server:
        teacher, student, other = new_app(server), new_app(server), new_app(server)
        teacher.page.set_viewport_size(PROJECTOR)
        teacher.open("/")
        teacher.expander("Class mode", scope=teacher.sidebar, reruns=True)
        teacher.click_button("Start a class", scope=teacher.sidebar)
        code, secret = teacher.query["class"], teacher.query["teach"]
        for pupil in (student, other):
            pupil.open("/", join=code)
            pupil.click_button("Join the class", scope=pupil.sidebar)
            pupil.page.set_viewport_size(PHONE)  # joined at a desk's size (the sidebar open), then a phone
        teacher.open("/tour", tour=3, present=1, **{"class": code, "teach": secret})
        bar = teacher.main.locator(".st-key-kv_class_bar")
        expect(bar).to_contain_text("2 students connected")
        assert bar.bounding_box()["height"] < 100, bar.bounding_box()  # one line, not the join screen
        for pupil, option in ((student, "C. 12.5"), (other, "A. 5")):  # lettered, as the projector reads them
            expect(pupil.page).to_have_url(re.compile(r"/tour\?.*tour=3"))  # the students follow the teacher
            pupil.settle()
            answer = pupil.page.get_by_role("radiogroup", name="Your answer", exact=True).get_by_role(
                "radio", name=option, exact=True)
            try:  # (CI once waited 60 s here for the second phone's option: say what that phone showed)
                expect(answer).to_be_visible()
            except AssertionError:
                pupil.page.screenshot(path=str(ARTIFACTS / "class-vote-missing-option.png"))
                raise AssertionError(f"no option {option!r} on a student's phone at {pupil.page.url}; it shows: "
                                     f"{pupil.main.inner_text()[:600]!r}") from None
            pupil.pick("Your answer", option)
            expect(pupil.main.get_by_text("Your vote is in")).to_be_visible()
        mine = student.page.get_by_role("radiogroup", name="Your answer", exact=True)
        for name, element in (("the options", mine), ("the vote sent", student.main.get_by_text("Your vote is in"))):
            inside(student, f"the phone: {name}", element)
        expect(mine.get_by_role("radio", name="C. 12.5", exact=True)).to_have_attribute("aria-checked", "true")
        review_shot(student, "class-vote-phone-390x844")
        box = teacher.main.locator(".st-key-tour_question_1")
        for size in PROJECTORS:
            teacher.page.set_viewport_size(size)
            teacher.page.evaluate(NEXT_PAINT_JS)
            for count in ("A. 5: 1 vote", "B. 9: 0 votes", "C. 12.5: 1 vote", "D. 20: 0 votes"):
                inside(teacher, count, box.get_by_test_id("stProgress").filter(has_text=count))
            vote_screen_whole(teacher, box, "step 3")
            review_shot(teacher, f"class-vote-{size['width']}x{size['height']}")
        teacher.page.set_viewport_size(PROJECTOR)
        teacher.click_button("Reveal")
        expect(teacher.main.locator(".st-key-tour_contexts .js-plotly-plot")).to_be_visible()
        inside(teacher, "the contexts", teacher.main.locator(".st-key-tour_contexts"))
        inside(teacher, "the marked option", box.locator("strong", has_text=RIGHT_MARK))
        for count in ("A. 5: 1 vote", "C. 12.5: 1 vote"):  # the class's final count stays, under the answer
            expect(box.get_by_test_id("stProgress").filter(has_text=count)).to_have_count(1)
        review_shot(teacher, "class-vote-revealed-1280x720")
        expect(student.main.get_by_text(re.compile(r"^Right: 12\.5"))).to_be_visible()
        expect(other.main.get_by_text(re.compile(r"^Not quite: you chose 5"))).to_be_visible()
        for step, index, _ in [q for q in QUESTION_STEPS if q[0] != 3]:  # every other question fits too
            teacher.open("/tour", tour=step, present=1, **{"class": code, "teach": secret})
            box = teacher.main.locator(f".st-key-tour_question_{index}")
            for size in PROJECTORS:
                teacher.page.set_viewport_size(size)
                teacher.page.evaluate(NEXT_PAINT_JS)
                vote_screen_whole(teacher, box, f"step {step}")
            teacher.page.set_viewport_size(PROJECTOR)
        for screen in (teacher, student, other):
            screen.assert_no_exception()


@pytest.mark.parametrize("present", [0, 1], ids=["desk", "presenter"])
def test_a_focused_slider_keeps_its_arrows_at_a_desk_and_steps_on_a_projector(app, present):
    """At a desk a keyboard user sets a focused slider with ← →; in presenter mode the same keys step
    the lesson (the teacher's clicker never moves a setting). ←: the pool opens at its first iteration,
    so in presenter mode it is first stepped forward one, for ← to go back to. At a desk the new block
    size is a new run, which opens at its first iteration too: the iteration shown stays the same."""
    app.page.set_viewport_size({"width": 1440, "height": 900})
    app.open("/memory", **({"present": 1} if present else {}))
    setting = app.main.get_by_role("slider", name="Block size (tokens)")  # 1, 2, 4 (shown first), 8, 16, 32
    iteration = app.main.get_by_role("slider", name="Step · scheduler iteration")
    if present:
        with app.rerun():
            app.main.locator(".st-key-memory_snapshot_forward button").first.click()
        expect(iteration).to_have_attribute("aria-valuetext", "prefill B")
    before, shown = setting.get_attribute("aria-valuetext"), iteration.get_attribute("aria-valuetext")
    setting.focus()
    if present:
        with app.rerun():  # the Step button's click
            app.page.keyboard.press("ArrowLeft")
        app.settle()
        expect(setting).to_have_attribute("aria-valuetext", before)
        expect(iteration).not_to_have_attribute("aria-valuetext", shown)
    else:
        with app.rerun():  # the run the new block size starts: the iteration shown stays the same
            app.page.keyboard.press("ArrowLeft")
        expect(setting).to_have_attribute("aria-valuetext", str(int(before) // 2))
        expect(iteration).to_have_attribute("aria-valuetext", shown)
    app.assert_no_exception()
