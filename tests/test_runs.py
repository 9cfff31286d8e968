"""Tier 1: the decode runs kept across reruns and shared by sessions (viz.ui.runs), sending the next
step ahead only when it fits the same rerun's work budget. Streamlit's session state works here in
bare mode; a new session is one without the runs' key."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import streamlit as st
import torch

from viz import load_preset
from viz.core.engine.budget import Budget, grant
from viz.core.engine.model import MODES
from viz.ui import runs, server_budget
from viz.ui.runs import RUNS, SHARED, decode_traces, decode_traces_ahead


@pytest.fixture(autouse=True)
def fresh_session():
    st.session_state.pop(RUNS, None)
    SHARED.clear()
    yield
    st.session_state.pop(RUNS, None)
    SHARED.clear()


def another_session() -> None:
    """What a second visitor's first rerun finds: no runs of its own yet."""
    st.session_state.pop(RUNS, None)


def _computed() -> dict[str, int]:
    return {mode: len(run.steps) for mode, run in st.session_state[RUNS].runs.items()}


def test_the_step_ahead_is_computed_when_it_fits():
    """The seed at step 2: the page gets traces to step 2 and, one step further, to step 3."""
    traces, grants, following = decode_traces_ahead(load_preset("seed"), 2, MODES)
    assert {m: len(t.steps) for m, t in traces.items()} == {m: 3 for m in MODES}
    assert following is not None and {m: len(t.steps) for m, t in following.items()} == {m: 4 for m in MODES}
    assert not any(g.cut for g in grants.values())
    # the step sent ahead is the step the next click shows (the same run, extended)
    nxt, _ = decode_traces(load_preset("seed"), 3, MODES)
    assert [s.token for s in nxt["kv"].steps] == [s.token for s in following["kv"].steps]


def test_nothing_is_computed_ahead_when_the_next_step_would_break_the_budget():
    """With a budget that holds exactly the steps asked for, no further step is computed or sent,
    and the grants (the page's notes) are those of the steps asked for."""
    seed = load_preset("seed")
    exact = grant(seed, MODES, 3)
    budget = Budget(ms=sum(g.work.ms for g in exact.values()) * 1.0001)
    assert any(g.cut for g in grant(seed, MODES, 4, budget=budget).values())  # one more step does not fit
    traces, grants, following = decode_traces_ahead(seed, 2, MODES, budget=budget)
    assert following is None
    assert _computed() == {m: 3 for m in MODES}
    assert {m: len(t.steps) for m, t in traces.items()} == {m: 3 for m in MODES}
    assert [g.wanted for g in grants.values()] == [3] * len(MODES) and not any(g.cut for g in grants.values())


def test_two_sessions_at_the_same_scenario_and_step_share_one_run(monkeypatch):
    """The second session computes nothing: it gets the first one's run (the very same steps); a
    different scenario has a run of its own."""
    seed = load_preset("seed")
    first, _ = decode_traces(seed, 3, MODES)
    entry = st.session_state[RUNS]
    monkeypatch.setattr(runs.Generation, "step", lambda self, forced=None: pytest.fail("a step was computed again"))
    another_session()
    second, _ = decode_traces(seed, 3, MODES)
    assert st.session_state[RUNS] is entry and len(SHARED.entries) == 1
    assert all(a is b for m in MODES for a, b in zip(first[m].steps, second[m].steps))
    assert [len(t.steps) for t in second.values()] == [4] * len(MODES)
    monkeypatch.undo()
    another_session()
    other, _ = decode_traces(seed.cache_safe(), 3, MODES)
    assert st.session_state[RUNS] is not entry and len(SHARED.entries) == 2
    assert not any(a is b for m in MODES for a, b in zip(first[m].steps, other[m].steps))


