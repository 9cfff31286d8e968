"""Fragments that poll (``st.fragment(run_every=...)``: class mode's screens), each guarded from inside.

Streamlit documents what a fragment draws and when it reruns, not what happens when one raises. So
a polling fragment catches its own failures: it logs the traceback to the server log, says the
frame's kind message in its own place, and marks the run as failed (so the frame's guard does not
remember this view as a good one, :func:`viz.ui.guard.remember`). The rest of the page is drawn as
usual, on a full run and on every one of the fragment's own reruns. Streamlit's control flow
(``st.rerun``, ``st.stop``) derives from BaseException and passes through. Lesson fragments use
:func:`viz.ui.guard.fragment` instead, which also restores the last good view; it imports class mode,
which imports this module, so the two guards live apart.
"""

from __future__ import annotations

import functools
import logging
from typing import Callable

import streamlit as st

from . import state

log = logging.getLogger("kvlab.app")

FAILED = ("Something went wrong while drawing this part of the page, so it stopped here. Your "
          "scenario is unchanged: try another step, page or preset, or edit it in the sidebar. "
          "(The details went to the server log.)")


def failed(where: str, err: Exception) -> None:
    """A part of the page raised: the traceback to the server log, and this run marked failed (so it is
    not remembered as the last good view). The frame's guard and :func:`polled` both report this way."""
    st.session_state[state.RUN_FAILED] = True
    log.error("%s failed: %s: %s", where, type(err).__name__, err, exc_info=err)


def say_failed(place=None) -> None:
    """The kind message, in ``place`` (a container or ``st.sidebar``; the current one if None)."""
    (place or st).error(FAILED, icon=":material/error:")


def polled(every: float) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """``st.fragment(run_every=every)`` whose body's failures stay in its place (module docstring)."""
    def decorate(func: Callable[..., None]) -> Callable[..., None]:
        @functools.wraps(func)
        def guarded(*args, **kwargs) -> None:
            try:
                func(*args, **kwargs)
            except Exception as err:  # noqa: BLE001 - the guard: anything the poll raises ends here
                failed(f"the polling fragment {func.__name__}", err)
                say_failed()

        return st.fragment(guarded, run_every=every)

    return decorate
