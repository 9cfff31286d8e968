"""Where the time goes from a click to the figures painted, measured in Chromium against the real app.

``python -m viz.tools.paint [--repeats 5] [--scenarios seed large] [--profile]`` starts
``streamlit run app.py`` with a server-side timing probe (``viz.tools.probe``, loaded only into
that process), opens the app in Debian's Chromium and, per scenario, clicks each main control
``--repeats`` times: Decode's Step, Back, Run (8 tokens) and mode switch, a sidebar edit (d_k up
or down), a page change (Decode → Prefill → Decode) and Prefill's position stepper; then measures
the first view of a new visitor (warm server, fresh browser context, a share link to Decode and
one to Prefill as the Copy link box gives them, at ``/`` naming the page; and ``/``, Home, what the
app opens without a link), interleaved with the first
view of a two-line Streamlit app on a second server, Streamlit's own floor on the same machine at
the same minutes. For each it reports the median (and the spread) of:

* **input → painted**: the input event (or the navigation's start) to *figures painted*, the
  first settled frame after the message that finished the run (``viz.tools.timeline``);
* **input → board drawn**: to the first lesson board drawn after the input (``viz/ui/board.js``
  marks each draw). For Step and Back it is drawn at the click itself from the step the server sent
  ahead; the narration and the rest of the view follow with the run (the column before); "—" where
  no board was drawn;
* **browser → send**: the input to the app's websocket message (the page's clock);
* **send → server run**: to the start of the script run (loopback, Streamlit's event loop);
* **server run**: the script run(s) the action caused (the probe; a run cut short by
  ``st.rerun`` included), of which engine, figure building, Plotly JSON and Arrow encoding (the
  rest is Streamlit's commands and page code); **protobuf**: serialising the run's messages;
* **run end → socket**: to the run's last message serialised for the websocket;
* **socket → page**: to the page's websocket receiving it (DevTools' timestamp): loopback, and
  the time the page's main thread was still busy drawing earlier messages;
* **last message → painted**; and, from traced repeats (Chromium's trace costs time, so their
  totals are shown apart), the renderer main thread's busy time by DevTools category (scripting,
  style, layout, paint, GC, other) and its long tasks;
* the run's **message bytes** by element type.

Scenarios: ``seed`` (the article's four heads at step 1) and ``large`` (64 tokens × 8 heads after
decode step 32, ``viz.core.engine.presets.busy_scenario``). ``--profile`` then clicks through once more
while py-spy samples the server (a round of its own, so the sampler does not touch the timings) and
prints what dominates (``pip install -e ".[profile]"``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable
from urllib.parse import urlencode

from ..core.engine.presets import busy_scenario, load_preset
from ..core.engine.share import View, encode_view
from .chromium import CHROMIUM, MISSING, launch_options
from .paint_report import FLOOR_ACTION, Sample, floor_ratios, render, render_ratios, summarise
from .protocol import RunLog
from .server import ROOT, StreamlitServer
from .timeline import PAINTED_JS, READ_JS, TRACE_CATEGORIES, WATCH_JS, load_trace, main_thread, sync_offset_us

PROBE_SITE = Path(__file__).resolve().parent / "probe_site"
VIEWPORT = {"width": 1440, "height": 900}
TIMEOUT_MS = 180_000
RUN_TOKENS = 8  # Decode's "Tokens to run" default
ELEMENT_GROUPS = {"plotly_chart": "plotly", "arrow_data_frame": "tables", "dataframe": "tables",
                  "arrow_table": "tables", "markdown": "text", "heading": "text", "alert": "text",
                  "metric": "text", "text": "text", "new_session": "session", "navigation": "session",
                  "block": "layout", "html": "layout", "ref_hash": "sent by reference (browser's cache)"}


def scenarios() -> dict[str, tuple[object, int]]:
    """Name -> (scenario, decode step) as the README's tables name them."""
    return {"seed": (load_preset("seed"), 1), "large": (busy_scenario(), 32)}


