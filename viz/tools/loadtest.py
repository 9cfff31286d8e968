"""A classroom load test: many browser sessions using the real app at once.

``python -m viz.tools.loadtest [--sessions 30] [--seconds 60]`` starts ``streamlit run app.py`` on a
free loopback port (or uses ``--url``), opens that many independent browser sessions in Debian's
Chromium, and lets each one behave like a student for the given time: open the Decode page, step,
scrub back, switch the decode mode, visit Prefill, type a prompt. It reports the rerun latency each
session saw (click to finished script run, p50 / p95), the errors (exceptions shown, timeouts), and
the server's resident memory before the sessions, at their peak and after they closed.

Needs the test extra (Playwright) and /usr/bin/chromium. Loopback only; bounded in time and count.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import random
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from urllib.parse import urlparse

from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.proto.WidgetStates_pb2 import WidgetState

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
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

    def summary(self) -> dict:
        data = asdict(self)
        data.pop("latencies_s")
        data.pop("run_times_s")
        return {**data, "click_to_rerun_p50_s": percentile(self.latencies_s, 50),
                "click_to_rerun_p95_s": percentile(self.latencies_s, 95),
                "server_run_p50_s": percentile(self.run_times_s, 50),
                "server_run_p95_s": percentile(self.run_times_s, 95)}


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


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server() -> tuple[subprocess.Popen, str]:
    port = _free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port), "--server.address",
         "127.0.0.1", "--server.headless", "true", "--browser.gatherUsageStats", "false"],
        cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{base}/_stcore/health", timeout=5):
                return process, base
        except OSError:
            if process.poll() is not None:
                raise RuntimeError("streamlit run app.py exited before serving")
            time.sleep(0.5)
    process.kill()
    raise RuntimeError("the server did not answer /_stcore/health within 180 s")


# A run that finished: the whole script, or a fragment alone (the Prefill stepper reruns only its
# fragment). Runs cut short by a rerun request or an error do not count.
COMPLETE = (ForwardMsg.ScriptFinishedStatus.FINISHED_SUCCESSFULLY,
            ForwardMsg.ScriptFinishedStatus.FINISHED_FRAGMENT_RUN_SUCCESSFULLY)


class RunWatch:
    """Follows one page's websocket: every script run the server finished, with its arrival time.

    A run that ends early because the script asked for a rerun (st.rerun after an edit) does not
    count; only complete runs (of the whole script or of one fragment) do. Nothing depends on how
    fast the browser draws.
    """

    def __init__(self, page) -> None:
        self.finished: list[float] = []
        self.run_times: list[float] = []  # from a run's new_session message to its script_finished
        self._started: float | None = None
        page.on("websocket", self._attach)

    def _attach(self, socket) -> None:
        socket.on("framereceived", self._frame)

    def _frame(self, payload) -> None:
        if isinstance(payload, str):
            return
        message = ForwardMsg()
        try:
            message.ParseFromString(payload)
        except Exception:  # not a ForwardMsg (Streamlit may batch or compress in future versions)
            return
        kind = message.WhichOneof("type")
        if kind == "new_session" and self._started is None:
            self._started = time.monotonic()  # a chain of reruns counts from its first run
        elif kind == "script_finished" and message.script_finished in COMPLETE:
            now = time.monotonic()
            self.finished.append(now)
            if self._started is not None:
                self.run_times.append(now - self._started)
            self._started = None

    async def finished_after(self, since: float, timeout_s: float) -> float:
        """When the first complete run after ``since`` arrived, once no further run follows for 0.3 s."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            done = [t for t in self.finished if t >= since]
            if done and time.monotonic() - done[-1] > 0.3:
                return done[-1]
            await asyncio.sleep(0.05)
        raise TimeoutError(f"no finished rerun within {timeout_s:.0f} s")


async def _act(page, watch: RunWatch, action, latencies: list[float], timeout_s: float) -> None:
    """Do something that makes the app rerun; record the time from the action to the finished run."""
    start = time.monotonic()
    try:
        await action()
        end = await watch.finished_after(start, timeout_s)
    except Exception as err:
        what = getattr(action, "__self__", None) or getattr(action, "__qualname__", action)
        what = str(what).split("selector=")[-1]  # the locator's selector, not its page URL
        raise type(err)(f"{what}: {err}") from None
    latencies.append(end - start)
    if await page.locator('[data-testid="stException"]').count():
        raise RuntimeError("an exception is shown")


