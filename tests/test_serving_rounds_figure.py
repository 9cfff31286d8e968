"""Tier 1: Serving's speculative rounds grid (viz.figures.serving.rounds_figure) says which rounds it
shows, and a guess a round did not make reads as none, not as a blank cell (a teacher's review)."""

from __future__ import annotations

from viz import load_preset
from viz.core.serving import words
from viz.core.serving.speculative import DraftSpec, speculate
from viz.figures import serving
from serving_fixtures import one_thread  # noqa: F401  (autouse: one torch thread)

RUN = speculate(load_preset("previous-token"), 12, 4, DraftSpec("fewer heads"))  # 11 rounds, the last ones short


def _title(fig) -> str:
    return fig.layout.title.text.replace("<br>", " ")


def test_the_grid_says_which_rounds_it_shows_when_it_leaves_some_out():
    """Stepped to the last of 11 rounds, four shown: the title says 'rounds 8–11 of 11'; at round 3 the
    window is rounds 1–4; every round shown (no window, or as many as there are): no count."""
    count = len(RUN.rounds)
    assert count == 11
    last = serving.rounds_figure(RUN, count - 1, shown=4)
    assert list(last.data[0].y) == [f"round {i}" for i in range(8, 12)]
    assert "Rounds 8–11 of 11" in _title(last) and "Each round" not in _title(last)
    assert "Rounds 1–4 of 11" in _title(serving.rounds_figure(RUN, 2, shown=4))
    for whole in (serving.rounds_figure(RUN, 2), serving.rounds_figure(RUN, 2, shown=count)):
        assert _title(whole).startswith("Each round:") and " of 11" not in _title(whole)


def test_a_guess_the_round_did_not_make_says_so_in_its_cell():
    """Rounds with fewer guesses than the widest (3, 2, 1, none near the end) write 'no guess' in each
    column they did not fill: no blank white cell the legend leaves unsaid; made guesses keep their words."""
    heat = serving.rounds_figure(RUN, len(RUN.rounds) - 1).data[0]
    width = max(len(r.guesses) for r in RUN.rounds)
    for rnd, row in zip(RUN.rounds, heat.text):
        cells = list(row[1:width + 1])
        made = len(rnd.guesses)
        assert all(c and words.NO_GUESS not in c for c in cells[:made]), cells
        assert cells[made:] == [words.NO_GUESS] * (width - made), cells
    assert any(len(r.guesses) < width for r in RUN.rounds)
