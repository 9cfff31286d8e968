"""The measuring tools' own logic, on hand-made inputs: when a run has finished (viz.tools.protocol),
how the renderer's time is split (viz.tools.timeline) and what a server profile counts (viz.tools.profile)."""

from __future__ import annotations

from pathlib import Path

from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

from viz.core.engine.presets import load_preset
from viz.tools.paint import FLOOR_ACTION, FLOOR_APP, first_views, visit_order
from viz.tools.paint_report import Sample, floor_ratios, render_ratios
from viz.tools.profile import kind_of, summarise
from viz.tools.protocol import RunLog, ends_run
from viz.tools.server import StreamlitServer
from viz.tools.timeline import main_thread


def new_session(run_id: str, fragment: str = "") -> bytes:
    message = ForwardMsg()
    message.new_session.initialize.session_id = "session-1"
    message.metadata.run.script_run_id = run_id
    if fragment:
        message.metadata.run.fragment_ids.append(fragment)
    return message.SerializeToString()


def button(label: str, key: str, fragment: str = "", disabled: bool = False) -> bytes:
    message = ForwardMsg()
    message.delta.new_element.button.label = label
    message.delta.new_element.button.id = f"$$ID-0123abcd-{key}"
    message.delta.new_element.button.disabled = disabled
    message.delta.fragment_id = fragment
    return message.SerializeToString()


def finished(status: int) -> bytes:
    message = ForwardMsg()
    message.script_finished = status
    return message.SerializeToString()


def test_a_run_cut_short_for_a_rerun_is_not_finished():
    """st.rerun's early end does not count; the run after it does, and its chain starts at the first run."""
    log = RunLog()
    log.feed(new_session("a"), at=1.0)
    log.feed(finished(ForwardMsg.FINISHED_EARLY_FOR_RERUN), at=1.2)
    assert log.finished == [] and not ends_run(ForwardMsg.FromString(finished(ForwardMsg.FINISHED_EARLY_FOR_RERUN)))
    log.feed(new_session("b"), at=1.3)
    log.feed(button("Step", "decode_step"), at=1.4)
    log.feed(finished(ForwardMsg.FINISHED_SUCCESSFULLY), at=1.5)
    [run] = log.finished
    assert run.run_id == "b" and run.ok and run.end_frame == 5
    assert abs(run.seconds - 0.2) < 1e-9 and abs(run.chain_seconds - 0.5) < 1e-9
    assert run.bytes_by_kind["button"] == len(button("Step", "decode_step"))
    assert log.session_id == "session-1" and len(log.runs) == 2


def test_a_fragment_run_finishes_and_its_buttons_keep_their_fragment():
    """A fragment's run counts as finished; a button drawn in it is found by label and by key, with its fragment."""
    log = RunLog()
    log.feed(new_session("c", fragment="frag-1"))
    log.feed(button("", "prefill_position_forward", fragment="frag-1", disabled=True))
    log.feed(finished(ForwardMsg.FINISHED_FRAGMENT_RUN_SUCCESSFULLY))
    assert log.finished[0].fragment and log.finished[0].ok
    forward = log.buttons["prefill_position_forward"]
    assert forward.fragment_id == "frag-1" and forward.disabled


def test_a_compile_error_finishes_the_run_but_does_not_succeed():
    """A run that ends with a compile error has finished (nothing else will come) and is not ok."""
    log = RunLog()
    log.feed(new_session("d"))
    log.feed(finished(ForwardMsg.FINISHED_WITH_COMPILE_ERROR))
    assert len(log.finished) == 1 and not log.finished[0].ok


def trace_event(name: str, ts: float, dur: float) -> dict:
    return {"name": name, "ph": "X", "pid": 1, "tid": 7, "ts": ts, "dur": dur}


def test_main_thread_time_is_split_by_own_time():
    """A task's nested script, layout and paint get their own time; the task keeps the rest; long tasks are listed."""
    events = [{"name": "kvlab:sync", "ph": "R", "pid": 1, "tid": 7, "ts": 0},
              {"name": "thread_name", "ph": "M", "pid": 1, "tid": 7, "args": {"name": "CrRendererMain"}},
              trace_event("RunTask", 0, 100_000), trace_event("FunctionCall", 10_000, 50_000),
              trace_event("MinorGC", 20_000, 5_000), trace_event("Layout", 70_000, 10_000),
              trace_event("Paint", 85_000, 5_000), trace_event("RunTask", 200_000, 10_000),
              {"name": "FunctionCall", "ph": "X", "pid": 2, "tid": 7, "ts": 0, "dur": 99_000}]
    result = main_thread(events, 0, 150_000)
    assert result.busy_ms == {"scripting": 45.0, "style": 0.0, "layout": 10.0, "paint": 5.0, "gc": 5.0,
                              "other": 35.0}
    assert result.long_tasks_ms == [100.0] and result.total_ms == 100.0


