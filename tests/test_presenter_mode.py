"""Presenter mode (issue 32): turning it on says once, in a toast, how the folded sidebar opens
again; turning it off and a plain rerun say nothing."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from viz.core.lessons.leads import PRESENTER_HINT
from viz.ui import state


def _hints(at: AppTest) -> int:
    return sum(PRESENTER_HINT in toast.value for toast in at.toast)


def test_presenter_mode_says_once_how_the_sidebar_opens_again():
    at = AppTest.from_file("../app.py", default_timeout=120)
    at.query_params["page"] = "decode"
    at.run()
    assert _hints(at) == 0
    at.toggle(key=state.PRESENTER_TOGGLE).set_value(True).run()
    assert not at.exception and at.session_state[state.PRESENTER] and _hints(at) == 1
    at.run()
    assert _hints(at) == 0  # once, not on every rerun
    at.toggle(key=state.PRESENTER_TOGGLE).set_value(False).run()
    assert not at.session_state[state.PRESENTER] and _hints(at) == 0
