"""Debian's ``redis-server`` on a free loopback port, for the class store's tests and load test.

Nothing is written to disk (no snapshots, no append-only file); the process is started and ended
like the app's servers (``viz.tools.server.spawn``), so it never outlives a killed test run.
"""

from __future__ import annotations

import socket
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from .server import ROOT, ServerError, free_port, log_tail, spawn, stop_process, wait_until

REDIS_SERVER = "/usr/bin/redis-server"


def _answers(port: int) -> bool:
    """Whether a Redis server on the loopback port answers PING with PONG."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1.0) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(16).startswith(b"+PONG")
    except OSError:
        return False


@dataclass
class RedisServer:
    log_path: Path = ROOT / "artifacts" / "redis-server.log"
    port: int = 0
    process: subprocess.Popen | None = field(default=None, init=False, repr=False)

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self, timeout_s: float = 20.0) -> "RedisServer":
        self.port = self.port or free_port()
        self.process = spawn([REDIS_SERVER, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
                              "--appendonly", "no", "--protected-mode", "yes"], self.log_path)
        if not wait_until(lambda: _answers(self.port), timeout_s, alive=lambda: self.process.poll() is None, poll_s=0.05):
            self.stop()
            raise ServerError(f"redis-server did not answer on port {self.port}.\n{log_tail(self.log_path)}")
        return self

    def stop(self) -> None:
        process, self.process = self.process, None
        stop_process(process)

    def __enter__(self) -> "RedisServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
