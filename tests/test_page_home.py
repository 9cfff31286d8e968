"""Tier 2 (AppTest): Home at a desk opens with its title; in presenter mode with the projector's first
line instead (the title for screen readers, shown once at the lead's size beside the sidebar's hint),
so its three cards fit one 1280 × 720 screen (the large title pushed them 60 px past it)."""

from __future__ import annotations

import html

from streamlit.testing.v1 import AppTest

from viz.core.lessons import words_home
from viz.core.lessons.leads import PRESENTER_HINT


def _opened(presenter: bool) -> AppTest:
    at = AppTest.from_file("../app.py", default_timeout=120)
    if presenter:
        at.query_params["present"] = "1"
    return at.run()


def test_home_has_its_title_at_a_desk_and_the_projectors_first_line_in_presenter_mode():
    """At a desk Home's title; in presenter mode one first line with its sentence (what the page teaches,
    not the title said again) and the sidebar's hint."""
    desk = _opened(presenter=False)
    assert not desk.exception and [t.value for t in desk.title] == [words_home.TITLE]
    presenter = _opened(presenter=True)
    assert not presenter.exception and not presenter.title
    lines = [e.proto.body for e in presenter.get("html") if not e.proto.body.startswith("<style>")]
    assert len(lines) == 1 and html.escape(words_home.LEAD) in lines[0] and html.escape(PRESENTER_HINT) in lines[0]
    assert [b.label for b in presenter.button if b.key.startswith("home_")] == ["Present Decode", "Present the tour"]
    # the pages' line at a desk only: on a projector it ran past the first screen, cut mid-sentence
    assert words_home.PAGES in [c.value for c in desk.caption]
    assert words_home.PAGES not in [c.value for c in presenter.caption]


def test_the_tour_card_says_what_the_tour_asks():
    """The card said each of the steps asks for a number: two steps ask nothing and one answer is a
    word. It names the main steps' count and says most ask, a number or a word."""
    from viz.core.lessons.tour import STEP_TITLES, tour_view

    questions, steps = tour_view().questions, len(STEP_TITLES)
    epilogue = sum(title.startswith("Epilogue") for title in STEP_TITLES)
    assert len(questions) < steps and "Each asks" not in words_home.TOUR and "Most steps ask" in words_home.TOUR
    assert {"one": 1, "eight": 8, "ten": 10}[words_home.TOUR.split("\n\n")[1].split()[0].lower()] == steps - epilogue
    assert any(not option.replace(".", "").isdigit() for q in questions for option in q.options)  # a word answer
    assert "a number or a word" in words_home.TOUR


def test_the_explore_card_says_how_to_reach_the_sidebar_where_it_is_folded():
    """The card sends a visitor to the sidebar's editors; on a phone or a projector the sidebar is
    folded to a "»" at the top left, so the card says that is where it opens."""
    desk = _opened(presenter=False)
    card = next(m.value for m in desk.markdown if m.value.startswith("### Explore"))
    assert "in the sidebar" in card and "» at the top left opens it" in card
    assert PRESENTER_HINT.startswith("Sidebar: » opens")  # the same sign and verb as presenter mode's hint
    # which also says how to fold it: Streamlit keeps a sidebar opened by hand open in presenter mode
    assert "« folds" in PRESENTER_HINT