async def _student(browser, base: str, seconds: float, seed: int, latencies: list[float],
                   run_times: list[float], errors: list[str], timeout_s: float) -> None:
    rng = random.Random(seed)
    context = await browser.new_context(viewport={"width": 1280, "height": 900})
    page = await context.new_page()
    watch = RunWatch(page)
    try:
        start = time.monotonic()
        await page.goto(f"{base}/decode", timeout=timeout_s * 1000)
        await watch.finished_after(start, timeout_s)
        deadline = time.monotonic() + seconds
        mode = "KV cache"
        sidebar = page.locator('[data-testid="stSidebar"]')
        while time.monotonic() < deadline:
            choice = rng.random()
            on_decode = urlparse(page.url).path.endswith("/decode")
            if choice < 0.1:
                box = sidebar.get_by_label("Prompt", exact=True)
                words = " ".join(rng.choice(["the", "cat", "weather", "is", "so", "nice", "today"])
                                 for _ in range(rng.randint(3, 10)))

                async def type_prompt() -> None:
                    await box.fill(words)
                    await box.press("Enter")

                await _act(page, watch, type_prompt, latencies, timeout_s)
            elif choice < 0.2 or (not on_decode and choice < 0.4):
                target = "Prefill" if on_decode else "Decode"
                await _act(page, watch, sidebar.get_by_role("link", name=target).click, latencies, timeout_s)
            elif not on_decode:  # walk the prompt with the position stepper
                forward = page.locator(".st-key-prefill_position_forward button").first
                back = page.locator(".st-key-prefill_position_back button").first
                options = [b for b in (forward, back) if await b.is_enabled()]
                if options:
                    await _act(page, watch, rng.choice(options).click, latencies, timeout_s)
            else:
                back = page.get_by_role("button", name="Back")
                if choice < 0.3:  # another decode mode (choosing the current one would not rerun)
                    mode = rng.choice([m for m in ("no cache (recompute)", "KV cache", "no cache (re-encode keys)")
                                       if m != mode])
                    action = page.locator(".st-key-decode_mode_picker button", has_text=mode).first.click
                elif choice < 0.45 and await back.is_enabled():
                    action = back.click
                else:
                    action = page.get_by_role("button", name="Step").click
                await _act(page, watch, action, latencies, timeout_s)
            await asyncio.sleep(rng.uniform(1.0, 4.0))  # a student reads before the next click
    except Exception as err:  # every failure of a session is a reported error, not a crash
        errors.append(f"session {seed}: {type(err).__name__}: {str(err).splitlines()[0][:160]}")
    finally:
        run_times.extend(watch.run_times)
        await context.close()


class SocketStudent:
    """A session that speaks Streamlit's websocket protocol directly (no browser): it sends the
    same messages a browser sends for a click or a page change and reads the server's replies.
    It measures the server alone, which a browser on the same small machine would swamp."""

    def __init__(self, base: str, seed: int, timeout_s: float):
        self.url = base.replace("http://", "ws://") + "/_stcore/stream"
        self.origin = base
        self.rng = random.Random(seed)
        self.timeout_s = timeout_s
        self.buttons: dict[str, str] = {}  # label -> widget id, from the last run's deltas
        self.pages: dict[str, str] = {}  # url path -> page script hash
        self.page_hash = ""

    async def _run(self, socket, widgets: list[WidgetState], page_hash: str | None = None) -> float:
        """Ask for a rerun; seconds until the server finished a complete run (reruns followed)."""
        message = BackMsg()
        state = message.rerun_script
        state.query_string = ""
        state.page_script_hash = page_hash if page_hash is not None else self.page_hash
        state.widget_states.widgets.extend(widgets)
        start = time.monotonic()
        await socket.send(message.SerializeToString())
        self.buttons = {}
        while True:
            raw = await asyncio.wait_for(socket.recv(), self.timeout_s)
            reply = ForwardMsg()
            reply.ParseFromString(raw)
            kind = reply.WhichOneof("type")
            if kind == "delta" and reply.delta.WhichOneof("type") == "new_element":
                element = reply.delta.new_element
                if element.WhichOneof("type") == "button":
                    self.buttons[element.button.label] = element.button.id
                elif element.WhichOneof("type") == "exception":
                    raise RuntimeError(f"the app raised: {element.exception.message[:120]}")
            elif kind == "navigation":
                self.pages = {page.url_pathname: page.page_script_hash for page in reply.navigation.app_pages}
                self.page_hash = reply.navigation.page_script_hash
            elif kind == "script_finished" and reply.script_finished in COMPLETE:
                return time.monotonic() - start

    def _click(self, label: str) -> list[WidgetState]:
        widget = WidgetState(id=self.buttons[label], trigger_value=True)
        return [widget]

    async def run(self, seconds: float, latencies: list[float], errors: list[str]) -> None:
        import websockets
        try:
            async with websockets.connect(self.url, subprotocols=["streamlit"], origin=self.origin,
                                          max_size=None) as socket:
                await self._run(socket, [], "")
                await self._run(socket, [], self.pages["decode"])  # open the Decode page
                deadline = time.monotonic() + seconds
                while time.monotonic() < deadline:
                    choice = self.rng.random()
                    on_decode = self.page_hash == self.pages["decode"]
                    if choice < 0.15:  # switch between Prefill and Decode
                        target = self.pages[""] if on_decode else self.pages["decode"]
                        latencies.append(await self._run(socket, [], target))
                    elif on_decode and "Step" in self.buttons:
                        label = "Back" if choice < 0.3 and "Back" in self.buttons else "Step"
                        latencies.append(await self._run(socket, self._click(label)))
                    else:
                        latencies.append(await self._run(socket, []))
                    await asyncio.sleep(self.rng.uniform(1.0, 4.0))  # a student reads
        except Exception as err:  # every failure of a session is a reported error, not a crash
            errors.append(f"socket session: {type(err).__name__}: {str(err).splitlines()[0][:160] if str(err) else ''}")


