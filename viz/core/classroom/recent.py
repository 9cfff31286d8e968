"""The latest read of each class, shared by the students on one process.

Thirty students following a teacher each poll their class twice a second; within ``fresh_s`` of a
read, a poll takes that read instead of asking the store again (one read, not thirty). A process
that changes the class (its teacher's screen is there) forgets its read, so its own students see
the change at their next poll; other processes see it within ``fresh_s``. Pure Python.
"""

from __future__ import annotations

import threading
import time

from .classes import ClassState, ClassStore


class RecentReads:
    """The latest read of each class, with when it was read: reads within ``fresh_s`` of it take it;
    at most ``most`` classes are kept. Only followers' polls read here; the teacher's writes and
    everyone's votes go to the store."""

    def __init__(self, fresh_s: float, most: int = 256):
        self.fresh_s, self.most = fresh_s, most
        self.lock = threading.Lock()
        self.reads: dict[str, tuple[float, ClassState]] = {}

    def get(self, store: ClassStore, code: str) -> ClassState:
        now = time.monotonic()
        with self.lock:
            held = self.reads.get(code)
        if held is not None and now - held[0] < self.fresh_s:
            return held[1]
        read = store.state(code)
        with self.lock:
            if len(self.reads) >= self.most:
                self.reads.clear()
            self.reads[code] = (now, read)
        return read

    def forget(self, code: str) -> None:
        """The class changed from this process (its teacher's screen is here): read it anew."""
        with self.lock:
            self.reads.pop(code, None)
