"""A classroom load test: many sessions using the real app at once, on one server or a cluster.

``python -m viz.tools.loadtest [--sessions 30] [--seconds 60]`` starts ``streamlit run app.py`` on a
free loopback port (``--processes 1 2 4``: a HAProxy cluster of that many processes, one round per
count, see ``viz.tools.cluster``; ``--url``: a running server) and lets each session behave like a
student for the given time: open the teacher's share link to Decode (``/?page=decode&s=…``), step,
scrub back, switch the decode mode, visit Prefill and walk its position stepper, type a prompt.
``--client browser`` drives Debian's Chromium (what people see), ``--client socket`` speaks
Streamlit's websocket protocol directly (``viz.tools.protocol``: the server alone). It reports the
reruns finished per second, the rerun latency (click to finished run, p50 / p95), the errors
(exceptions shown, failed runs, timeouts) and the servers' resident memory before the sessions, at
their peak and after they closed.

``--heavy N`` runs the heavy class instead (viz.tools.heavy_class): N visitors on the worst links at
once beside one on the seed, against N on the seed.

Loopback only; bounded in time and count.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import random
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .chromium import launch_options
from .load_base import CLASS_LINK, percentile, rss_mb, serving, warm

_warm = warm  # the name viz.tools.loadtest_class imports it by
from .protocol import ProtocolSession, RunLog, run_in_thread

MAX_SESSIONS = 60
MAX_SECONDS = 600


@dataclass
class LoadResult:
    sessions: int
    seconds: float
    reruns: int
    latencies_s: list[float] = field(repr=False)
    run_times_s: list[float] = field(repr=False)
    errors: list[str]
    rss_baseline_mb: float
    rss_peak_mb: float
    rss_after_mb: float
    processes: int | None = None  # behind HAProxy; None: one server, no load balancer
    # each session's first click, made as soon as its own page opened while the others were still
    # opening theirs (the class arriving at once); also in latencies_s
    arrival_latencies_s: list[float] = field(default_factory=list, repr=False)

    @property
    def throughput_per_s(self) -> float:
        """Finished reruns per second over the whole run."""
        return self.reruns / self.seconds if self.seconds else float("nan")

    def summary(self) -> dict:
        data = asdict(self)
        data.pop("latencies_s")
        data.pop("run_times_s")
        data.pop("arrival_latencies_s")
        later = list(self.latencies_s)
        for first in self.arrival_latencies_s:
            later.remove(first)
        return {**data, "reruns_per_s": self.throughput_per_s,
                "click_to_rerun_p50_s": percentile(self.latencies_s, 50),
                "click_to_rerun_p95_s": percentile(self.latencies_s, 95),
                "arrival_click_p95_s": percentile(self.arrival_latencies_s, 95),
                "later_click_p95_s": percentile(later, 95),
                "server_run_p50_s": percentile(self.run_times_s, 50),
                "server_run_p95_s": percentile(self.run_times_s, 95)}


async def _finished_after(log: RunLog, before: int, timeout_s: float):
    """The first run to finish after ``before`` runs had (viz.tools.protocol's definition)."""
    deadline = time.monotonic() + timeout_s
    while len(log.finished) <= before:
        if time.monotonic() > deadline:
            raise TimeoutError(f"no finished rerun within {timeout_s:.0f} s")
        await asyncio.sleep(0.02)  # frames arrive on this loop; the run log counts them
    return log.finished[before]


async def _act(page, log: RunLog, action, latencies: list[float], timeout_s: float) -> None:
    """Do something that makes the app rerun; record the time from the action to the finished run."""
    before, start = len(log.finished), time.monotonic()
    try:
        await action()
        run = await _finished_after(log, before, timeout_s)
    except Exception as err:
        what = getattr(action, "__self__", None) or getattr(action, "__qualname__", action)
        what = str(what).split("selector=")[-1]  # the locator's selector, not its page URL
        raise type(err)(f"{what}: {err}") from None
    latencies.append(run.finished_s - start)
    if not run.ok or await page.locator('[data-testid="stException"]').count():
        raise RuntimeError(f"the run failed or shows an exception: {run.exceptions}")


async def _student(browser, base: str, seconds: float, seed: int, latencies: list[float],
                   run_times: list[float], errors: list[str], timeout_s: float, min_actions: int = 0,
                   arrivals: list[float] | None = None) -> None:
    rng = random.Random(seed)
    mine: list[float] = []  # this session's clicks, added to latencies (and the first to arrivals) at the end
    context = await browser.new_context(viewport={"width": 1280, "height": 900})
    page = await context.new_page()
    log = RunLog()
    page.on("websocket", lambda socket: socket.on("framereceived", log.feed))
    try:
        await page.goto(f"{base}/?{CLASS_LINK}", timeout=timeout_s * 1000)
        await _finished_after(log, 0, timeout_s)
        deadline = time.monotonic() + seconds
        mode = "KV cache"
        sidebar = page.locator('[data-testid="stSidebar"]')
        while time.monotonic() < deadline or len(mine) < min_actions:
            choice = rng.random()
            # from the runs, not the address bar: after a share link's first run the page may not
            # have written /decode there yet
            on_decode = log.page_hash == log.pages.get("decode")
            if choice < 0.1:
                box = sidebar.get_by_label("Prompt", exact=True)
                if not await box.count():  # its fold is folded (a first view's): opening it is a click, a run
                    await _act(page, log, sidebar.locator("summary", has_text="Prompt").click, mine, timeout_s)
                words = " ".join(rng.choice(["the", "cat", "weather", "is", "so", "nice", "today"])
                                 for _ in range(rng.randint(3, 10)))

                async def type_prompt() -> None:
                    await box.fill(words)
                    await box.press("Enter")

                await _act(page, log, type_prompt, mine, timeout_s)
            elif choice < 0.2 or (not on_decode and choice < 0.4):
                target = "Prefill" if on_decode else "Decode"
                await _act(page, log, sidebar.get_by_role("link", name=target).click, mine, timeout_s)
            elif not on_decode:  # walk the prompt with the position stepper
                forward = page.locator(".st-key-prefill_position_forward button").first
                back = page.locator(".st-key-prefill_position_back button").first
                options = [b for b in (forward, back) if await b.is_enabled()]
                if options:
                    await _act(page, log, rng.choice(options).click, mine, timeout_s)
            else:
                back = page.get_by_role("button", name="Back")
                if choice < 0.3:  # another decode mode (choosing the current one would not rerun)
                    mode = rng.choice([m for m in ("recompute", "KV cache", "re-encode")
                                       if m != mode])
                    action = page.locator(".st-key-decode_mode_picker button", has_text=mode).first.click
                elif choice < 0.45 and await back.is_enabled():
                    action = back.click
                else:
                    action = page.get_by_role("button", name="Step").click
                await _act(page, log, action, mine, timeout_s)
            await asyncio.sleep(rng.uniform(1.0, 4.0))  # a student reads before the next click
    except Exception as err:  # every failure of a session is a reported error, not a crash
        errors.append(f"session {seed}: {type(err).__name__}: {str(err).splitlines()[0][:160]}")
    finally:
        _keep(mine, latencies, arrivals)
        run_times.extend(run.chain_seconds for run in log.finished)
        await context.close()


def _keep(mine: list[float], latencies: list[float], arrivals: list[float] | None) -> None:
    """One session's click latencies into the shared list; its first click into ``arrivals``."""
    latencies.extend(mine)
    if mine and arrivals is not None:
        arrivals.append(mine[0])


class SocketStudent:
    """A student without a browser (``viz.tools.protocol.ProtocolSession``): the same messages a
    browser sends for a click or a page change. It measures the server alone, which browsers on
    the same small machine would swamp."""

    def __init__(self, base: str, seed: int, timeout_s: float):
        self.session = ProtocolSession(base, timeout_s)
        self.rng = random.Random(seed)
        self.seed = seed

    async def _timed(self, action, latencies: list[float], run_times: list[float]) -> None:
        start = time.monotonic()
        run = await action
        latencies.append(run.finished_s - start)
        run_times.append(run.chain_seconds)

    async def run(self, seconds: float, latencies: list[float], run_times: list[float], errors: list[str],
                  min_actions: int = 0, arrivals: list[float] | None = None) -> None:
        session = self.session
        mine: list[float] = []
        try:
            await session.open_link(CLASS_LINK)
            deadline = time.monotonic() + seconds
            actions = 0
            while time.monotonic() < deadline or actions < min_actions:
                actions += 1
                choice = self.rng.random()
                pages = session.log.pages
                on_decode = session.log.page_hash == pages["decode"]
                if choice < 0.15:  # switch between Prefill and Decode
                    action = session.rerun(page_hash=pages["prefill"] if on_decode else pages["decode"])
                elif on_decode:
                    action = session.click("Back" if choice < 0.3 and session.can_click("Back") else "Step")
                else:  # walk the prompt with the position stepper (a fragment's run)
                    forward = "prefill_position_forward"
                    action = session.click(forward if session.can_click(forward) else "prefill_position_back")
                await self._timed(action, mine, run_times)
                await asyncio.sleep(self.rng.uniform(1.0, 4.0))  # a student reads
        except Exception as err:  # every failure of a session is a reported error, not a crash
            errors.append(f"socket session {self.seed}: {type(err).__name__}: "
                          f"{str(err).splitlines()[0][:160] if str(err) else ''}")
        finally:
            _keep(mine, latencies, arrivals)
            await session.close()


async def _drive_sockets(base: str, sessions: int, seconds: float, timeout_s: float,
                         min_actions: int = 0) -> tuple[list[float], list[float], list[str], list[float]]:
    latencies: list[float] = []
    run_times: list[float] = []
    errors: list[str] = []
    arrivals: list[float] = []
    await asyncio.gather(*(SocketStudent(base, i, timeout_s).run(seconds, latencies, run_times, errors, min_actions,
                                                                 arrivals)
                           for i in range(sessions)))
    return latencies, run_times, errors, arrivals


async def _drive(base: str, sessions: int, seconds: float, timeout_s: float,
                 min_actions: int = 0) -> tuple[list[float], list[float], list[str], list[float]]:
    from playwright.async_api import async_playwright
    latencies: list[float] = []
    run_times: list[float] = []
    errors: list[str] = []
    arrivals: list[float] = []
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(**launch_options())
        try:
            await asyncio.gather(*(_student(browser, base, seconds, i, latencies, run_times, errors, timeout_s,
                                            min_actions, arrivals)
                                   for i in range(sessions)))
        finally:
            await browser.close()
    return latencies, run_times, errors, arrivals


def run_load(sessions: int, seconds: float, url: str | None = None, timeout_s: float = 120.0,
             settle_s: float = 15.0, client: str = "browser", after_s: float | None = None,
             processes: int | None = None, min_actions: int = 0) -> LoadResult:
    """Start (or use) a server or a cluster, warm every process with one visit, then run the
    sessions and measure.

    client: "browser" (Chromium pages, what people see) or "socket" (protocol-level sessions,
    the server alone). processes: that many app processes behind HAProxy (None: one server
    without a load balancer). min_actions: each session acts at least this often, however long
    it takes (so a test's count does not depend on the machine's speed). The memory 'after' is read ``after_s`` seconds after the sessions
    closed: by default once Streamlit's disconnected-session TTL has passed, when it may free them."""
    if after_s is None:
        from streamlit import config
        after_s = float(config.get_option("server.disconnectedSessionTTL")) + 10
    if not 1 <= sessions <= MAX_SESSIONS or not 0 < seconds <= MAX_SECONDS:
        raise ValueError(f"sessions must be 1..{MAX_SESSIONS} and seconds 1..{MAX_SECONDS}")
    if client not in ("browser", "socket"):
        raise ValueError("client must be 'browser' or 'socket'")

    def memory() -> float:
        return sum(rss_mb(pid) for pid in pids) if pids else float("nan")

    with serving(url, processes) as (base, pids, backends):
        for backend in backends:
            run_in_thread(warm(backend, timeout_s))
        if client == "browser":
            run_in_thread(_drive(base, 1, 1.0, timeout_s))  # the browser's first page load
        time.sleep(settle_s)
        baseline = memory()
        peak = baseline
        done = threading.Event()

        def sample() -> None:
            nonlocal peak
            while not done.wait(0.5):
                peak = max(peak, memory())

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        start = time.monotonic()
        drive = _drive if client == "browser" else _drive_sockets
        try:
            latencies, run_times, errors, arrivals = run_in_thread(drive(base, sessions, seconds, timeout_s,
                                                                         min_actions))
        finally:
            elapsed = time.monotonic() - start
            done.set()
            sampler.join()
        time.sleep(after_s)
        gc.collect()
        return LoadResult(sessions, elapsed, len(latencies), latencies, run_times, errors, baseline, peak,
                          memory(), processes, arrivals)


def report(result: LoadResult) -> str:
    """The result in a few lines for the terminal."""
    summary = result.summary()
    where = f"{result.processes} process(es) behind HAProxy" if result.processes else "one server"
    lines = [f"{where}, {result.sessions} sessions for {result.seconds:.0f} s: {result.reruns} reruns "
             f"({result.throughput_per_s:.1f}/s), {len(result.errors)} errors",
             f"  click to finished rerun: p50 {summary['click_to_rerun_p50_s'] * 1000:.0f} ms, "
             f"p95 {summary['click_to_rerun_p95_s'] * 1000:.0f} ms (each session's first click, as the class "
             f"arrives: p95 {summary['arrival_click_p95_s'] * 1000:.0f} ms; the later ones: "
             f"p95 {summary['later_click_p95_s'] * 1000:.0f} ms)",
             f"  server script run:       p50 {summary['server_run_p50_s'] * 1000:.0f} ms, "
             f"p95 {summary['server_run_p95_s'] * 1000:.0f} ms",
             f"  memory (all processes): {result.rss_baseline_mb:.0f} MB before, {result.rss_peak_mb:.0f} MB "
             f"at the peak, {result.rss_after_mb:.0f} MB after the sessions closed"]
    return "\n".join(lines + [f"  {error}" for error in result.errors[:10]])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m viz.tools.loadtest", description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=30)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--url", help="use a running server instead of starting one (no memory figures)")
    parser.add_argument("--processes", type=int, nargs="+",
                        help="run through a HAProxy cluster of N processes; several counts: one round each")
    parser.add_argument("--client", choices=("browser", "socket"), default="browser",
                        help="Chromium pages (default) or protocol-level websocket sessions")
    parser.add_argument("--after", type=float, help="seconds to wait before reading memory after the sessions "
                                                    "(default: Streamlit's disconnected-session TTL + 10 s)")
    parser.add_argument("--out", help="write the summaries and every latency as JSON")
    parser.add_argument("--heavy", type=int, metavar="N",
                        help="the heavy class (viz.tools.heavy_class): N visitors open the worst links at once "
                             "beside one on the seed, after the same with N on the seed")
    parser.add_argument("--heavy-pages", nargs="+", default=None, metavar="PAGE",
                        help="the pages whose worst links the heavy class opens (default: decode prefill memory serving)")
    args = parser.parse_args(argv)
    if args.heavy is not None:
        return _heavy(args.heavy, tuple(args.heavy_pages or ()), args.out)
    if args.url and args.processes:
        print("error: --url and --processes exclude each other", file=sys.stderr)
        return 2
    results = []
    try:
        for processes in args.processes or [None]:
            result = run_load(args.sessions, args.seconds, args.url, client=args.client,
                              after_s=args.after, processes=processes)
            print(report(result), flush=True)
            results.append(result)
    except (ValueError, RuntimeError) as err:
        print(f"error: {str(err).splitlines()[0]}", file=sys.stderr)
        return 2
    if args.out:
        Path(args.out).write_text(json.dumps([{**r.summary(), "latencies_s": r.latencies_s,
                                               "run_times_s": r.run_times_s} for r in results], indent=1))
    return 0 if not any(r.errors for r in results) else 1


def _heavy(visitors: int, pages: tuple[str, ...], out: str | None) -> int:
    from .heavy_class import HEAVY_PAGES, compare, report as heavy_report, run_heavy
    try:
        rounds = run_heavy(visitors, pages or HEAVY_PAGES)
    except (ValueError, RuntimeError) as err:
        print(f"error: {str(err).splitlines()[0]}", file=sys.stderr)
        return 2
    print(heavy_report(rounds), flush=True)
    if out:
        Path(out).write_text(json.dumps({"rounds": [r.summary() for r in rounds],
                                         **(compare(*rounds) if len(rounds) == 2 else {})}, indent=1))
    return 0 if not any(r.errors for r in rounds) else 1


if __name__ == "__main__":
    sys.exit(main())
