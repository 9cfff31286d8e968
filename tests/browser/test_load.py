"""Tier 3: a small version of the classroom load test (python -m viz.tools.loadtest): several browser
sessions use the real server at once; none sees an error, and the server's memory is measured.
Each session acts a minimum number of times however slow the machine is, so counts are not timed."""

from __future__ import annotations

import math

from viz.tools.loadtest import run_load


def test_three_sessions_at_once_without_errors():
    """Three concurrent students step, scrub, switch modes and pages and type prompts without an error."""
    result = run_load(sessions=3, seconds=20, settle_s=3, after_s=3, min_actions=2)
    assert result.errors == []
    assert result.reruns >= 6 and len(result.run_times_s) >= 6
    assert all(t > 0 for t in result.latencies_s + result.run_times_s)
    assert len(result.arrival_latencies_s) == 3  # each session's first click, kept apart in the summary
    assert result.rss_baseline_mb > 0 and result.rss_peak_mb >= result.rss_baseline_mb
    assert not math.isnan(result.rss_after_mb)


def test_thirty_socket_sessions_without_errors():
    """Thirty protocol-level sessions at once (the server alone, no browsers) see no error."""
    result = run_load(sessions=30, seconds=15, client="socket", settle_s=3, after_s=3, min_actions=1)
    assert result.errors == []
    assert result.reruns >= 30 and all(t > 0 for t in result.run_times_s)
    assert len(result.arrival_latencies_s) == 30
