"""What the load tests share (viz.tools.loadtest, viz.tools.heavy_class): the class's link, where the
app runs (one server, a HAProxy cluster or a running address), warming a process, its memory, percentiles.

Loopback only.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Iterator
from urllib.parse import urlencode

from ..core.engine.presets import load_preset
from ..core.engine.share import View, link_query
from .cluster import Cluster
from .protocol import ProtocolSession
from .server import ROOT, StreamlitServer

# What a class opens: the teacher's Copy link to Decode on the seed scenario (the link names its page)
CLASS_LINK = urlencode(link_query("decode", View(load_preset("seed"))))


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile (nearest rank), NaN for no values."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))]


def rss_mb(pid: int) -> float:
    """Resident memory of a process and its children, from /proc (Linux)."""
    total = 0
    for p in [pid, *_children(pid)]:
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            pass
    return total / 1024


def _children(pid: int) -> list[int]:
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


@contextlib.contextmanager
def serving(url: str | None, processes: int | None) -> Iterator[tuple[str, list[int], list[str]]]:
    """The address to load, the server pids (for memory) and each process's own address (for
    warming up): a running server at ``url``, a HAProxy cluster of ``processes``, or one server."""
    if url:
        yield url, [], [url]
    elif processes:
        with Cluster(processes, workdir=ROOT / "artifacts" / f"loadtest-cluster-{processes}") as cluster:
            yield cluster.url, cluster.pids, [server.url for server in cluster.servers]
    else:
        with StreamlitServer(ROOT / "artifacts" / "loadtest-server.log") as server:
            yield server.url, [server.pid], [server.url]


async def warm(backend: str, timeout_s: float) -> None:
    """One visit to Decode and Prefill: imports, caches and the first page builds of one process."""
    session = ProtocolSession(backend, timeout_s)
    try:
        await session.open("decode")
        await session.rerun(page_hash=session.log.pages["prefill"])
    finally:
        await session.close()
