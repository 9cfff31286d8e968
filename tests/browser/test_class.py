"""Class mode in Chromium: a teacher and two students in separate browser contexts, against the real
server, once on an SQLite store and once on Redis (Debian's redis-server on a loopback port)."""

from __future__ import annotations

import re
from typing import Iterator

import pytest
from playwright.sync_api import expect

from viz.tools.redis_server import RedisServer
from viz.tools.server import StreamlitServer

from .visitor import ARTIFACTS, App

PHONE = {"width": 390, "height": 844}


@pytest.fixture(params=["sqlite", "redis"])
def class_server(request, tmp_path) -> Iterator[StreamlitServer]:
    """The app on its own store: a fresh SQLite file, or a fresh redis-server."""
    with (RedisServer(tmp_path / "redis.log") if request.param == "redis" else _Nothing()) as redis:
        store = redis.url if redis else f"sqlite:///{tmp_path / 'classes.sqlite3'}"
        server = StreamlitServer(ARTIFACTS / f"browser-class-{request.param}.log", env={"KVLAB_STORE": store})
        with server:
            yield server


class _Nothing:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return None


def _class_panel(visitor: App) -> None:
    visitor.expander("Class mode", scope=visitor.sidebar, reruns=True)


def _unfold_sidebar(visitor: App) -> None:
    """Open the sidebar with its » control, as a teacher in presenter mode does (starting a class
    turns presenter mode on, which folds the sidebar away)."""
    if visitor.sidebar.get_attribute("data-collapsed") == "true":
        visitor.page.get_by_test_id("stExpandSidebarButton").click()
    expect(visitor.sidebar).to_have_attribute("data-collapsed", "false")


def _join(visitor: App, code: str, nickname: str) -> None:
    visitor.open("/", join=code)  # the short join link: the panel opens with the code filled in
    expect(visitor.sidebar.get_by_role("textbox", name="Class code")).to_have_value(code)
    visitor.sidebar.get_by_role("textbox", name="Nickname (optional)").fill(nickname)
    visitor.click_button("Join the class", scope=visitor.sidebar)
    expect(visitor.main.get_by_text("Following the teacher")).to_be_visible()


