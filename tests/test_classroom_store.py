"""Class mode's store (viz.core.classroom) against real servers: SQLite in a temporary folder and
Debian's redis-server on a free loopback port. No mocks: every test runs on both."""

from __future__ import annotations

import threading
import time
from dataclasses import replace

import pytest

from viz.core.classroom import ClassError, ClassLimits, QuestionNotOpen, StoreUnavailable, normalise, open_store, shown
from viz.core.classroom import codes
from viz.tools.redis_server import RedisServer
from viz.tools.server import free_port

VIEW = {"s": "1.eJyrVkrOz0nNS1WyUlAqS8wpTlWqBQA9xAZY", "step": "2"}


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory):
    with RedisServer(tmp_path_factory.mktemp("redis") / "redis.log") as server:
        yield server.url


@pytest.fixture(params=["sqlite", "redis"])
def address(request, tmp_path, redis_url):
    if request.param == "redis":
        import redis
        redis.Redis.from_url(redis_url).flushdb()
        return redis_url
    return f"sqlite:///{tmp_path / 'classes.sqlite3'}"


@pytest.fixture
def store(address):
    return open_store(address)


def small(address, **limits):
    return open_store(address, replace(ClassLimits(), **limits))


def test_a_class_starts_with_the_teachers_view(store):
    """A new class holds the page and view it was started with, at version 1, open and unlocked."""
    started = store.start("decode", VIEW)
    state = store.state(started.code)
    assert (state.page, state.query, state.version) == ("decode", VIEW, 1)
    assert not state.locked and not state.ended
    assert len(started.code) == codes.JOIN_CHARS and started.secret not in repr(state)


def test_publishing_moves_the_version_only_on_a_change(store):
    """Followers redraw when the version moves, so the same view published again keeps it."""
    started = store.start("decode", VIEW)
    assert store.publish(started.code, started.secret, "decode", VIEW).version == 1
    moved = store.publish(started.code, started.secret, "prefill", {**VIEW, "pos": "3"})
    assert (moved.version, moved.page, moved.query["pos"]) == (2, "prefill", "3")
    assert store.state(started.code) == moved


def test_only_the_teachers_secret_controls_the_class(store):
    """A wrong secret (a student's id, a guess) cannot change the view, lock, end or reveal."""
    started = store.start("decode", VIEW)
    student = store.join(started.code)
    guessed = started.secret[:-1] + ("y" if started.secret.endswith("x") else "x")  # one letter off, never the secret itself
    for attempt in (lambda s: store.publish(started.code, s, "tour", {}), lambda s: store.set_locked(started.code, s, True),
                    lambda s: store.set_ended(started.code, s, True), lambda s: store.reveal(started.code, s, 0),
                    lambda s: store.results_csv(started.code, s)):
        for wrong in (student, "", guessed):
            with pytest.raises(ClassError, match="teacher's secret"):
                attempt(wrong)
    assert store.state(started.code).version == 1
    assert store.is_teacher(started.code, started.secret) and not store.is_teacher(started.code, student)


def test_lock_end_and_reopen(store):
    """A locked class takes no new students, an ended one neither; reopened, it takes them again."""
    started = store.start("", {})
    store.set_locked(started.code, started.secret, True)
    with pytest.raises(ClassError, match="locked"):
        store.join(started.code)
    store.set_locked(started.code, started.secret, False)
    store.set_ended(started.code, started.secret, True)
    with pytest.raises(ClassError, match="ended"):
        store.join(started.code)
    store.set_ended(started.code, started.secret, False)
    assert store.is_student(started.code, store.join(started.code, "Ana"))


def test_a_full_class_refuses_the_next_student(address):
    """Joins past the limit of students are refused with a message, not counted."""
    store = small(address, students=3)
    started = store.start("", {})
    joined = [store.join(started.code) for _ in range(3)]
    with pytest.raises(ClassError, match="full"):
        store.join(started.code)
    assert store.connected(started.code) == len(set(joined)) == 3


def test_classes_per_store_are_limited(address):
    """Past the limit of live classes, starting one more is refused."""
    store = small(address, classes=2)
    store.start("", {}), store.start("", {})
    with pytest.raises(ClassError, match="limit"):
        store.start("", {})


def test_unknown_codes_are_refused_in_words(store):
    """A code no class has gives a message naming it, never a traceback."""
    with pytest.raises(ClassError, match="There is no class ABCD-EFGH"):
        store.join("ABCDEFGH")
    assert normalise(" abcd-efgh ", codes.JOIN_CHARS) == "ABCDEFGH"
    assert normalise("o1l-IIII00", codes.JOIN_CHARS) is None  # 9 characters: too long
    assert normalise("oiLu-0000", codes.JOIN_CHARS) is None  # U is not in the alphabet
    assert normalise("oiL2-0000", codes.JOIN_CHARS) == "0112" + "0000"
    assert shown("ABCDEFGH") == "ABCD-EFGH"


