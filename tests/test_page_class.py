"""Tier 2 (AppTest): class mode through the whole app: a teacher's session and students' sessions
share one real store (SQLite in a temporary folder), as two browsers would."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from apptest_helpers import board, boards, cells, flip, stat_value, widget
from viz.core.classroom import RecentReads, recent as recent_module
from viz.ui import class_links, classroom, polls, runs, sidebar, state
from viz.tools.server import free_port


@pytest.fixture(autouse=True)
def store(tmp_path, monkeypatch):
    monkeypatch.setenv("KVLAB_STORE", f"sqlite:///{tmp_path / 'classes.sqlite3'}")


def arrive(**query) -> AppTest:
    """A new session (a browser) at / with ``query`` in its address, after its first run."""
    at = AppTest.from_file("../app.py", default_timeout=120)
    for key, value in query.items():
        at.query_params[key] = value
    at.run()
    assert not at.exception, at.exception
    return at


def visitor(**query) -> AppTest:
    """A new session at / with the Class panel open."""
    at = arrive(**query)
    at.session_state[classroom.PANEL] = True
    at.run()
    assert not at.exception, at.exception
    return at


def sections_shown(at: AppTest, key: str) -> bool:
    """Whether the page drew its sections picker (viz.ui.common.sections) under ``key``."""
    return any(element.key == key for element in at.button_group)


def press(at: AppTest, key: str) -> AppTest:
    next(b for b in at.button if b.key == key).click().run()
    assert not at.exception, at.exception
    return at


def teacher() -> tuple[AppTest, classroom.Seat]:
    at = press(visitor(), "kv_class_start")
    return at, at.session_state[classroom.SEAT]


def student(code: str, nickname: str = "") -> AppTest:
    at = visitor()
    at.text_input(key=classroom.JOIN_CODE).input(code)
    at.text_input(key=classroom.NICKNAME).input(nickname)
    return press(at, "kv_class_join")


def texts(at: AppTest) -> list[str]:
    return [e.value for e in [*at.markdown, *at.caption, *at.warning, *at.info, *at.success, *at.error]]


def forward(at: AppTest) -> AppTest:
    return press(at, f"{state.TOUR_STEP}_forward")


def test_starting_a_class_shows_the_join_screen():
    """The projector shows the code, the short join link, a QR code and the students connected."""
    at, seat = teacher()
    code = f"{seat.code[:4]}-{seat.code[4:]}"
    assert seat.teacher and state.presenter.__name__ and at.session_state[state.PRESENTER]
    assert any(f"Join the class: **{code}**" in t for t in texts(at))
    assert any(c.value.endswith(f"/?join={seat.code}") for c in at.code)
    assert at.get("image"), "no QR code drawn"
    assert any("**0** students connected" in t for t in texts(at))
    assert at.query_params["class"] == seat.code and at.query_params["teach"] == seat.token


def test_students_follow_the_teachers_page_and_step():
    """A student who joined with the code (in any case, with a dash) follows the tour and its step."""
    at, seat = teacher()
    pupil = student(f"{seat.code[:4].lower()}-{seat.code[4:]}", "Ana")
    assert any("**1** student connected" in t for t in texts(at.run()))
    at.switch_page("pages/tour.py").run()
    forward(forward(at))
    pupil.run()
    assert pupil.session_state[classroom.PAGE] == "tour" and pupil.session_state[state.TOUR_STEP] == 3
    assert any("Following the teacher" in t for t in texts(pupil))
    assert "teach" not in pupil.query_params and pupil.query_params["class"] == seat.code


def test_a_nickname_is_shown_escaped():
    """A nickname with Markdown in it is shown as typed, never rendered."""
    _, seat = teacher()
    pupil = student(seat.code, "*Ana* [x](http://e.org)")
    line = next(t for t in texts(pupil) if "Following the teacher" in t)
    assert line.endswith(r"as \*Ana\* \[x\]\(`http://e.org)`.")


def test_a_student_explores_and_returns_with_one_button():
    """A student's own step makes them explore (the screen says so); one button brings the teacher's view back."""
    at, seat = teacher()
    pupil = student(seat.code)
    at.switch_page("pages/tour.py").run()
    pupil.run()
    forward(pupil).run()
    assert not pupil.session_state[classroom.SEAT].following
    assert any("Exploring on your own" in t for t in texts(pupil))
    forward(at)  # the teacher moves on: the exploring student stays where they are
    pupil.run()
    assert pupil.session_state[state.TOUR_STEP] == 2 and at.session_state[state.TOUR_STEP] == 2
    forward(at)
    pupil.run()
    assert pupil.session_state[state.TOUR_STEP] == 2
    press(pupil, "kv_class_return").run()
    assert pupil.session_state[classroom.SEAT].following and pupil.session_state[state.TOUR_STEP] == 3


def test_votes_count_live_and_reveal_reaches_every_screen():
    """Students vote on their own devices (changeable), the projector counts without the answer,
    only the teacher reveals, and the reveal shows on the students' screens."""
    at, seat = teacher()
    ana, bo = student(seat.code), student(seat.code)
    at.switch_page("pages/tour.py").run()
    forward(at)
    for pupil, first, last in ((ana, 0, 1), (bo, 1, 1)):
        pupil.run()
        assert not any(b.key == "tour_reveal_button_0" for b in pupil.button)
        answers = widget(pupil, "tour_answer_0")  # a segmented control; a student's options read as they are
        assert [o.content for o in answers.proto.options] == [r"A\. yes", r"B\. no"]  # lettered, as on the projector
        answers.set_value(answers.options[first]).run()
        answers = widget(pupil, "tour_answer_0")
        answers.set_value(answers.options[last]).run()
        assert any("Your vote is in" in t for t in texts(pupil))
    at.run()
    bars = [p.proto.text for p in at.get("progress")]
    assert bars == [r"A\. yes\: 0 votes", r"B\. no\: 2 votes"]
    assert not [t for t in texts(at) if "Right" in t or "Answer:" in t]
    press(at, "tour_reveal_button_0")
    ana.run()
    assert any(t.startswith("Right: **no**") for t in texts(ana))
    assert r"A\. yes · **B\. no ✓ right \(your pick\)**" in texts(ana)  # text in full contrast, not a grey control
    csv = class_links.store().results_csv(seat.code, seat.token).splitlines()
    assert csv[2].startswith("1,") and ",no,2,yes," in csv[2]


