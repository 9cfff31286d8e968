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
