"""Decode runs kept across reruns and shared by every session: a Step click computes one more step,
not the whole run again, and thirty students following a teacher compute that step once.

One :class:`viz.core.engine.model.Generation` per decode mode lives in a process-wide entry for the
scenario (:data:`SHARED`, keyed by the scenario itself: the same scenario is the same run, since a
run depends on nothing else); each session holds the entry it uses now (a new scenario takes another
entry). Before extending them, :func:`viz.core.engine.budget.grant` decides how far each may go in
this rerun; a run cut short by the budget says so in its grant. A run is extended only under its
entry's lock, and what a page gets is a :class:`~viz.core.engine.model.Trace` pinned to its step
(its own list of immutable steps, its cache seen as it stood then), so a session extending the run
changes nothing another session is drawing. Entries can be recomputed, so each rerun tells
viz.ui.server_budget what its entry holds (one entry counted once, however many sessions use it);
when everything kept is too much, the least recently used are dropped and the next click computes
them again. :data:`SHARED` itself keeps at most :data:`SHARED_ENTRIES` scenarios.

A page's view of a step (Decode's :class:`~viz.core.lessons.decode.DecodeView`: the frame, the boards'
numbers, the check against recompute) is the same for every session at the same scenario, step and
choices, so :func:`kept_view` keeps the last :data:`VIEWS_KEPT` of them in the scenario's entry: a class
of thirty following its teacher works a step's view out once, not thirty times. Only a view whose runs
the budget let go all the way, the step ahead included, is kept (a cut view says so and depends on
what was computed before); sessions asking for the same view together wait for the first one's; the
views count in the entry's bytes and go with it when it is dropped. Views are shared: nobody may
change one.
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import TypeVar

import streamlit as st

from ..core.engine.budget import BUDGET, Budget, Grant, grant, tensor_bytes
from ..core.engine.model import MODES, Generation, ToyModel, Trace
from ..core.engine.scenario import Scenario
from . import server_budget

RUNS = "kv_decode_runs"  # the session's entry of SHARED (kept alive while the session uses it)
SHARED_ENTRIES = 64  # scenarios whose runs the process keeps for any session (the bytes: server_budget)
VIEWS_KEPT = 8  # a scenario's page views kept for every session (the last few steps, heads and modes)
V = TypeVar("V")


@dataclass
class _Runs:
    scenario: Scenario
    model: ToyModel
    runs: dict[str, Generation] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)
    held: int = 0  # bytes the runs and kept views hold, measured when a run grew or a view was kept
    counted: tuple = ()  # (mode, predictions) of the runs when they were measured
    views: collections.OrderedDict = field(default_factory=collections.OrderedDict, repr=False, compare=False)
    making: dict = field(default_factory=dict, repr=False, compare=False)  # a lock per view being made

    def drop(self) -> None:
        """Let the runs go (the server keeps too much); skipped while a session is extending them."""
        if self.lock.acquire(blocking=False):
            self.runs, self.held, self.counted, self.views = {}, 0, (), collections.OrderedDict()
            self.lock.release()

    def measure(self) -> None:
        """Count what the runs and the kept views hold (under the lock; storages shared are counted once)."""
        self.held = tensor_bytes(self.runs, tuple(self.views.values()))


class _Shared:
    """The process's decode runs by scenario, the least recently used forgotten past ``size``
    (a session still using a forgotten entry keeps it; server_budget counts it while it lives)."""

    def __init__(self, size: int):
        self.size = size
        self.lock = threading.Lock()
        self.entries: collections.OrderedDict[Scenario, _Runs] = collections.OrderedDict()
        self.building: dict[Scenario, threading.Lock] = {}  # a scenario whose model one session is building

    def _kept(self, scenario: Scenario) -> _Runs | None:
        with self.lock:
            store = self.entries.get(scenario)
            if store is not None:
                self.entries.move_to_end(scenario)
            return store

    def entry(self, scenario: Scenario) -> _Runs:
        store = self._kept(scenario)
        if store is not None:
            return store
        with self.lock:
            building = self.building.setdefault(scenario, threading.Lock())
        # one session builds a new scenario's model (outside the main lock: a large model takes a
        # while); sessions arriving meanwhile, say a class following its teacher to it, wait and share it
        with building:
            store = self._kept(scenario)
            if store is not None:
                return store
            try:
                made = _Runs(scenario, ToyModel(scenario))
            finally:
                with self.lock:
                    self.building.pop(scenario, None)
            with self.lock:
                self.entries[scenario] = made
                while len(self.entries) > self.size:
                    self.entries.popitem(last=False)
            return made

    def clear(self) -> None:
        with self.lock:
            self.entries.clear()


SHARED = _Shared(SHARED_ENTRIES)


def _store(scenario: Scenario) -> _Runs:
    store = st.session_state.get(RUNS)
    if store is None or store.scenario != scenario:
        store = SHARED.entry(scenario)
        st.session_state[RUNS] = store
    return store


def decode_traces(scenario: Scenario, step: int, modes: tuple[str, ...] = MODES
                  ) -> tuple[dict[str, Trace], dict[str, Grant]]:
    """Each mode's trace up to prediction ``step`` (or as far as the budget lets it go), and the grants."""
    traces, grants, _ = _extend(scenario, step, modes, ahead=False)
    return traces, grants


