"""Class mode in the app: a teacher's screen that every student's follows, votes, short links.

app.py calls, in order: :func:`open_short_link` (a ``/?v=<code>`` link becomes its view before the
first run reads the address), :func:`begin` (the address bar's class parameters, once), the
sidebar's :func:`panel` (start or join), :func:`bar` above the page (the projector's join screen,
or a student's "following" line). :func:`sync` runs at the start and the end of every run, the
page's fragments included (viz.ui.guard): the teacher's view is published there, and a student who
changed their own view is exploring.

A student's screen follows through a fragment that reruns every ``KVLAB_CLASS_POLL_S`` seconds
(0.5 by default): it reads the class and reruns the app only when the class's version moved. The
students of one class on one process share that read (:func:`_class_now`, through
:class:`viz.core.classroom.RecentReads`: at most one store read per class every
:data:`SHARED_READ_S`), so thirty polls cost the store a few reads a second, not sixty. Everything
the store refuses is a message; a store that is down touches nobody who is not in a class.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, replace

import streamlit as st

from ..core.classroom import JOIN_CHARS, LINK_CHARS, ClassError, ClassState, RecentReads, normalise, shown
from ..core.engine.share import decode_view, encode_view
from ..figures.classroom import join_qr_png
from . import state
from .class_links import PROBLEM, link, store, store_call
from .common import folded, held_switch, md_escape, switch
from .polls import polled

SEAT = "kv_class_seat"  # this session's place in a class (Seat), or absent
READ = "kv_class_read"  # the address bar's class parameters were read (the first run)
ARRIVAL = "kv_class_arrival"  # the class parameters of the address the session arrived at
PAGE = "kv_class_page"  # the url path of the page this run shows
PAGES = "kv_class_pages"  # {url path: st.Page}, for following the teacher to another page
PUBLISHED = "kv_class_published"  # (page, view) the teacher's screen last published
APPLIED = "kv_class_applied"  # (version, page, view) a follower last took from the class
SEEN_AT = "kv_class_seen_at"  # when this student last told the store they are here
VOTES = "kv_class_votes"  # {question: the option this student sent}
ASKED = "kv_class_asked"  # questions this teacher has put to the class
PANEL = "kv_class_panel"  # the sidebar's Class panel is open
JOIN_CODE = "kv_class_join_code"
INVITED = "kv_class_invited"  # the class a join link named (offered above the page until joined)
NICKNAME = "kv_class_nickname"
ENDED = "kv_class_ended"  # the code of this student's class once it has ended (its poll slows down)
JOIN_SCREEN = "kv_class_join_screen"  # the teacher's projector shows the big join screen
PREFILL_POSITION = state.PREFILL_POSITION  # pages/prefill.py's stepper key: a follower's position goes there too

POLL_S = float(os.environ.get("KVLAB_CLASS_POLL_S", "0.5"))
TEACHER_POLL_S = 2.0  # the teacher's count of students and live votes
ENDED_POLL_S = 5.0  # a student's screen after its class ended: in case the teacher opens it again
SEEN_EVERY_S = 10.0
SHARED_READ_S = 0.1  # the students of a class on one process share a read of it this long
# pages whose lesson fragment polls for a following student (viz.ui.guard.fragment, lesson_poll): the
# bar above them then draws its line once per whole run instead of polling too
LESSON_POLLS = frozenset({"decode", "prefill"})


@dataclass(frozen=True)
class Seat:
    code: str
    role: str  # "teacher" or "student"
    token: str  # the teacher's secret, or the student's id: never shown to anyone else
    nickname: str = ""
    following: bool = True  # a student's screen shows the teacher's view (False: exploring)

    @property
    def teacher(self) -> bool:
        return self.role == "teacher"


RECENT = RecentReads(SHARED_READ_S)


def _class_now(code: str) -> ClassState | None:
    """The class as a following student's poll reads it (shared on this process: RecentReads)."""
    return store_call(lambda store: RECENT.get(store, code))


def seat() -> Seat | None:
    return st.session_state.get(SEAT)


def _sit(new: Seat | None) -> None:
    """Take (or leave, None) a place; the address bar keeps it, so a reload keeps the class."""
    if new is None:
        st.session_state.pop(SEAT, None)
        st.session_state[state.CLASS_PARAMS] = {}
        return
    st.session_state[SEAT] = new
    st.session_state[state.CLASS_PARAMS] = {"class": new.code, "teach" if new.teacher else "as": new.token}