class ProbeLog:
    """Reads the probe's JSON lines appended since the last read."""

    def __init__(self, path: Path):
        self.path, self.offset = path, 0

    def new(self) -> list[dict]:
        if not self.path.exists():
            return []
        with open(self.path, encoding="utf-8") as log:
            log.seek(self.offset)
            text = log.read()
            self.offset = log.tell()
        return [json.loads(line) for line in text.splitlines() if line.strip()]


def _group_bytes(runs) -> dict[str, int]:
    groups: Counter = Counter()
    for run in runs:
        for kind, size in run.bytes_by_kind.items():
            groups[ELEMENT_GROUPS.get(kind, "widgets and other")] += size
    return dict(groups)


class Visitor:
    """One browser context on the app, with the page watcher and a run log per websocket."""

    def __init__(self, browser, server: StreamlitServer, probe: ProbeLog):
        self.browser, self.server, self.probe = browser, server, probe
        self.context = browser.new_context(viewport=VIEWPORT)
        self.context.add_init_script(WATCH_JS)
        self.page = self.context.new_page()
        self.page.set_default_timeout(TIMEOUT_MS)
        self.log = RunLog()
        self.page.on("websocket", self._attach)
        # Network-level times (monotonic s) of each frame on the app's socket, from DevTools.
        self.net_received: list[float] = []
        self.net_sent: list[float] = []
        self._net_socket = ""
        cdp = self.context.new_cdp_session(self.page)
        cdp.on("Network.webSocketCreated", self._net_created)
        cdp.on("Network.webSocketFrameReceived", lambda event: self._net_frame(event, self.net_received))
        cdp.on("Network.webSocketFrameSent", lambda event: self._net_frame(event, self.net_sent))
        cdp.send("Network.enable")

    def _net_created(self, event: dict) -> None:
        if event["url"].endswith("/_stcore/stream"):
            self._net_socket, self.net_received, self.net_sent = event["requestId"], [], []

    def _net_frame(self, event: dict, frames: list[float]) -> None:
        if event["requestId"] == self._net_socket:
            frames.append(event["timestamp"])

    def _attach(self, socket) -> None:
        if socket.url.endswith("/_stcore/stream"):
            self.log = RunLog()
            socket.on("framereceived", self.log.feed)

    def close(self) -> None:
        self.context.close()

    def _wait_finished(self, before: int, fresh: bool = False) -> None:
        deadline = time.monotonic() + TIMEOUT_MS / 1000
        while len(self.log.finished) <= (0 if fresh else before):
            if time.monotonic() > deadline:
                raise TimeoutError("no run finished within the time limit")
            self.page.wait_for_timeout(20)  # lets Playwright deliver websocket frames

    def measure(self, scenario: str, action: str, act: Callable[[], None], navigation: bool = False,
                trace: bool = False) -> Sample:
        """Do ``act`` (a click, or a navigation when ``navigation``) and measure it to figures painted.

        Stages inside the page use the page's clock (``performance.now()``); the others use the
        probe's ``time.monotonic()`` and DevTools' websocket timestamps, both Linux's
        CLOCK_MONOTONIC, so server and browser times compare directly."""
        since = 0.0 if navigation else self.page.evaluate("performance.now()")
        before, runs_before = len(self.log.finished), len(self.log.runs)
        sent_before = 0 if navigation else len(self.net_sent)
        self.probe.new()  # forget earlier records
        if trace:
            self.browser.start_tracing(page=self.page, categories=TRACE_CATEGORIES)
        events: list[dict] = []
        try:
            act()
            self._wait_finished(before, fresh=navigation)
            run = self.log.finished[0 if navigation else before]
            self.page.wait_for_function(PAINTED_JS, arg=[run.end_frame, since], polling="raf")
            page = self.page.evaluate(READ_JS, since)
        finally:
            if trace:
                events = load_trace(self.browser.stop_tracing())
        chain = self.log.runs[0 if navigation else runs_before:self.log.runs.index(run) + 1]
        start = 0.0 if navigation else page["inputs"][0]
        sent = next(t for t in page["sent"] if t >= start)
        last = page["received"][run.end_frame - 1]
        painted = next(t for t in page["quiet"] if t > max(since, last))
        board = next((t - start for t in page["boards"] if t >= start), float("nan"))
        records = self.probe.new()
        runs = [r for r in records if r["kind"] == "run"]
        first_start = min(r["start"] for r in runs) * 1000  # monotonic ms from here on
        last_end = max(r["end"] for r in runs) * 1000
        sent_net = self.net_sent[sent_before] * 1000
        written = max(r["end"] for r in records if r["kind"] == "send") * 1000
        arrived = self.net_received[run.end_frame - 1] * 1000  # DevTools: when the page's socket got it

        def probe_sum(key: str) -> float:
            return sum(r.get(key, 0.0) for r in runs) * 1000

        main = None
        offset = sync_offset_us(events, page["sync"]) if events else None
        if offset is not None:
            main = main_thread(events, start * 1000 + offset, painted * 1000 + offset)
        return Sample(scenario, action, trace, painted - start, board, sent - start, first_start - sent_net,
                      probe_sum("end") - probe_sum("start"), probe_sum("cpu"), probe_sum("engine"),
                      probe_sum("figures"), probe_sum("plotly_json"), probe_sum("arrow"),
                      sum(r["seconds"] for r in records if r["kind"] == "send") * 1000,
                      written - last_end, arrived - written, painted - last,
                      main.busy_ms if main else {}, main.long_tasks_ms if main else [], _group_bytes(chain))

    # -- the actions
    def open(self, path: str, params: dict[str, str]) -> None:
        """Go to the app (not measured) and wait for its first run to be painted."""
        self.page.goto(f"{self.server.url}{path}?{urlencode(params)}", wait_until="domcontentloaded")
        self.log.finished.clear()
        self._wait_finished(0, fresh=True)
        self.page.wait_for_function(PAINTED_JS, arg=[self.log.finished[0].end_frame, 0], polling="raf")