def test_a_vote_cast_before_the_teachers_screen_opens_its_question_waits_and_then_counts(monkeypatch):
    """A student's screen can show a question before the teacher's run has put it to the class (the
    view is published as that run starts): the vote is kept and said to wait, not lost behind a
    selected option, and once the question is open it goes in and counts, without a second click."""
    at, seat = teacher()
    pupil = student(seat.code)
    at.switch_page("pages/tour.py").run()
    store_type = type(class_links.store())
    with monkeypatch.context() as patched:  # the teacher's run published its view, not yet its question
        patched.setattr(store_type, "ask", lambda self, *args: None)
        forward(at)
    pupil.run()
    answers = widget(pupil, "tour_answer_0")
    answers.set_value(answers.options[1]).run()
    assert not pupil.exception, pupil.exception
    assert any("Your vote, no, goes in as soon as the teacher's screen opens this question" in t
               for t in texts(pupil))
    assert not any("Your vote is in" in t for t in texts(pupil)) and not pupil.warning
    assert class_links.store().tally(seat.code, 0).counts == ()  # nothing was asked, nothing counted
    at.run()  # the teacher's screen puts the question to the class
    assert class_links.store().tally(seat.code, 0).counts == (0, 0)
    pupil.run()
    assert any("Your vote is in: no" in t for t in texts(pupil))
    at.run()
    assert [p.proto.text for p in at.get("progress")] == [r"A\. yes\: 0 votes", r"B\. no\: 1 vote"]


def test_a_teacher_reload_keeps_the_class_and_a_guess_does_not():
    """The teacher's address (class and secret) makes a new session the teacher; a wrong secret does not."""
    _, seat = teacher()
    again = visitor(**{"class": seat.code, "teach": seat.token})
    assert again.session_state[classroom.SEAT].teacher
    guess = arrive(**{"class": seat.code, "teach": seat.token[:-2] + "xx"})
    assert classroom.SEAT not in guess.session_state
    assert any("link is not the class" in t for t in texts(guess))


def test_bad_codes_locked_and_ended_classes_say_why():
    """A mistyped code, a locked class and an ended one are refused in words; the app goes on."""
    at, seat = teacher()
    assert any("letters and digits" in t for t in texts(student("12")))
    assert any("There is no class" in t for t in texts(student("ZZZZ-ZZZZ")))
    lock = lambda on: flip(at, next(b.key for b in at.button if (b.key or "").startswith("kv_class_lock_")), on)  # noqa: E731
    lock(True)
    assert any("locked" in t for t in texts(student(seat.code)))
    press(at, "kv_class_end")
    assert any("has ended" in t for t in texts(student(seat.code)))
    press(at, "kv_class_reopen")
    lock(False)
    assert student(seat.code).session_state[classroom.SEAT].role == "student"


