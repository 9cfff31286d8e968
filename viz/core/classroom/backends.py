"""The store's few primitive operations, and SQLite's implementation of them.

Everything a class keeps is one of three kinds of key, each with a lifetime (seconds from the last
write that renews it):

* a **value** (text): ``get``, ``put`` (optionally only if new), ``incr`` (a counter);
* a **hash** (field -> text): ``hash_put`` refuses a *new* field once the hash holds ``cap`` fields,
  atomically, so a flood never slips past a limit between a count and a write; ``hash_all``;
* a **registry** (member -> the time it lapses): ``register`` drops lapsed members and adds one
  unless ``cap`` live members are there already; ``unregister``.

SQLite (this module) keeps them in one file in WAL mode, so several app processes on one machine
share it; Redis (``redis_backend``) keeps them as strings, hashes and sorted sets, for several
machines. Both raise :class:`StoreDown` when the store cannot be reached or written, and nothing else.
"""

from __future__ import annotations

import random
import sqlite3
import time
from pathlib import Path
from typing import Protocol


class StoreDown(Exception):
    """The store did not answer (not running, unreachable, disk full, locked for too long)."""


class Backend(Protocol):
    def get(self, key: str) -> str | None: ...
    def put(self, key: str, value: str, ttl_s: float, only_new: bool = False) -> bool: ...
    def delete(self, key: str) -> None: ...
    def renew(self, keys: list[str], ttl_s: float) -> None: ...
    def incr(self, key: str, ttl_s: float) -> int: ...
    def hash_put(self, key: str, field: str, value: str, ttl_s: float, cap: int) -> bool: ...
    def hash_all(self, key: str) -> dict[str, str]: ...
    def register(self, key: str, member: str, until: float, cap: int) -> bool: ...
    def unregister(self, key: str, member: str) -> None: ...
    def ping(self) -> None: ...


SCHEMA = """
CREATE TABLE IF NOT EXISTS kv (key TEXT PRIMARY KEY, value TEXT NOT NULL, expires REAL NOT NULL);
CREATE TABLE IF NOT EXISTS hashes (key TEXT NOT NULL, field TEXT NOT NULL, value TEXT NOT NULL,
                                   expires REAL NOT NULL, PRIMARY KEY (key, field));
"""
PURGE_EVERY = 200  # about one write in this many also deletes the rows that have lapsed


