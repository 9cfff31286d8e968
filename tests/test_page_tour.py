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
    """All nine steps render without an exception."""
    titles = []
    for _ in range(8):
        _forward(tour)
        titles.append(tour.subheader[0].value)
    assert titles[-2:] == ["8. The cache bug in the article", "9. From one cache to a server"]
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


def test_closing_chapter_asks_about_the_server_with_the_engines_answers(tour):
    """The last step serves three requests: its answers are the scheduler's time to first token and prefix hits."""
    from dataclasses import replace

    from viz.core.scheduler import serve
    from viz.core.tour import TOUR_SERVER, question_join, question_prefix, tour_workload

    for _ in range(8):
        _forward(tour)
    served = load_preset("seed").cache_safe()
    continuous = serve(served, tour_workload(served), TOUR_SERVER)
    static = serve(served, tour_workload(served), replace(TOUR_SERVER, policy="static"))
    join, prefix = question_join(continuous, static, 2), question_prefix(continuous, 2)
    assert continuous.outcomes[2].ttft < static.outcomes[2].ttft and continuous.outcomes[2].prefix_hits == 2
    questions = [r for r in tour.radio if (r.key or "").startswith("tour_answer")]
    assert [r.options for r in questions] == [join.options, prefix.options]
    questions[1].set_value(prefix.options[prefix.answer]).run()
    next(b for b in tour.button if b.key == "tour_reveal_button_7").click().run()
    assert "Right: **2**" in tour.success[0].value
