"""Class mode's store as the app reaches it, and the links it makes (a class's join and teacher
links, short links to a view).

:func:`store_call` is the one way the Streamlit layer calls the class store (``viz.core.classroom``):
a refusal, or a store that is down, becomes a message kept under :data:`PROBLEM` for the bar above
the page (``viz.ui.classroom``), never an exception. :func:`short_link` is the sidebar's "Make a
short link" (a ``/?v=<code>`` link to exactly this view; ``viz.ui.classroom.open_short_link`` opens
one).
"""

from __future__ import annotations

import logging
from urllib.parse import urlencode, urlsplit, urlunsplit

import streamlit as st

from ..core.classroom import ClassError, ClassStore, StoreUnavailable, open_store, store_address
from . import state

PROBLEM = "kv_class_problem"  # a refusal to show once, above the page
SHORT = "kv_class_short"  # (the view's query, its short link), the last one made
SHORT_MADE = "kv_class_short_made"  # short links this session made (a flood stops at SHORT_LIMIT)
SHORT_LIMIT = 20

log = logging.getLogger("kvlab.app")


def store() -> ClassStore:
    """The class store this server is configured for (``store_address``), opened once per process."""
    return _opened(store_address())


@st.cache_resource(show_spinner=False)
def _opened(address: str) -> ClassStore:
    """One store per process and address (an opening that fails is not kept: the next call tries again)."""
    return open_store(address)


def store_call(work, where: str = ""):
    """``work(store)``, or None with its refusal kept for the bar (a down store included)."""
    try:
        return work(store())
    except StoreUnavailable as err:
        log.warning("class store: %s", err)
        st.session_state[PROBLEM] = f"{where}{err}"
        return None
    except ClassError as err:
        st.session_state[PROBLEM] = f"{where}{err}"
        return None


def base_url() -> str:
    """The app's own address (its base path included), as the visitor reached it."""
    parts = urlsplit(st.context.url or "http://localhost/")
    base_path = (st.get_option("server.baseUrlPath") or "").strip("/")
    return urlunsplit((parts.scheme, parts.netloc, f"/{base_path}/" if base_path else "/", "", ""))


def link(params: dict[str, str]) -> str:
    """A link to the app with these query parameters."""
    return f"{base_url()}?{urlencode(params)}"


def short_link(url_path: str) -> None:
    """The sidebar's short link to this view (made on request, kept for as long as the store keeps it)."""
    if url_path == state.HOME_PATH:  # Home shows no view
        return
    shown_now = (url_path, state.current_view())  # compared, not encoded: the link box encodes it already
    held = st.session_state.get(SHORT)
    if held and held[0] == shown_now:
        st.sidebar.code(held[1], language=None, wrap_lines=True)
        return

    def make() -> None:
        query = state.link_params(url_path)
        made = st.session_state.get(SHORT_MADE, 0)
        if made >= SHORT_LIMIT:
            st.session_state[PROBLEM] = f"Short links: this session has made {SHORT_LIMIT}, its limit."
            return
        code = store_call(lambda store: store.shorten(query), "Short link: ")
        if code:
            st.session_state[SHORT_MADE] = made + 1
            st.session_state[SHORT] = (shown_now, link({"v": code}))

    st.sidebar.button("Make a short link", on_click=make, key="kv_class_shorten", icon=":material/link:",
                      help="A short /?v= link to exactly this view, for a slide or a course page.")