class SQLiteBackend:
    """One SQLite file in WAL mode. A connection per operation: Streamlit runs each session's script
    in threads that come and go, and opening a local file costs far less than a rerun. Writers wait
    for each other up to ``busy_timeout_s``: under a full class a writer holding the lock may wait
    for Python's GIL behind dozens of script threads, so the wait is generous."""

    def __init__(self, path: str | Path, busy_timeout_s: float = 10.0):
        self.path = str(path)
        self.busy_timeout_s = busy_timeout_s
        try:
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            # held open for the process's life and never queried: when the last connection to a WAL
            # database closes, SQLite checkpoints and deletes the log, which made every operation's
            # own connection pay for a checkpoint (about 10 ms a write on this machine)
            self._keeper = self._connect()
            self._keeper.execute("PRAGMA journal_mode=WAL")
            self._keeper.executescript(SCHEMA)
        except (sqlite3.Error, OSError) as err:
            raise StoreDown(f"the class store file {self.path} cannot be opened ({err})") from None

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, timeout=self.busy_timeout_s, isolation_level=None)
        db.execute("PRAGMA synchronous=NORMAL")  # WAL: durable at checkpoints, never corrupt
        return db

    def _run(self, work, write: bool):
        """``work(db, now)`` in one transaction (BEGIN IMMEDIATE when it writes: a writer holds the
        lock from its first read, so read-then-write is atomic across processes)."""
        try:
            db = self._connect()
        except (sqlite3.Error, OSError) as err:
            raise StoreDown(f"the class store cannot be opened ({err})") from None
        try:
            db.execute("BEGIN IMMEDIATE" if write else "BEGIN")
            result = work(db, time.time())
            if write and random.random() < 1 / PURGE_EVERY:
                now = time.time()
                db.execute("DELETE FROM kv WHERE expires <= ?", (now,))
                db.execute("DELETE FROM hashes WHERE expires <= ?", (now,))
            db.execute("COMMIT")
            return result
        except (sqlite3.Error, OSError) as err:
            raise StoreDown(f"the class store did not answer ({err})") from None
        finally:
            db.close()

    def get(self, key: str) -> str | None:
        row = self._run(lambda db, now: db.execute(
            "SELECT value FROM kv WHERE key = ? AND expires > ?", (key, now)).fetchone(), write=False)
        return row[0] if row else None

    def put(self, key: str, value: str, ttl_s: float, only_new: bool = False) -> bool:
        def work(db, now):
            if only_new and db.execute("SELECT 1 FROM kv WHERE key = ? AND expires > ?", (key, now)).fetchone():
                return False
            db.execute("INSERT OR REPLACE INTO kv VALUES (?, ?, ?)", (key, value, now + ttl_s))
            return True
        return self._run(work, write=True)

    def delete(self, key: str) -> None:
        def work(db, now):
            db.execute("DELETE FROM kv WHERE key = ?", (key,))
            db.execute("DELETE FROM hashes WHERE key = ?", (key,))
        self._run(work, write=True)

    def renew(self, keys: list[str], ttl_s: float) -> None:
        def work(db, now):
            for key in keys:  # only keys still alive: a lapsed one stays gone
                db.execute("UPDATE kv SET expires = ? WHERE key = ? AND expires > ?", (now + ttl_s, key, now))
                db.execute("UPDATE hashes SET expires = ? WHERE key = ? AND expires > ?", (now + ttl_s, key, now))
        self._run(work, write=True)

    def incr(self, key: str, ttl_s: float) -> int:
        def work(db, now):
            row = db.execute("SELECT value FROM kv WHERE key = ? AND expires > ?", (key, now)).fetchone()
            if row:
                count = int(row[0]) + 1
                db.execute("UPDATE kv SET value = ? WHERE key = ?", (str(count), key))
            else:
                count = 1
                db.execute("INSERT OR REPLACE INTO kv VALUES (?, ?, ?)", (key, "1", now + ttl_s))
            return count
        return self._run(work, write=True)

    def hash_put(self, key: str, field: str, value: str, ttl_s: float, cap: int) -> bool:
        def work(db, now):
            db.execute("DELETE FROM hashes WHERE key = ? AND expires <= ?", (key, now))
            known = db.execute("SELECT 1 FROM hashes WHERE key = ? AND field = ?", (key, field)).fetchone()
            if not known and db.execute("SELECT COUNT(*) FROM hashes WHERE key = ?", (key,)).fetchone()[0] >= cap:
                return False
            db.execute("INSERT OR REPLACE INTO hashes VALUES (?, ?, ?, ?)", (key, field, value, now + ttl_s))
            db.execute("UPDATE hashes SET expires = ? WHERE key = ?", (now + ttl_s, key))
            return True
        return self._run(work, write=True)

    def hash_all(self, key: str) -> dict[str, str]:
        rows = self._run(lambda db, now: db.execute(
            "SELECT field, value FROM hashes WHERE key = ? AND expires > ?", (key, now)).fetchall(), write=False)
        return dict(rows)

    def register(self, key: str, member: str, until: float, cap: int) -> bool:
        def work(db, now):  # a registry is a hash whose values are the times its members lapse
            db.execute("DELETE FROM hashes WHERE key = ? AND CAST(value AS REAL) <= ?", (key, now))
            known = db.execute("SELECT 1 FROM hashes WHERE key = ? AND field = ?", (key, member)).fetchone()
            if not known and db.execute("SELECT COUNT(*) FROM hashes WHERE key = ?", (key,)).fetchone()[0] >= cap:
                return False
            db.execute("INSERT OR REPLACE INTO hashes VALUES (?, ?, ?, ?)", (key, member, repr(until), until))
            return True
        return self._run(work, write=True)

    def unregister(self, key: str, member: str) -> None:
        self._run(lambda db, now: db.execute("DELETE FROM hashes WHERE key = ? AND field = ?", (key, member)),
                  write=True)

    def ping(self) -> None:
        self._run(lambda db, now: db.execute("SELECT 1").fetchone(), write=False)
