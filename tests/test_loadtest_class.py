"""The class load test's bookkeeping (viz.tools.loadtest_class): which teacher steps each student's
screen showed, when, and which do not count because the student was exploring."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from types import SimpleNamespace

import pytest

from viz.tools.loadtest_class import ClassResult, Screen, _arrivals


def screen(*shown: tuple[float, int]) -> SimpleNamespace:
    """A student's screen whose address bar showed ``step`` at each time."""
    return SimpleNamespace(addresses=[(at, {"step": str(step)}) for at, step in shown])


def test_a_step_counts_from_the_teachers_click_to_the_screen_that_shows_it():
    """Each following screen's latency is the first time it showed the step after the click; a step it never showed is missed."""
    ana, bo = screen((10.4, 1), (12.9, 2)), screen((10.8, 1))
    latencies, missed = _arrivals([ana, bo], [(1, 10.0), (2, 12.5)], [], upto=20.0)
    assert sorted(round(x, 3) for x in latencies) == [0.4, 0.4, 0.8] and missed == 1


def test_steps_published_while_a_student_explores_do_not_count():
    """Steps published while a student explores (or in the second before they began) are neither latencies nor misses."""
    ana = screen((10.5, 1), (30.4, 3))
    away = [(id(ana), 11.5, 25.0)]  # the harness records the end a second after the return
    latencies, missed = _arrivals([ana], [(1, 10.0), (2, 20.0), (3, 30.0)], away, upto=40.0)
    assert [round(x, 3) for x in latencies] == [0.5, 0.4] and missed == 0


def test_a_screen_that_showed_the_step_too_late_is_missed():
    """A step shown after the measurement ended is a miss, not a long latency."""
    latencies, missed = _arrivals([screen((50.0, 1))], [(1, 10.0)], [], upto=40.0)
    assert latencies == [] and missed == 1


def test_the_summary_reports_percentiles_without_the_raw_lists():
    """The JSON summary carries p50 and p95 of both latencies, not every latency."""
    result = ClassResult(2, None, "sqlite", [0.2, 0.4, 1.0], [0.1], 0, 2, 2, 0, 0, 7.5, 1.9, [])
    summary = result.summary()
    assert "follow_latencies_s" not in summary and summary["follow_p50_s"] == 0.4
    assert summary["follow_p95_s"] == 1.0 and summary["own_click_p95_s"] == 0.1


@pytest.mark.parametrize("segmented", [False, True])
def test_a_vote_sends_the_option_as_the_choice_shows_it(segmented):
    """A radio sends its option as a string, a segmented control (the tour's answer now) as a
    one-option list: either way the option as it is shown."""
    student = Screen("http://127.0.0.1:9", 5.0)
    student.radios["tour_answer_0"] = ("$$ID-f00-tour_answer_0", ["6", "7"], segmented)
    sent = []

    async def send(widgets=(), page_hash=None, fragment_id=""):
        sent.extend(widgets)
        return 0.1

    student.send = send
    # A thread of its own: in a serial run the browser tier's sync Playwright keeps an event loop
    # running in this one, where asyncio.run refuses to start.
    with ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, student.choose("tour_answer_0", 1)).result()
    state, = sent
    assert state.id == "$$ID-f00-tour_answer_0"
    assert (list(state.string_array_value.data), state.string_value) == ((["7"], "") if segmented else ([], "7"))