def test_sessions_arriving_at_a_new_scenario_together_build_its_model_once(monkeypatch):
    """A class following its teacher to a new scenario: the sessions asking at once wait for the one
    building the model and share its entry; the build lock is gone afterwards. A failed build
    leaves nothing behind, and the next session tries again."""
    import threading
    import time

    built, real = [], runs.ToyModel

    def slow(scenario):
        built.append(scenario)
        time.sleep(0.2)  # a large model takes a while: the others arrive meanwhile
        return real(scenario)

    monkeypatch.setattr(runs, "ToyModel", slow)
    shared, seed = runs._Shared(4), load_preset("seed")
    got = []
    threads = [threading.Thread(target=lambda: got.append(shared.entry(seed))) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(built) == 1 and len(got) == 6 and all(entry is got[0] for entry in got)
    assert shared.building == {} and list(shared.entries) == [seed]
    monkeypatch.setattr(runs, "ToyModel", lambda scenario: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        shared.entry(seed.cache_safe())
    assert shared.building == {} and list(shared.entries) == [seed]


def test_a_trace_stays_at_its_step_while_another_session_extends_the_shared_run():
    """Session A draws step 1; session B steps the same run to 6: A's trace (its steps, its KV cache)
    is still step 1's, and B's differs."""
    seed = load_preset("seed")
    early, _ = decode_traces(seed, 1, ("kv",))
    length, nbytes = len(early["kv"].cache), early["kv"].cache.nbytes
    another_session()
    late, _ = decode_traces(seed, 6, ("kv",))
    assert len(early["kv"].steps) == 2 and len(late["kv"].steps) == 7
    assert (len(early["kv"].cache), early["kv"].cache.nbytes) == (length, nbytes)
    assert len(late["kv"].cache) == length + 5
    assert early["kv"].cache.keys().shape[1] == length


def test_the_shared_runs_are_counted_once_and_stay_within_their_bounds(monkeypatch):
    """Three sessions on one entry count its bytes once; past the ledger's limit the least recently
    used entry is dropped (and recomputed alike when asked again); past SHARED_ENTRIES scenarios the
    oldest is forgotten."""
    ledger = server_budget._Ledger(10**9, idle_s=1e9)
    monkeypatch.setattr(server_budget, "LEDGER", ledger)
    seed = load_preset("seed")
    for _ in range(3):
        another_session()
        decode_traces(seed, 4, MODES)
    entry = st.session_state[RUNS]
    assert entry.held > 0 and ledger.kept_bytes == entry.held == runs.tensor_bytes(entry.runs)
    tokens = [s.token for s in decode_traces(seed, 4, ("kv",))[0]["kv"].steps]
    ledger.limit = entry.held  # room for one entry: the next scenario's runs push the seed's out
    another_session()
    decode_traces(seed.cache_safe(), 4, MODES)
    assert entry.runs == {} and ledger.kept_bytes <= ledger.limit
    another_session()
    assert [s.token for s in decode_traces(seed, 4, ("kv",))[0]["kv"].steps] == tokens
    monkeypatch.setattr(runs, "SHARED", runs._Shared(2))
    for scenario in (seed, seed.cache_safe(), load_preset("seed").with_prompt("the cat")):
        another_session()
        decode_traces(scenario, 0, ("kv",))
    assert list(runs.SHARED.entries) == [seed.cache_safe(), load_preset("seed").with_prompt("the cat")]


def test_a_step_s_view_is_worked_out_once_for_every_session_at_the_same_step_and_choices():
    """kept_view: thirty students following a teacher get one view object, made once; another step or
    other choices make their own; a cut view (the budget stopped a run) is never kept; a dropped entry
    forgets its views, and the views count in the entry's bytes."""
    seed = load_preset("seed")
    made = []

    def make(traces, grants, following):
        made.append((len(traces["kv"].steps), following is not None))
        return object()

    first = runs.kept_view(seed, 2, MODES, ("kv", 0, False), make)
    for _ in range(3):
        another_session()
        assert runs.kept_view(seed, 2, MODES, ("kv", 0, False), make) is first
    assert made == [(3, True)]
    assert runs.kept_view(seed, 2, MODES, ("kv", 1, False), make) is not first  # another head
    assert runs.kept_view(seed, 3, MODES, ("kv", 0, False), make) is not first  # another step
    assert len(made) == 3
    store = st.session_state[RUNS]
    assert len(store.views) == 3
    store.drop()
    assert not store.views and store.held == 0
    assert runs.kept_view(seed, 2, MODES, ("kv", 0, False), make) is not first and len(made) == 4


def test_a_view_without_its_step_ahead_is_not_kept():
    """A view made while the budget held the step ahead back depends on what was computed before: not
    kept. The next rerun (the steps asked for are done now, so the step ahead fits) makes and keeps it."""
    seed = load_preset("seed")
    tight = Budget(ms=sum(g.work.ms for g in grant(seed, MODES, 3).values()) * 1.0001)
    made = []

    def make(traces, grants, following):
        made.append(following is not None)
        return object()

    runs.kept_view(seed, 2, MODES, ("kv", 0, False), make, budget=tight)
    assert made == [False] and not st.session_state[RUNS].views
    kept = runs.kept_view(seed, 2, MODES, ("kv", 0, False), make, budget=tight)
    assert made == [False, True] and list(st.session_state[RUNS].views.values()) == [kept]


def test_a_kept_view_counts_in_its_entry_s_bytes():
    """What a kept view holds beyond its runs (here a 4,000-byte tensor) is in the entry's bytes, which
    the server's ledger reads; a view that is not kept adds nothing."""
    seed = load_preset("seed")
    decode_traces_ahead(seed, 2, MODES)
    store = st.session_state[RUNS]
    runs_only = store.held
    runs.kept_view(seed, 2, MODES, ("kv", 0, False), lambda *ran: SimpleNamespace(tensor=torch.zeros(1000)))
    assert store.held == runs_only + 4000
    tight = Budget(ms=1e-9)  # a view of a further step cut by the budget: made, not kept, not counted
    runs.kept_view(seed, 6, MODES, ("kv", 0, False), lambda *ran: SimpleNamespace(tensor=torch.zeros(1000)),
                   budget=tight)
    assert store.held == runs_only + 4000 and len(store.views) == 1


def test_the_kept_views_stay_within_their_count():
    """The entry keeps its last VIEWS_KEPT views, the oldest forgotten first."""
    seed = load_preset("seed")
    for step in range(runs.VIEWS_KEPT + 3):
        runs.kept_view(seed, step, ("kv",), ("kv", 0, False), lambda *a: object())
    assert len(st.session_state[RUNS].views) == runs.VIEWS_KEPT
