"""Scale-out: two app processes behind HAProxy (python -m viz.tools.cluster) keep every visitor on
their own process, across the websocket and a reconnect, and serve reruns without errors."""

from __future__ import annotations

import shutil
import subprocess
from urllib.parse import parse_qs

import pytest

from viz.tools.cluster import COOKIE, Cluster, haproxy_config
from viz.tools.loadtest import CLASS_LINK
from viz.tools.protocol import ProtocolSession, run_in_thread


def step_of(session: ProtocolSession) -> int:
    """The decode step the app wrote into this visitor's address bar."""
    return int(parse_qs(session.log.query_string).get("step", ["0"])[0])


def require_haproxy() -> None:
    if shutil.which("haproxy") is None:
        pytest.fail("haproxy is missing: run `apt-get install -y haproxy` (.ci/run does)", pytrace=False)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory) -> Cluster:
    """Two processes and HAProxy on free loopback ports, stopped after the module."""
    require_haproxy()
    with Cluster(2, workdir=tmp_path_factory.mktemp("cluster")) as started:
        yield started


def test_config_routes_by_cookie_and_checks_health(tmp_path):
    """The generated configuration inserts the affinity cookie, checks /_stcore/health, and haproxy accepts it."""
    require_haproxy()
    text = haproxy_config(8501, [("p1", 9001), ("p2", 9002)], tmp_path / "s.sock")
    assert f"cookie {COOKIE} insert" in text and "option httpchk GET /_stcore/health" in text
    assert "server p1 127.0.0.1:9001 cookie p1" in text and "timeout tunnel" in text
    config = tmp_path / "haproxy.cfg"
    config.write_text(text)
    check = subprocess.run(["haproxy", "-c", "-f", str(config)], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr


def test_visitors_stay_on_their_process_across_a_reconnect(cluster):
    """Four visitors spread over both processes; each keeps its process and its session (same id,
    same decode step) when its websocket closes and reconnects; every rerun succeeds (rerun raises if not)."""

    async def visit() -> list[tuple[str, str, str, str, int, int]]:
        visitors = []
        for _ in range(4):  # one after another, each keeping its websocket open, as a class arrives
            session = ProtocolSession(cluster.url)
            await session.open("decode")
            visitors.append(session)
        seen = []
        for session in visitors:
            first_server, first_id = session.server, session.log.session_id
            assert session.cookies[COOKIE] == first_server
            for _ in range(2):
                await session.click("Step")
            before = step_of(session)
            await session.close()
            await session.connect(resume=True)  # Streamlit's client reconnects with its session id
            await session.click("Step")
            seen.append((first_server, session.server, first_id, session.log.session_id, before,
                         step_of(session)))
            await session.close()
        return seen

    seen = run_in_thread(visit())  # a browser test may have left this thread running a loop
    assert {first for first, *_ in seen} == set(cluster.names)  # leastconn spread the class
    for first_server, server, first_id, session_id, before, after in seen:
        assert server == first_server  # the cookie kept the websocket and the reconnect on one process
        assert session_id == first_id  # that process still held the session ...
        assert (before, after) == (2, 3)  # ... with its state: the step went on from 2 to 3


def test_a_class_opening_the_teachers_link_gets_decode(cluster):
    """The load test's students open the teacher's share link (/?page=decode&s=…) as a browser does:
    they land on Decode, with its Step button, and the address bar holds the view without ``page``.
    Two runs per arriving visitor: with no private Streamlit API (issue 30) the link at / reaches its
    page through st.switch_page, which starts a second run (docs/performance.md)."""

    async def arrive() -> tuple[int, bool, bool, dict[str, list[str]]]:
        session = ProtocolSession(cluster.url)
        try:
            await session.open_link(CLASS_LINK)
            log = session.log
            return len(log.runs), log.page_hash == log.pages["decode"], session.can_click("Step"), \
                parse_qs(log.query_string)
        finally:
            await session.close()

    runs, on_decode, can_step, query = run_in_thread(arrive())
    assert (runs, on_decode, can_step) == (2, True, True)
    expected = parse_qs(CLASS_LINK)
    del expected["page"]
    assert query == expected
