"""The whole server's budget: what all reruns in flight compute together, and what all sessions keep.

viz.core.engine.budget bounds one click. Many visitors on heavy links could still take the memory and
the cores from everyone else together, so this module bounds them as one process:

* **Admission** (:func:`admitted`): each part of a heavy view's rerun that viz.ui.guard frames (the
  sidebar, the page, a fragment; ``budget.is_light`` says the view is heavy) takes one of
  :data:`HEAVY_SLOTS` slots for as long as it runs; when every slot is taken it waits its turn,
  first come first served, with a message saying so, for at most :data:`WAIT_S`; after that this click
  is refused with a message and the visitor's view stays as it was. A light view (the seed, any
  class-sized scenario) never waits. A slot is held per thread, so a fragment inside a page's run
  does not wait for its own page. While a heavy rerun holds a slot, the interpreter hands its lock
  to a waiting thread after :data:`HEAVY_SWITCH_S` instead of Python's 5 ms, so a light rerun beside
  a heavy one waits less for each stretch of Python it runs (the figures, the messages).
* **Kept state** (:func:`keep`): per-visitor objects that can be recomputed (decode runs) are
  registered with their size. When all sessions together keep more than :data:`KEPT_BYTES`, or one
  has been idle for :data:`IDLE_S`, the least recently used are dropped (``drop()``); their visitor's
  next click recomputes them within the work budget.

* **Freed memory goes back** (:func:`return_large_frees`, once, when this module is imported): glibc
  keeps freed blocks of up to 32 MB in each thread's heap for reuse once it has seen one freed (its
  dynamic mmap threshold), so every script thread would hold the largest tensors it ever freed. A fixed
  128 KB threshold maps each large tensor on its own and unmaps it when freed, and at most
  :data:`ARENAS` heaps (glibc's default: eight per core) keep the smaller blocks that many script
  threads free. Ten visitors on the worst Decode link grew the server by 310–433 MB without the
  threshold and 130–161 MB with it; thirty on every page's worst links 1,060 MB with sixteen heaps and
  743 MB with two (docs/hosting.md).

Per-visitor objects stay in ``st.session_state``; this module holds only weak references to them.
What it does not do: estimate work (viz.core.engine.budget) or decide what a page shows.
"""

from __future__ import annotations

import collections
import contextlib
import ctypes
import ctypes.util
import os
import sys
import threading
import time
import weakref
from typing import Iterator, Protocol

import streamlit as st

from ..core.engine.budget import MIB, is_light
from ..core.engine.scenario import Scenario

