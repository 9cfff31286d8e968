"""Streamlit's websocket protocol as kvlab's tests and tools read it, and when a run has finished.

The server sends protobuf ``ForwardMsg`` frames on ``/_stcore/stream``: a ``new_session`` opens
every script run (a whole-script run or a fragment's), ``delta`` messages carry its elements, and
a ``script_finished`` closes it. **A run has finished** when its ``script_finished`` arrives with
any status but ``FINISHED_EARLY_FOR_RERUN``: a run cut short because the script asked for a rerun
(``st.rerun()`` after an edit) is followed by the run that the visitor waits for, so it does not
count. A finished run succeeded when its status is ``FINISHED_SUCCESSFULLY`` or
``FINISHED_FRAGMENT_RUN_SUCCESSFULLY`` and it showed no exception element.

:class:`RunLog` follows one websocket from its frames (the browser tests feed it from Playwright,
the latency command from Chromium's DevTools protocol); :class:`ProtocolSession` is a visitor
without a browser, sending the ``BackMsg`` a browser sends for a click or a page change (the load
test and the cluster test use it). Both use :func:`ends_run`, the one definition above.
"""

from __future__ import annotations

import asyncio
import http.cookiejar
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Coroutine, Iterable

from google.protobuf.message import DecodeError
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.proto.WidgetStates_pb2 import WidgetState

from .server import STREAM_PATH

COMPLETE = (ForwardMsg.FINISHED_SUCCESSFULLY, ForwardMsg.FINISHED_FRAGMENT_RUN_SUCCESSFULLY)
SERVER_HEADER = "X-Kvlab-Server"  # set by the HAProxy cluster: which process answered
NO_XSRF_TOKEN = "PLACEHOLDER_AUTH_TOKEN"  # what Streamlit's own client sends before it has one


def parse(payload: bytes | str) -> ForwardMsg | None:
    """A frame as a ForwardMsg; None for a text frame or bytes that are not one."""
    if not isinstance(payload, (bytes, bytearray)):
        return None
    try:
        return ForwardMsg.FromString(bytes(payload))
    except DecodeError:
        return None


def ends_run(message: ForwardMsg) -> bool:
    """Whether this message closes a finished run (see the module docstring)."""
    return (message.WhichOneof("type") == "script_finished"
            and message.script_finished != ForwardMsg.FINISHED_EARLY_FOR_RERUN)


def kind(message: ForwardMsg) -> str:
    """What a message carries: an element's type ("plotly_chart", "arrow_data_frame", …), "block"
    for a layout block, else the message's own type ("new_session", "navigation", …)."""
    what = message.WhichOneof("type") or "empty"
    if what != "delta":
        return what
    delta = message.delta
    if delta.WhichOneof("type") == "new_element":
        return delta.new_element.WhichOneof("type") or "element"
    return "block" if delta.WhichOneof("type") == "add_block" else delta.WhichOneof("type") or "delta"


@dataclass(frozen=True)
class Button:
    """A button as the last run drew it: what a click must send back."""

    id: str
    fragment_id: str  # the fragment it was drawn in ("" if none): a click reruns only that fragment
    disabled: bool


@dataclass
class Run:
    """One script run (or fragment run) as its websocket showed it; times are arrival times."""

    run_id: str
    fragment: bool
    started_s: float  # its new_session arrived
    chain_started_s: float  # the first run since the previous finished one started (st.rerun chains)
    finished_s: float | None = None
    status: int | None = None
    end_frame: int = 0  # how many frames the websocket had delivered when its script_finished came
    bytes_by_kind: dict[str, int] = field(default_factory=dict)  # serialised size per element type
    messages: int = 0
    exceptions: list[str] = field(default_factory=list)

    @property
    def finished(self) -> bool:
        return self.status is not None and self.status != ForwardMsg.FINISHED_EARLY_FOR_RERUN

    @property
    def ok(self) -> bool:
        return self.status in COMPLETE and not self.exceptions

    @property
    def seconds(self) -> float:
        """From its new_session to its script_finished, as they arrived."""
        return (self.finished_s or self.started_s) - self.started_s

    @property
    def chain_seconds(self) -> float:
        return (self.finished_s or self.chain_started_s) - self.chain_started_s

    @property
    def total_bytes(self) -> int:
        return sum(self.bytes_by_kind.values())


class RunLog:
    """Every run reported on one websocket, fed frame by frame. ``finished`` holds the runs that
    finished (:func:`ends_run`), in order; ``runs`` every run, cut-short ones included."""

    def __init__(self) -> None:
        self.runs: list[Run] = []
        self.finished: list[Run] = []
        self.session_id = ""  # Streamlit's id for this session, from the first new_session
        self.page_hash = ""  # the page the last run showed
        self.pages: dict[str, str] = {}  # url path ("" for the default page) -> page script hash
        self.buttons: dict[str, Button] = {}  # by label and by key ("prefill_position_forward")
        self.query_string = ""  # the address bar's query, as the app last set it
        self.frames = 0  # frames fed so far
        self._current: Run | None = None
        self._chain_start: float | None = None

    def feed(self, payload: bytes | str, at: float | None = None) -> ForwardMsg | None:
        """Take one frame that arrived at ``at`` (seconds, any clock; now if None)."""
        self.frames += 1
        message = parse(payload)
        if message is None:
            return None
        at = time.monotonic() if at is None else at
        what = message.WhichOneof("type")
        if what == "new_session":
            if self._chain_start is None:
                self._chain_start = at
            self._current = Run(message.metadata.run.script_run_id, bool(message.metadata.run.fragment_ids),
                                at, self._chain_start)
            self.runs.append(self._current)
            self.session_id = message.new_session.initialize.session_id or self.session_id
            self.page_hash = message.new_session.page_script_hash
        elif what == "page_info_changed":
            self.query_string = message.page_info_changed.query_string
        elif what == "navigation":
            self.pages = {page.url_pathname: page.page_script_hash for page in message.navigation.app_pages}
            self.page_hash = message.navigation.page_script_hash or self.page_hash
        run = self._current
        if run is not None:
            run.messages += 1
            name = kind(message)
            run.bytes_by_kind[name] = run.bytes_by_kind.get(name, 0) + len(payload)
            element = message.delta.new_element if what == "delta" else None
            if element is not None and name == "button":
                button = Button(element.button.id, message.delta.fragment_id, element.button.disabled)
                key = button.id.split("-", 2)[-1]  # Streamlit's ids end with the widget's key
                self.buttons.update({element.button.label: button, key: button})
            elif element is not None and name == "exception":
                run.exceptions.append(element.exception.message[:200])
        if what == "script_finished" and run is not None:
            run.status, run.finished_s, run.end_frame = message.script_finished, at, self.frames
            if ends_run(message):
                self.finished.append(run)
                self._chain_start = None
            self._current = None
        return message