def test_profile_counts_the_innermost_known_kind_and_leaves_out_waiting_threads():
    """A JSON encoder under Plotly counts as Plotly JSON, Streamlit frames only when nothing more specific runs."""
    plotly = ["run (streamlit/runtime/scriptrunner/script_runner.py:1)", "to_json (plotly/io/_json.py:2)",
              "encode (json/encoder.py:3)"]
    engine = ["run (streamlit/runtime/scriptrunner/script_runner.py:1)", "step (viz/core/engine/model.py:9)"]
    idle = ["Thread.run (threading.py:1)", "Condition.wait (threading.py:2)"]
    assert kind_of(plotly) == "Plotly JSON encoding" and kind_of(engine) == "engine (viz/core, torch)"
    summary = summarise([(plotly, 3), (engine, 1), (idle, 10)])
    assert summary["idle"] == 10 and summary["samples"] == 4
    assert dict(summary["kinds"]) == {"Plotly JSON encoding": 0.75, "engine (viz/core, torch)": 0.25}


def test_first_views_are_interleaved_so_order_and_drift_fall_on_all_alike():
    views = ["decode", "prefill", "home", "floor"]
    order = visit_order(views, repeats=3)
    assert len(order) == 2 * 3 * len(views)
    rounds = [order[r * 4:(r + 1) * 4] for r in range(6)]
    for view in views:  # each view: as many traced visits as untraced, and as often first as last
        assert sum(traced for v, traced in order if v == view) == 3
        assert sum(r[0][0] == view for r in rounds) == sum(r[-1][0] == view for r in rounds)
    assert [traced for _, traced in order[:8]] == [False] * 4 + [True] * 4
    assert [v for v, _ in order[:8]] == views + views[::-1]


def test_first_views_name_the_pages_and_the_floor_on_its_own_server():
    app, floor = StreamlitServer(Path("app.log")), StreamlitServer(Path("floor.log"))
    views = first_views(app, {"seed": (load_preset("seed"), 1)}, floor)
    app.port, floor.port = 8501, 8502  # the ports are known once the servers have started, after the plan
    assert [(v.scenario, v.action) for v in views] == [
        ("seed", "first view of a Decode link"), ("seed", "first view of a Prefill link"),
        ("—", "first view of Home (new visitor)"), ("—", FLOOR_ACTION)]
    assert views[0].url.startswith("http://127.0.0.1:8501/?page=decode&")
    assert views[1].url.startswith("http://127.0.0.1:8501/?page=prefill&")
    assert views[2].url == "http://127.0.0.1:8501/" and views[3].url == "http://127.0.0.1:8502/"
    assert views[3].server is floor
    compile(FLOOR_APP, "floor.py", "exec")  # the floor app the tool writes is a valid script


def test_first_views_are_read_against_the_floor_of_their_own_round():
    """Each first view over the floor visited in the same round: a slow round (the machine busy)
    slows both terms and leaves the ratio; traced rounds and clicks are left out."""
    def sample(action: str, total: float, traced: bool = False) -> Sample:
        return Sample("seed", action, traced, total, *[0.0] * 13, {}, [], {})

    decode = "first view of a Decode link"
    samples = [sample("Decode: Step", 100.0),  # a click: not a first view
               sample(decode, 1200.0), sample(FLOOR_ACTION, 800.0),  # round 1: 1.5
               sample(FLOOR_ACTION, 900.0, True), sample(decode, 1000.0, True),  # traced: left out
               sample(FLOOR_ACTION, 1600.0), sample(decode, 2000.0)]  # a slow round: 1.25
    assert floor_ratios(samples) == {("seed", decode): [1.5, 1.25]}
    assert "| seed | first view of a Decode link | 1.38× (1.25–1.50) | 2 |" in render_ratios(floor_ratios(samples))
    assert floor_ratios([s for s in samples if s.action != FLOOR_ACTION]) == {}
