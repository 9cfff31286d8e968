"""The browser half of ``python -m viz.tools.paint``: what the page records and Chromium's trace.

``WATCH_JS`` is added to every page before the app's own scripts. It notes, in the page's clock
(``performance.now()``), each user input, each message the app sends on its websocket and each one
it receives, and every **quiet frame**: an animation frame at which the app is connected and not
running, nothing is stale or loading, every Plotly chart has its SVG, and the DOM has not changed
since the previous frame. **Figures painted** is then the first quiet frame, confirmed by a second
one, after the page received the message that finished the run: from that frame on, the screen
shows the finished run. No fixed waits; one frame (about 17 ms) is the resolution.

:func:`main_thread` reads a Chromium trace (``browser.start_tracing``) and splits the renderer
main thread's time in a window into scripting, style, layout, paint, garbage collection and other
work, and lists the long tasks (over 50 ms), as the Performance panel of DevTools does.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field

TRACE_CATEGORIES = ["devtools.timeline", "disabled-by-default-devtools.timeline", "blink.user_timing",
                    "toplevel", "v8.execute"]
LONG_TASK_MS = 50.0
SYNC_MARK = "kvlab:sync"
BOARD_MARK = "kvlab:board"  # viz/ui/board.js marks each time it draws a lesson board

WATCH_JS = """
(() => {
  const w = window.__kvlab = {inputs: [], sent: [], received: [], quiet: [], changes: 0};
  for (const type of ['pointerdown', 'keydown'])
    window.addEventListener(type, e => w.inputs.push(e.timeStamp), true);
  const Native = window.WebSocket;
  window.WebSocket = class extends Native {
    constructor(...args) {
      super(...args);
      if (String(args[0]).includes('/_stcore/stream')) {
        this.addEventListener('message', () => w.received.push(performance.now()));
        const send = this.send.bind(this);
        this.send = data => { w.sent.push(performance.now()); return send(data); };
      }
    }
  };
  const ready = () => {
    const app = document.querySelector('[data-testid="stApp"]');
    if (!app || app.dataset.testConnectionState !== 'CONNECTED'
        || app.dataset.testScriptState !== 'notRunning') return false;
    if (document.querySelector('[data-stale="true"], [data-testid="stStatusWidget"], '
                               + '[data-testid="stSpinner"], [data-testid="stSkeleton"]')) return false;
    for (const chart of document.querySelectorAll('.js-plotly-plot'))
      if (!chart._fullLayout || !chart.querySelector('.main-svg')) return false;
    return true;
  };
  new MutationObserver(records => { w.changes += records.length; })
    .observe(document, {subtree: true, childList: true, attributes: true, characterData: true});
  const frame = now => {
    if (w.changes === 0 && ready()) w.quiet.push(now);
    w.changes = 0;
    requestAnimationFrame(frame);
  };
  requestAnimationFrame(frame);
})();
"""

# The page's record since ``since`` (performance.now() ms), and a user-timing mark to align clocks.
READ_JS = """since => {
  const w = window.__kvlab, after = list => list.filter(t => t >= since);
  performance.mark('""" + SYNC_MARK + """');
  const sync = performance.getEntriesByName('""" + SYNC_MARK + """').pop().startTime;
  performance.clearMarks('""" + SYNC_MARK + """');
  const boards = performance.getEntriesByName('""" + BOARD_MARK + """').map(e => e.startTime);
  performance.clearMarks('""" + BOARD_MARK + """');
  return {inputs: after(w.inputs), sent: after(w.sent), received: w.received, quiet: after(w.quiet),
          boards: after(boards), sync, now: performance.now()};
}"""

PAINTED_JS = """([count, since]) => {
  const w = window.__kvlab;
  if (w.received.length < count) return false;
  const after = w.quiet.filter(t => t > Math.max(since, w.received[count - 1]));
  return after.length >= 2;
}"""

SCRIPTING = {"FunctionCall", "EvaluateScript", "v8.compile", "v8.compileModule", "v8.evaluateModule",
             "TimerFire", "FireAnimationFrame", "EventDispatch", "RunMicrotasks", "v8.execute",
             "XHRReadyStateChange", "XHRLoad", "V8.Execute", "ParseHTML", "FireIdleCallback"}
STYLE = {"UpdateLayoutTree", "RecalculateStyles", "ParseAuthorStyleSheet", "ScheduleStyleRecalculation"}
LAYOUT = {"Layout", "UpdateLayerTree", "IntersectionObserverController::computeIntersections"}
PAINT = {"Paint", "PrePaint", "PaintImage", "Layerize", "Commit", "CompositeLayers", "UpdateLayer",
         "Decode Image", "ImageDecodeTask", "Rasterize", "RasterTask"}
GC = {"MinorGC", "MajorGC", "BlinkGC.AtomicPhase", "V8.GCScavenger", "V8.GCFinalizeMC", "V8.GC_MC_BACKGROUND",
      "ThreadState::performIdleLazySweep", "CppGC.AtomicPhase", "V8.GCIncrementalMarking"}
TOP_LEVEL = {"RunTask", "ThreadControllerImpl::RunTask", "ThreadPool_RunTask"}
GROUPS = ("scripting", "style", "layout", "paint", "gc", "other")


def group(name: str) -> str:
    """Which DevTools category a main-thread trace event's own time belongs to."""
    for label, names in (("scripting", SCRIPTING), ("style", STYLE), ("layout", LAYOUT), ("paint", PAINT),
                         ("gc", GC)):
        if name in names:
            return label
    return "gc" if "GC" in name else "other"


