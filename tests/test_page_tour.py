"""Tier 2 (AppTest): the guided tour walks its steps and reveals the engine's answers."""

from __future__ import annotations

import pytest

from viz import generate, load_preset
from viz.core.tour import question_even


@pytest.fixture
def tour(app):
    app.switch_page("pages/tour.py").run()
    assert not app.exception
    return app


def _forward(at):
    next(b for b in at.button if b.key == "tour_step_forward").click().run()
    assert not at.exception


def test_every_step_renders(tour):
    """All eight steps render without an exception."""
    titles = []
    for _ in range(7):
        _forward(tour)
        titles.append(tour.subheader[0].value)
    assert titles[-1] == "8. The cache bug in the article"
    assert next(b for b in tour.button if b.key == "tour_step_forward").disabled


def test_reveal_checks_the_answer_against_the_engine(tour):
    """Choosing the engine's number and revealing says it is right; a wrong pick says not quite."""
    _forward(tour)
    _forward(tour)  # scores, weights and contexts
    question = question_even(generate(load_preset("seed"), 1))
    assert question.options[question.answer] == "12.5"
    tour.radio[0].set_value("12.5").run()
    next(b for b in tour.button if b.label == "Reveal").click().run()
    assert "Right" in tour.success[0].value
    wrong = next(o for o in question.options if o != "12.5")
    tour.radio[0].set_value(wrong).run()
    assert "Not quite" in tour.error[0].value


def test_cache_bug_step_shows_six_and_seven(tour):
    """The last step compares the cached 6 with the recomputed 7 for the 'last' head."""
    for _ in range(7):
        _forward(tour)
    table = tour.dataframe[0].value
    assert table.loc[1, "KV cache"] == pytest.approx(6.0, abs=1e-4)
    assert table.loc[1, "recompute"] == pytest.approx(7.0, abs=1e-4)
