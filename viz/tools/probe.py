"""Server-side timing for ``python -m viz.tools.paint``, inside a ``streamlit run`` it started.

The app is not changed: ``viz/tools/probe_site/sitecustomize.py`` calls :func:`install` at start-up
in a process started with that folder on ``PYTHONPATH`` and ``KVLAB_PROBE_LOG`` set, and nowhere
else. It wraps, by attribute, what a script run spends its time on and appends one JSON line per
script run (``kind: run``: wall and CPU seconds; inside it the engine (``viz.generate``, and
``viz.ui.runs.decode_traces``, which extends the decode runs kept in the session),
building figures and tables in ``viz.figures``, Plotly's JSON encoding of each chart and the
Arrow encoding of each table, the two ways an element is serialised before it is queued) and one
per run's messages written to the websocket (``kind: send``: protobuf serialisation seconds and
bytes, from Streamlit's ``serialize_forward_msg`` on the event loop), ending at its
``script_finished``. Times are ``time.monotonic()``, the clock Chromium's trace also uses on Linux.
"""

from __future__ import annotations

import functools
import json
import threading
import time
from collections import defaultdict
from typing import Any, Callable

_local = threading.local()  # the current script run's accumulators, per script thread
_lock = threading.Lock()
_path = ""
_send = {"seconds": 0.0, "bytes": 0, "messages": 0}  # messages serialised since the last script_finished


def _write(record: dict[str, Any]) -> None:
    with _lock, open(_path, "a", encoding="utf-8") as log:
        log.write(json.dumps(record) + "\n")


def _timed(bucket: str, fn: Callable) -> Callable:
    """``fn``, adding its time to ``bucket`` of the script run calling it (outermost calls only)."""

    @functools.wraps(fn)
    def timed(*args, **kwargs):
        totals = getattr(_local, "totals", None)
        depth = getattr(_local, "depth", None)
        if totals is None or depth[bucket]:
            return fn(*args, **kwargs)
        depth[bucket] += 1
        start = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            totals[bucket] += time.perf_counter() - start
            depth[bucket] -= 1

    return timed


def _wrap_module(module: Any, bucket: str) -> None:
    """Time every public function defined in ``module`` (called by attribute, as pages do)."""
    for name, value in list(vars(module).items()):
        if callable(value) and not name.startswith("_") and getattr(value, "__module__", "") == module.__name__ \
                and not isinstance(value, type):
            setattr(module, name, _timed(bucket, value))


def install(path: str) -> None:
    """Wrap the script runner, the engine, the figures and Streamlit's serialisers; log to ``path``."""
    global _path
    _path = path

    import plotly.io
    from streamlit import dataframe_util
    from streamlit.runtime import runtime_util
    from streamlit.runtime.scriptrunner import script_runner
    from streamlit.web.server.starlette import starlette_websocket

    import viz
    from viz.figures import base, cost, memory, real, toy
    from viz.ui import runs

    original_run = script_runner.ScriptRunner._run_script

    def run_script(self, rerun_data):
        _local.totals, _local.depth = defaultdict(float), defaultdict(int)
        start, cpu = time.monotonic(), time.thread_time()
        try:
            return original_run(self, rerun_data)
        finally:
            totals, _local.totals = _local.totals, None
            _write({"kind": "run", "start": start, "end": time.monotonic(), "cpu": time.thread_time() - cpu,
                    "fragment": bool(rerun_data.fragment_id_queue), **totals})

    script_runner.ScriptRunner._run_script = run_script
    plotly.io.to_json = _timed("plotly_json", plotly.io.to_json)
    for name in ("convert_anything_to_arrow_bytes", "convert_pandas_df_to_arrow_bytes"):
        setattr(dataframe_util, name, _timed("arrow", getattr(dataframe_util, name)))
    viz.generate = _timed("engine", viz.generate)  # Prefill's run
    runs.decode_traces = _timed("engine", runs.decode_traces)  # Decode's runs, kept across reruns
    for module in (toy, base, cost, memory, real):
        _wrap_module(module, "figures")

    original_serialize = runtime_util.serialize_forward_msg

    def serialize(msg):
        start = time.perf_counter()
        payload = original_serialize(msg)
        _send["seconds"] += time.perf_counter() - start
        _send["bytes"] += len(payload)
        _send["messages"] += 1
        if msg.WhichOneof("type") == "script_finished":
            _write({"kind": "send", "end": time.monotonic(), **_send})
            _send.update(seconds=0.0, bytes=0, messages=0)
        return payload

    runtime_util.serialize_forward_msg = serialize
    starlette_websocket.serialize_forward_msg = serialize