def test_a_short_link_opens_its_view():
    """A short link made on the tour's third step opens that step in a new session; a bad one says so."""
    at = visitor()
    at.switch_page("pages/tour.py").run()
    forward(forward(at))
    press(at, "kv_class_shorten")
    link = next(c.value for c in at.sidebar.code if "/?v=" in c.value)
    arrived = visitor(v=link.rsplit("=", 1)[1])
    assert arrived.session_state[state.TOUR_STEP] == 3
    assert any("unknown or has expired" in t for t in texts(arrive(v="0000000000")))


def test_a_store_that_is_down_leaves_everyone_else_alone(monkeypatch):
    """With nothing at the store's address the app draws as usual; starting a class says why it cannot."""
    monkeypatch.setenv("KVLAB_STORE", f"redis://127.0.0.1:{free_port()}/0")
    at = press(visitor(), "kv_class_start")
    assert classroom.SEAT not in at.session_state
    assert any("not answering" in t for t in texts(at))
    at.switch_page("pages/tour.py").run()
    forward(at)
    assert not at.exception and at.session_state[state.TOUR_STEP] == 2


def test_students_follow_the_teachers_decode_steps_on_the_runs_the_teacher_computed():
    """Two Steps on Decode reach a following student's screen (its step and its cache's entries), and
    the student's screen draws them from the very run the teacher's computed (one run per process)."""
    at, seat = teacher()
    pupil = student(seat.code)
    at.session_state["decode_numbers_open"] = True  # the fold of the cache's figures (pages/decode.py)
    at.switch_page("pages/decode.py").run()
    for _ in range(2):
        press(at, "decode_step")
    pupil.run()
    assert pupil.session_state[classroom.PAGE] == "decode" and pupil.session_state[state.STEP] == 2
    assert stat_value(at, "Entries") == "6"
    # the student's lesson screen is the teacher's: the same boards, the cache's six entries
    assert [b["title"] for b in boards(pupil)] == [b["title"] for b in boards(at)]
    assert cells(board(pupil, "KV cache"), 0) == cells(board(at, "KV cache"), 0)
    assert len(cells(board(pupil, "KV cache"), 0)[0]) == 6  # a row per head, a column per entry
    assert pupil.session_state[runs.RUNS] is at.session_state[runs.RUNS]
    assert any("Following the teacher" in t for t in texts(pupil))


def test_a_following_screen_whose_view_moved_reruns_the_app_to_say_it_explores():
    """classroom.sync: a following student's view that is not the class's (moved inside a lesson
    fragment's run, whose reruns leave the line above the page as it was drawn, "Following the
    teacher") makes the screen explore and reruns the whole app, so that line says so too."""
    def script():
        import streamlit as st
        from viz.ui import classroom, state
        st.session_state["runs"] = st.session_state.get("runs", 0) + 1
        state.init("decode", frozenset({"decode"}))
        st.session_state[classroom.PAGE] = "decode"
        if classroom.SEAT not in st.session_state:
            st.session_state[classroom.SEAT] = classroom.Seat("ABCDEFGH", "student", "x" * 12)
            st.session_state[classroom.APPLIED] = (1, "decode", {"step": "9"})  # the class's view, not this one
        classroom.sync()

    at = AppTest.from_function(script).run()
    assert not at.exception, at.exception
    assert not at.session_state[classroom.SEAT].following
    assert at.session_state["runs"] == 2  # the run that found it, and the whole app once more


def test_a_bound_widget_acts_only_on_a_value_other_than_the_one_drawn():
    """viz.ui.state.bound: its callback hands on a visitor's move, and takes the value the widget was
    drawn with, sent again (as a browser can after the app stopped drawing the widget), as no change."""
    def script():
        import streamlit as st
        from viz.ui import state
        calls = st.session_state.setdefault("calls", [])
        hooks = state.bound("kv_test_bound", 3, calls.append)
        for sent in (3, 5):  # the drawn value sent again, then a move
            st.session_state["kv_test_bound"] = sent
            hooks["on_change"]()

    at = AppTest.from_function(script).run()
    assert not at.exception, at.exception
    assert at.session_state["calls"] == [5]


def editor_folds(at) -> list[str]:
    """The labels of the sidebar's scenario editor panels drawn (viz.ui.sidebar.PANELS)."""
    return [e.label for e in at.sidebar.expander if e.label in {label for _, label, *_ in sidebar.PANELS}]