def _view() -> tuple[str, dict[str, str]]:
    """What this screen shows: its page and view (presenter mode is the teacher's own)."""
    view = encode_view(state.current_view())
    view.pop("present", None)
    return st.session_state.get(PAGE, ""), view


# -- the first run ---------------------------------------------------------------------------------
def open_short_link() -> None:
    """Before the first run reads the address: ``/?v=<code>`` becomes the view it stands for. The
    class parameters are kept here too (a link that names its page switches to it, and a switch
    clears the address before :func:`begin` could read it)."""
    if st.session_state.get(state.READY):
        return
    st.session_state[ARRIVAL] = {key: st.query_params.get(key, "") for key in ("class", "teach", "as", "join")}
    if "v" not in st.query_params:
        return
    code = normalise(st.query_params.get("v", ""), LINK_CHARS)
    if code is None:
        st.session_state[PROBLEM] = "This short link is damaged: ask for the link again."
        return
    query = store_call(lambda store: store.expand(code), "Short link: ")
    if query is not None:
        st.query_params.from_dict(query)


def begin(pages: dict, url_path: str) -> None:
    """Every run: note the page; on the first, take the class the address bar names, if it may."""
    st.session_state[PAGE] = url_path
    st.session_state[PAGES] = pages
    if st.session_state.get(READ):
        sync()
        return
    st.session_state[READ] = True
    params = st.session_state.pop(ARRIVAL, {})
    params = {key: params.get(key, "") for key in ("class", "teach", "as", "join")}
    if params["join"]:
        st.session_state[JOIN_CODE] = params["join"][:4 * JOIN_CHARS]
        st.session_state[PANEL] = True
        st.session_state[INVITED] = normalise(params["join"], JOIN_CHARS)
    code = normalise(params["class"], JOIN_CHARS) if params["class"] else None
    if code and params["teach"]:
        if store_call(lambda store: store.is_teacher(code, params["teach"])):
            _sit(Seat(code, "teacher", params["teach"]))
        elif PROBLEM not in st.session_state:
            st.session_state[PROBLEM] = "This teacher's link is not the class's: ask the teacher for it again."
    elif code and params["as"] and store_call(lambda store: store.is_student(code, params["as"])):
        _sit(Seat(code, "student", params["as"]))


# -- the sidebar: start, join, leave ---------------------------------------------------------------
def _start() -> None:
    page, view = _view()
    started = store_call(lambda store: store.start(page, view))
    if started:
        _sit(Seat(started.code, "teacher", started.secret))
        st.session_state[PUBLISHED] = (page, view)
        st.session_state[JOIN_SCREEN] = True
        state.set_presenter(True)


def _join() -> None:
    typed = st.session_state.get(JOIN_CODE, "")
    code = normalise(typed, JOIN_CHARS)
    if code is None:
        st.session_state[PROBLEM] = (f"A class code has {JOIN_CHARS} letters and digits, as the teacher's screen "
                                     "shows it (ABCD-EFGH).")
        return
    nickname = st.session_state.get(NICKNAME, "")
    student = store_call(lambda store: store.join(code, nickname))
    if student:
        _sit(Seat(code, "student", student, nickname.strip()))
        st.session_state.pop(APPLIED, None)


def _leave() -> None:
    _sit(None)
    for key in (APPLIED, PUBLISHED, VOTES, ASKED, INVITED):
        st.session_state.pop(key, None)


def panel() -> None:
    """The sidebar's Class panel (built only while open)."""
    with st.sidebar:
        folded("Class mode", PANEL, _panel_body, icon=":material/groups:")


def _panel_body() -> None:
    here = seat()
    if here is not None:
        who = "the teacher" if here.teacher else "a student"
        st.caption(f"In class {shown(here.code)} as {who}.")
        st.button("Leave the class on this device", on_click=_leave, key="kv_class_leave",
                  icon=":material/logout:")
        return
    st.button("Start a class", on_click=_start, type="primary", key="kv_class_start", icon=":material/co_present:",
              help="Your screen becomes the projector's: students join with a code and follow each click.")
    st.text_input("Class code", key=JOIN_CODE, max_chars=4 * JOIN_CHARS, placeholder="ABCD-EFGH")
    st.text_input("Nickname (optional)", key=NICKNAME, max_chars=24,
                  help="Shown to the teacher with your votes; leave it empty to stay anonymous.")
    st.button("Join the class", on_click=_join, key="kv_class_join", icon=":material/login:")


