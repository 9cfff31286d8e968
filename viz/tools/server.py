"""One way to start the app for tests and tools: ``streamlit run app.py`` on a free loopback port.

:class:`StreamlitServer` runs the repository's app with its ``.streamlit/config.toml`` (plus a
loopback address, a free port, no file watcher, no usage statistics), waits until
``/_stcore/health`` answers, keeps the output in a log file and stops the process group, also
when the parent dies (Linux's parent-death signal), so no server outlives a killed test run.
The browser tests, the load test, the latency commands and the HAProxy cluster all start their
servers here. :func:`spawn` and :func:`stop_process` do the same for any other helper process
(HAProxy).
"""

from __future__ import annotations

import ctypes
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

ROOT = Path(__file__).resolve().parents[2]
HEALTH_PATH = "/_stcore/health"
STREAM_PATH = "/_stcore/stream"  # the app's websocket
START_TIMEOUT_S = 180.0  # a cold start imports torch, pandas and plotly on 2 shared cores
STOP_GRACE_S = 15.0
PR_SET_PDEATHSIG = 1  # prctl option: a signal for this process when its parent dies

try:  # looked up here, not in the forked child, where only the call itself is safe
    _prctl = ctypes.CDLL(None, use_errno=True).prctl  # the C library's, on Linux
except (OSError, AttributeError):
    _prctl = None


class ServerError(RuntimeError):
    """A server that did not start (the message quotes its log)."""


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port on ``host`` that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def is_healthy(url: str, timeout_s: float = 2.0) -> bool:
    """Whether ``url``'s Streamlit health endpoint answers 200 "ok"."""
    try:
        with urllib.request.urlopen(url + HEALTH_PATH, timeout=timeout_s) as reply:
            return reply.status == 200 and reply.read().strip() == b"ok"
    except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
        return False


def wait_until(ready: Callable[[], bool], timeout_s: float, alive: Callable[[], bool] = lambda: True,
               poll_s: float = 0.25) -> bool:
    """Poll ``ready`` until it holds (True), ``alive`` fails or the time is up (False). For
    waiting on another process, where there is no event to await."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not alive():
            return False
        if ready():
            return True
        time.sleep(poll_s)
    return False


def _die_with_parent() -> None:
    """In the child: SIGTERM when the parent dies, even by SIGKILL or `timeout`. Linux only."""
    if _prctl is not None:
        _prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def spawn(command: Sequence[str], log_path: Path, env: dict[str, str] | None = None,
          cwd: Path = ROOT) -> subprocess.Popen:
    """Start ``command`` in its own process group, output to ``log_path``, ending with its parent."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "wb") as log:
        return subprocess.Popen(list(command), cwd=cwd, stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True,
                                preexec_fn=_die_with_parent, env={**os.environ, **(env or {})})


def stop_process(process: subprocess.Popen | None, grace_s: float = STOP_GRACE_S,
                 sig: int = signal.SIGTERM) -> None:
    """End a process started by :func:`spawn` and everything in its group: ``sig``, then SIGKILL."""
    if process is None or process.poll() is not None:
        return
    try:
        os.killpg(process.pid, sig)
        process.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=grace_s)
    except ProcessLookupError:
        pass


def log_tail(path: Path, lines: int = 40) -> str:
    """The last lines of a log file, headed for quoting in an error."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return f"(no log at {path})"
    return f"--- {path.name} (tail) ---\n" + "\n".join(text.splitlines()[-lines:])


@dataclass
class StreamlitServer:
    """``streamlit run app.py`` on a free loopback port, its output kept in ``log_path``.

    ``command`` is how Streamlit is started (another environment's ``bin/streamlit`` works too);
    ``options`` adds ``--name value`` settings; ``env`` adds environment variables.
    """

    log_path: Path
    command: Sequence[str] = (sys.executable, "-m", "streamlit")
    options: dict[str, str] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    app: str = "app.py"
    port: int = 0
    process: subprocess.Popen | None = field(default=None, init=False, repr=False)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process else None

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def launch(self, port: int | None = None) -> None:
        """Start the process without waiting for it (see :meth:`wait_healthy`)."""
        self.port = port or free_port()
        settings = {"server.headless": "true", "server.address": "127.0.0.1", "server.port": str(self.port),
                    "browser.gatherUsageStats": "false", "server.fileWatcherType": "none",
                    "server.runOnSave": "false", **self.options}
        args = [arg for name, value in settings.items() for arg in (f"--{name}", value)]
        self.process = spawn([*self.command, "run", self.app, *args], self.log_path,
                             {"PYTHONUNBUFFERED": "1", "KVLAB_TORCH_THREADS": "1", **self.env})

    def wait_healthy(self, timeout_s: float = START_TIMEOUT_S) -> bool:
        return wait_until(lambda: is_healthy(self.url), timeout_s, alive=self.running)

    def start(self, attempts: int = 3, timeout_s: float = START_TIMEOUT_S) -> "StreamlitServer":
        """Start and wait for the health check; a port taken in the meantime gets another try."""
        for attempt in range(attempts):
            self.launch()
            if self.wait_healthy(timeout_s):
                return self
            self.stop()
            if attempt == attempts - 1 or "already in use" not in self.log_tail():
                break
        raise ServerError(f"streamlit run {self.app} did not become healthy within {timeout_s:.0f} s.\n"
                          f"{self.log_tail()}")

    def stop(self) -> None:
        """End the server's process group: politely, then by force."""
        process, self.process = self.process, None
        stop_process(process)

    def log_tail(self, lines: int = 40) -> str:
        """The last lines the server printed (uncaught exceptions land here)."""
        return log_tail(self.log_path, lines)

    def __enter__(self) -> "StreamlitServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
