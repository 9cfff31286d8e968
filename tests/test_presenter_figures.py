"""Tier 1: the layouts behind issue 32's presenter-mode review (their geometry in the browser is
tests/browser/test_presenter_figures.py): level, short tick labels in the tour's revealed figures,
Cost's legend in a row of its own under the axis titles, and a stale-cache figure whose axis titles
fit its two rows."""

from __future__ import annotations

from figure_gallery import _cost
from viz import generate, load_preset
from viz.core.engine.explain import check_cache
from viz.core.lessons.stale import stale_lesson
from viz.figures import cost, toy
from viz.figures.base import fit
from viz.figures.stale import stale_figure


def test_every_heads_weights_name_their_keys_by_position_on_level_ticks():
    """Each bottom panel's x ticks are the keys' positions (1, 2, …), level; the hover keeps the tokens."""
    trace = generate(load_preset("seed"), 1)
    fig = fit(toy.small_multiples(trace), width=590, presenter=True)
    shown = []
    fig.for_each_xaxis(lambda axis: shown.append(axis) if axis.showticklabels else None)
    assert len(shown) == len(trace.scenario.heads)
    for axis in shown:
        assert axis.tickangle == 0
        assert list(axis.ticktext) == [str(p) for p in range(1, len(trace.prefill.tokens) + 1)]
        assert list(axis.tickvals) == list(fig.data[0].x)  # one tick per key, named by its label's number
    assert all("key %{x}" in t.hovertemplate for t in fig.data if t.type == "heatmap")


def test_the_seeds_three_words_stand_level_under_the_logits():
    """The prediction figure's words are level while there are few of them (the seed has three)."""
    fig = toy.prediction_figure(generate(load_preset("seed"), 1))
    assert fig.layout.xaxis.tickangle == 0 and fig.layout.xaxis2.tickangle == 0


def test_costs_legend_sits_in_its_own_row_under_the_axis_titles():
    """The legend is anchored to the figure's bottom edge, and the bottom margin holds it below the
    ticks and the axis title, at a desk and in presenter mode (fit keeps the margin)."""
    for name, fig, _ in _cost():
        for presenter in (False, True):
            fit(fig, width=1180, presenter=presenter)
            legend = fig.layout.legend
            assert (legend.yref, legend.y, legend.yanchor, legend.orientation) == ("container", 0, "bottom", "h"), name
            assert fig.layout.margin.b >= cost.LEGEND_PX + 50, name
            assert fig.layout.height >= 400 + cost.LEGEND_PX, name


def test_the_stale_figures_axis_titles_fit_its_two_rows():
    """The row axis's title is short enough to stand beside two rows (it was cut off at both ends);
    the title still says it is the newest query."""
    kv, full = generate(load_preset("seed"), 2, "kv"), generate(load_preset("seed"), 2, "recompute")
    fig = stale_figure(stale_lesson(kv, full, check_cache(kv, full, 1)))
    assert len(fig.layout.yaxis.title.text) <= 12
    assert "newest query" in fig.layout.meta["title"]


def test_costs_panel_titles_are_short_and_the_axes_say_the_rest():
    """Each panel's title fits half a phone's figure (about 22 characters on cpu); the y axes say per
    what the work and the time are counted."""
    for name, fig, _ in _cost():
        titles = [note.text for note in fig.layout.annotations]
        assert len(titles) == 2 and all(len(t) <= 22 for t in titles), titles
        assert fig.layout.yaxis.title.text.startswith("multiply-adds per "), name
        assert fig.layout.yaxis2.title.text.startswith("time per "), name