def test_a_class_follows_explores_votes_and_shares(new_app, class_server):
    """Teacher starts a class; two students join (link and code), follow the teacher's Decode steps,
    one explores and returns, both vote, the teacher reveals on every screen; a short link opens its view."""
    teacher, ana, bo = new_app(class_server), new_app(class_server), new_app(class_server)
    teacher.open("/")
    _class_panel(teacher)
    teacher.click_button("Start a class", scope=teacher.sidebar)
    code = teacher.query["class"]
    expect(teacher.sidebar).to_have_attribute("data-collapsed", "true")  # presenter mode folds it away
    expect(teacher.main.get_by_text(re.compile(r"Join the class: " + code[:4]))).to_be_visible()
    expect(teacher.main.get_by_test_id("stImage").locator("img").first).to_be_visible()  # the QR code
    _join(ana, code, "<b>Ana</b>")
    ana.page.set_viewport_size(PHONE)
    bo.open("/")
    _class_panel(bo)
    typed = bo.sidebar.get_by_role("textbox", name="Class code")
    typed.fill(code.lower())
    with bo.rerun():  # the code is the box's value before Join reads it (CI once counted one student for 60 s)
        typed.press("Tab")
    bo.click_button("Join the class", scope=bo.sidebar)
    expect(bo.main.get_by_text("Following the teacher")).to_be_visible()
    expect(teacher.main.get_by_text(re.compile(r"2 students connected"))).to_be_visible()
    teacher.screenshot(f"class-join-screen-{class_server.env['KVLAB_STORE'][:5]}")
    expect(ana.main.get_by_text("as <b>Ana</b>")).to_be_visible()  # the nickname as typed, not as HTML

    _unfold_sidebar(teacher)
    with teacher.rerun():
        teacher.sidebar.get_by_role("link", name="Decode").click()
    teacher.click_button("Step")
    teacher.click_button("Step")
    for student in (ana, bo):
        expect(student.page).to_have_url(re.compile(r"/decode\?.*step=2"))
        # the teacher's lesson, its step drawn by the lesson's own poll: no Step of the student's own
        expect(student.main.locator(".st-key-lesson_cache figure.board")).to_contain_text("6 entries")
        expect(student.main.get_by_role("button", name="Step")).to_have_count(0)
    ana.screenshot("class-phone-following")

    ana.click_button("Explore on my own")  # she explores: the page's own controls come back
    expect(ana.main.get_by_text("Exploring on your own")).to_be_visible()
    ana.click_button("Step")  # her own step
    expect(ana.page).to_have_url(re.compile(r"step=3"))
    expect(bo.page).to_have_url(re.compile(r"step=2"))
    ana.page.get_by_role("button", name="Back to the teacher's view").click()
    expect(ana.main.get_by_text("Following the teacher")).to_be_visible()
    expect(ana.page).to_have_url(re.compile(r"step=2"))

    _unfold_sidebar(teacher)
    with teacher.rerun():
        teacher.sidebar.get_by_role("link", name="Guided tour").click()
    with teacher.rerun():
        teacher.page.locator(".st-key-kv_tour_step_forward button").first.click()
    for student, option in ((ana, "B. no"), (bo, "A. yes")):  # lettered, as the projector reads them
        expect(student.page).to_have_url(re.compile(r"/tour\?.*tour=2"))
        expect(student.main.get_by_role("button", name="Reveal")).to_have_count(0)  # only the teacher reveals
        with student.rerun():
            student.main.get_by_role("radiogroup").get_by_text(option, exact=True).click()
        expect(student.main.get_by_text("Your vote is in")).to_be_visible()
    expect(teacher.main.get_by_text("B. no: 1 vote")).to_be_visible()
    expect(teacher.main.get_by_text("A. yes: 1 vote")).to_be_visible()
    teacher.click_button("Reveal")
    expect(ana.main.get_by_text(re.compile(r"^Right: no"))).to_be_visible()
    expect(bo.main.get_by_text(re.compile(r"^Not quite: you chose yes"))).to_be_visible()

    _unfold_sidebar(teacher)
    teacher.click_button("Make a short link", scope=teacher.sidebar)
    short = teacher.sidebar.locator("code", has_text="/?v=").inner_text().strip()
    assert len(short) < 80, short
    visitor = new_app(class_server)
    visitor.open_url(short)
    expect(visitor.page).to_have_url(re.compile(r"/tour\?.*tour=2"))
    for screen in (teacher, ana, bo, visitor):
        screen.assert_no_exception()
        assert not screen.dialogs


@pytest.mark.parametrize("class_server", ["sqlite"], indirect=True)
def test_a_vote_cast_before_the_teacher_opens_its_question_goes_in_once_it_opens(new_app, class_server):
    """A student who steps ahead of the teacher and votes is told the vote waits (her screen's poll sends
    it again), and it goes in, on her screen and in the projector's count, once the teacher's screen
    opens the question, with no click of hers: never a selected option whose vote was dropped."""
    teacher, ana = new_app(class_server), new_app(class_server)
    teacher.open("/")
    _class_panel(teacher)
    teacher.click_button("Start a class", scope=teacher.sidebar)
    _join(ana, teacher.query["class"], "Ana")
    _unfold_sidebar(teacher)
    with teacher.rerun():
        teacher.sidebar.get_by_role("link", name="Guided tour").click()
    expect(ana.page).to_have_url(re.compile(r"/tour\?"))
    with ana.rerun():  # a step of her own, to the first question: she explores
        ana.page.locator(".st-key-kv_tour_step_forward button").first.click()
    expect(ana.main.get_by_text("Exploring on your own")).to_be_visible()
    with ana.rerun():
        ana.main.get_by_role("radiogroup").get_by_text("B. no", exact=True).click()
    expect(ana.main.get_by_text("Your vote, no, goes in as soon as the teacher's screen opens this question.")
           ).to_be_visible()
    ana.screenshot("class-vote-waiting")
    with teacher.rerun():
        teacher.page.locator(".st-key-kv_tour_step_forward button").first.click()
    expect(ana.main.get_by_text(re.compile(r"^Your vote is in: no"))).to_be_visible()
    expect(teacher.main.get_by_text("B. no: 1 vote")).to_be_visible()
    for screen in (teacher, ana):
        screen.assert_no_exception()