@dataclass
class MainThread:
    """The renderer main thread's time in a window, in ms."""

    busy_ms: dict[str, float] = field(default_factory=dict)  # by group: its events' own (self) time
    long_tasks_ms: list[float] = field(default_factory=list)  # tasks over LONG_TASK_MS

    @property
    def total_ms(self) -> float:
        return sum(self.busy_ms.values())


def load_trace(raw: bytes) -> list[dict]:
    data = json.loads(raw)
    return data["traceEvents"] if isinstance(data, dict) else data


def sync_offset_us(events: list[dict], sync_ms: float) -> float | None:
    """trace µs minus page ms × 1000, from the SYNC_MARK user-timing mark the page made at ``sync_ms``."""
    marks = [event["ts"] for event in events if event.get("name") == SYNC_MARK and "ts" in event]
    return marks[-1] - sync_ms * 1000 if marks else None


def renderer_main(events: list[dict]) -> tuple[int, int] | None:
    """(pid, tid) of the renderer main thread that made the SYNC_MARK (the app's page)."""
    pids = {event["pid"] for event in events if event.get("name") == SYNC_MARK}
    for event in events:
        if (event.get("ph") == "M" and event.get("name") == "thread_name" and event.get("pid") in pids
                and event.get("args", {}).get("name") == "CrRendererMain"):
            return event["pid"], event["tid"]
    return None


def main_thread(events: list[dict], start_us: float, end_us: float) -> MainThread:
    """Self time per group of the page's main thread between ``start_us`` and ``end_us``."""
    thread = renderer_main(events)
    result = MainThread({name: 0.0 for name in GROUPS})
    if thread is None:
        return result
    spans = sorted((event for event in events if (event.get("pid"), event.get("tid")) == thread
                    and event.get("ph") == "X" and "dur" in event),
                   key=lambda event: (event["ts"], -event["dur"]))
    own: dict[str, float] = defaultdict(float)
    stack: list[tuple[float, str]] = []  # (end, group) of the spans that contain the current one

    def clip(begin: float, end: float) -> float:
        return max(0.0, min(end, end_us) - max(begin, start_us))

    cursor = start_us
    for event in spans:
        begin, end = event["ts"], event["ts"] + event["dur"]
        while stack and stack[-1][0] <= begin:  # close the spans that ended before this one starts
            done_end, done_group = stack.pop()
            own[done_group] += clip(cursor, done_end)
            cursor = max(cursor, done_end)
        if stack:
            own[stack[-1][1]] += clip(cursor, begin)
        cursor = max(cursor, begin)
        name = event["name"]
        stack.append((end, "other" if name in TOP_LEVEL else group(name)))
        if name in TOP_LEVEL and event["dur"] / 1000 > LONG_TASK_MS and clip(begin, end) > 0:
            result.long_tasks_ms.append(event["dur"] / 1000)
    while stack:
        done_end, done_group = stack.pop()
        own[done_group] += clip(cursor, done_end)
        cursor = max(cursor, done_end)
    result.busy_ms.update({name: own.get(name, 0.0) / 1000 for name in GROUPS})
    return result
