"""The heavy class: N visitors open the worst links at the same moment while one more visitor uses the seed.

``python -m viz.tools.loadtest --heavy 10`` (this module) starts the real server on loopback and runs
two rounds on it, one after the other: N visitors open the seed's class link at once (the baseline),
then N visitors open the worst links the limits allow at once (viz.tools.worst_case: both flavours on
Decode in recompute at step 256, Prefill, Memory and Serving, taken in turn). In each round one more
visitor, the observer, opens the seed link with them and then clicks Step every half second until the
whole crowd has drawn. Every visitor
keeps its page open until all have drawn theirs; the server's memory is read then (held), beside its
peak. It reports, per round: the server's growth in all and per visitor, the slowest first view, and
the observer's first view and clicks; then how the observer fared beside the heavy crowd against
beside the seed crowd (the goal: within 2×). Protocol-level sessions (viz.tools.protocol): the server
alone, no browsers on the same small machine.

Loopback only; bounded in visitors and time.
"""

from __future__ import annotations

import asyncio
import threading
import time
from dataclasses import asdict, dataclass, field
from typing import Callable
from urllib.parse import urlencode

from ..core.engine.scenario import MAX_DECODE_STEPS
from ..core.engine.share import View, link_query
from .load_base import CLASS_LINK, percentile, rss_mb, serving, warm
from .protocol import ProtocolSession, run_in_thread
from .worst_case import worst_scenarios

MAX_VISITORS = 30
HEAVY_PAGES = ("decode", "prefill", "memory", "serving")
OBSERVER_CLICKS = 20  # at least: the seed round gets as many samples as a heavy one has in 10 s


def heavy_links(pages: tuple[str, ...] = HEAVY_PAGES) -> list[str]:
    """The worst share links, one per flavour and page (Decode in its dearest mode at the last step)."""
    return [urlencode(link_query(page, View(scenario, step=MAX_DECODE_STEPS, mode="recompute")))
            for page in pages for scenario in worst_scenarios().values()]


@dataclass
class Round:
    """One crowd of visitors arriving at once, and the observer beside them."""

    crowd: str  # "seed" or "heavy"
    visitors: int
    first_views_s: list[float]  # each crowd visitor's link to its finished first run
    observer_first_s: float
    observer_clicks_s: list[float]
    rss_before_mb: float
    rss_peak_mb: float
    rss_held_mb: float  # every visitor's page open and drawn
    errors: list[str] = field(default_factory=list)

    @property
    def grew_mb(self) -> float:
        return self.rss_held_mb - self.rss_before_mb

    def summary(self) -> dict:
        data = asdict(self)
        return {**data, "grew_mb": self.grew_mb, "grew_per_visitor_mb": self.grew_mb / max(self.visitors, 1),
                "slowest_first_view_s": max(self.first_views_s, default=float("nan")),
                "observer_click_p50_s": percentile(self.observer_clicks_s, 50),
                "observer_click_p95_s": percentile(self.observer_clicks_s, 95)}


def compare(seed: Round, heavy: Round) -> dict:
    """How the observer fared beside the heavy crowd, as a multiple of its time beside the seed crowd."""
    return {"observer_first_view_ratio": heavy.observer_first_s / seed.observer_first_s,
            **{f"observer_click_p{q}_ratio":
               percentile(heavy.observer_clicks_s, q) / percentile(seed.observer_clicks_s, q) for q in (50, 95)}}


async def _visitor(base: str, query: str, timeout_s: float, first: list[float], errors: list[str],
                   drawn: asyncio.Event, hold: asyncio.Event) -> None:
    session = ProtocolSession(base, timeout_s)
    try:
        start = time.monotonic()
        run = await session.open_link(query)
        first.append(run.finished_s - start)
    except Exception as err:  # every failure of a visitor is a reported error, not a crash
        errors.append(f"{query[:40]}…: {type(err).__name__}: {str(err).splitlines()[0][:160] if str(err) else ''}")
    finally:
        drawn.set()
    try:
        await hold.wait()  # the page stays open: its session keeps what it holds
    finally:
        await session.close()