# -- above the page: the projector's join screen, a student's line ---------------------------------
def bar(explore: bool = True) -> None:
    """Above the page: a refusal kept for this run, then the class's screen for this seat (``explore``:
    the page has something a following screen leaves out, its controls or the sidebar's editors)."""
    problem = st.session_state.pop(PROBLEM, None)
    if problem:
        st.warning(md_escape(problem), icon=":material/groups:")
    here = seat()
    if here is None:
        _invitation(st.session_state.get(INVITED))
    elif here.teacher:
        _teacher_bar(here)
    else:
        _student_line(here, explore)


def _invitation(code: str | None) -> None:
    """A join link's class, offered above the page: a phone opens with its sidebar folded away."""
    if code:
        with st.container(border=True, horizontal=True, vertical_alignment="center", key="kv_class_invitation"):
            st.markdown(f":material/groups: Join class **{shown(code)}** to follow the teacher's screen; "
                        "a nickname is optional (the sidebar's *Class mode*, » at the top left).")
            st.button("Join the class", on_click=_join, type="primary", key="kv_class_join_here",
                      icon=":material/login:")


def _teacher_bar(here: Seat) -> None:
    """The projector's class bar: the join screen (code, link, QR code, count), or once everybody is
    in one line (code, count, the Join screen switch, the rest in popovers), so a tour question with
    its live count stays whole on a 1280 × 720 projector under it."""
    join = link({"join": here.code})
    if not st.session_state.get(JOIN_SCREEN):  # one line, no frame: the page keeps the room
        with st.container(horizontal=True, vertical_alignment="center", gap="medium", key="kv_class_bar"):
            _teacher_live()
            _teacher_controls(here)
        return
    with st.container(border=True, key="kv_class_bar"):
        words, picture = st.columns([2, 1])
        with words:
            st.markdown(f"## Join the class: **{shown(here.code)}**")
            st.markdown("Open this link, or scan the code, or type the code under *Class mode* in the "
                        "sidebar:")
            st.code(join, language=None, wrap_lines=True)
            _teacher_live()
        picture.image(join_qr_png(join), caption="Scan to join", width=260)
        _teacher_controls(here)


@polled(TEACHER_POLL_S)
def _teacher_live() -> None:
    """How many students are here now, and the class's flags (redrawn every TEACHER_POLL_S)."""
    here = seat()
    if here is None:
        return
    found = store_call(lambda store: (store.state(here.code), store.connected(here.code)))
    if found is None:
        st.warning(md_escape(st.session_state.pop(PROBLEM, "")), icon=":material/cloud_off:")
        return
    now, connected = found
    flags = [word for word, on in (("locked", now.locked), ("ended", now.ended)) if on]
    st.markdown(f"**Class {shown(here.code)}** · **{connected}** student{'s' if connected != 1 else ''} "
                f"connected" + (f" · {', '.join(flags)}" if flags else ""))


def _flag(setter: str, value: bool) -> None:
    here = seat()
    if here is not None:
        store_call(lambda store: getattr(store, setter)(here.code, here.token, value))
        RECENT.forget(here.code)


def _results(code: str, secret: str) -> str:
    try:
        return store().results_csv(code, secret)
    except ClassError as err:
        return f"error\n{err}\n"


