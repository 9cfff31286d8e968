"""Class mode on the tour's questions: every student votes on their own device, the teacher's screen
counts the votes live without giving the answer away, and the teacher's Reveal reveals on every screen
(pages/tour.py calls these; the class itself is :mod:`viz.ui.classroom`)."""

from __future__ import annotations

import streamlit as st

from ..core.classroom import QuestionNotOpen
from ..figures.classroom import tally_lines
from .class_links import PROBLEM, store_call
from .classroom import ASKED, POLL_S, RECENT, TEACHER_POLL_S, VOTES, Seat, seat
from .common import md_escape
from .polls import polled


def may_reveal() -> bool:
    """In a class only the teacher reveals (on every screen at once)."""
    here = seat()
    return here is None or here.teacher


def revealed(index: int) -> None:
    """The teacher pressed Reveal on question ``index``."""
    here = seat()
    if here is not None and here.teacher:
        store_call(lambda store: store.reveal(here.code, here.token, index))
        RECENT.forget(here.code)


def counting() -> bool:
    """Whether this screen shows a class's count of the votes (the teacher's)."""
    here = seat()
    return here is not None and here.teacher


def vote(index: int, prompt: str, options: list[str], choice: str | None) -> None:
    """Under an unrevealed question: the teacher sees the live count, a student sends their choice."""
    here = seat()
    if here is None:
        return
    if here.teacher:
        asked = st.session_state.setdefault(ASKED, set())
        if index not in asked and store_call(lambda store: store.ask(here.code, here.token, index, prompt, options)):
            asked.add(index)
        _live_tally(index, tuple(options))
        return
    sent = st.session_state.setdefault(VOTES, {})
    if choice is not None and sent.get(index) != choice:
        went_in = _send(here, index, options.index(choice))
        if went_in is None:  # refused: said here, where the vote was cast (the bar above is drawn already)
            st.warning(md_escape(st.session_state.pop(PROBLEM, "")), icon=":material/groups:")
            return
        if not went_in:  # the teacher's screen has not opened the question yet: sent again once it has
            _waiting(here, index, choice)
            return
        sent[index] = choice
    if sent.get(index) is not None:
        st.caption(f"Your vote is in: {md_escape(sent[index])}. You can change it until the teacher reveals.")
    else:
        st.caption("Vote on your own device; the teacher reveals the answer on every screen.")


def _send(here: Seat, index: int, option: int) -> bool | None:
    """Send a student's vote: True once it is in, False while its question is not open yet, None when
    the store refuses it (its words kept under PROBLEM)."""
    def work(store) -> bool:
        try:
            store.vote(here.code, here.token, index, option)
        except QuestionNotOpen:
            return False
        return True
    return store_call(work)


@polled(POLL_S)
def _waiting(here: Seat, index: int, choice: str) -> None:
    """A vote cast before the teacher's screen opened its question (a student's screen can show the
    question first: the teacher's view is published as the teacher's run starts): said, and the class's
    shared read watched on every poll; once it shows the question open, the app reruns and
    :func:`vote` sends the vote again and says how it went."""
    now = store_call(lambda store: RECENT.get(store, here.code))
    if now is not None and now.question(index) is not None:
        st.rerun(scope="app")
    st.caption(f"Your vote, {md_escape(choice)}, goes in as soon as the teacher's screen opens this question.")


def counted(index: int, options: list[str]) -> None:
    """Beside a revealed question on the teacher's screen: the class's final count (the store takes
    no vote after Reveal), for the class to talk about with the answer in view."""
    if counting():
        _tally(index, tuple(options))


@polled(TEACHER_POLL_S)
def _live_tally(index: int, options: tuple[str, ...]) -> None:
    _tally(index, options)


def _tally(index: int, options: tuple[str, ...]) -> None:
    here = seat()
    tally = store_call(lambda store: store.tally(here.code, index)) if here else None
    if tally is None or len(tally.counts) != len(options):
        return
    # counts only (nothing marks the answer), in one row under the options: a 720 px projector keeps
    # a long question, its options, Reveal and the count in its first screen
    with st.container(key=f"kv_class_tally_{index}"):
        for column, (label, share) in zip(st.columns(len(options), gap="small"), tally_lines(options, tally)):
            column.progress(share, text=md_escape(label))