def measure_clicks(browser, server: StreamlitServer, probe: ProbeLog, name: str, scenario, step: int,
                   repeats: int) -> list[Sample]:
    """Every main control on one scenario: ``repeats`` untraced and ``repeats`` traced clicks each.
    Controls that go both ways (Step/Back, the two modes, d_k up/down, forward/back, the two
    pages) alternate, so the view stays where it started."""
    params = encode_view(View(scenario, step=step))
    visitor = Visitor(browser, server, probe)
    page = visitor.page
    main, sidebar = page.get_by_test_id("stMain"), page.get_by_test_id("stSidebar")
    samples: list[Sample] = []

    def both_ways(action: Callable[[int], tuple[str, object]]) -> None:
        for i in range(4 * repeats):  # pairs: untraced, untraced, traced, traced, ...
            label, target = action(i % 2)
            samples.append(visitor.measure(name, label, target.click, trace=(i // 2) % 2 == 1))

    try:
        visitor.open("/decode", params)
        both_ways(lambda way: (f"Decode: {('Step', 'Back')[way]}",
                               main.get_by_role("button", name=("Step", "Back")[way]).first))
        modes = ("recompute", "KV cache")  # the picker's labels
        both_ways(lambda way: ("Decode: mode switch",
                               page.locator(".st-key-decode_mode_picker button", has_text=modes[way]).first))
        # the panel builds its widgets only once open: opening it is a rerun of its own (one sample)
        samples.append(visitor.measure(name, "sidebar: open a panel (d_k and sampling)",
                                       sidebar.get_by_text("d_k and sampling").click))
        both_ways(lambda way: ("sidebar edit (d_k ±1)", sidebar.get_by_test_id("stNumberInput").filter(
            has_text="d_k").get_by_test_id(("stNumberInputStepUp", "stNumberInputStepDown")[way])))
        both_ways(lambda way: (f"page change → {('Prefill', 'Decode')[way]}", sidebar.get_by_test_id(
            "stSidebarNavLink").filter(has_text=("Prefill", "Decode")[way]).first))
        visitor.measure(name, "to Prefill", sidebar.get_by_test_id("stSidebarNavLink").filter(
            has_text="Prefill").first.click)  # not kept: the stepper is on Prefill
        both_ways(lambda way: ("Prefill: position stepper", page.locator(
            f".st-key-prefill_position_{('forward', 'back')[way]} button").first))
        for i in range(2 * repeats):  # Run moves on 8 steps; the link puts the step back (not measured)
            visitor.open("/decode", params)
            samples.append(visitor.measure(name, f"Decode: Run ({RUN_TOKENS} tokens)",
                                           main.get_by_role("button", name="Run").first.click, trace=i % 2 == 1))
    finally:
        visitor.close()
    return samples


# Streamlit's own first view on this machine, for comparison: the same server settings and theme,
# no navigation, no sidebar, two elements. Written to a temporary folder when the tool runs.
FLOOR_APP = ('import streamlit as st\n\nst.title("A two-line app")\n'
             'st.write("Streamlit\'s own first view on this machine, for comparison.")\n')


@dataclass(frozen=True)
class FirstView:
    """A page a new visitor opens: the row's scenario and action, the server, the path and query
    (the server's port is known once it has started)."""

    scenario: str
    action: str
    server: StreamlitServer
    path: str

    @property
    def url(self) -> str:
        return self.server.url + self.path


def first_views(server: StreamlitServer, chosen: dict[str, tuple[object, int]],
                floor: StreamlitServer | None = None) -> list[FirstView]:
    """A link to Decode and one to Prefill per scenario, Home (``/``, what the app opens without a
    link) and, with ``floor``, the two-line app."""
    views = []
    for name, (scenario, step) in chosen.items():
        view = encode_view(View(scenario, step=step))  # as the Copy link box gives it: at /, naming its page
        views += [FirstView(name, "first view of a Decode link", server, "/?" + urlencode({"page": "decode", **view})),
                  FirstView(name, "first view of a Prefill link", server, "/?" + urlencode({"page": "prefill", **view}))]
    views.append(FirstView("—", "first view of Home (new visitor)", server, "/"))
    if floor is not None:
        views.append(FirstView("—", FLOOR_ACTION, floor, "/"))
    return views


def visit_order(views: list, repeats: int) -> list[tuple[object, bool]]:
    """``2 × repeats`` rounds, each visiting every view once; the odd rounds are traced. Each pair of
    rounds goes once forward and once in reverse (forward, reverse, reverse, forward, ...), so the
    machine's drift and any advantage of going first fall evenly on all views. Returns (view,
    traced) pairs."""
    order = []
    for round_ in range(2 * repeats):
        order += [(view, round_ % 2 == 1) for view in (views[::-1] if round_ % 4 in (1, 2) else views)]
    return order


def measure_first_views(browser, probe: ProbeLog, views: list[FirstView], repeats: int) -> list[Sample]:
    """New visitors (fresh context, empty cache, warm server) opening each view, interleaved
    (:func:`visit_order`): ``repeats`` untraced and ``repeats`` traced visits of each."""
    samples = []
    for view, traced in visit_order(views, repeats):
        visitor = Visitor(browser, view.server, probe)
        try:
            samples.append(visitor.measure(view.scenario, view.action,
                                           lambda: visitor.page.goto(view.url, wait_until="commit"),
                                           navigation=True, trace=traced))
        finally:
            visitor.close()
    return samples


def run_paint(repeats: int = 5, names: tuple[str, ...] = ("seed", "large"), profile: Path | None = None,
              log_dir: Path = ROOT / "artifacts") -> list[Sample]:
    """Start a probed server and Chromium, warm the server, measure every action; with
    ``profile``, one more round while py-spy writes the server's samples (raw stacks) there."""
    from playwright.sync_api import sync_playwright

    if not CHROMIUM.exists():
        raise RuntimeError(MISSING)
    log_dir.mkdir(parents=True, exist_ok=True)
    probe_path = Path(tempfile.mkdtemp(prefix="kvlab-probe-")) / "probe.jsonl"
    server = StreamlitServer(log_dir / "paint-server.log",
                             env={"PYTHONPATH": os.pathsep.join(filter(None, [str(PROBE_SITE),
                                                                              os.environ.get("PYTHONPATH")])),
                                  "KVLAB_PROBE_LOG": str(probe_path)})
    floor_app = probe_path.parent / "floor.py"
    floor_app.write_text(FLOOR_APP, encoding="utf-8")
    floor = StreamlitServer(log_dir / "paint-floor.log", env=server.env, app=str(floor_app))
    chosen = {name: value for name, value in scenarios().items() if name in names}
    views = first_views(server, chosen, floor)
    samples: list[Sample] = []
    with server, floor, sync_playwright() as playwright:
        browser = playwright.chromium.launch(**launch_options())
        probe = ProbeLog(probe_path)
        try:
            for name, (scenario, step) in chosen.items():  # warm: imports, caches, first page builds
                measure_clicks(browser, server, probe, name, scenario, step, 1)
            measure_first_views(browser, probe, views, 1)
            for name, (scenario, step) in chosen.items():
                samples += measure_clicks(browser, server, probe, name, scenario, step, repeats)
            samples += measure_first_views(browser, probe, views, repeats)
            if profile:  # a round of its own, so the sampler's cost does not touch the timings above
                spy = _start_py_spy(server.pid, profile)
                try:
                    for name, (scenario, step) in chosen.items():
                        measure_clicks(browser, server, probe, name, scenario, step, max(1, repeats // 2))
                finally:
                    spy.send_signal(signal.SIGINT)
                    spy.wait(timeout=60)
        finally:
            browser.close()
    return samples


def _start_py_spy(pid: int, output: Path) -> subprocess.Popen:
    spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    if not Path(spy).exists():
        raise RuntimeError('py-spy is missing: pip install -e ".[profile]"')
    return subprocess.Popen([spy, "record", "--pid", str(pid), "--format", "raw", "--rate", "100",
                             "--output", str(output), "--nonblocking"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m viz.tools.paint", description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="clicks per action and scenario (1..50)")
    parser.add_argument("--scenarios", nargs="+", choices=("seed", "large"), default=["seed", "large"])
    parser.add_argument("--profile", help="also sample the server with py-spy; raw stacks to this file")
    parser.add_argument("--out", help="write every sample as JSON")
    parser.add_argument("--show", help="only print the tables of samples saved earlier with --out")
    args = parser.parse_args(argv)
    if args.show:
        try:
            samples = [Sample(**sample) for sample in json.loads(Path(args.show).read_text())]
        except (OSError, ValueError, TypeError) as err:
            print(f"error: cannot read {args.show}: {err}", file=sys.stderr)
            return 2
        print(render(summarise(samples)))
        if floor_ratios(samples):
            print("\n" + render_ratios(floor_ratios(samples)))
        return 0
    if not 1 <= args.repeats <= 50:
        print("error: --repeats must be 1..50", file=sys.stderr)
        return 2
    try:
        samples = run_paint(args.repeats, tuple(args.scenarios), Path(args.profile) if args.profile else None)
    except RuntimeError as err:
        print(f"error: {str(err).splitlines()[0]}", file=sys.stderr)
        return 2
    print(render(summarise(samples)))
    if floor_ratios(samples):
        print("\n" + render_ratios(floor_ratios(samples)))
    if args.profile:
        from .profile import render_profile
        print()
        print(render_profile(Path(args.profile)))
    if args.out:
        Path(args.out).write_text(json.dumps([asdict(s) for s in samples], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
