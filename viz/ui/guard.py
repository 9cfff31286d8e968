"""The frame's error guard: whatever a page raises, the visitor sees a short, kind message in the
page, the last view that rendered stays in force, and the traceback goes to the server log only.

app.py wraps the sidebar and the page in :func:`frame`; a page's fragments use :func:`fragment`
instead of ``st.fragment`` so that a fragment's own reruns are guarded too. After a page has run to
the end, :func:`remember` keeps the view (scenario, decode step, decode mode) as the last good one.

When something fails, the guard logs it, and if the view differs from the last good one it puts
that back and reruns, telling the visitor why on the next run; if the last good view itself fails
(a fault not caused by what the visitor did), it only shows the message, so nothing loops.
Streamlit's control flow (``st.rerun``, ``st.stop``, fragment reruns) derives from BaseException,
not Exception, so it passes through untouched.
"""

from __future__ import annotations

import contextlib
import functools
from typing import Callable, Iterator

import streamlit as st

from ..core.engine.presets import DEFAULT_PRESET, load_preset
from ..core.engine.share import View
from . import classroom, server_budget, sidebar, state
from .polls import failed, say_failed  # a failure is reported the same way wherever it happens

RESTORED = ("That change made the page fail, so kvlab went back to the last scenario that worked. "
            "(The details went to the server log.)")


def begin() -> None:
    """Start of a script run: show what the guard left for this run, and clear the failure flag."""
    st.session_state[state.RUN_FAILED] = False
    st.session_state[state.LINK_DRAWN] = False
    st.session_state.pop(sidebar.LINK_SLOT, None)  # the sidebar makes the Copy link box anew in every run
    notice = st.session_state.pop(state.GUARD_NOTICE, None)
    if notice:
        st.warning(notice, icon=":material/healing:")


def _last_good() -> View:
    return st.session_state.get(state.LAST_GOOD) or View(load_preset(DEFAULT_PRESET))


def remember() -> None:
    """The page drew to the end: its view is the last good one (unless a part of it failed)."""
    if not st.session_state.get(state.RUN_FAILED):
        st.session_state[state.LAST_GOOD] = state.current_view()


def _restore() -> bool:
    """Put the last good view back; False if it is already in force (nothing to go back to)."""
    good, now = _last_good(), state.current_view()
    if (good.scenario, good.step, good.mode) == (now.scenario, now.step, now.mode):
        return False
    state.set_scenario(good.scenario)
    state.set_step(good.step)
    state.set_mode(good.mode)
    return True


@contextlib.contextmanager
def frame(where: str, place=None, *, admit: bool = True) -> Iterator[None]:
    """Run a part of the app; if it raises, log it, restore the last good view and say so kindly.

    ``place`` is where the message goes (a container or ``st.sidebar``; the current one if None).
    A part framed with ``admit`` (all but those that compute nothing, such as the link box) waits for
    the server's admission when the view is heavy (viz.ui.server_budget): the sidebar's editors of a
    scenario at the limits are themselves heavy, and ten of them built at once left the server
    hundreds of MB larger.
    """
    try:
        if not admit:
            yield
        else:
            view = state.current_view()
            with server_budget.admitted(view.scenario, view.step, place):
                yield
    except Exception as err:  # noqa: BLE001 - the guard: anything a page raises ends here
        failed(where, err)
        if _restore():
            st.session_state[state.GUARD_NOTICE] = RESTORED
            st.rerun()
        say_failed(place)


def fragment(func: Callable[..., None]) -> Callable[..., None]:
    """``st.fragment`` whose body runs inside :func:`frame` and ends, as app.py does after a page, by
    writing the view into the URL and remembering it as the last good one (its reruns skip app.py)."""
    @functools.wraps(func)
    def guarded(*args, **kwargs) -> None:
        with frame(f"the fragment {func.__name__}"):
            classroom.sync()  # a click's callback moved the view: a class sees it before this run computes
            classroom.lesson_poll()  # a following student's: the teacher's step, drawn by this run
            func(*args, **kwargs)
            # a fragment's own rerun never reaches what app.py does after the page: the link and memory
            state.sync_url()
            remember()
            sidebar.refresh_share_link()
            classroom.sync()  # and once more if the run moved it

    plain, polled = st.fragment(guarded), st.fragment(guarded, run_every=classroom.POLL_S)

    @functools.wraps(func)
    def run(*args, **kwargs) -> None:
        """The fragment; on a following student's screen it also reruns every POLL_S, as that
        screen's poll of the class (classroom.lesson_poll)."""
        (polled if classroom.following() else plain)(*args, **kwargs)

    return run