async def _drive_sockets(base: str, sessions: int, seconds: float,
                         timeout_s: float) -> tuple[list[float], list[float], list[str]]:
    latencies: list[float] = []
    errors: list[str] = []
    await asyncio.gather(*(SocketStudent(base, i, timeout_s).run(seconds, latencies, errors)
                           for i in range(sessions)))
    return latencies, list(latencies), errors  # here the click-to-rerun time is the server's


async def _drive(base: str, sessions: int, seconds: float,
                 timeout_s: float) -> tuple[list[float], list[float], list[str]]:
    from playwright.async_api import async_playwright
    latencies: list[float] = []
    run_times: list[float] = []
    errors: list[str] = []
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            await asyncio.gather(*(_student(browser, base, seconds, i, latencies, run_times, errors, timeout_s)
                                   for i in range(sessions)))
        finally:
            await browser.close()
    return latencies, run_times, errors


def _run_async(coroutine):
    """Run a coroutine in its own event loop on its own thread, so that run_load also works where
    the calling thread already runs a loop (a sync Playwright session, Jupyter)."""
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="kvlab-load") as pool:
        return pool.submit(asyncio.run, coroutine).result()


def run_load(sessions: int, seconds: float, url: str | None = None, timeout_s: float = 120.0,
             settle_s: float = 15.0, client: str = "browser", after_s: float | None = None) -> LoadResult:
    """Start (or use) a server, warm it with one visit, then run the sessions and measure.

    client: "browser" (Chromium pages, what people see) or "socket" (protocol-level sessions,
    the server alone). The memory 'after' is read ``after_s`` seconds after the sessions closed:
    by default once Streamlit's disconnected-session TTL has passed, when it may free them."""
    if after_s is None:
        from streamlit import config
        after_s = float(config.get_option("server.disconnectedSessionTTL")) + 10
    if not 1 <= sessions <= MAX_SESSIONS or not 0 < seconds <= MAX_SECONDS:
        raise ValueError(f"sessions must be 1..{MAX_SESSIONS} and seconds 1..{MAX_SECONDS}")
    process, base = (None, url) if url else start_server()
    pid = process.pid if process else None
    try:
        _run_async(_drive(base, 1, 1.0, timeout_s))  # imports, caches and the first page build
        time.sleep(settle_s)
        baseline = rss_mb(pid) if pid else float("nan")
        peak = baseline
        done = False

        def sample() -> None:
            nonlocal peak
            while not done:
                peak = max(peak, rss_mb(pid))
                time.sleep(0.5)

        sampler = threading.Thread(target=sample, daemon=True) if pid else None
        if sampler:
            sampler.start()
        start = time.monotonic()
        drive = _drive if client == "browser" else _drive_sockets
        latencies, run_times, errors = _run_async(drive(base, sessions, seconds, timeout_s))
        elapsed = time.monotonic() - start
        done = True
        time.sleep(after_s)
        gc.collect()
        after = rss_mb(pid) if pid else float("nan")
        return LoadResult(sessions, elapsed, len(latencies), latencies, run_times, errors, baseline, peak, after)
    finally:
        if process:
            process.terminate()
            process.wait(timeout=30)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m viz.tools.loadtest", description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=30)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--url", help="use a running server instead of starting one (no memory figures)")
    parser.add_argument("--client", choices=("browser", "socket"), default="browser",
                        help="Chromium pages (default) or protocol-level websocket sessions")
    parser.add_argument("--out", help="write the summary and every latency as JSON")
    args = parser.parse_args(argv)
    try:
        result = run_load(args.sessions, args.seconds, args.url, client=args.client)
    except (ValueError, RuntimeError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    summary = result.summary()
    print(f"{result.sessions} sessions for {result.seconds:.0f} s: {result.reruns} reruns, {len(result.errors)} errors")
    print(f"click to finished rerun: p50 {summary['click_to_rerun_p50_s'] * 1000:.0f} ms, "
          f"p95 {summary['click_to_rerun_p95_s'] * 1000:.0f} ms (browser, clicks and network included)")
    print(f"server script run:       p50 {summary['server_run_p50_s'] * 1000:.0f} ms, "
          f"p95 {summary['server_run_p95_s'] * 1000:.0f} ms")
    print(f"server memory: {result.rss_baseline_mb:.0f} MB before, {result.rss_peak_mb:.0f} MB at the peak, "
          f"{result.rss_after_mb:.0f} MB after the sessions closed")
    for error in result.errors[:10]:
        print(f"  {error}")
    if args.out:
        Path(args.out).write_text(json.dumps({**summary, "latencies_s": result.latencies_s,
                                              "run_times_s": result.run_times_s}, indent=1))
    return 0 if not result.errors else 1


if __name__ == "__main__":
    sys.exit(main())
