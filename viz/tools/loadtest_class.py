"""The load test's class: one teacher stepping through Decode and the tour, students following and voting.

``python -m viz.tools.loadtest_class [--students 30] [--steps 12] [--processes 1 2] [--store sqlite redis]``
starts the app (one server, or a HAProxy cluster of N processes: ``viz.tools.loadtest.serving``) on
a class store (a fresh SQLite file, or Debian's redis-server on a loopback port), starts a class,
and opens a teacher and the students as protocol-level sessions (``viz.tools.protocol``; each also
runs its fragments' timed reruns, as a browser does). Then:

1. the teacher clicks Step on Decode every ``--gap`` seconds; each student's screen must show the
   new step (its address bar, written at the end of its run, holds ``step=k``): **follow latency**
   from the teacher's click to each following student's screen;
2. meanwhile each student explores once ("Explore on my own", two Steps of its own, then "Back to
   the teacher's view"):
   **own-click latency**, click to finished run; the servers' CPU over these Steps per student and
   Step is **the lesson's CPU** (a busy machine stretches latencies far more than it does CPU time);
3. a quiet stretch with everybody following: the servers' **CPU per following student**;
4. the teacher opens the tour's first question and all students vote at once; the store's counts
   must equal the votes sent (**lost** and **counted twice**), then the teacher reveals.

Loopback only; bounded in students and steps.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from urllib.parse import parse_qsl, urlencode

from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.WidgetStates_pb2 import WidgetState

from ..core.classroom import open_store
from ..core.engine.presets import load_preset
from ..core.engine.share import View, encode_view
from .loadtest import _warm, percentile, serving
from .protocol import ProtocolSession, ends_run, run_in_thread
from .redis_server import RedisServer
from .server import ROOT

MAX_STUDENTS = 60
MAX_STEPS = 40
RETURN = "kv_class_return"
EXPLORE = "kv_class_explore"


@dataclass
class ClassResult:
    students: int
    processes: int | None
    store: str
    follow_latencies_s: list[float] = field(repr=False)
    own_click_latencies_s: list[float] = field(repr=False)
    missed: int  # a teacher's step that a following student's screen never showed
    votes_sent: int
    votes_counted: int
    votes_lost: int
    votes_twice: int
    cpu_ms_per_student_s: float  # server CPU per following student per second, in the quiet stretch
    polls_per_student_s: float
    errors: list[str]
    lesson_cpu_ms_per_student_step: float = 0.0  # server CPU over the Steps (following, exploring, polling) per student per Step

    def summary(self) -> dict:
        data = asdict(self)
        data.pop("follow_latencies_s")
        data.pop("own_click_latencies_s")
        return {**data, "follow_p50_s": percentile(self.follow_latencies_s, 50),
                "follow_p95_s": percentile(self.follow_latencies_s, 95),
                "own_click_p50_s": percentile(self.own_click_latencies_s, 50),
                "own_click_p95_s": percentile(self.own_click_latencies_s, 95)}


class Screen:
    """A protocol-level visitor that keeps reading its websocket and runs its fragments' timed
    reruns (``auto_rerun``) as a browser does. It remembers every address the app wrote, with the time."""

    def __init__(self, base: str, timeout_s: float):
        self.session = ProtocolSession(base, timeout_s)
        self.log = self.session.log
        self.timeout_s = timeout_s
        self.timed: dict[str, float] = {}  # fragment id -> rerun interval
        # a choice's key -> (widget id, its options as shown, whether it is a segmented control)
        self.radios: dict[str, tuple[str, list[str], bool]] = {}
        self.addresses: list[tuple[float, dict[str, str]]] = []
        self.polls = 0
        # a rerun was asked for and has not finished: a timed rerun sent meanwhile would carry the page
        # this screen showed before a switch the server is making, and take it back there
        self.waiting = False
        self.fragments: dict[str, set[str]] = {}  # run id -> the fragments it ran (none: the whole app)
        self._tasks: list[asyncio.Task] = []

    async def open(self, query: str) -> None:
        await asyncio.to_thread(self.session.load_page)
        await self.session.connect()
        self._tasks = [asyncio.create_task(self._pump()), asyncio.create_task(self._tick())]
        self.log.query_string = query
        await self.send(page_hash="")

    async def _pump(self) -> None:
        socket = self.session._socket
        while True:
            message = self.log.feed(await socket.recv())
            what = message.WhichOneof("type") if message is not None else None
            if what == "script_finished" and ends_run(message):  # a run cut short for a rerun: still busy
                self.waiting = False
            elif what == "new_session":
                ran = set(message.metadata.run.fragment_ids)
                self.fragments[message.metadata.run.script_run_id] = ran
                if not ran:  # as Streamlit's client: a whole run ends every timed rerun; it declares its own again
                    self.timed.clear()
            elif what == "auto_rerun":
                self.timed[message.auto_rerun.fragment_id] = message.auto_rerun.interval
            elif what == "stop_auto_rerun":
                for fragment in message.stop_auto_rerun.fragment_ids:
                    self.timed.pop(fragment, None)
            elif what == "page_info_changed":
                self.addresses.append((time.monotonic(), dict(parse_qsl(message.page_info_changed.query_string))))
            elif what == "delta" and message.delta.new_element.WhichOneof("type") in ("radio", "button_group"):
                element = message.delta.new_element
                if element.WhichOneof("type") == "radio":
                    self.radios[element.radio.id.split("-", 2)[-1]] = (element.radio.id, list(element.radio.options),
                                                                      False)
                else:
                    group = element.button_group
                    self.radios[group.id.split("-", 2)[-1]] = (group.id, [o.content for o in group.options], True)

    async def _tick(self) -> None:
        """Every timed fragment reruns on its interval while no run is under way (as Streamlit's client).
        Between them the task sleeps until the next is due (at most 0.1 s; 20 ms while one waits for
        a run to end): thirty-one screens waking every 20 ms took CPU from the servers they measure."""
        due: dict[str, float] = {}
        while True:
            now = time.monotonic()
            for fragment, interval in list(self.timed.items()):
                if now >= due.setdefault(fragment, now + interval) and self._idle():
                    due[fragment] = now + interval
                    self.polls += 1
                    await self._send(fragment_id=fragment)
            wait = min(due.values(), default=now + 0.1) - time.monotonic()
            await asyncio.sleep(min(max(wait, 0.02), 0.1))

    def _idle(self) -> bool:
        return self.log._current is None and not self.waiting

    async def _send(self, widgets=(), page_hash: str | None = None, fragment_id: str = "") -> None:
        self.waiting = True
        message = BackMsg()
        message.rerun_script.query_string = self.log.query_string
        message.rerun_script.page_script_hash = self.log.page_hash if page_hash is None else page_hash
        message.rerun_script.fragment_id = fragment_id
        message.rerun_script.widget_states.widgets.extend(widgets)
        await self.session._socket.send(message.SerializeToString())

    async def send(self, widgets=(), page_hash: str | None = None, fragment_id: str = "") -> float:
        """Send a rerun once no run is under way (as a person clicks on a settled screen); return the
        seconds until the first run that is not a timed fragment's finished."""
        await self.until(self._idle, self.timeout_s)
        start, before = time.monotonic(), len(self.log.finished)
        await self._send(widgets, page_hash, fragment_id)
        deadline = start + self.timeout_s
        while True:
            for run in self.log.finished[before:]:
                polled = self.fragments.get(run.run_id, set())
                if run.started_s >= start and not (polled and polled <= set(self.timed)):
                    if not run.ok:
                        raise RuntimeError(f"a run failed: {run.exceptions[:1]}")
                    return run.finished_s - start
            if time.monotonic() > deadline:
                raise TimeoutError("no finished run")
            await asyncio.sleep(0.01)

    async def click(self, name: str) -> float:
        button = self.log.buttons[name]
        return await self.send([WidgetState(id=button.id, trigger_value=True)], fragment_id=button.fragment_id)

    async def choose(self, key: str, index: int) -> float:
        """Pick a radio's or a segmented control's option (each sends the option as it is shown)."""
        widget, options, segmented = self.radios[key]
        state = WidgetState(id=widget)
        if segmented:
            state.string_array_value.data.append(options[index])
        else:
            state.string_value = options[index]
        return await self.send([state])

    def shown(self, key: str) -> str | None:
        return self.addresses[-1][1].get(key) if self.addresses else None

    async def until(self, check, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while not check():
            if time.monotonic() > deadline:
                raise TimeoutError("the screen did not get there")
            await asyncio.sleep(0.05)

    async def close(self) -> None:
        for task in self._tasks:
            task.cancel()
        await self.session.close()


def _cpu_s(pids: list[int]) -> float:
    """User and system CPU seconds of the processes (from /proc; Linux)."""
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
        except (OSError, IndexError, ValueError):
            pass
    return total / os.sysconf("SC_CLK_TCK")


async def _student(screen: Screen, rng: random.Random, explore_at: float, result: dict) -> None:
    """Follow; once, at ``explore_at`` seconds, explore (the button), take two Steps of one's own and come back."""
    await asyncio.sleep(explore_at)
    if screen.log.page_hash != screen.log.pages.get("decode") or not screen.session.can_click(EXPLORE):
        return
    start = time.monotonic()
    try:
        result["own"].append(await screen.click(EXPLORE))  # a following screen shows no Step of its own
        await screen.until(lambda: screen.session.can_click("Step"), 10)
        for _ in range(2):
            result["own"].append(await screen.click("Step"))
            await asyncio.sleep(rng.uniform(0.5, 1.5))
        await screen.until(lambda: screen.session.can_click(RETURN), 10)
        result["own"].append(await screen.click(RETURN))
    finally:
        result["away"].append((id(screen), start, time.monotonic() + 1.0))


def _arrivals(screens: list[Screen], published: list[tuple[int, float]], away: list[tuple[int, float, float]],
              upto: float) -> tuple[list[float], int]:
    """For each teacher step and each student following at the time: when its screen showed it."""
    latencies, missed = [], 0
    for screen in screens:
        gone = [(a, b) for who, a, b in away if who == id(screen)]
        for step, at in published:
            if any(a - 1.0 <= at <= b for a, b in gone):
                continue  # exploring (or just back): not following this step
            shown = next((t for t, query in screen.addresses if t >= at and query.get("step") == str(step)), None)
            if shown is None or shown > upto:
                missed += 1
            else:
                latencies.append(shown - at)
    return latencies, missed


async def _lesson(base: str, pids: list[int], students: int, steps: int, gap_s: float, timeout_s: float,
                  quiet_s: float) -> dict:
    store = open_store()
    seed = encode_view(View(load_preset("seed")))
    started = store.start("decode", seed)
    teacher = Screen(base, timeout_s)
    await teacher.open(urlencode({"page": "decode", **seed, "class": started.code, "teach": started.secret}))
    screens = [Screen(base, timeout_s) for _ in range(students)]
    ids = [store.join(started.code, f"s{i}") for i in range(students)]
    await asyncio.gather(*(s.open(urlencode({"class": started.code, "as": i})) for s, i in zip(screens, ids)))
    arrived = await asyncio.gather(*(s.until(lambda s=s: s.shown("s") is not None
                                             and s.log.page_hash == s.log.pages.get("decode"), timeout_s)
                                     for s in screens), return_exceptions=True)
    result: dict = {"own": [], "away": [], "errors": [f"a student's screen did not follow the teacher to Decode"
                                                      for got in arrived if isinstance(got, BaseException)]}
    rng = random.Random(0)
    explorers = asyncio.gather(*(_student(s, random.Random(i), rng.uniform(1, steps * gap_s - 6), result)
                                 for i, s in enumerate(screens)), return_exceptions=True)
    published, lesson_cpu = [], _cpu_s(pids)
    for step in range(1, steps + 1):
        published.append((step, time.monotonic()))
        await teacher.click("Step")
        await asyncio.sleep(gap_s)
    for outcome in await explorers:
        if isinstance(outcome, BaseException):
            result["errors"].append(f"exploring: {type(outcome).__name__}: {outcome}")
    await asyncio.sleep(3.0)
    lesson_cpu = (_cpu_s(pids) - lesson_cpu) / steps / students * 1000
    follow, missed = _arrivals(screens, published, result["away"], time.monotonic())
    polls, cpu = sum(s.polls for s in screens), _cpu_s(pids)
    await asyncio.sleep(quiet_s)  # everybody follows, nobody clicks: what following alone costs
    cpu_rate = (_cpu_s(pids) - cpu) / quiet_s / students * 1000
    poll_rate = (sum(s.polls for s in screens) - polls) / quiet_s / students
    votes = await _vote(store, started, teacher, screens, ids, timeout_s, result)
    for screen in [teacher, *screens]:
        await screen.close()
    return {"follow": follow, "missed": missed, "own": result["own"], "cpu": cpu_rate, "polls": poll_rate,
            "errors": result["errors"], "lesson_cpu": lesson_cpu, **votes}


async def _vote(store, started, teacher: Screen, screens: list[Screen], ids: list[str], timeout_s: float,
                result: dict) -> dict:
    """The tour's first question: every student votes at the same moment; the store must count each once."""
    await teacher.send(page_hash=teacher.log.pages["tour"])
    await teacher.click("kv_tour_step_forward")
    def on_question(s: Screen) -> bool:  # the tour's page with its step 2, whose radio was drawn
        return s.log.page_hash == s.log.pages.get("tour") and s.shown("tour") == "2" and "tour_answer_0" in s.radios

    arrived = await asyncio.gather(*(s.until(lambda s=s: on_question(s), timeout_s) for s in screens),
                                   return_exceptions=True)
    voters = [(s, i) for s, i, got in zip(screens, ids, arrived) if not isinstance(got, BaseException)]
    result["errors"] += [f"a student's screen did not follow to the question (it shows page {s.log.page_hash[:6]}, "
                         f"tour {s.shown('tour')}, step {s.shown('step')})" for s, got in zip(screens, arrived)
                         if isinstance(got, BaseException)]
    chosen = [n % 2 for n in range(len(voters))]
    outcomes = await asyncio.gather(*(s.choose("tour_answer_0", c) for (s, _), c in zip(voters, chosen)),
                                    return_exceptions=True)
    result["errors"] += [f"voting: {type(o).__name__}: {o}" for o in outcomes if isinstance(o, BaseException)]
    deadline = time.monotonic() + 10.0  # a vote whose run finished after its click's answer is late, not lost
    while True:
        counted = store.tally(started.code, 0).counts
        mine = [store.my_vote(started.code, i, 0) for _, i in voters]
        if mine == chosen or time.monotonic() > deadline:
            break
        await asyncio.sleep(0.2)
    try:  # the teacher's screen drew Reveal with the question (a screen without it is an error, not a crash)
        await teacher.until(lambda: "tour_reveal_button_0" in teacher.log.buttons, 5.0)
        await teacher.click("tour_reveal_button_0")
    except (TimeoutError, RuntimeError) as err:
        result["errors"].append(f"revealing: {type(err).__name__}: {err}")
    lost = sum(1 for got, sent in zip(mine, chosen) if got != sent)
    return {"sent": len(chosen), "counted": sum(counted), "lost": lost,
            "twice": max(0, sum(counted) - (len(chosen) - lost))}


def run_class(students: int = 30, processes: int | None = None, store: str = "sqlite", steps: int = 12,
              gap_s: float = 2.5, timeout_s: float = 60.0, quiet_s: float = 10.0) -> ClassResult:
    """Start the store and the app, run one class, measure."""
    if not 1 <= students <= MAX_STUDENTS or not 1 <= steps <= MAX_STEPS:
        raise ValueError(f"students must be 1..{MAX_STUDENTS} and steps 1..{MAX_STEPS}")
    redis = RedisServer().start() if store == "redis" else None
    saved = os.environ.get("KVLAB_STORE")
    folder = ROOT / "artifacts" / "loadtest-class"
    folder.mkdir(parents=True, exist_ok=True)
    os.environ["KVLAB_STORE"] = redis.url if redis else f"sqlite:///{folder / f'classes-{time.time_ns()}.sqlite3'}"
    try:
        with serving(None, processes) as (base, pids, backends):
            for backend in backends:  # imports, caches and first page builds of every process
                run_in_thread(_warm(backend, timeout_s))
            got = run_in_thread(_lesson(base, pids, students, steps, gap_s, timeout_s, quiet_s))
    finally:
        os.environ.pop("KVLAB_STORE") if saved is None else os.environ.update(KVLAB_STORE=saved)
        if redis:
            redis.stop()
    return ClassResult(students, processes, store, got["follow"], got["own"], got["missed"], got["sent"],
                       got["counted"], got["lost"], got["twice"], got["cpu"], got["polls"], got["errors"],
                       got["lesson_cpu"])


def report(result: ClassResult) -> str:
    s = result.summary()
    where = f"{result.processes} processes behind HAProxy" if result.processes else "one server"
    return "\n".join([
        f"class of {result.students} on {where}, {result.store} store: {len(result.errors)} errors",
        f"  teacher's Step to each following student's screen: p50 {s['follow_p50_s'] * 1000:.0f} ms, "
        f"p95 {s['follow_p95_s'] * 1000:.0f} ms over {len(result.follow_latencies_s)}, {result.missed} missed",
        f"  a student's own clicks while in the class: p50 {s['own_click_p50_s'] * 1000:.0f} ms, "
        f"p95 {s['own_click_p95_s'] * 1000:.0f} ms over {len(result.own_click_latencies_s)}",
        f"  votes at once: {result.votes_sent} sent, {result.votes_counted} counted, {result.votes_lost} lost, "
        f"{result.votes_twice} counted twice",
        f"  following costs the servers {result.cpu_ms_per_student_s:.1f} ms of CPU per student per second "
        f"({result.polls_per_student_s:.2f} polls per student per second)",
        f"  the lesson cost the servers {result.lesson_cpu_ms_per_student_step:.1f} ms of CPU per student per Step "
        "(following, exploring and polling; steadier than latency on a busy machine)",
        *(f"  {error}" for error in result.errors[:10])])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m viz.tools.loadtest_class", description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=30)
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--gap", type=float, default=2.5, help="seconds between the teacher's Steps")
    parser.add_argument("--processes", type=int, nargs="+", help="HAProxy clusters of N processes (default: one server)")
    parser.add_argument("--store", choices=("sqlite", "redis"), nargs="+", default=["sqlite"])
    parser.add_argument("--out", help="write the summaries and every latency as JSON")
    args = parser.parse_args(argv)
    results = []
    try:
        for store in args.store:
            for processes in args.processes or [None]:
                result = run_class(args.students, processes, store, args.steps, args.gap)
                print(report(result), flush=True)
                results.append(result)
    except (ValueError, RuntimeError) as err:
        print(f"error: {str(err).splitlines()[0]}", file=sys.stderr)
        return 2
    if args.out:
        Path(args.out).write_text(json.dumps([{**r.summary(), "follow_latencies_s": r.follow_latencies_s,
                                               "own_click_latencies_s": r.own_click_latencies_s} for r in results],
                                             indent=1))
    bad = any(r.errors or r.votes_lost or r.votes_twice or r.missed for r in results)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
