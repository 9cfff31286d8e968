"""Tier 2: the Cost page measures on a click, shows the engine's own numbers, and keeps them per session."""

from __future__ import annotations


import pytest
from streamlit.testing.v1 import AppTest

from viz.core.engine import cost as sweep
from viz.core.engine.cost import CostMeasurement, LiveConfig, summarize_cost
from viz.core.timing import TimingPlan
from viz.figures import cost
from viz.ui import state
from apptest_helpers import figure, flip, rerun
from cost_fixtures import measurement

PAGE = "pages/cost.py"
RESULTS = "cost_results"
TINY = LiveConfig(decode_sizes=(16, 32, 64), recompute_max=32, prefill_sizes=(8, 16),
                  plan=TimingPlan(warmup=1, min_repeats=2, max_repeats=2, target_s=0.0),
                  copy_bytes=2**20, budget_s=30.0, decode_share=0.6)


@pytest.fixture
def at() -> AppTest:
    """The app, switched to the Cost page."""
    app = AppTest.from_file("../app.py", default_timeout=120)
    app.run()
    app.switch_page(PAGE)
    return rerun(app)


@pytest.fixture
def tiny(monkeypatch):
    """A small sweep instead of the page's real one, for tests about wiring rather than sizes."""
    monkeypatch.setattr(sweep, "LIVE", TINY)
    monkeypatch.setattr(sweep, "QUICK", TINY)


def measure_button(at: AppTest):
    return next(b for b in at.button if b.key == "cost_measure")


def click_measure(at: AppTest) -> AppTest:
    measure_button(at).click()
    return rerun(at)


def markdown(at: AppTest) -> str:
    return "\n".join(m.value for m in at.markdown)


def measured(at: AppTest) -> CostMeasurement:
    return at.session_state[RESULTS][sweep.available_devices()[0]]


def test_page_on_arrival_shows_a_quickmeasurement(at):
    """Before a click: the quick sweep's measured plots, a Measure button, and the full sweep's real sizes."""
    assert measure_button(at).label == "Measure"
    quick = figure(at, "Decode: O(n²)")
    sizes = {n for t in quick["data"] if t["xaxis"] == "x2" for n in t["x"]}
    assert sizes and max(sizes) <= sweep.QUICK.decode_sizes[-1]
    # said beside Measure, in its row above the figure (under the figure it was below the first screen)
    assert any("A quick first measurement" in c.value and "Press **Measure**" in c.value for c in at.columns[0].caption)
    assert RESULTS not in at.session_state or not at.session_state[RESULTS]  # the session has measured nothing
    live = sweep.LIVE
    assert any(f"n = {live.decode_sizes[0]} … {live.decode_sizes[-1]} keys" in c.value for c in at.caption)
    assert "python -m viz bench --out results.json" in at.code[0].value


def test_measure_draws_the_measured_numbers(at):
    """One click runs the real bounded sweep; every plotted number is a measurement or an engine count."""
    click_measure(at)
    result = measured(at)
    assert result.decode and result.prefill and result.seconds > 0
    spec = figure(at, "Decode: O(n²)")
    times = {t["name"]: t for t in spec["data"] if t["xaxis"] == "x2"}
    for mode in sweep.DECODE_MODES:
        points = sorted((p for p in result.decode if p.mode == mode), key=lambda p: p.n)
        assert times[cost.NAMES[mode]]["x"] == [p.n for p in points]
        assert times[cost.NAMES[mode]]["y"] == [p.per_token.median_s for p in points]
    work = {t["name"]: t["y"] for t in spec["data"] if t["xaxis"] == "x"}
    assert work[cost.NAMES["recompute"]] == [p.work.multiply_adds for p in sorted(
        (p for p in result.decode if p.mode == "recompute"), key=lambda p: p.n)]
    summary = summarize_cost(result)
    assert f"**Where the cache wins.** At n = {summary.large_n} the engine counts" in markdown(at)
    said = {"longer": "Timed here, the step took", "unclear": "neither confirms nor contradicts the count",
            "shorter": "the cached step was the slower one"}  # the timing as far as its runs can say
    assert said[summary.speedup_large.reading] in markdown(at)
    assert measure_button(at).label == "Measure again"
    assert not at.warning


def test_results_stay_for_the_session_until_measured_again(at, tiny):
    """A rerun shows the same measurement without measuring; Measure again replaces it."""
    click_measure(at)
    first = measured(at)
    rerun(at)
    assert measured(at) is first
    click_measure(at)
    assert measured(at) is not first and measured(at).decode


