"""The load test's summary (viz.tools.loadtest): percentiles, and each session's first click (the
class arriving at once) kept apart from the later clicks."""

from __future__ import annotations

import math

from viz.tools.loadtest import LoadResult, percentile


def result(latencies, arrivals) -> LoadResult:
    return LoadResult(sessions=len(arrivals), seconds=10.0, reruns=len(latencies), latencies_s=latencies,
                      run_times_s=[0.05] * len(latencies), errors=[], rss_baseline_mb=1.0, rss_peak_mb=2.0,
                      rss_after_mb=1.5, arrival_latencies_s=arrivals)


def test_percentile_is_the_nearest_rank():
    assert percentile([0.3, 0.1, 0.2], 50) == 0.2
    assert percentile([float(i) for i in range(101)], 95) == 95.0
    assert math.isnan(percentile([], 95))


def test_first_clicks_are_reported_apart_from_the_later_ones():
    later = [0.1] * 18
    arrivals = [2.0, 1.5]  # two sessions' first clicks, slow while the class was arriving
    summary = result(later[:9] + [2.0] + later[9:] + [1.5], arrivals).summary()
    assert summary["click_to_rerun_p95_s"] == 1.5  # all 20 clicks: the arrivals set the tail
    assert summary["arrival_click_p95_s"] == 2.0
    assert summary["later_click_p95_s"] == 0.1  # the 18 later clicks alone
    assert "arrival_latencies_s" not in summary and summary["reruns"] == 20


def test_a_value_equal_to_an_arrival_is_removed_once():
    summary = result([0.5, 0.5, 0.1], [0.5]).summary()
    assert summary["later_click_p95_s"] == 0.5  # one 0.5 left among the later clicks


def heavy_round(crowd: str, clicks: list[float], first: float, before: float, held: float) -> "Round":
    from viz.tools.heavy_class import Round
    return Round(crowd, 10, [first] * 10, first, clicks, before, held + 5, held)


def test_the_heavy_class_reports_growth_per_visitor_and_the_observers_ratio():
    """The heavy class's figures: growth with every page open, per visitor, and the observer against the seed crowd."""
    from viz.tools.heavy_class import compare
    seed = heavy_round("seed", [0.1, 0.2, 0.3], 0.5, before=300.0, held=305.0)
    heavy = heavy_round("heavy", [0.2, 0.5, 0.6], 0.75, before=300.0, held=500.0)
    assert heavy.summary()["grew_mb"] == 200.0 and heavy.summary()["grew_per_visitor_mb"] == 20.0
    assert compare(seed, heavy) == {"observer_first_view_ratio": 1.5, "observer_click_p50_ratio": 2.5,
                                    "observer_click_p95_ratio": 2.0}


def test_the_heavy_links_are_the_worst_views_on_each_page():
    """Each heavy link names its page and opens a scenario at the limits at the last decode step, in recompute."""
    from urllib.parse import parse_qsl

    import pytest

    from viz.core.engine.share import decode_view
    from viz.tools.heavy_class import heavy_links, run_heavy
    from viz.tools.worst_case import worst_scenarios
    links = heavy_links(("decode", "memory"))
    assert len(links) == 4
    for link in links:
        params = dict(parse_qsl(link))
        view, problems = decode_view(params, worst_scenarios()["matrix"])
        assert not problems
        assert params["page"] in ("decode", "memory") and view.scenario in worst_scenarios().values()
        assert (view.step, view.mode) == (256, "recompute")
    with pytest.raises(ValueError):
        run_heavy(0)
    with pytest.raises(ValueError):
        run_heavy(3, pages=("home",))