def test_a_following_screen_shows_the_lesson_without_its_own_controls_until_the_student_explores():
    """Following, a student's Decode shows the teacher's lesson (narration and boards) without Step,
    choices, tabs or the sidebar's editors; "Explore on my own" brings them all, from the teacher's
    view, and "Back to the teacher's view" leaves them again."""
    at, seat = teacher()
    pupil = student(seat.code)
    at.switch_page("pages/decode.py").run()
    press(at, "decode_step")
    pupil.run()
    keys = {b.key for b in pupil.button}
    assert "decode_step" not in keys and "kv_class_explore" in keys and not sections_shown(pupil, "decode_tab")
    assert not editor_folds(pupil) and boards(pupil) and pupil.info
    assert any("Explore on my own" in t and "editors" in t for t in texts(pupil))  # the sidebar says where they are
    press(pupil, "kv_class_explore")
    assert not pupil.session_state[classroom.SEAT].following and pupil.session_state[state.STEP] == 1
    assert "decode_step" in {b.key for b in pupil.button} and sections_shown(pupil, "decode_tab") and "Prompt" in editor_folds(pupil)
    assert any("Exploring on your own" in t for t in texts(pupil))
    press(pupil, "decode_step")  # their own step: the teacher's screen stays where it was
    assert pupil.session_state[state.STEP] == 2 and at.run().session_state[state.STEP] == 1
    press(pupil, "kv_class_return").run()
    assert pupil.session_state[classroom.SEAT].following and pupil.session_state[state.STEP] == 1
    assert "decode_step" not in {b.key for b in pupil.button}


def test_a_following_lesson_takes_a_step_itself_and_reruns_the_app_for_another_page_or_scenario():
    """On Decode a following student's lesson polls the class itself (the bar draws its line once): the
    teacher's Step is drawn by the lesson's own run; another page or another scenario reruns the whole
    app there."""
    at, seat = teacher()
    pupil = student(seat.code)
    at.switch_page("pages/decode.py").run()
    pupil.run()
    assert pupil.session_state[classroom.PAGE] in classroom.LESSON_POLLS
    press(at, "decode_step")
    pupil.run()
    assert pupil.session_state[state.STEP] == 1 and pupil.session_state[classroom.SEAT].following
    at.switch_page("pages/prefill.py").run()
    pupil.run()
    assert pupil.session_state[classroom.PAGE] == "prefill" and pupil.session_state[classroom.SEAT].following
    assert any("Following the teacher" in t for t in texts(pupil))


def test_a_following_prefill_screen_shows_the_teachers_position_without_its_stepper():
    """Following on Prefill, the student's lesson is at the teacher's position, with no stepper of its own."""
    at, seat = teacher()
    pupil = student(seat.code)
    at.switch_page("pages/prefill.py").run()
    press(at, f"{state.PREFILL_POSITION}_forward")
    pupil.run()
    assert pupil.session_state[classroom.PAGE] == "prefill"
    assert pupil.session_state[state.PREFILL_POSITION] == at.session_state[state.PREFILL_POSITION] == 2
    assert f"{state.PREFILL_POSITION}_forward" not in {b.key for b in pupil.button} and not sections_shown(pupil, "prefill_tab")
    shown = [b["title"] for b in boards(pupil)]  # the lesson screen's boards (the teacher's tabs draw more below)
    assert len(shown) == 3 and shown == [b["title"] for b in boards(at)][:3]


class CountingStore:
    """A store whose class reads are counted (the version moves when the test says so)."""

    def __init__(self):
        self.reads, self.version = 0, 1

    def state(self, code: str):
        self.reads += 1
        return (code, self.version)


def test_a_class_read_is_shared_by_its_students_polls_for_a_moment(monkeypatch):
    """Polls within SHARED_READ_S of a read take it; later ones, and any after this process's teacher
    changed the class, read the store again."""
    recent, store, clock = RecentReads(0.1), CountingStore(), [100.0]
    monkeypatch.setattr(recent_module.time, "monotonic", lambda: clock[0])
    assert [recent.get(store, "ABCDEFGH") for _ in range(30)] == [("ABCDEFGH", 1)] * 30 and store.reads == 1
    store.version = 2
    clock[0] += 0.05
    assert recent.get(store, "ABCDEFGH") == ("ABCDEFGH", 1) and store.reads == 1
    recent.forget("ABCDEFGH")
    assert recent.get(store, "ABCDEFGH") == ("ABCDEFGH", 2) and store.reads == 2
    store.version = 3
    clock[0] += 0.2
    assert recent.get(store, "ABCDEFGH") == ("ABCDEFGH", 3) and store.reads == 3
    recent.get(store, "OTHERCLS")
    assert store.reads == 4