def test_tables_list_everymeasurement(at, tiny):
    """The expanders' tables hold one row per decode measurement and per prompt length."""
    click_measure(at)
    result = measured(at)
    decode, prefill = at.dataframe[0].value, at.dataframe[1].value
    assert list(decode["n"]) == sorted(p.n for p in result.decode)
    assert list(decode["multiply-adds"]) == [p.work.multiply_adds for p in sorted(
        result.decode, key=lambda p: (p.n, sweep.DECODE_MODES.index(p.mode)))]
    assert list(prefill["n"]) == [8, 16]
    assert all(diff < 1e-4 for diff in prefill["largest |difference|"])


def test_a_busy_server_says_so_and_measures_nothing(at):
    """While another session measures, a click shows a message instead of a second sweep."""
    with sweep.LIVE_LOCK:
        click_measure(at)
    assert any("another measurement is running" in w.value for w in at.warning)
    assert at.session_state[RESULTS] == {}
    assert any("A quick first measurement" in c.value for c in at.caption)  # still the arrival's sweep


def test_a_failed_measurement_keeps_the_last_results(at, tiny, monkeypatch):
    """If a sweep fails (out of memory, say) the message shows and the last results stay."""
    click_measure(at)
    before = measured(at)

    def fail(*args, **kwargs):
        raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB\nmore detail")

    monkeypatch.setattr(sweep, "live_cost", fail)
    click_measure(at)
    assert [w.value for w in at.warning] == ["The measurement failed: CUDA out of memory. Tried to "
                                             "allocate 2.00 GiB"]
    assert measured(at) is before
    assert figure(at, "Decode: O(n²)")


def test_presenter_mode_enlarges_the_plots(at, tiny):
    """In presenter mode the cost plots use the larger type."""
    click_measure(at)
    flip(at, state.PRESENTER_TOGGLE, True)
    assert figure(at, "Decode: O(n²)")["layout"]["font"]["size"] == 18


# -- the figure builders and the reading, on measurements made by hand ----------------------------
def test_decode_figure_plots_counts_left_and_times_right():
    """Left panel: recompute and kv counts (cat shares kv's); right: all three medians, log axes."""
    fig = cost.decode_figure(measurement((2, 30), 3, 10))
    left = [t for t in fig.data if t.xaxis == "x"]
    right = [t for t in fig.data if t.xaxis == "x2"]
    assert [t.name for t in left] == [cost.NAMES["recompute"], cost.NAMES["kv"]]
    assert list(left[0].y) == [6500, 104000] and list(left[1].y) == [650, 2600]
    assert [t.name for t in right] == [cost.NAMES[m] for m in sweep.DECODE_MODES]
    assert list(right[0].y) == pytest.approx([0.002, 0.03])
    assert list(right[0].error_y.array) == pytest.approx([0.0004, 0.006])
    assert fig.layout.xaxis.type == fig.layout.yaxis2.type == "log"


def test_prefill_figure_has_both_ways_in_both_panels():
    """Counts and times for the batched pass and the loop."""
    fig = cost.prefill_figure(measurement((2, 30), 3, 10))
    assert [(t.name, t.xaxis, list(t.y)) for t in fig.data][:2] == [
        (cost.NAMES["batched"], "x", [512]), (cost.NAMES["one by one"], "x", [300])]
    assert list(fig.data[3].y) == pytest.approx([0.01])


def test_one_look_per_way_of_running_across_the_page_and_the_app():
    """Across Cost's two figures a (colour, dash) names one way of running, and no way wears two looks (the
    last review found the loop of prefill in recompute's vermillion dash); Decode's work chart draws the
    decode modes in the same looks, and the palette gives no two ways one look."""
    from viz.figures import meanings, toy

    looks: dict[tuple[str, str], set[str]] = {}
    for fig in (cost.decode_figure(measurement()), cost.prefill_figure(measurement())):
        for trace in fig.data:
            looks.setdefault((trace.line.color, trace.line.dash), set()).add(trace.name)
    assert all(len(names) == 1 for names in looks.values()), looks
    assert len({name for names in looks.values() for name in names}) == len(looks) == 5
    assert len({meanings.way(name) for name in meanings.WAYS}) == len(meanings.WAYS)
    for mode in ("kv", "recompute", "reencode"):
        assert (toy.MODE_COLORS[mode], toy.MODE_DASHES[mode]) == meanings.way(mode)
    assert cost.NAMES["recompute"] == toy.MODE_NAMES["recompute"] and cost.NAMES["kv"] == toy.MODE_NAMES["kv"]