HEAVY_SLOTS = max(1, (os.cpu_count() or 2) // 2)  # heavy reruns at once: half the cores, the rest for light ones
WAIT_S = 30.0  # the longest a heavy rerun waits for a slot
KEPT_BYTES = 192 * MIB  # what every session's recomputable state may keep together
IDLE_S = 600.0  # recomputable state unused this long is dropped at the next rerun of anyone
MMAP_THRESHOLD = 128 * 1024  # bytes: larger blocks are mapped on their own and given back when freed
ARENAS = max(2, os.cpu_count() or 2)  # glibc heaps shared by the threads (its default: 8 per core)
HEAVY_SWITCH_S = 0.0005  # the interpreter's switch interval while a heavy rerun runs (Python's default: 5 ms)
BUSY = ("The server is busy with other large scenarios, so this one waits its turn ({ahead} ahead of it); "
        "small ones, such as the seed, go first.")
REFUSED = ("The server stayed busy with other large scenarios for {wait:g} s, so this click was not computed. "
           "Your view is unchanged: click again in a moment, or make the scenario smaller.")


class Droppable(Protocol):
    """Something a session keeps that can be recomputed: ``drop`` lets it go (from any thread)."""

    def drop(self) -> None: ...


class _Gate:
    """Counted slots handed out in arrival order; a thread holding one may enter again."""

    def __init__(self, slots: int):
        self.slots = slots
        self.changed = threading.Condition()
        self.queue: collections.deque[int] = collections.deque()
        self.held: dict[int, int] = {}  # thread id → how many times it entered
        self.switch = sys.getswitchinterval()  # the interval to restore once no heavy rerun runs

    def ahead(self, me: int) -> int:
        return self.queue.index(me) if me in self.queue else len(self.queue)

    def enter(self, timeout: float, waiting=None) -> bool:
        me = threading.get_ident()
        with self.changed:
            if me in self.held:
                self.held[me] += 1
                return True
            self.queue.append(me)
            deadline = time.monotonic() + timeout
            told = False
            while not (len(self.held) < self.slots and self.queue[0] == me):
                left = deadline - time.monotonic()
                if left <= 0:
                    self.queue.remove(me)
                    self.changed.notify_all()
                    return False
                if waiting is not None and not told:
                    waiting(self.ahead(me) + len(self.held))
                    told = True
                self.changed.wait(min(left, 0.5))
            self.queue.popleft()
            if not self.held:
                self.switch = sys.getswitchinterval()
                sys.setswitchinterval(HEAVY_SWITCH_S)
            self.held[me] = 1
            return True

    def leave(self) -> None:
        me = threading.get_ident()
        with self.changed:
            self.held[me] -= 1
            if not self.held[me]:
                del self.held[me]
                if not self.held:
                    sys.setswitchinterval(self.switch)
                self.changed.notify_all()


GATE = _Gate(HEAVY_SLOTS)


@contextlib.contextmanager
def admitted(scenario: Scenario, step: int, place=None) -> Iterator[None]:
    """Run the body now if the view is light; else once a heavy slot is free (saying so while it
    waits in ``place``), or stop this run with a message after :data:`WAIT_S`."""
    if is_light(scenario, step):
        yield
        return
    notice = []

    def waiting(ahead: int) -> None:
        notice.append((place or st).empty())
        notice[0].info(BUSY.format(ahead=ahead), icon=":material/hourglass_top:")

    if not GATE.enter(WAIT_S, waiting):
        (notice[0] if notice else (place or st)).warning(REFUSED.format(wait=WAIT_S), icon=":material/hourglass_top:")
        st.stop()
    if notice:
        notice[0].empty()
    try:
        yield
    finally:
        GATE.leave()


class _Ledger:
    """Every session's droppable objects: their size and when they were last used."""

    def __init__(self, limit: int, idle_s: float):
        self.limit, self.idle_s = limit, idle_s
        self.lock = threading.Lock()
        self.entries: dict[int, tuple[weakref.ref, int, float]] = {}

    def keep(self, holder: Droppable, nbytes: int) -> list[Droppable]:
        """Record ``holder`` as just used at ``nbytes``; drop others until all fit. Returns the dropped."""
        now = time.monotonic()
        with self.lock:
            self.entries = {k: e for k, e in self.entries.items() if e[0]() is not None}
            self.entries[id(holder)] = (weakref.ref(holder), nbytes, now)
            total = sum(e[1] for e in self.entries.values())
            dropped = []
            for key, (ref, size, used) in sorted(self.entries.items(), key=lambda item: item[1][2]):
                other = ref()
                if other is None or other is holder or (total <= self.limit and now - used < self.idle_s):
                    continue
                dropped.append(other)
                total -= size
                del self.entries[key]
        for other in dropped:
            other.drop()
        return dropped

    @property
    def kept_bytes(self) -> int:
        with self.lock:
            return sum(size for ref, size, _ in self.entries.values() if ref() is not None)


LEDGER = _Ledger(KEPT_BYTES, IDLE_S)


def keep(holder: Droppable, nbytes: int) -> None:
    """``holder`` (a session's recomputable state) was just used and holds ``nbytes``."""
    LEDGER.keep(holder, nbytes)


def return_large_frees() -> bool:
    """Fix glibc's mmap threshold at :data:`MMAP_THRESHOLD` and its heaps at :data:`ARENAS` (mallopt
    M_MMAP_THRESHOLD, M_ARENA_MAX), each unless the host set it (``MALLOC_MMAP_THRESHOLD_``,
    ``MALLOC_ARENA_MAX``); True if both are fixed (False off glibc)."""
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name) if name else None
        if libc is None:
            return False
        settings = (("MALLOC_MMAP_THRESHOLD_", -3, MMAP_THRESHOLD), ("MALLOC_ARENA_MAX", -8, ARENAS))
        return all(variable in os.environ or bool(libc.mallopt(option, value)) for variable, option, value in settings)
    except (OSError, AttributeError):  # not glibc (macOS, musl without mallopt): its own policy stands
        return False


ALLOCATOR_FIXED = return_large_frees()
