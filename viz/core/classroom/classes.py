"""A class: the teacher's view that students follow, who joined, their votes, and short links.

:class:`ClassStore` is the one place the rules live (codes, limits, lifetimes, who may do what),
written once over a :class:`~viz.core.classroom.backends.Backend`, so SQLite and Redis behave alike.
It does not draw anything and knows nothing of Streamlit: the UI layer calls it and shows
:class:`ClassError` messages as they are.

Keys (docs/class-mode.md lists them with their lifetimes): ``class:<code>`` the class (JSON:
version, page, view, flags, questions, the teacher secret's digest), ``students:<code>``,
``seen:<code>``, ``votes:<code>:<question>``, ``ballots:<code>:<student>`` (a counter),
``link:<code>`` and the registries ``classes`` and ``links``.
"""

from __future__ import annotations

import csv
import io
import json
import time
from dataclasses import dataclass, field, replace

from . import codes
from .backends import Backend, StoreDown


class ClassError(Exception):
    """A refusal with a message meant for the visitor (a bad code, a full class, a limit)."""


class StoreUnavailable(ClassError):
    """The store is down: say so, and leave everything that does not need it alone."""


class QuestionNotOpen(ClassError):
    """A vote on a question the teacher's screen has not put to the class yet. A student's screen can
    get there first (the teacher's view is published at the start of the teacher's run, the question
    asked as the run draws it), so the vote waits and is sent again, rather than lost."""


@dataclass(frozen=True)
class ClassLimits:
    classes: int = 50  # live classes in one store (a server or a cluster)
    students: int = 200  # joins per class
    nickname_chars: int = 24
    ballots: int = 100  # votes (changes included) one student may cast in one class
    questions: int = 32  # question numbers 0..questions-1
    options: int = 8
    option_chars: int = 200
    idle_s: float = 2 * 3600  # a class no teacher touched for this long ends and is deleted
    connected_s: float = 30.0  # a student seen this recently counts as connected
    link_chars: int = 16_000  # a short link's stored query, at most
    links: int = 10_000  # live short links in one store
    link_ttl_s: float = 30 * 86400


@dataclass(frozen=True)
class Question:
    prompt: str
    options: tuple[str, ...]


@dataclass(frozen=True)
class ClassState:
    """What every screen of a class reads: the teacher's view and the class's flags."""

    code: str
    version: int  # +1 on every change the teacher makes; followers redraw only when it moves
    page: str  # the url path of the teacher's page ("" for Home)
    view: tuple[tuple[str, str], ...]  # the view's query parameters (viz.core.engine.share.encode_view)
    locked: bool = False
    ended: bool = False
    revealed: frozenset[int] = frozenset()
    questions: tuple[tuple[int, Question], ...] = ()

    @property
    def query(self) -> dict[str, str]:
        return dict(self.view)

    def question(self, index: int) -> Question | None:
        return dict(self.questions).get(index)


@dataclass(frozen=True)
class Started:
    code: str
    secret: str  # the teacher's; shown only to the teacher, stored only as a digest


@dataclass(frozen=True)
class Tally:
    question: int
    counts: tuple[int, ...]  # votes per option, in the options' order
    revealed: bool

    @property
    def total(self) -> int:
        return sum(self.counts)


