"""Class mode's store: a teacher's view that students follow, votes, and short links.

``open_store()`` picks the store from the environment: ``KVLAB_STORE=redis://host:port/db`` for
Redis (several machines behind one load balancer), else SQLite, one file in WAL mode under
``KVLAB_DATA`` (default ``data/`` in the repository; ``KVLAB_STORE=sqlite:///path/file.db`` names
the file), which every app process on one machine shares. Pure Python: no Streamlit here.
"""

from __future__ import annotations

import os
from pathlib import Path

from .backends import Backend, SQLiteBackend, StoreDown
from .classes import (ClassError, ClassLimits, ClassState, ClassStore, Question, QuestionNotOpen, Started,
                      StoreUnavailable, Tally)
from .codes import JOIN_CHARS, LINK_CHARS, normalise, shown
from .recent import RecentReads

DEFAULT_DATA = Path(__file__).resolve().parents[3] / "data"
SQLITE_FILE = "kvlab-classes.sqlite3"

__all__ = ["Backend", "ClassError", "ClassLimits", "ClassState", "ClassStore", "JOIN_CHARS", "LINK_CHARS",
           "Question", "QuestionNotOpen", "RecentReads", "Started", "StoreDown", "StoreUnavailable", "Tally",
           "normalise", "open_store", "shown", "store_address"]


def store_address(env: dict[str, str] | None = None) -> str:
    """The store the environment asks for, as an address (redis://… or sqlite:///path)."""
    env = os.environ if env is None else env
    configured = env.get("KVLAB_STORE", "").strip()
    if configured:
        return configured
    return f"sqlite:///{Path(env.get('KVLAB_DATA') or DEFAULT_DATA) / SQLITE_FILE}"


def open_store(address: str | None = None, limits: ClassLimits | None = None) -> ClassStore:
    """The class store at ``address`` (default: :func:`store_address`). Raises
    :class:`StoreUnavailable` (a message for the visitor) when it cannot be opened."""
    address = address or store_address()
    try:
        if address.startswith(("redis://", "rediss://", "unix://")):
            from .redis_backend import RedisBackend
            backend: Backend = RedisBackend(address)
        elif address.startswith("sqlite:///"):
            backend = SQLiteBackend(address.removeprefix("sqlite:///"))
        else:
            raise StoreDown(f"KVLAB_STORE must start with redis:// or sqlite:///, not {address[:20]!r}")
    except StoreDown as err:
        raise StoreUnavailable(f"The class service cannot be opened ({err}), so class mode is off. "
                               "Everything else in kvlab works as usual.") from None
    return ClassStore(backend, limits or ClassLimits())
