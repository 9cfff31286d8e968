"""Tier 2 (AppTest): the frame's guard. A page made to fail on purpose shows a short message,
never Streamlit's exception box; the last view that rendered comes back; the traceback goes to the
server log; Streamlit's own control flow (st.rerun, st.stop) passes through untouched."""

from __future__ import annotations

import logging

import pytest
import streamlit as st

import viz
from viz import load_preset
from viz.ui import guard, polls, state

from apptest_helpers import errors, prompt_shown, scenario, send_prompt
from hostile_text import record

GUARD = "A page, the sidebar or a fragment made to fail on purpose (guard)"


@pytest.fixture
def fails_on(monkeypatch):
    """Make the toy model (which every toy page builds, through viz.generate or the session's decode
    runs) raise for scenarios whose tokens include a word."""
    from viz.core.engine.model import ToyModel
    from viz.ui.runs import SHARED
    real = ToyModel.__init__

    def install(word: str | None):
        SHARED.clear()  # runs built by earlier tests are shared by every session: build them anew
        def init(self, s, *args, **kwargs):
            if word is None or word in s.tokens:
                raise RuntimeError("a failure made on purpose")
            real(self, s, *args, **kwargs)
        monkeypatch.setattr(ToyModel, "__init__", init)
    yield install
    SHARED.clear()  # nor may a run built while failing on purpose outlive the test


def _warnings(at) -> list[str]:
    return [w.value for w in at.warning]


def test_a_failing_edit_brings_the_last_good_scenario_back(app, fails_on, caplog):
    """An edit that makes the page fail: no exception box, the seed is back, the visitor is told,
    and the traceback is in the server log."""
    fails_on("boom")
    with caplog.at_level(logging.ERROR, logger="kvlab.app"):
        send_prompt(app, "it goes boom")
    assert not app.exception
    assert scenario(app) == load_preset("seed")
    assert guard.RESTORED in _warnings(app)
    logged = next(r for r in caplog.records if r.name == "kvlab.app")
    assert "prefill_lesson failed" in logged.getMessage() and logged.exc_info[0] is RuntimeError
    assert "a failure made on purpose" not in " ".join(errors(app) + _warnings(app))  # details stay in the log
    app.run()  # the notice is shown once
    assert guard.RESTORED not in _warnings(app) and not app.exception
    record(GUARD, "refused")


def test_a_fault_that_is_not_the_visitors_does_not_loop(fails_on):
    """If even the last good view fails, the page says so once and the sidebar still works."""
    from streamlit.testing.v1 import AppTest

    fails_on(None)
    at = AppTest.from_file("../app.py", default_timeout=120)
    at.session_state["kv_panel_prompt"] = True  # the prompt's fold open (viz.ui.sidebar.PANELS)
    at.switch_page("pages/prefill.py").run()  # a first visit at /prefill (Home computes nothing)
    assert not at.exception
    assert polls.FAILED in errors(at)
    assert prompt_shown(at) == "Today's weather is so …"  # the sidebar drew
    assert state.LAST_GOOD not in at.session_state  # a failed run is never remembered as good
    record(GUARD, "refused")


def test_a_share_link_that_fails_falls_back_to_the_seed(fails_on):
    """A link whose scenario makes the page fail opens the seed instead, with the reason."""
    from streamlit.testing.v1 import AppTest

    from viz.core.engine.share import View, encode_view

    fails_on("boom")
    at = AppTest.from_file("../app.py", default_timeout=120)
    for key, value in encode_view(View(load_preset("seed").with_prompt("boom boom"), step=2)).items():
        at.query_params[key] = value
    at.run()
    assert not at.exception
    assert scenario(at) == load_preset("seed") and at.session_state[state.STEP] == 0
    assert guard.RESTORED in _warnings(at)
    record(GUARD, "refused")


def test_a_failing_fragment_keeps_the_rest_of_the_page(app, monkeypatch):
    """Prefill's lesson (a fragment) fails on its own: a message in its place, the rest of the page drawn."""
    import viz.core.lessons.prefill as prefill  # the page's view explains the position

    monkeypatch.setattr(prefill, "explain_position", lambda *a, **k: 1 / 0)
    app.run()
    assert not app.exception
    assert polls.FAILED in errors(app)
    assert [t.value for t in app.title] == ["Prefill"]  # the header, outside the fragment
    assert app.session_state[state.RUN_FAILED]  # so this run is not remembered as good
    record(GUARD, "refused")


def test_streamlit_control_flow_passes_through(app, monkeypatch):
    """st.stop inside a page stops it quietly: no message from the guard, no exception."""
    monkeypatch.setattr(viz, "generate", lambda *a, **k: st.stop())
    app.run()
    assert not app.exception
    assert polls.FAILED not in errors(app) and guard.RESTORED not in _warnings(app)
    record(GUARD, "ran")