def _now() -> float:
    return time.time()


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass
class ClassStore:
    backend: Backend
    limits: ClassLimits = field(default_factory=ClassLimits)

    def _do(self, work):
        try:
            return work()
        except StoreDown as err:
            raise StoreUnavailable(f"The class service is not answering right now, so class mode is off "
                                   f"({err}). Everything else in kvlab works as usual.") from None

    # -- the class document -------------------------------------------------------------------
    def _load(self, code: str) -> tuple[ClassState, dict]:
        raw = self._do(lambda: self.backend.get(f"class:{code}"))
        if raw is None:
            raise ClassError(f"There is no class {codes.shown(code)}: it ended long ago, expired after "
                             f"{self.limits.idle_s / 3600:g} idle hours, or the code is mistyped.")
        doc = json.loads(raw)
        questions = tuple(sorted((int(i), Question(q["prompt"], tuple(q["options"])))
                                 for i, q in doc["questions"].items()))
        return ClassState(code, doc["version"], doc["page"], tuple(sorted(doc["view"].items())), doc["locked"],
                          doc["ended"], frozenset(doc["revealed"]), questions), doc

    def _save(self, state: ClassState, doc: dict) -> ClassState:
        doc.update(version=state.version, page=state.page, view=state.query, locked=state.locked,
                   ended=state.ended, revealed=sorted(state.revealed),
                   questions={str(i): {"prompt": q.prompt, "options": list(q.options)} for i, q in state.questions})
        code, ttl = state.code, self.limits.idle_s
        self._do(lambda: self.backend.put(f"class:{code}", json.dumps(doc), ttl))
        keys = [f"students:{code}", f"seen:{code}"] + [f"votes:{code}:{i}" for i, _ in state.questions]
        self._do(lambda: self.backend.renew(keys, ttl))  # a teacher's action keeps the whole class alive
        self._do(lambda: self.backend.register("classes", code, _now() + ttl, 1 << 30))
        return state

    def _teacher(self, code: str, secret: str) -> tuple[ClassState, dict]:
        state, doc = self._load(code)
        if not codes.matches(secret, doc["teacher"]):
            raise ClassError("Only the teacher can do that: this needs the teacher's secret link.")
        return state, doc

    def _change(self, code: str, secret: str, **changes) -> ClassState:
        state, doc = self._teacher(code, secret)
        new = replace(state, **changes)
        if new == state:
            return state
        return self._save(replace(new, version=state.version + 1), doc)

    # -- the teacher ----------------------------------------------------------------------------
    def start(self, page: str, view: dict[str, str]) -> Started:
        """A new class showing ``view`` on ``page``; refused past the limit of live classes."""
        secret = codes.new_secret()
        for _ in range(5):  # a collision among 2^40 codes is rare; try a few fresh ones
            code = codes.new_code(codes.JOIN_CHARS)
            until = _now() + self.limits.idle_s
            if not self._do(lambda: self.backend.register("classes", code, until, self.limits.classes)):
                raise ClassError(f"This server already runs {self.limits.classes} classes, its limit: "
                                 "try again when one has ended.")
            doc = {"version": 1, "page": page, "view": dict(view), "locked": False, "ended": False,
                   "revealed": [], "questions": {}, "teacher": codes.digest(secret), "created": _now()}
            if self._do(lambda: self.backend.put(f"class:{code}", json.dumps(doc), self.limits.idle_s, only_new=True)):
                return Started(code, secret)
        raise ClassError("No free class code was found; try again.")

    def is_teacher(self, code: str, secret: str) -> bool:
        return codes.matches(secret, self._load(code)[1]["teacher"])

    def publish(self, code: str, secret: str, page: str, view: dict[str, str]) -> ClassState:
        """The teacher's screen now shows ``view`` on ``page`` (a new version only if it changed)."""
        return self._change(code, secret, page=page, view=tuple(sorted(view.items())))

    def set_locked(self, code: str, secret: str, locked: bool) -> ClassState:
        return self._change(code, secret, locked=bool(locked))

    def set_ended(self, code: str, secret: str, ended: bool) -> ClassState:
        """End the class (students stop following; its results stay until it expires), or reopen it."""
        return self._change(code, secret, ended=bool(ended))

    def ask(self, code: str, secret: str, index: int, prompt: str, options: list[str]) -> ClassState:
        """Open question ``index`` for votes (its prompt and options go into the results)."""
        if not 0 <= index < self.limits.questions or not 2 <= len(options) <= self.limits.options:
            raise ClassError("That question cannot be put to the class (too many questions or options).")
        state, _ = self._teacher(code, secret)
        question = Question(_clip(prompt, self.limits.option_chars),
                            tuple(_clip(o, self.limits.option_chars) for o in options))
        if state.question(index) == question:
            return state
        asked = tuple(sorted({**dict(state.questions), index: question}.items()))
        return self._change(code, secret, questions=asked)

    def reveal(self, code: str, secret: str, index: int) -> ClassState:
        state, _ = self._teacher(code, secret)
        return self._change(code, secret, revealed=state.revealed | {index})

    def forget_reveals(self, code: str, secret: str) -> ClassState:
        """Start the questions again: nothing revealed (votes are kept and may change again)."""
        return self._change(code, secret, revealed=frozenset())

    # -- everyone in the class ------------------------------------------------------------------
    def state(self, code: str) -> ClassState:
        return self._load(code)[0]

    def join(self, code: str, nickname: str = "") -> str:
        """A new student id in class ``code``; refused when it has ended, is locked or full."""
        state = self.state(code)
        if state.ended:
            raise ClassError(f"Class {codes.shown(code)} has ended.")
        if state.locked:
            raise ClassError(f"Class {codes.shown(code)} is locked: the teacher takes no new students now.")
        student = codes.new_student()
        name = json.dumps({"nickname": _clip(nickname.strip(), self.limits.nickname_chars), "joined": _now()})
        if not self._do(lambda: self.backend.hash_put(f"students:{code}", student, name, self.limits.idle_s,
                                                      self.limits.students)):
            raise ClassError(f"Class {codes.shown(code)} is full ({self.limits.students} students).")
        self.seen(code, student)
        return student

    def is_student(self, code: str, student: str) -> bool:
        return codes.valid_student(student) and student in self._do(lambda: self.backend.hash_all(f"students:{code}"))

    def seen(self, code: str, student: str) -> None:
        """The student's screen is open (the UI calls it every few seconds while following)."""
        self._do(lambda: self.backend.hash_put(f"seen:{code}", student, repr(_now()), self.limits.idle_s,
                                               self.limits.students))

    def connected(self, code: str) -> int:
        since = _now() - self.limits.connected_s
        seen = self._do(lambda: self.backend.hash_all(f"seen:{code}"))
        return sum(1 for at in seen.values() if float(at) >= since)

    def vote(self, code: str, student: str, index: int, option: int) -> None:
        """A student's answer to question ``index`` (replacing their earlier one until Reveal)."""
        state = self.state(code)
        question = state.question(index)
        if state.ended:
            raise ClassError("The class has ended: votes are closed.")
        if index in state.revealed:
            raise ClassError("The answer has been revealed: votes on this question are closed.")
        if question is not None and not 0 <= option < len(question.options):
            raise ClassError("That is not one of the question's options.")
        if not self.is_student(code, student):
            raise ClassError("Join the class before you vote.")
        if question is None:
            raise QuestionNotOpen("That question is not open yet: it opens when the teacher's screen shows it.")
        if self._do(lambda: self.backend.incr(f"ballots:{code}:{student}", self.limits.idle_s)) > self.limits.ballots:
            raise ClassError(f"You have voted {self.limits.ballots} times in this class, its limit.")
        self._do(lambda: self.backend.hash_put(f"votes:{code}:{index}", student, str(option), self.limits.idle_s,
                                               self.limits.students))

    def my_vote(self, code: str, student: str, index: int) -> int | None:
        value = self._do(lambda: self.backend.hash_all(f"votes:{code}:{index}")).get(student)
        return None if value is None else int(value)

    def tally(self, code: str, index: int) -> Tally:
        state = self.state(code)
        question = state.question(index)
        counts = [0] * (len(question.options) if question else 0)
        for value in self._do(lambda: self.backend.hash_all(f"votes:{code}:{index}")).values():
            if 0 <= int(value) < len(counts):
                counts[int(value)] += 1
        return Tally(index, tuple(counts), index in state.revealed)

    def results_csv(self, code: str, secret: str) -> str:
        """The class's results, one row per question and option: counts, and the nicknames of those
        who gave one (no other names exist)."""
        state, _ = self._teacher(code, secret)
        students = self._do(lambda: self.backend.hash_all(f"students:{code}"))
        nicknames = {sid: json.loads(doc)["nickname"] for sid, doc in students.items()}
        out = io.StringIO()
        writer = csv.writer(out)
        writer.writerow(["question", "prompt", "option", "votes", "revealed", "nicknames"])
        for index, question in state.questions:
            votes = self._do(lambda: self.backend.hash_all(f"votes:{code}:{index}"))
            for number, option in enumerate(question.options):
                voters = [nicknames.get(s, "") for s, v in votes.items() if v == str(number)]
                writer.writerow([index + 1, question.prompt, option, len(voters),
                                 "yes" if index in state.revealed else "no",
                                 "; ".join(sorted(n for n in voters if n))])
        return out.getvalue()

    # -- short links ----------------------------------------------------------------------------
    def shorten(self, query: dict[str, str]) -> str:
        """A short code for a view's query (``/?v=<code>``); refused when too long or too many."""
        text = json.dumps(query, separators=(",", ":"), sort_keys=True)
        if len(text) > self.limits.link_chars:
            raise ClassError(f"This view is too large for a short link ({len(text):,} characters, at most "
                             f"{self.limits.link_chars:,}): use the long link.")
        for _ in range(5):
            code = codes.new_code(codes.LINK_CHARS)
            until = _now() + self.limits.link_ttl_s
            if not self._do(lambda: self.backend.register("links", code, until, self.limits.links)):
                raise ClassError(f"This server keeps {self.limits.links:,} short links, its limit: use the long link.")
            if self._do(lambda: self.backend.put(f"link:{code}", text, self.limits.link_ttl_s, only_new=True)):
                return code
        raise ClassError("No free short-link code was found; try again.")

    def expand(self, code: str) -> dict[str, str]:
        raw = self._do(lambda: self.backend.get(f"link:{code}"))
        if raw is None:
            raise ClassError(f"This short link is unknown or has expired (short links last "
                             f"{self.limits.link_ttl_s / 86400:g} days): ask for the long link.")
        return json.loads(raw)
