"""Decode runs kept across reruns: a Step click computes one more step, not the whole run again.

One :class:`viz.core.engine.model.Generation` per decode mode lives in the visitor's session for the
current scenario (a new scenario starts new runs). Before extending them, :func:`viz.core.engine.budget.grant`
decides how far each may go in this rerun; a run cut short by the budget says so in its grant.
Per-visitor mutable objects: they live in ``st.session_state``, never in a shared cache. They can be
recomputed, so each rerun tells viz.ui.server_budget what they hold; when all sessions together keep
too much, the least recently used are dropped and their visitor's next click computes them again.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

import streamlit as st

from ..core.engine.budget import BUDGET, Budget, Grant, grant, tensor_bytes
from ..core.engine.model import MODES, Generation, ToyModel, Trace
from ..core.engine.scenario import Scenario
from . import server_budget

RUNS = "kv_decode_runs"


@dataclass
class _Runs:
    scenario: Scenario
    model: ToyModel
    runs: dict[str, Generation] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def drop(self) -> None:
        """Let the runs go (the server keeps too much); skipped while this session is extending them."""
        if self.lock.acquire(blocking=False):
            self.runs = {}
            self.lock.release()


def _store(scenario: Scenario) -> _Runs:
    store = st.session_state.get(RUNS)
    if store is None or store.scenario != scenario:
        store = _Runs(scenario, ToyModel(scenario))
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
        held = tensor_bytes(store.runs)
    server_budget.keep(store, held)
    return result


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
    traces = {mode: store.runs[mode].trace(min(wanted, len(store.runs[mode].steps))) for mode in modes}
    following = {mode: store.runs[mode].trace(reach) for mode in modes} if reach > wanted else None
    return traces, grants, following