def test_one_vote_per_student_changeable_until_reveal(store):
    """A student's second vote replaces the first; after Reveal votes are refused and counts stay."""
    started = store.start("tour", {})
    store.ask(started.code, started.secret, 2, "Which?", ["a", "b", "c"])
    ana, bo = store.join(started.code, "Ana"), store.join(started.code)
    store.vote(started.code, ana, 2, 0)
    store.vote(started.code, ana, 2, 2)
    store.vote(started.code, bo, 2, 2)
    assert store.tally(started.code, 2).counts == (0, 0, 2)
    assert store.my_vote(started.code, ana, 2) == 2
    store.reveal(started.code, started.secret, 2)
    with pytest.raises(ClassError, match="revealed"):
        store.vote(started.code, bo, 2, 0)
    tally = store.tally(started.code, 2)
    assert tally.counts == (0, 0, 2) and tally.revealed and store.state(started.code).revealed == {2}


def test_bad_votes_are_refused(store):
    """An option out of range, an unasked question or someone who never joined cannot vote."""
    started = store.start("tour", {})
    store.ask(started.code, started.secret, 0, "Which?", ["a", "b"])
    ana = store.join(started.code)
    for question, option, who in ((0, 2, ana), (0, -1, ana), (1, 0, ana), (0, 0, "x" * 12), (0, 0, started.secret)):
        with pytest.raises(ClassError):
            store.vote(started.code, who, question, option)
    assert store.tally(started.code, 0).counts == (0, 0)


def test_a_vote_on_a_question_not_yet_open_waits_in_words_and_counts_once_it_is(store):
    """A joined student's vote on a question the teacher's screen has not asked yet is refused as not
    open (a QuestionNotOpen, which the app keeps and sends again), is not counted, and goes in once
    the question is asked; a visitor who never joined is refused as such, never told to wait."""
    started = store.start("tour", {})
    ana = store.join(started.code)
    with pytest.raises(QuestionNotOpen, match="not open yet"):
        store.vote(started.code, ana, 1, 0)
    with pytest.raises(ClassError, match="Join the class") as refused:
        store.vote(started.code, "x" * 12, 1, 0)
    assert not isinstance(refused.value, QuestionNotOpen)
    store.ask(started.code, started.secret, 1, "Which?", ["a", "b"])
    assert store.tally(started.code, 1).counts == (0, 0)
    store.vote(started.code, ana, 1, 1)
    assert store.tally(started.code, 1).counts == (0, 1)


def test_a_students_ballots_are_limited(address):
    """A flood of vote changes from one student stops at the limit, with a message."""
    store = small(address, ballots=5)
    started = store.start("tour", {})
    store.ask(started.code, started.secret, 0, "Which?", ["a", "b"])
    ana = store.join(started.code)
    for i in range(5):
        store.vote(started.code, ana, 0, i % 2)
    with pytest.raises(ClassError, match="limit"):
        store.vote(started.code, ana, 0, 1)
    assert store.tally(started.code, 0).counts == (1, 0)


def test_thirty_simultaneous_votes_none_lost_none_twice(store):
    """Thirty students voting at the same moment, each from its own thread: every vote counts once."""
    started = store.start("tour", {})
    store.ask(started.code, started.secret, 0, "Which?", ["a", "b", "c"])
    students = [store.join(started.code) for _ in range(30)]
    gate = threading.Barrier(30)

    def vote(i: int, student: str) -> None:
        gate.wait()
        store.vote(started.code, student, 0, i % 3)

    threads = [threading.Thread(target=vote, args=(i, s)) for i, s in enumerate(students)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert store.tally(started.code, 0).counts == (10, 10, 10)


def test_results_csv_has_counts_and_only_given_nicknames(store):
    """The CSV holds a row per option with its count; names appear only where a nickname was given."""
    started = store.start("tour", {})
    store.ask(started.code, started.secret, 0, "Which, really?", ["a", "b"])
    ana, anonymous = store.join(started.code, "  Ana  "), store.join(started.code)
    store.vote(started.code, ana, 0, 1)
    store.vote(started.code, anonymous, 0, 1)
    lines = store.results_csv(started.code, started.secret).splitlines()
    assert lines == ["question,prompt,option,votes,revealed,nicknames",
                     '1,"Which, really?",a,0,no,', '1,"Which, really?",b,2,no,Ana']


def test_an_idle_class_expires(address):
    """A class nobody touched for the idle time is gone, with a message saying it may have expired."""
    store = small(address, idle_s=0.4)
    started = store.start("", {})
    time.sleep(0.8)
    with pytest.raises(ClassError, match="expired"):
        store.state(started.code)


def test_short_links_round_trip_and_are_limited(address):
    """A short link gives back the query it was made from; too long, too many or unknown: refused."""
    store = small(address, links=2, link_chars=200)
    query = {"page": "decode", **VIEW}
    code = store.shorten(query)
    assert len(code) == codes.LINK_CHARS and store.expand(code) == query
    with pytest.raises(ClassError, match="too large"):
        store.shorten({"s": "x" * 300})
    store.shorten({"page": "tour"})
    with pytest.raises(ClassError, match="limit"):
        store.shorten({"page": "cost"})
    with pytest.raises(ClassError, match="unknown or has expired"):
        store.expand("0000000000")


def test_a_store_that_is_down_says_so():
    """Nothing listening at the Redis address, or an SQLite file that cannot be made: a message."""
    down = open_store(f"redis://127.0.0.1:{free_port()}/0")
    with pytest.raises(StoreUnavailable, match="not answering"):
        down.start("", {})
    with pytest.raises(StoreUnavailable, match="cannot be opened"):
        open_store("sqlite:////proc/kvlab/classes.sqlite3")
    with pytest.raises(StoreUnavailable):
        open_store("memcached://127.0.0.1")
