"""Tier 1: the charts that draw the ways of running (Decode's and the tour's work charts, Cost's two
figures, Real model's speed): the work chart's panels say they sum every head (the teacher's review: a
title "per head" over 20 keys = 5 tokens × 4 heads), and where one way's line lies exactly on another's
both still show (a wide line and a large open marker under the other; a hover note "same as ...")."""

from __future__ import annotations

import pytest

from viz import generate, load_preset
from viz.core.engine.toy_model import MODES
from viz.core.lessons.words_work import work_panels
from viz.core.real.model import CacheComparison
from viz.figures import cost, meanings, real, toy

from cost_fixtures import measurement


def panel_titles(fig) -> list[str]:
    return [a.text for a in fig.layout.annotations]


@pytest.mark.parametrize("preset", ["seed", "previous-token", "sliding-window"])
@pytest.mark.parametrize("cumulative", [False, True])
def test_the_work_panels_say_they_sum_every_head(preset, cumulative):
    """The keys panel's title names the scenario's number of heads, and the keys it plots are that many
    per token encoded: without a cache, at the first decode step, every token's key in every head."""
    scenario = load_preset(preset)
    heads = len(scenario.head_names)
    traces = {mode: generate(scenario, 3, mode) for mode in MODES}
    fig = toy.work_figure(traces, cumulative=cumulative)
    scores_title, keys_title = work_panels(heads)
    assert scores_title in panel_titles(fig) and keys_title in panel_titles(fig)
    assert f"all {heads} heads" in keys_title and "per head" not in " ".join(panel_titles(fig))
    keys = next(t for t in fig.data if t.name == toy.MODE_NAMES["recompute"] and t.xaxis == "x2")
    first = traces["recompute"].steps[1]
    assert keys.y[0] == first.seq_len * heads  # 5 tokens × 4 heads = 20 on the seed


def series_by_panel(fig) -> dict[str, list]:
    panels: dict[str, list] = {}
    for trace in fig.data:
        if trace.x is not None and len(trace.x) and trace.x[0] is not None:
            panels.setdefault(trace.xaxis or "x", []).append(trace)
    return panels


def assert_coinciding_lines_show(fig) -> int:
    """In each panel, a trace drawn exactly on an earlier one leaves it showing: the one under is wider
    and its marker larger and of another shape, and the one over says whose line it lies on. Returns how
    many such pairs there were."""
    pairs = 0
    for traces in series_by_panel(fig).values():
        for i, over in enumerate(traces):
            for under in traces[:i]:
                if list(over.x) != list(under.x) or list(over.y) != list(under.y):
                    continue
                pairs += 1
                assert under.line.width > over.line.width, (under.name, over.name)
                assert under.marker.size > over.marker.size and under.marker.symbol != over.marker.symbol
                assert f"same as {under.name}" in over.hovertemplate, over.hovertemplate
    return pairs


@pytest.mark.parametrize("cumulative", [False, True])
def test_coinciding_ways_both_show_in_the_work_chart(cumulative):
    """The seed's work chart: re-encode's scores are the KV cache's, its keys recompute's; two lines each
    panel with three legend entries unless the line under shows through."""
    scenario = load_preset("seed")
    fig = toy.work_figure({mode: generate(scenario, 9, mode) for mode in MODES}, cumulative=cumulative)
    assert assert_coinciding_lines_show(fig) == 2
    for trace in fig.data:  # a trace that lies on none is drawn as every other way is
        covered = any(f"same as {trace.name}" in other.hovertemplate for other in fig.data
                      if other.xaxis == trace.xaxis)
        assert trace.line.width == (meanings.COVERED_WIDTH if covered else meanings.LINE_WIDTH)


def test_coinciding_is_found_in_drawing_order():
    assert meanings.coinciding({"a": (1, 2), "b": (1, 3), "c": (1, 2), "d": (1, 3)}) == {"c": "a", "d": "b"}
    assert meanings.coinciding({"a": (1,), "b": (2,)}) == {}


def ways_figures():
    comparison = CacheComparison(prompt_len=3, cached_ids=[1, 2], uncached_ids=[1, 2], max_abs_diff=[0.0, 1e-6],
                                 seq_lens=[4, 5], cached_seconds=[0.01, 0.01], uncached_seconds=[0.01, 0.01])
    scenario = load_preset("seed")
    return {"work": toy.work_figure({mode: generate(scenario, 3, mode) for mode in MODES}),
            "cost decode": cost.decode_figure(measurement()), "cost prefill": cost.prefill_figure(measurement()),
            "real speed": real.speed_figure(comparison)}


@pytest.mark.parametrize("name", ["work", "cost decode", "cost prefill", "real speed"])
def test_every_way_has_its_own_marker_in_every_figure(name):
    """Every figure that draws the ways of running draws each with markers, one shape per way across the
    app (and its colour and dash, :func:`meanings.way`), so points that fall together show both shapes
    (Real model's speed with equal times: two lines on one)."""
    fig = ways_figures()[name]
    shapes: dict[str, set] = {}
    for trace in fig.data:
        if trace.x is None or not len(trace.x) or trace.x[0] is None:
            continue
        assert "markers" in trace.mode, trace.name
        shapes.setdefault(trace.marker.symbol, set()).add(trace.name)
        assert (trace.line.color, trace.line.dash) in {meanings.way(w) for w in meanings.WAYS}, trace.name
    assert all(len(names) == 1 for names in shapes.values()), shapes
    assert len(set(meanings.WAY_SYMBOLS)) == len(meanings.WAYS)