def test_a_join_link_offers_its_class_above_the_page_where_a_phone_shows_no_sidebar():
    """A phone opens the join link with its sidebar folded away: the page itself names the class and
    joins it with one tap (the sidebar's nickname box still counts); joined, the offer is gone."""
    _, seat = teacher()
    pupil = arrive(join=seat.code)
    assert any(f"{seat.code[:4]}-{seat.code[4:]}" in t and "Join class" in t for t in texts(pupil))
    next(w for w in pupil.text_input if w.key == classroom.NICKNAME).input("Bo")
    press(pupil, "kv_class_join_here")
    here = pupil.session_state[classroom.SEAT]
    assert here.role == "student" and here.code == seat.code and here.nickname == "Bo"
    assert "kv_class_join_here" not in {b.key for b in pupil.button}


def test_an_ended_class_gives_the_student_their_screen_back_in_words_that_read():
    """After "End the class" a following student's Decode has its own Step and tabs again, and the bar
    says so in one plain sentence (it said 'has ended as Ana')."""
    at, seat = teacher()
    pupil = student(seat.code, "Ana")
    at.switch_page("pages/decode.py").run()
    pupil.run()
    assert "decode_step" not in {b.key for b in pupil.button}
    press(at, "kv_class_end")
    pupil.run()
    assert "decode_step" in {b.key for b in pupil.button} and sections_shown(pupil, "decode_tab")
    ended = [t for t in texts(pupil) if "has ended" in t]
    assert ended and not any("ended as" in t for t in ended)


def test_an_ended_class_is_read_slowly_and_opened_again_it_reaches_the_student():
    """Once the class ended the student's line is the slow poll (every ENDED_POLL_S, not every POLL_S);
    opened again by the teacher, the student's screen learns it and explores, one button from the teacher."""
    at, seat = teacher()
    pupil = student(seat.code)
    press(at, "kv_class_end")
    pupil.run()
    assert pupil.session_state[classroom.ENDED] == seat.code and classroom.ENDED_POLL_S > classroom.POLL_S
    assert "kv_class_leave_ended" in {b.key for b in pupil.button}
    press(at, "kv_class_reopen")
    pupil.run()
    assert classroom.ENDED not in pupil.session_state and not any("has ended" in t for t in texts(pupil.run()))
    assert "kv_class_return" in {b.key for b in pupil.button}


def test_explore_is_offered_only_where_a_following_screen_leaves_something_out():
    """Following on Decode (no controls of its own, no editors) the bar offers "Explore on my own"; on
    Home, which has neither, it does not (nothing there would change)."""
    at, seat = teacher()
    pupil = student(seat.code)
    at.switch_page("pages/home.py").run()
    pupil.run()
    assert pupil.session_state[classroom.PAGE] == ""  # Home, at /
    assert "kv_class_explore" not in {b.key for b in pupil.button}
    at.switch_page("pages/decode.py").run()
    pupil.run()
    assert "kv_class_explore" in {b.key for b in pupil.button}


def test_the_pages_whose_lesson_polls_are_the_pages_with_a_guarded_fragment():
    """classroom.LESSON_POLLS names the pages whose lesson fragment is a follower's poll (guard.fragment
    polls on any page that has one): a page added to one and not the other would poll twice (the bar
    too) or never draw the teacher's moves."""
    from pathlib import Path
    pages = Path(__file__).resolve().parent.parent / "pages"
    guarded = {page.stem for page in pages.glob("*.py") if "@guard.fragment" in page.read_text()}
    assert guarded and guarded == classroom.LESSON_POLLS


def test_a_failing_poll_says_so_in_its_place_and_the_rest_of_the_screen_stays(monkeypatch):
    """Class mode's polling fragments are guarded from inside (viz.ui.polls): the teacher's live count
    failing (a fault, not a refusal) shows the frame's kind message where the count was, no traceback,
    the join screen still drawn, and the run is not remembered as a good one."""
    at, seat = teacher()
    store_type = type(class_links.store())

    def broken(self, code):
        raise RuntimeError("a fault in the store")

    with monkeypatch.context() as patched:
        patched.setattr(store_type, "connected", broken)
        at.run()
    assert not at.exception, at.exception
    assert [e.value for e in at.error] == [polls.FAILED]
    assert any(f"Join the class: **{seat.code[:4]}-{seat.code[4:]}**" in t for t in texts(at))
    assert at.session_state[state.RUN_FAILED]
    assert not any("students connected" in t for t in texts(at))
    at.run()  # the store answers again: the count is back and the run is a good one
    assert not at.error and any("**0** students connected" in t for t in texts(at))
    assert not at.session_state[state.RUN_FAILED]