def run_in_thread(coroutine: Coroutine[Any, Any, Any]) -> Any:
    """Run a coroutine in its own event loop on its own thread and return its result, so that
    it also works where the calling thread already runs a loop (sync Playwright, Jupyter)."""
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="kvlab-protocol") as pool:
        return pool.submit(asyncio.run, coroutine).result()


def _cookie_opener() -> tuple[urllib.request.OpenerDirector, http.cookiejar.CookieJar]:
    jar = http.cookiejar.CookieJar()
    return urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar)), jar


class ProtocolSession:
    """A visitor without a browser: loads the page (keeping its cookies, as a browser does, which
    is what keeps it on its process behind a load balancer), opens the websocket and sends the
    messages a browser sends for a click or a page change.

    ``server`` is the process that answered, where a load balancer names it (``SERVER_HEADER``).
    """

    def __init__(self, base: str, timeout_s: float = 120.0):
        self.base = base.rstrip("/")
        self.timeout_s = timeout_s
        self.log = RunLog()
        self.server = ""
        self._opener, self._jar = _cookie_opener()
        self._socket = None

    @property
    def cookies(self) -> dict[str, str]:
        return {cookie.name: cookie.value for cookie in self._jar}

    def load_page(self, path: str = "/") -> str:
        """GET a page as a browser's first request does; returns the answering server's name."""
        with self._opener.open(self.base + path, timeout=self.timeout_s) as reply:
            reply.read()
            self.server = reply.headers.get(SERVER_HEADER, "")
        return self.server

    async def connect(self, resume: bool = False) -> None:
        """Open the websocket with the page's cookies; ``resume`` asks the server for the session
        this visitor had (as Streamlit's client does when it reconnects)."""
        import websockets

        protocols = ["streamlit", NO_XSRF_TOKEN] + ([self.log.session_id] if resume and self.log.session_id else [])
        cookie = "; ".join(f"{name}={value}" for name, value in self.cookies.items())
        self._socket = await websockets.connect(
            self.base.replace("http", "ws", 1) + STREAM_PATH, subprotocols=protocols, origin=self.base,
            additional_headers={"Cookie": cookie} if cookie else None, max_size=None,
            open_timeout=self.timeout_s)
        self.server = self._socket.response.headers.get(SERVER_HEADER, self.server)

    async def close(self) -> None:
        if self._socket is not None:
            await self._socket.close()
            self._socket = None

    async def rerun(self, widgets: Iterable[WidgetState] = (), page_hash: str | None = None,
                    fragment_id: str = "") -> Run:
        """Ask for a rerun (of ``page_hash``, else the current page; of one fragment if given) and
        return the run it caused once it has finished. Raises RuntimeError if it did not succeed."""
        message = BackMsg()
        message.rerun_script.query_string = self.log.query_string  # a browser sends its address bar
        message.rerun_script.page_script_hash = self.log.page_hash if page_hash is None else page_hash
        message.rerun_script.fragment_id = fragment_id
        message.rerun_script.widget_states.widgets.extend(widgets)
        before = len(self.log.finished)
        await self._socket.send(message.SerializeToString())
        while len(self.log.finished) == before:
            self.log.feed(await asyncio.wait_for(self._socket.recv(), self.timeout_s))
        run = self.log.finished[-1]
        if not run.ok:
            raise RuntimeError(f"the run did not succeed: status {run.status}, exceptions {run.exceptions}")
        return run

    def can_click(self, name: str) -> bool:
        """Whether the last run drew an enabled button with this label or key."""
        return name in self.log.buttons and not self.log.buttons[name].disabled

    async def click(self, name: str) -> Run:
        """Click the button with this label or key, as a browser does; the run it caused."""
        button = self.log.buttons[name]
        return await self.rerun([WidgetState(id=button.id, trigger_value=True)], fragment_id=button.fragment_id)

    async def open_link(self, query: str) -> Run:
        """Load the page and connect as a visitor following a share link at / (``page=decode&s=…``)
        does: its first run carries the link's query, as a browser's first message does."""
        await asyncio.to_thread(self.load_page)
        await self.connect()
        self.log.query_string = query
        return await self.rerun(page_hash="")

    async def open(self, path: str = "") -> Run:
        """Load the page, connect and run ``path``'s page ("" for the default), as a first visit does."""
        await asyncio.to_thread(self.load_page)
        await self.connect()
        run = await self.rerun(page_hash="")
        if path:
            run = await self.rerun(page_hash=self.log.pages[path])
        return run
