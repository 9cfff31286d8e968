"""What dominates the server's time: py-spy's raw samples (``py-spy record --format raw``) by kind
of work and by function, for ``python -m viz.tools.paint --profile``.

Each sample is one stack (root first). Its kind is decided by the innermost frame that belongs to
a known kind (leaf to root), so a JSON encoder called by Plotly counts as Plotly JSON, and
Streamlit's own frames count only where nothing more specific is running.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

# py-spy names a page script by its file alone: "<module> (decode.py:38)".
PAGE_SCRIPT = r"^<module> \(\w+\.py:\d+\)$"
PROJECT = re.compile(r"\((?:[^()]*/)?(?:viz|pages)/[^()]*:\d+\)$|" + PAGE_SCRIPT)
KINDS = (  # (kind, pattern on "function (file:line)"), tried in this order on each frame
    ("Plotly JSON encoding", re.compile(r"plotly/io/_json\.py")),
    ("Arrow encoding (tables)", re.compile(r"pyarrow/|dataframe_util\.py")),
    ("protobuf serialisation", re.compile(r"google/protobuf/|runtime_util\.py")),
    ("engine (viz/core, torch)", re.compile(r"viz/core/|torch/")),
    ("figure building (viz/figures, plotly)", re.compile(r"viz/figures/|plotly/")),
    ("pandas", re.compile(r"pandas/")),
    ("page and frame code (pages/, app.py, viz/ui)", re.compile(r"pages/|app\.py|viz/ui/|" + PAGE_SCRIPT)),
    ("Streamlit (commands, runtime, server)", re.compile(r"streamlit/|starlette/|uvicorn/|websockets/")),
)
# Leaf frames of a thread that waits (py-spy cannot always tell, e.g. a sleep in a container).
IDLE = re.compile(r"^(EpollSelector\.select|Condition\.wait|Event\.wait|Queue\.get|_worker|sleep|"
                  r"PollingPathWatcher\._schedule\.<locals>\.task) \(")
FRAME = re.compile(r"^(?P<function>.*) \((?P<file>[^()]*):(?P<line>\d+)\)$")


def read_samples(path: Path) -> list[tuple[list[str], int]]:
    """(frames root first, count) per line of py-spy's raw output."""
    samples = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        stack, _, count = line.rpartition(" ")
        if stack and count.isdigit():
            samples.append((stack.split(";"), int(count)))
    return samples


def kind_of(frames: list[str]) -> str:
    for frame in reversed(frames):
        for kind, pattern in KINDS:
            if pattern.search(frame):
                return kind
    return "other (interpreter, stdlib, idle waits)"


def _short(frame: str) -> str:
    match = FRAME.match(frame)
    if not match:
        return frame
    file = match["file"].split("site-packages/")[-1].split("/h13/")[-1]
    return f"{match['function']} ({file})"


def summarise(samples: list[tuple[list[str], int]], top: int = 12) -> dict:
    """Share of samples per kind, the top functions by own samples and by samples that include
    a frame of the project's (viz/, pages/, app.py)."""
    idle = sum(count for frames, count in samples if IDLE.match(frames[-1]))
    samples = [(frames, count) for frames, count in samples if not IDLE.match(frames[-1])]
    total = sum(count for _, count in samples) or 1
    kinds: Counter = Counter()
    own: Counter = Counter()
    project: Counter = Counter()
    for frames, count in samples:
        kinds[kind_of(frames)] += count
        own[_short(frames[-1])] += count
        for frame in set(frames):
            if PROJECT.search(frame) and "viz/tools/" not in frame:
                project[_short(frame)] += count
    return {"samples": total, "idle": idle, "kinds": [(k, c / total) for k, c in kinds.most_common()],
            "own": [(f, c / total) for f, c in own.most_common(top)],
            "project": [(f, c / total) for f, c in project.most_common(top)]}


def render_profile(path: Path) -> str:
    summary = summarise(read_samples(path))
    lines = [f"Server profile: {summary['samples']} busy samples (py-spy, all threads; {summary['idle']} samples "
             "of threads waiting in select, locks or sleep left out)", "",
             "| kind of work | share of samples |", "|---|---:|"]
    lines += [f"| {kind} | {share:.0%} |" for kind, share in summary["kinds"]]
    lines += ["", "| function (own time) | share |", "|---|---:|"]
    lines += [f"| {function} | {share:.1%} |" for function, share in summary["own"]]
    lines += ["", "| project function (inclusive) | share |", "|---|---:|"]
    lines += [f"| {function} | {share:.1%} |" for function, share in summary["project"]]
    return "\n".join(lines)