async def _observer(base: str, timeout_s: float, clicks: list[float], errors: list[str],
                    crowd_drawn: asyncio.Event, drawn: asyncio.Event, hold: asyncio.Event) -> float:
    """The seed link opened with the crowd, then Step (or Back, at the last step) clicked every half
    second until the whole crowd has drawn, at least :data:`OBSERVER_CLICKS` times; its first view's seconds."""
    session = ProtocolSession(base, timeout_s)
    opened = float("nan")
    try:
        start = time.monotonic()
        run = await session.open_link(CLASS_LINK)
        opened = run.finished_s - start
        while not crowd_drawn.is_set() or len(clicks) < OBSERVER_CLICKS:
            await asyncio.sleep(0.5)
            start = time.monotonic()
            run = await session.click("Step" if session.can_click("Step") else "Back")
            clicks.append(run.finished_s - start)
    except Exception as err:
        errors.append(f"observer: {type(err).__name__}: {str(err).splitlines()[0][:160] if str(err) else ''}")
    finally:
        drawn.set()
    try:
        await hold.wait()
    finally:
        await session.close()
    return opened


async def _crowd(base: str, queries: list[str], timeout_s: float, held: Callable[[], float]
                 ) -> tuple[list[float], float, list[float], list[str], float]:
    """Everyone arrives at once; once all have drawn (or failed), ``held()`` reads the memory, then all leave."""
    hold = asyncio.Event()
    first: list[float] = []
    clicks: list[float] = []
    errors: list[str] = []
    drawn = [asyncio.Event() for _ in queries]
    crowd_drawn, observed = asyncio.Event(), asyncio.Event()
    visitors = [asyncio.create_task(_visitor(base, q, timeout_s, first, errors, d, hold))
                for q, d in zip(queries, drawn)]
    observer = asyncio.create_task(_observer(base, timeout_s, clicks, errors, crowd_drawn, observed, hold))
    for event in drawn:
        await event.wait()
    crowd_drawn.set()
    await observed.wait()
    await asyncio.sleep(2.0)  # the last runs' temporary tensors are freed before the memory is read
    memory = held()
    hold.set()
    opened = await observer
    await asyncio.gather(*visitors)
    return first, opened, clicks, errors, memory


def run_heavy(visitors: int, pages: tuple[str, ...] = HEAVY_PAGES, timeout_s: float = 180.0,
              settle_s: float = 10.0) -> list[Round]:
    """The seed round, then the heavy round (worst links on ``pages``, taken in turn), on one server."""
    if not 1 <= visitors <= MAX_VISITORS or not pages or not set(pages) <= set(HEAVY_PAGES):
        raise ValueError(f"visitors must be 1..{MAX_VISITORS}, pages some of {', '.join(HEAVY_PAGES)}")
    links = heavy_links(pages)
    crowds = {"seed": [CLASS_LINK] * visitors, "heavy": [links[i % len(links)] for i in range(visitors)]}
    rounds = []
    with serving(None, None) as (base, pids, backends):
        run_in_thread(warm(backends[0], timeout_s))

        def memory() -> float:
            return sum(rss_mb(pid) for pid in pids)

        for crowd, queries in crowds.items():
            time.sleep(settle_s)
            before = peak = memory()
            done = False

            def sample() -> None:
                nonlocal peak
                while not done:
                    peak = max(peak, memory())
                    time.sleep(0.5)

            sampler = threading.Thread(target=sample, daemon=True)
            sampler.start()
            first, opened, clicks, errors, held = run_in_thread(_crowd(base, queries, timeout_s, memory))
            done = True
            sampler.join()
            rounds.append(Round(crowd, visitors, first, opened, clicks, before, max(peak, held), held, errors))
    return rounds


def report(rounds: list[Round]) -> str:
    """The rounds in a few lines for the terminal."""
    lines = []
    for r in rounds:
        s = r.summary()
        lines.append(f"{r.visitors} visitors on the {r.crowd} links at once: the server grew {r.grew_mb:.0f} MB "
                     f"with every page open ({s['grew_per_visitor_mb']:.1f} MB a visitor; peak "
                     f"{r.rss_peak_mb - r.rss_before_mb:.0f} MB over {r.rss_before_mb:.0f} MB), slowest first view "
                     f"{s['slowest_first_view_s']:.1f} s; the seed observer's first view {r.observer_first_s:.2f} s, "
                     f"its {len(r.observer_clicks_s)} clicks p50 {s['observer_click_p50_s'] * 1000:.0f} ms, p95 "
                     f"{s['observer_click_p95_s'] * 1000:.0f} ms; {len(r.errors)} errors")
        lines += [f"  {error}" for error in r.errors[:10]]
    if len(rounds) == 2:
        ratios = compare(*rounds)
        lines.append(f"the observer beside the heavy crowd: first view {ratios['observer_first_view_ratio']:.2f}×, "
                     f"clicks p50 {ratios['observer_click_p50_ratio']:.2f}×, "
                     f"p95 {ratios['observer_click_p95_ratio']:.2f}× "
                     "its time beside the seed crowd (goal: within 2×)")
    return "\n".join(lines)