def _teacher_controls(here: Seat) -> None:
    now = store_call(lambda store: store.state(here.code))
    if now is None:
        return
    with st.container(horizontal=True, vertical_alignment="center", key="kv_class_controls", width="content"):
        held_switch("Join screen", JOIN_SCREEN, False, help="The join code, link and QR code, large, for the projector")
        with st.popover("Class", icon=":material/tune:", help="Lock, end, the results"):
            switch("Lock (no new students)", f"kv_class_lock_{now.version}", now.locked,
                   lambda on: _flag("set_locked", on))
            if now.ended:
                st.button("Open the class again", on_click=_flag, args=("set_ended", False),
                          key="kv_class_reopen", icon=":material/replay:")
            else:
                st.button("End the class", on_click=_flag, args=("set_ended", True), key="kv_class_end",
                          icon=":material/stop_circle:")
            st.download_button("Results (CSV)", data=lambda: _results(here.code, here.token),
                               file_name=f"kvlab-class-{here.code}.csv", mime="text/csv", on_click="ignore",
                               icon=":material/download:", key="kv_class_csv")
        with st.popover("Teacher's link", icon=":material/key:", help="Keep it off the projector"):
            st.caption("Opens this class as its teacher on any device, also after a reload. "
                       "Never share it with students.")
            st.code(link({"class": here.code, "teach": here.token}), language=None, wrap_lines=True)


def following() -> bool:
    """Whether this screen follows a teacher's: a student's screen in a class, following. A page then
    shows its lesson as the projector does, without its own controls and tabs ("Explore on my own"
    brings them), the sidebar leaves its editors out, and on the pages of :data:`LESSON_POLLS` the
    lesson itself is the screen's poll of the class (:func:`lesson_poll`; docs/class-mode.md)."""
    here = seat()
    return here is not None and not here.teacher and here.following


def _student_line(here: Seat, explore: bool) -> None:
    """The student's line and, while following on a page where it brings something (``explore``), the
    button to explore (drawn by the whole run, not by every poll: its click reruns the whole page with
    its controls). The line is a poll (:func:`_follow`), except while following on a page whose lesson
    polls itself (:data:`LESSON_POLLS`), and a slow one (:func:`_ended`) once the class has ended."""
    with st.container(border=True, key="kv_class_bar"):
        if st.session_state.get(ENDED) == here.code:
            _ended()
            return
        if not (following() and explore):
            _follow()
            return
        line, button = st.columns([3, 2], vertical_alignment="center")
        with line:
            if st.session_state.get(PAGE) in LESSON_POLLS:
                _following_line(here)
            else:
                _follow()
        button.button("Explore on my own", key="kv_class_explore", icon=":material/explore:", on_click=_explore,
                      help="Your own steps, choices and edits, from the teacher's view; one button brings you back")


def _explore() -> None:
    """Explore on one's own (a button's callback): the whole page, its controls, tabs and editors."""
    here = seat()
    if here is not None:
        _sit(replace(here, following=False))


def _read(here: Seat) -> ClassState | None:
    """A poll's read of the class: None (with its message drawn) when the store cannot answer. The first
    read of a class that ended gives the screen back to its student and reruns the whole app, whose
    line then reads the class slowly (:func:`_ended`)."""
    now = _class_now(here.code)
    if now is None:
        st.warning(md_escape(st.session_state.pop(PROBLEM, "")), icon=":material/cloud_off:")
        return None
    _still_here(here)
    if now.ended and st.session_state.get(ENDED) != here.code:  # once: the screen is the student's again,
        st.session_state[ENDED] = here.code                       # the whole page and a slower poll
        if here.following:
            _sit(replace(here, following=False))
        st.rerun(scope="app")
    return now


def _in_class(here: Seat) -> str:
    """'in class ABCD-EFGH as <nickname>', the nickname escaped (visitor text)."""
    return f"in class {shown(here.code)}" + (f" as {md_escape(here.nickname)}" if here.nickname else "")


def _following_line(here: Seat) -> None:
    st.markdown(f":material/cast_for_education: **Following the teacher** {_in_class(here)}.")


@polled(POLL_S)
def _follow() -> None:
    """A student's screen: read the class; when its version moved, take the teacher's view (if
    following) and its reveals, and rerun the app. Says which view the screen shows."""
    here = seat()
    now = None if here is None else _read(here)
    if now is None:
        return
    applied = st.session_state.get(APPLIED)
    if applied is None or applied[0] != now.version:
        if _take(now, here.following):
            _go(now.page if here.following else None)
    if here.following:  # one line: every poll draws it again (the Explore button is the whole run's)
        _following_line(here)
    else:
        left, right = st.columns([3, 2], vertical_alignment="center")
        left.markdown(f":material/explore: **Exploring on your own** {_in_class(here)}: "
                      "the teacher's screen may show something else.")
        right.button("Back to the teacher's view", on_click=_return, key="kv_class_return", type="primary",
                     icon=":material/cast_for_education:")