def decode_traces_ahead(scenario: Scenario, step: int, modes: tuple[str, ...] = MODES, budget: Budget = BUDGET
                        ) -> tuple[dict[str, Trace], dict[str, Grant], dict[str, Trace] | None]:
    """As :func:`decode_traces`, and each mode's trace one step further (the step a Step click asks
    for next, so the page can send it ahead) when that step fits the same rerun's budget too; else
    None, and no step beyond ``step`` is computed."""
    return _extend(scenario, step, modes, ahead=True, budget=budget)


def _extend(scenario: Scenario, step: int, modes: tuple[str, ...], ahead: bool, budget: Budget = BUDGET
            ) -> tuple[dict[str, Trace], dict[str, Grant], dict[str, Trace] | None]:
    store = _store(scenario)
    with store.lock:
        result = _extend_runs(store, step, modes, ahead, budget)
        grown = tuple((mode, len(run.steps)) for mode, run in store.runs.items())
        if grown != store.counted:  # the walk visits every step: only when a run grew
            store.counted = grown
            store.measure()
    server_budget.keep(store, store.held)  # read after the lock: a drop in between has set it to 0
    return result


def kept_view(scenario: Scenario, step: int, modes: tuple[str, ...], choices: Hashable,
              make: Callable[[dict[str, Trace], dict[str, Grant], dict[str, Trace] | None], V],
              budget: Budget = BUDGET) -> V:
    """``make(traces, grants, following)`` for :func:`decode_traces_ahead`'s runs at ``step``, worked out
    once per scenario, step, ``modes`` and ``choices`` (what else the view depends on: mode, head, …)
    while it stays among the entry's last :data:`VIEWS_KEPT`; every other session gets the same object
    (sessions asking together wait for the first one's). Views are shared: nobody may change one."""
    store = _store(scenario)
    key = (step, modes, choices)
    with store.lock:
        making = store.making.setdefault(key, threading.Lock())
    with making:
        try:
            view = _kept(store, key)
            if view is None:
                view = _make_and_keep(store, key, make, decode_traces_ahead(scenario, step, modes, budget))
        finally:
            with store.lock:
                store.making.pop(key, None)
    server_budget.keep(store, store.held)
    return view


def _kept(store: _Runs, key: tuple):
    with store.lock:
        view = store.views.get(key)
        if view is not None:
            store.views.move_to_end(key)
        return view


def _make_and_keep(store: _Runs, key: tuple, make: Callable, ran: tuple):
    """The view of ``ran`` (traces, grants, following), kept when the budget let every run go the whole
    way, the step ahead included (a view cut short depends on what was computed before it)."""
    traces, grants, following = ran
    view = make(traces, grants, following)
    if following is not None and not any(g.cut for g in grants.values()):
        with store.lock:
            if store.runs:  # not dropped meanwhile (a dropped entry's view would outlive its count)
                store.views[key] = view
                while len(store.views) > VIEWS_KEPT:
                    store.views.popitem(last=False)
                store.measure()
    return view


def _extend_runs(store: _Runs, step: int, modes: tuple[str, ...], ahead: bool, budget: Budget
                 ) -> tuple[dict[str, Trace], dict[str, Grant], dict[str, Trace] | None]:
    scenario = store.scenario
    wanted = step + 1
    done = {m: len(r.steps) for m, r in store.runs.items()}
    further = grant(scenario, modes, wanted + 1, done, budget) if ahead else None
    if further is not None and not any(g.cut for g in further.values()):
        grants, reach = further, wanted + 1  # one budget for this rerun: both steps fit in it
    else:
        grants, reach = grant(scenario, modes, wanted, done, budget), wanted
    shared = next((r.prefill_result for r in store.runs.values() if r.prefill_result is not None), None)
    for mode in modes:
        run = store.runs.get(mode)
        if run is None:
            run = store.runs[mode] = Generation(scenario, mode, model=store.model)
            run.prefill(done=shared)
            shared = run.prefill_result
        while len(run.steps) < grants[mode].granted:
            run.step()
    traces = {mode: store.runs[mode].trace(min(wanted, len(store.runs[mode].steps)), pinned=True) for mode in modes}
    following = {mode: store.runs[mode].trace(reach, pinned=True) for mode in modes} if reach > wanted else None
    return traces, grants, following
