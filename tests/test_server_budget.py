"""The whole server's budget (viz.ui.server_budget): heavy reruns take turns, light ones never wait,
and what all sessions keep is bounded, the least recently used dropped first."""

from __future__ import annotations

import gc
import threading

import pytest

from viz import load_preset
from viz.core.engine.budget import is_light
from viz.core.engine.share import View, encode_view
from viz.tools.worst_case import APP, worst_scenarios
from viz.ui import runs, server_budget, state
from viz.ui.server_budget import _Gate, _Ledger


class Held:
    """A droppable object that remembers it was dropped."""

    def __init__(self):
        self.dropped = False

    def drop(self) -> None:
        self.dropped = True


def hold(gate: _Gate) -> tuple[threading.Event, threading.Thread]:
    """Another thread takes a slot of ``gate`` and keeps it until the returned event is set."""
    taken, release = threading.Event(), threading.Event()

    def body() -> None:
        assert gate.enter(5)
        taken.set()
        release.wait(30)
        gate.leave()

    thread = threading.Thread(target=body, daemon=True)
    thread.start()
    assert taken.wait(10)
    return release, thread


def test_the_seed_is_light_and_the_worst_links_are_heavy():
    """The seed at any step never waits; a scenario at the limits does."""
    assert is_light(load_preset("seed"), 256)
    assert not any(is_light(s, 0) for s in worst_scenarios().values())


def test_a_heavy_rerun_is_refused_after_its_wait_while_the_slots_are_taken():
    """With every slot held elsewhere, entering gives up at its deadline and takes no slot."""
    gate = _Gate(1)
    release, thread = hold(gate)
    told = []
    assert not gate.enter(0.2, told.append)
    assert told == [1] and not gate.queue  # told how many are ahead (the holder), and left the queue
    release.set()
    thread.join()
    assert gate.enter(1) and gate.held
    gate.leave()
    assert not gate.held


def test_heavy_reruns_take_turns_in_arrival_order():
    """Two waiting threads get the one slot in the order they came."""
    gate = _Gate(1)
    release, holder = hold(gate)
    order, threads = [], []
    for name in ("first", "second"):
        def body(name=name) -> None:
            assert gate.enter(10)
            order.append(name)
            gate.leave()
        threads.append(threading.Thread(target=body, daemon=True))
        threads[-1].start()
        while len(gate.queue) < len(threads):  # the next one queues only after this one did
            threading.Event().wait(0.01)
    release.set()
    for thread in [holder, *threads]:
        thread.join(10)
    assert order == ["first", "second"]


def test_a_thread_holding_a_slot_enters_again_without_waiting():
    """A fragment inside its page's run does not wait for its own page."""
    gate = _Gate(1)
    assert gate.enter(1) and gate.enter(0)
    gate.leave()
    assert gate.held  # still held by the outer entry
    gate.leave()
    assert not gate.held


def test_the_least_recently_used_are_dropped_when_all_keep_too_much():
    """Three holders of 100 bytes under a 250-byte limit: the oldest goes, the one just used never does."""
    ledger = _Ledger(250, idle_s=1e9)
    a, b, c = Held(), Held(), Held()
    assert ledger.keep(a, 100) == [] and ledger.keep(b, 100) == []
    assert ledger.keep(c, 100) == [a]
    assert a.dropped and not b.dropped and not c.dropped and ledger.kept_bytes == 200
    assert ledger.keep(c, 1000) == [b]  # alone over the limit: the others go, not the one in use
    assert not c.dropped


def test_idle_state_is_dropped_and_forgotten_state_is_not_counted():
    """Idle past the limit: dropped at anyone's next rerun; a holder garbage-collected no longer counts."""
    ledger = _Ledger(10**9, idle_s=0.0)
    a, b = Held(), Held()
    ledger.keep(a, 10)
    ledger.keep(b, 10)
    assert a.dropped and not b.dropped
    del b
    gc.collect()
    assert ledger.kept_bytes == 0


def test_a_sessions_runs_are_dropped_unless_it_is_using_them():
    """Dropping a session's decode runs frees them; while that session extends them, nothing is dropped."""
    store = runs._Runs(load_preset("seed"), None, {"kv": object()})
    with store.lock:
        store.drop()
    assert store.runs
    store.drop()
    assert store.runs == {}


def test_a_heavy_link_says_the_server_is_busy_and_keeps_the_view(monkeypatch):
    """With the heavy slots taken elsewhere, the worst link waits, then is refused in words: no exception,
    no decode run computed, the link's scenario still in force."""
    from streamlit.testing.v1 import AppTest
    gate = _Gate(1)
    monkeypatch.setattr(server_budget, "GATE", gate)
    monkeypatch.setattr(server_budget, "WAIT_S", 0.2)
    worst = worst_scenarios()["matrix"]
    at = AppTest.from_file(str(APP), default_timeout=120)
    for key, value in encode_view(View(worst, step=3)).items():
        at.query_params[key] = value
    at.switch_page("pages/decode.py")
    release, thread = hold(gate)
    try:
        at.run()
    finally:
        release.set()
        thread.join()
    assert not at.exception
    assert server_budget.REFUSED.format(wait=0.2) in [w.value for w in at.warning]
    assert at.session_state[state.SCENARIO] == worst
    assert runs.RUNS not in at.session_state or not at.session_state[runs.RUNS].runs


@pytest.mark.parametrize("page", ["pages/decode.py", "pages/memory.py"])
def test_the_seed_never_waits_for_heavy_reruns(app, monkeypatch, page):
    """With every heavy slot taken, the seed still draws, with no busy message."""
    gate = _Gate(1)
    monkeypatch.setattr(server_budget, "GATE", gate)
    monkeypatch.setattr(server_budget, "WAIT_S", 0.2)
    release, thread = hold(gate)
    try:
        app.switch_page(page).run()
    finally:
        release.set()
        thread.join()
    assert not app.exception
    assert not any("busy" in w.value for w in [*app.warning, *app.info])


def test_light_threads_get_the_interpreter_sooner_while_a_heavy_rerun_runs():
    """Holding a heavy slot shortens the interpreter's switch interval; the last one out restores it."""
    import sys
    before = sys.getswitchinterval()
    gate = _Gate(2)
    release, thread = hold(gate)
    assert sys.getswitchinterval() == pytest.approx(server_budget.HEAVY_SWITCH_S)
    assert gate.enter(1)
    gate.leave()
    assert sys.getswitchinterval() == pytest.approx(server_budget.HEAVY_SWITCH_S)  # the other still holds one
    release.set()
    thread.join()
    assert sys.getswitchinterval() == pytest.approx(before)


def test_the_allocator_gives_large_frees_back_on_linux(monkeypatch):
    """On glibc the mmap threshold and the heaps are fixed when the server's budget is imported;
    a host's own settings are kept."""
    import sys
    if sys.platform.startswith("linux"):
        assert server_budget.ALLOCATOR_FIXED and server_budget.return_large_frees()
    monkeypatch.setenv("MALLOC_MMAP_THRESHOLD_", "65536")
    monkeypatch.setenv("MALLOC_ARENA_MAX", "4")
    assert server_budget.return_large_frees()