@polled(ENDED_POLL_S)
def _ended() -> None:
    """A student's line once the class ended, read again every ENDED_POLL_S: opened again, the class
    reruns the app (the screen explores, with Back to the teacher's view)."""
    here = seat()
    now = None if here is None else _read(here)
    if now is None:
        return
    if not now.ended:
        st.session_state.pop(ENDED, None)
        st.rerun(scope="app")
    st.info(f"Class {shown(here.code)} has ended: your screen is yours again, with its own controls.",
            icon=":material/groups:")
    st.button("Leave the class", on_click=_leave, key="kv_class_leave_ended")


def lesson_poll() -> None:
    """At the start of each run of a following student's lesson fragment (which reruns every POLL_S on
    the pages of :data:`LESSON_POLLS`, viz.ui.guard.fragment): the class's new view. A move the lesson
    shows itself (a step, a position, the mode or the head, on the same page and scenario) is drawn by
    this very run, so a teacher's Step costs each follower one lesson's run, not a poll and then a
    whole page; anything else (another page or scenario, a reveal) reruns the whole app."""
    if not following():
        return
    now = _read(seat())
    applied = st.session_state.get(APPLIED)
    if now is None or (applied is not None and applied[0] == now.version):
        return
    page, scenario, revealed = st.session_state.get(PAGE), state.scenario(), set(state.tour_choices())
    if _take(now, True) and (now.page != page or state.scenario() != scenario or now.revealed - revealed):
        _go(now.page)


def _still_here(here: Seat) -> None:
    """Tell the store this student's screen is open (every SEEN_EVERY_S, not every poll)."""
    if time.monotonic() - st.session_state.get(SEEN_AT, 0.0) >= SEEN_EVERY_S:
        st.session_state[SEEN_AT] = time.monotonic()
        store_call(lambda store: store.seen(here.code, here.token))


def _take(now: ClassState, view_too: bool) -> bool:
    """Take the class's reveals, and its view when ``view_too``; whether the screen must change."""
    changed = False
    before = _view()
    sent = st.session_state.get(VOTES, {})
    for index in sorted(now.revealed - set(state.tour_choices())):
        state.reveal(index, sent.get(index))
        changed = True
    if view_too:
        view, _ = decode_view(now.query, state.scenario())
        state.set_scenario(view.scenario)
        state.set_step(view.step)
        state.set_mode(view.mode)
        state.set_head(view.head)
        state.set_position(view.position)
        st.session_state[PREFILL_POSITION] = view.position
        st.session_state[state.TOUR_STEP] = view.tour
        changed = changed or (now.page, now.query) != before
    st.session_state[APPLIED] = (now.version, now.page, now.query) if view_too else \
        (now.version, *st.session_state.get(APPLIED, (0, None, None))[1:])
    return changed


def _go(page: str | None) -> None:
    """Rerun the app, on the teacher's page when it is another."""
    pages = st.session_state.get(PAGES, {})
    if page is not None and page != st.session_state.get(PAGE) and page in pages:
        st.switch_page(pages[page])
    st.rerun(scope="app")


def _return() -> None:
    """Back to the teacher's view (a button's callback: the poll that follows takes it)."""
    here = seat()
    if here is not None:
        _sit(replace(here, following=True))
        st.session_state.pop(APPLIED, None)


# -- the start and the end of every run ----------------------------------------------------------------------------
def sync() -> None:
    """At the start of a run (the click's callback has already moved the view) and at its end: the
    teacher's screen publishes what it shows, once per change; a student who moved their own view
    explores, and the app reruns so that the line above the page, drawn while following (on a lesson
    page no poll redraws it), says so. Publishing at the start takes the teacher's own run out of the
    students' wait."""
    here = seat()
    if here is None:
        return
    page, view = _view()
    if here.teacher:
        if st.session_state.get(PUBLISHED) != (page, view):
            if store_call(lambda store: store.publish(here.code, here.token, page, view)) is not None:
                st.session_state[PUBLISHED] = (page, view)
                RECENT.forget(here.code)
    elif here.following:
        applied = st.session_state.get(APPLIED)
        if applied and applied[1] is not None and (applied[1], applied[2]) != (page, view):
            _sit(replace(here, following=False))
            st.rerun(scope="app")
