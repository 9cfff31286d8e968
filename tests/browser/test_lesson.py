"""Tier 3 (browser): the way into a lesson: Home, the guided tour's vote-then-reveal in presenter
mode, and links that keep the view through page changes.

Expected numbers come from the engine (``viz.generate``), never from literals typed here.
"""

from __future__ import annotations

import re

from playwright.sync_api import expect

from viz import generate, load_preset
from viz.core.engine.explain import narrate_step
from viz.core.lessons.tour import question_even
from viz.ui import article

PRESENTER_720 = {"width": 1280, "height": 720}

# The text a step shows outside its questions (their prompts and options): figures included, as
# Plotly draws their titles and labels as SVG text.
OUTSIDE_QUESTIONS_JS = """() => {
  const main = document.querySelector('[data-testid="stMain"]').cloneNode(true);
  main.querySelectorAll('[class*="st-key-tour_question_"]').forEach(q => q.remove());
  return main.textContent;
}"""


def nav_link(app, title: str):
    return app.sidebar.get_by_test_id("stSidebarNavLink").filter(has_text=re.compile(rf"{re.escape(title)}\s*$"))


def test_home_offers_three_paths_and_names_the_article(app):
    """/ is Home: what kvlab is, the tour, presenting and exploring, and a link to the source article."""
    app.open("/")
    expect(app.main.locator("h1")).to_contain_text("kvlab")
    link = app.main.get_by_role("link", name=re.compile(re.escape(article.TITLE)))
    expect(link).to_have_attribute("href", article.URL)
    for path in ("Take the tour", "Present in class", "Explore"):
        expect(app.main.get_by_role("heading", name=path)).to_be_visible()
    assert app.query == {}  # Home shows no view, so its address carries none
    app.click_button("Present Decode")
    expect(app.main.locator("h1")).to_contain_text("Decode")
    assert app.page.url.split("?")[0].endswith("/decode") and app.query.get("present") == "1"
    app.assert_no_exception()


def test_tour_vote_then_reveal_in_presenter_mode(app):
    """At 1280×720 in presenter mode a tour question shows no answer until Reveal, then the engine's."""
    app.page.set_viewport_size(PRESENTER_720)
    app.open("/tour", present="1", tour="3")  # scores, weights and contexts
    question = question_even(generate(load_preset("seed"), 1))
    answer = question.options[question.answer]
    voting = app.main.locator('[class*="st-key-tour_question_1"]')
    heading = voting.get_by_role("heading", name=re.compile("^Vote first"))
    expect(heading).to_be_visible()
    options = voting.get_by_role("radiogroup")  # the answers: a segmented control, side by side
    for letter, option in zip("ABCD", question.options):
        expect(options).to_contain_text(f"{letter}. {option}")
    assert app.font_size_px(heading) >= 24, app.font_size_px(heading)  # read from the back of the room
    # Streamlit draws a segmented control's options at 0.875 of presenter mode's root size (16 px at
    # 720 px high): 24 px would need CSS aimed at Streamlit's own widget, which kvlab does not write
    assert app.font_size_px(options.get_by_role("radio").first) >= 16
    outside = app.page.evaluate(OUTSIDE_QUESTIONS_JS)
    assert not re.search(rf"(?<![\d.]){re.escape(answer)}(?!\d)", outside), "the answer shows before Reveal"
    expect(app.main.locator(".js-plotly-plot")).to_have_count(0)
    app.screenshot("tour-presenter-before-reveal")

    letter = "ABCD"[question.answer]
    voting.get_by_text(f"{letter}. {answer}", exact=True).click()  # the class's answer, recorded at Reveal
    app.click_button("Reveal", voting)
    expect(voting.get_by_test_id("stAlertContentSuccess")).to_contain_text(f"Right: {answer}")
    expect(app.main.locator(".js-plotly-plot").first).to_be_visible()
    assert answer in app.page.evaluate(OUTSIDE_QUESTIONS_JS)
    assert app.query.get("tour") == "3"
    app.assert_no_exception()
    app.screenshot("tour-presenter-after-reveal")


def test_the_link_keeps_the_view_through_page_changes(app, new_app):
    """After Step, Presenter and page changes the address bar still holds the whole view, and a fresh
    visitor opening it gets the same step, head, mode and presenter mode."""
    app.open("/decode", head="2", mode="recompute")
    app.click_button("Step")
    app.click_button("Step")
    view = {key: app.query[key] for key in ("s", "step", "head", "mode")}
    assert view["step"] == "2" and view["head"] == "2" and view["mode"] == "recompute"
    for title, path in (("Prefill", "/prefill"), ("Memory", "/memory"), ("Guided tour", "/tour")):
        with app.rerun():
            nav_link(app, title).click()
        expect(app.page).to_have_url(re.compile(rf"{re.escape(path)}\?"))
        assert {key: app.query.get(key) for key in view} == view, title
    # st.code, with Streamlit's copy button, built once its fold is opened (not on a first view);
    # opened before presenter mode folds the sidebar away, it stays open
    fold = app.expander("Copy link", app.sidebar, reruns=True)
    app.toggle("Presenter mode")
    link = app.page.url
    assert app.query.get("present") == "1"
    code = fold.get_by_test_id("stCode")
    # waited for, not read at once: the run's last frame can reach the browser's network stack before
    # its page has drawn the box anew (CI once read the box still without present=1)
    expect(code).to_contain_text("present=1")
    expect(code).to_contain_text("step=2")
    shared = code.locator("code").inner_text().strip()
    assert "present=1" in shared and shared.endswith(link.split("?", 1)[1])
    expect(code.locator('button[aria-label="Copy to clipboard"]')).to_have_count(1)  # shown on hover

    # the copied link opens at / and names its page (one connection attempt); the page it opens
    # shows the address bar's own form
    assert "/?page=tour&" in shared
    other = new_app().open_url(shared)
    expect(other.page).to_have_url(re.compile(r"/tour\?"))
    assert other.query == app.query
    other.expect_switched(other.switch("Presenter mode", other.sidebar), True)
    # a presenter link opened at / folds the sidebar like one opened at its page; » opens it to change page
    expect(other.sidebar).to_have_attribute("data-collapsed", "true")
    other.page.get_by_test_id("stExpandSidebarButton").click()
    expect(other.sidebar).to_have_attribute("data-collapsed", "false")
    with other.rerun():
        nav_link(other, "Decode").click()
    assert {key: other.query.get(key) for key in view} == view
    narration = narrate_step(generate(load_preset("seed"), 3, "recompute"), 2)
    expect(other.main.get_by_test_id("stAlertContentInfo").first).to_contain_text(narration)
    other.assert_no_exception()
    other.screenshot("link-restored-after-navigation")
