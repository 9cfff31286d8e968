"""Tier 1: the decode runs kept in the session (viz.ui.runs), sending the next step ahead only when
it fits the same rerun's work budget. Streamlit's session state works here in bare mode."""

from __future__ import annotations

import pytest
import streamlit as st

from viz import load_preset
from viz.core.engine.budget import Budget, grant
from viz.core.engine.model import MODES
from viz.ui.runs import RUNS, decode_traces, decode_traces_ahead


@pytest.fixture(autouse=True)
def fresh_session():
    st.session_state.pop(RUNS, None)
    yield
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
