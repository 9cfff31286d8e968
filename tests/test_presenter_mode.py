"""Presenter mode (issue 32): every lesson page keeps its one sentence on its first line, and beside
it says how the folded sidebar opens again (never a toast, which covered the narration); at a desk
the sentence is the caption under the title and no hint shows."""

from __future__ import annotations

import html
import re

import pytest
from apptest_helpers import flip
from streamlit.testing.v1 import AppTest

from viz.core.lessons import tour, words_decode, words_home, words_prefill
from viz.core.lessons.leads import PAGE_LEADS, PRESENTER_HINT
from viz.ui import state

# each page's one sentence: Prefill's, Decode's and the tour's from their words modules, the others'
# from leads
SENTENCES = {"prefill": words_prefill.CAPTION, "decode": words_decode.LEAD, "memory": PAGE_LEADS["memory"].sentence,
             "tour": tour.tour_view().steps[0].lead, "home": words_home.LEAD}  # the tour opens on its first step
# every page's title and the sentence presenter mode shows in its place
TITLED = {"prefill": (words_prefill.TITLE, words_prefill.CAPTION), "decode": (words_decode.TITLE, words_decode.LEAD),
          "tour": (tour.TOUR_TITLE, tour.tour_view().steps[0].lead), "home": (words_home.TITLE, words_home.LEAD),
          **{page: (lead.title, lead.sentence) for page, lead in PAGE_LEADS.items()}}


def _first_lines(at: AppTest) -> list[str]:
    """The HTML of every st.html element but presenter mode's style."""
    return [element.proto.body for element in at.get("html") if not element.proto.body.startswith("<style>")]


def _opened(page: str, presenter: bool) -> AppTest:
    at = AppTest.from_file("../app.py", default_timeout=120)
    at.query_params["page"] = page
    if presenter:
        at.query_params["present"] = "1"
    return at.run()


@pytest.mark.parametrize("page", list(SENTENCES))
def test_presenter_mode_keeps_the_sentence_and_says_how_the_sidebar_opens(page):
    """In presenter mode the page's first line holds its sentence and the sidebar's hint, in one element."""
    at = _opened(page, presenter=True)
    assert not at.exception and at.session_state[state.PRESENTER]
    lines = _first_lines(at)
    assert len(lines) == 1, lines
    assert html.escape(SENTENCES[page]) in lines[0] and html.escape(PRESENTER_HINT) in lines[0]
    assert not at.toast
    assert SENTENCES[page] not in [caption.value for caption in at.caption]  # said once


# the name each page's first line opens with in bold: its title, but Home's (a long title) its short name
NAMES = {page: title for page, (title, _) in TITLED.items()} | {"home": words_home.NAME}


@pytest.mark.parametrize("page", list(TITLED))
def test_presenter_mode_shows_the_pages_name_on_its_first_line_and_keeps_the_h1(page):
    """The folded sidebar and the visually hidden h1 left a projector without the page's name: it opens
    the sentence's line in bold (visible, the same line), and the title is still the screen readers' h1."""
    at = _opened(page, presenter=True)
    assert not at.exception
    line = _first_lines(at)[0]
    title, sentence = TITLED[page]
    hidden = re.search(r'<h1 style="position: absolute; width: 1px;[^"]*">(.*?)</h1>', line)
    assert hidden and hidden.group(1) == html.escape(title)
    shown = re.search(r"<p [^>]*><strong[^>]*>(.*?)</strong>(.*?)</p>", line[hidden.end():])
    assert shown and shown.group(1) == html.escape(NAMES[page]) and html.escape(sentence) in shown.group(2)


@pytest.mark.parametrize("page", list(TITLED))
def test_every_pages_sentence_says_what_it_teaches_not_its_title_again(page):
    """Presenter mode shows a page's sentence instead of its title: a sentence (several words, a full
    stop) that is more than the title said again (Home passed its title as its sentence)."""
    title, sentence = TITLED[page]
    assert sentence.rstrip(".").lower() != title.lower() and len(sentence.split()) >= 8 and sentence.endswith(".")


def test_at_a_desk_the_sentence_is_the_caption_and_no_hint_shows():
    """Without presenter mode Decode's sentence is the caption under its title; the hint is nowhere."""
    at = _opened("decode", presenter=False)
    assert not at.exception and not at.session_state[state.PRESENTER]
    assert [t.value for t in at.title] == [words_decode.TITLE]
    assert words_decode.LEAD in [caption.value for caption in at.caption]
    assert not _first_lines(at) and not at.toast


def test_turning_presenter_mode_on_shows_the_hint_and_off_removes_it():
    """The sidebar's switch: on, the hint is on the first line (no toast); off, it is gone."""
    at = _opened("decode", presenter=False)
    flip(at, state.PRESENTER_TOGGLE, True)
    assert not at.exception and not at.toast
    assert any(html.escape(PRESENTER_HINT) in line for line in _first_lines(at))
    flip(at, state.PRESENTER_TOGGLE, False)
    assert not at.session_state[state.PRESENTER] and not _first_lines(at)
