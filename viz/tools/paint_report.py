"""The paint tool's samples and how they are summed up (:mod:`viz.tools.paint` measures them): one
:class:`Sample` per measured action, medians and spreads per action, each first view read against the
floor of its own round, and the Markdown tables the tool prints."""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field

FLOOR_ACTION = "first view of a two-line Streamlit app (the floor)"



@dataclass
class Sample:
    """One measured action, in ms (bytes in bytes). The stages add up to ``total`` (gaps aside)."""

    scenario: str
    action: str
    traced: bool  # Chromium's trace was recording (main_thread filled; the timings carry its overhead)
    total: float  # input (navigation start) -> figures painted
    board: float  # input -> the first lesson board drawn after it (nan: none), at the click when it had the step ahead
    browser_to_send: float  # input -> the app's websocket message sent
    send_to_server: float  # -> the server's script run starts (loopback, event loop, script thread)
    server_run: float  # the script run(s) the action caused, wall time (the probe)
    server_cpu: float
    engine: float
    figures: float
    plotly_json: float
    arrow: float
    protobuf: float  # serialising the run's messages (inside the next stage)
    to_socket: float  # server run ends -> its last message serialised for the socket (flush, protobuf)
    to_page: float  # -> the page's script receives it (loopback, and the page's busy main thread)
    last_message_to_painted: float  # -> figures painted
    main_thread: dict[str, float] = field(default_factory=dict)
    long_tasks: list[float] = field(default_factory=list)
    bytes_by_group: dict[str, int] = field(default_factory=dict)


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


COLUMNS = (("total", "input → painted"), ("board", "input → board drawn"), ("browser_to_send", "browser → send"),
           ("send_to_server", "send → server run"), ("server_run", "server run"), ("engine", "engine"),
           ("figures", "figures"), ("plotly_json", "Plotly JSON"), ("arrow", "Arrow"), ("protobuf", "protobuf"),
           ("to_socket", "run end → socket"), ("to_page", "socket → page"),
           ("last_message_to_painted", "last message → painted"))
MAIN_GROUPS = ("scripting", "style", "layout", "paint", "gc", "other")


def summarise(samples: list[Sample]) -> list[dict]:
    """Per scenario and action: medians and the spread (min–max) of the untraced samples' stages;
    the traced samples' main-thread time, long tasks; message sizes."""
    rows = []
    for scenario, action in dict.fromkeys((s.scenario, s.action) for s in samples):
        group = [s for s in samples if (s.scenario, s.action) == (scenario, action)]
        timed = [s for s in group if not s.traced] or group
        traced = [s for s in group if s.traced]
        row = {"scenario": scenario, "action": action, "n": len(timed)}
        for key, _ in COLUMNS:
            values = [v for v in (getattr(s, key) for s in timed) if v == v] or [float("nan")]  # nan: none
            row[key] = (_median(values), min(values), max(values))
        row["main_thread"] = {g: _median([s.main_thread.get(g, 0.0) for s in traced]) for g in MAIN_GROUPS}
        row["traced_total"] = _median([s.total for s in traced])
        row["long_tasks"] = _median([len(s.long_tasks) for s in traced])
        row["longest_task"] = _median([max(s.long_tasks, default=0.0) for s in traced])
        kinds = sorted({g for s in group for g in s.bytes_by_group})
        row["kb"] = {g: _median([s.bytes_by_group.get(g, 0) / 1024 for s in group]) for g in kinds}
        rows.append(row)
    return rows


def floor_ratios(samples: list[Sample]) -> dict[tuple[str, str], list[float]]:
    """Each first view's time over the floor's in the same round of :func:`visit_order` (untraced
    rounds), per (scenario, action): a ratio taken side by side, so the machine's drift over the run
    (load, the hour) falls on both its terms. Empty without the floor."""
    views = [s for s in samples if s.action.startswith("first view")]
    per_round = len(dict.fromkeys((s.scenario, s.action) for s in views))
    ratios: dict[tuple[str, str], list[float]] = {}
    for start in range(0, len(views) - per_round + 1, per_round):
        round_ = views[start:start + per_round]
        floor = next((s.total for s in round_ if s.action == FLOOR_ACTION), None)
        if floor is None or any(s.traced for s in round_):
            continue
        for s in round_:
            if s.action != FLOOR_ACTION:
                ratios.setdefault((s.scenario, s.action), []).append(s.total / floor)
    return ratios


def render_ratios(ratios: dict[tuple[str, str], list[float]]) -> str:
    """The paired ratios as a Markdown table: median and spread (min–max) over the rounds."""
    lines = ["| scenario | first view | × the floor, same round: median (min–max) | rounds |", "|---|---|---:|---:|"]
    for (scenario, action), values in ratios.items():
        lines.append(f"| {scenario} | {action} | {_median(values):.2f}× ({min(values):.2f}–{max(values):.2f}) "
                     f"| {len(values)} |")
    return "\n".join(lines)


def render(rows: list[dict]) -> str:
    """The summary as Markdown tables: the stages, then the browser's main thread and the bytes."""
    lines = ["| scenario | action | " + " | ".join(label for _, label in COLUMNS) + " |",
             "|---|---|" + "---:|" * len(COLUMNS)]
    for row in rows:
        cells = [("—" if row[key][0] != row[key][0] else f"{row[key][0]:.0f}")
                 + (f" ({row[key][1]:.0f}–{row[key][2]:.0f})" if key in ("total", "board") and row[key][0] == row[key][0] else "")
                 for key, _ in COLUMNS]
        lines.append(f"| {row['scenario']} | {row['action']} | " + " | ".join(cells) + " |")
    lines += ["", "| scenario | action | traced: input → painted | main thread: " + " / ".join(MAIN_GROUPS)
              + " (ms) | long tasks (> 50 ms): count, longest | message KB by kind |", "|---|---|---:|---|---|---|"]
    for row in rows:
        busy = " / ".join(f"{row['main_thread'][g]:.0f}" for g in MAIN_GROUPS)
        kb = ", ".join(f"{g} {v:.0f}" for g, v in sorted(row["kb"].items(), key=lambda kv: -kv[1]))
        lines.append(f"| {row['scenario']} | {row['action']} | {row['traced_total']:.0f} | {busy} | "
                     f"{row['long_tasks']:.0f}, {row['longest_task']:.0f} ms | {kb} |")
    return "\n".join(lines)
