"""Session state: the app-wide keys (and every key two modules share), the one shared scenario, and
URL <-> state sync.

Rules the pages rely on:

* ``scenario()`` is always valid. Edits go through :func:`update`, which keeps the last good
  scenario and records the message next to the field when an edit is refused.
* Editor widgets use :func:`widget_key`, which changes whenever the scenario changes, so every
  editor is rebuilt from the current scenario (a preset, an upload or another editor may have
  changed it) while a refused edit stays on screen for the person to fix.
* Everything lives in ``st.session_state``: per browser session, nothing shared between users.
"""

from __future__ import annotations

import logging
import os
import runpy
import re
from pathlib import Path
from typing import Any, Callable

import streamlit as st

from ..core.engine.model import MODES
from ..core.engine.presets import DEFAULT_PRESET, load_preset
from ..core.engine.scenario import MAX_DECODE_STEPS, Scenario, ScenarioError
from ..core.engine.share import LINK_PAGE, View, decode_view, encode_view, link_query

# The app-wide session-state keys, and every key two modules share, are spelled out here and only
# here. Each page declares its own keys once, in the block of constants at its top; the Streamlit
# layer's modules with state of their own (sidebar, classroom, runs) likewise at theirs.
# tests/test_layers.py fails on a key spelled out in two modules.
SCENARIO = "kv_scenario"
VERSION = "kv_version"
ERRORS = "kv_errors"
PROMPT_REFUSED = "kv_prompt_refused"  # (scenario version, text) of the prompt last refused
STEP = "kv_step"
MODE = "kv_mode"
PRESENTER = "kv_presenter"
PRESENTER_TOGGLE = "kv_w_presenter"  # the sidebar's Presenter mode switch (its widget key)
PRESENTER_SHOWN = "kv_presenter_shown"  # presenter mode as the last run drew it (presenter_turned)
NOTICES = "kv_notices"
HEAD = "kv_head"  # the head shown in detail (0-based), shared by the pages
POSITION = "kv_position"  # the Prefill page's query position (1-based)
PREFILL_POSITION = "prefill_position"  # the Prefill page's stepper; class mode puts a follower's position there
READY = "kv_ready"
FRAMED = "kv_framed"  # app.py is running the page now (set around page.run())
LAST_GOOD = "kv_last_good"  # the last view (scenario, step, mode) that a page drew to the end
GUARD_NOTICE = "kv_guard_notice"  # what the frame's guard tells the visitor on the next run
RUN_FAILED = "kv_run_failed"  # something failed during this run: do not remember it as good
LINK_DRAWN = "kv_link_drawn"  # this run drew the sidebar's Copy link box (a fragment, or app.py)
TOUR_STEP = "kv_tour_step"  # the guided tour's step (1-based), kept while other pages show; the tour's stepper key
LINK_TARGET = "kv_link_target"  # the page a link opened at / asks for (asked once, by app.py)
TOUR_CHOICES = "tour_choices"  # {question index: the option chosen when it was revealed (None: no vote)}
PAGE_LIST = "kv_page_list"  # app.py's st.Page objects, made on a session's first run (each resolves its file)
CLASS_PARAMS = "kv_class_params"  # the address bar's place in a class (viz.ui.classroom): kept across reloads


def public_host() -> bool:
    """KVLAB_PUBLIC=1 marks a shared, public deployment: nothing a visitor types may name a file or
    folder on the server (the Real model page then offers only the shipped model)."""
    return os.environ.get("KVLAB_PUBLIC", "").strip().lower() in ("1", "true", "yes")


def require_frame() -> None:
    """Run at the top of every page: pages only work inside app.py's frame.

    Until some session has called ``st.navigation``, Streamlit treats a ``pages/`` folder beside the
    main script as pages of its own and may run one alone (a first visitor landing on /decode; every
    AppTest run). Then app.py runs here, in the same run: its ``st.navigation`` picks this page (each
    url path is the file's name) and runs it inside the frame, and the run ends after it. The same
    run keeps the visitor's click: a rerun would lose a button's press.
    """
    if not st.session_state.get(FRAMED):
        runpy.run_path(str(APP), run_name="__main__")
        st.stop()


APP = Path(__file__).resolve().parents[2] / "app.py"  # the main script: the router and the frame


def framed(run: Callable[[], None]) -> None:
    """Run a page (``page.run``) as app.py's frame does: :func:`require_frame` lets it through."""
    st.session_state[FRAMED] = True
    try:
        run()
    finally:
        st.session_state[FRAMED] = False


def bound(key: str, value: Any, on_change: Callable[[Any], None]) -> dict:
    """A widget that shows ``value``, which lives elsewhere in the session (a step, a head, the
    presenter flag), and hands the visitor's change to ``on_change`` before the rerun it starts:
    the ``key`` and ``on_change`` to pass to the widget. Set before the widget is drawn, so the
    widget shows what the app decided, not what it held.

    Only a value other than the one drawn is a change. A browser can send a widget's last value
    again after the app stopped drawing it (a poll's request made before the browser dropped the
    widget), when the server has already forgotten that value: Streamlit then calls it a change.
    Taken as one, it moved a student who had just gone back to the teacher's view to their own old
    step, exploring (Decode's timeline, hidden while following, sent again at the step they left)."""
    st.session_state[key] = value

    def changed() -> None:
        picked = st.session_state[key]
        if picked != value:
            on_change(picked)

    return {"key": key, "on_change": changed}


def init(url_path: str, pages: frozenset[str]) -> None:
    """First run of a session: restore the view from the URL, else the seed preset. ``url_path`` is
    the page the visit opened at; ``pages`` the url paths a link may name (every page but Home)."""
    if st.session_state.get(READY):
        return
    params = _address_query()
    view, problems = decode_view(params, load_preset(DEFAULT_PRESET))
    st.session_state[LINK_TARGET] = _link_target(url_path, params, pages, problems)
    st.session_state[SCENARIO] = view.scenario
    st.session_state[VERSION] = 0
    st.session_state[ERRORS] = {}
    st.session_state[STEP] = view.step
    st.session_state[MODE] = view.mode
    st.session_state[PRESENTER] = view.presenter
    st.session_state[HEAD] = view.head
    st.session_state[POSITION] = view.position
    st.session_state[TOUR_STEP] = view.tour
    st.session_state[NOTICES] = problems
    st.session_state[READY] = True


def _address_query() -> dict[str, str]:
    """The query parameters the address bar holds now (the last value of a repeated key)."""
    return {key: st.query_params.get(key, "") for key in st.query_params.keys()}


def scenario() -> Scenario:
    return st.session_state[SCENARIO]


def version() -> int:
    return st.session_state[VERSION]


def widget_key(name: str) -> str:
    """A key for an editor widget, renewed whenever the scenario changes."""
    return f"kv_w_{name}_{version()}"


def set_scenario(new: Scenario) -> None:
    """Replace the scenario (already valid), clear field errors, keep the step in range."""
    if new != st.session_state[SCENARIO]:
        st.session_state[SCENARIO] = new
        st.session_state[VERSION] += 1
    st.session_state[ERRORS] = {}


EDIT_FAILED = "This edit could not be applied (a fault in kvlab, written to the server log)."


def try_edit(field: str, build: Callable[[], Scenario]) -> bool:
    """Try an edit: on success the scenario changes (True); on failure the message is kept for
    ``field`` and the last good scenario stays in force (False)."""
    try:
        new = build()
    except ScenarioError as err:
        st.session_state[ERRORS] = {**st.session_state[ERRORS], field: _readable(err)}
        return False
    except Exception:  # a fault of kvlab's (an edit can run as a callback, before the frame's guard)
        logging.getLogger("kvlab.app").exception("an edit of the %s failed", field)
        st.session_state[ERRORS] = {**st.session_state[ERRORS], field: EDIT_FAILED}
        return False
    set_scenario(new)
    return True


def update(field: str, build: Callable[[], Scenario]) -> None:
    """:func:`try_edit` from the script: on success it reruns, so every editor is drawn again from
    the new scenario (under renewed keys)."""
    if try_edit(field, build):
        st.rerun()


def _readable(err: ScenarioError) -> str:
    """'heads[1].rule: …' reads as 'heads, row 2, rule: …' (tables count rows from 1)."""
    match = re.fullmatch(r"(\w+)\[(\d+)\]\.?(.*)", err.path)
    if not match:
        return str(err)
    table, index, rest = match.groups()
    where = f"{table}, row {int(index) + 1}" + (f", {rest}" if rest else "")
    return f"{where}: {err.message}"


def error(field: str) -> str | None:
    return st.session_state[ERRORS].get(field)


FIELD_NAMES = {"prompt": "prompt", "tokens": "tokens", "heads": "heads (their rules)",
               "vocab": "vocabulary", "sampling": "sampling settings", "upload": "scenario file"}


def refused_edits() -> list[str]:
    """What the refused edits were about, in words (empty when every edit applied)."""
    return [FIELD_NAMES.get(field, field) for field in st.session_state[ERRORS]]


def clear_error(field: str) -> None:
    st.session_state[ERRORS] = {k: v for k, v in st.session_state[ERRORS].items() if k != field}


def step() -> int:
    """Generated tokens shown on the Decode page (0 = right after prefill)."""
    return st.session_state[STEP]


def set_step(value: int) -> None:
    st.session_state[STEP] = max(0, min(MAX_DECODE_STEPS, int(value)))


def step_after(tokens: int) -> int:
    """The Decode step ``tokens`` tokens on from the one shown (set_step keeps it in range)."""
    return step() + tokens


def mode() -> str:
    return st.session_state[MODE]


def set_mode(value: str) -> None:
    if value in MODES:
        st.session_state[MODE] = value


def presenter() -> bool:
    return st.session_state[PRESENTER]


def presenter_turned() -> bool:
    """Whether presenter mode turned on or off since the last run (or a session opens in it): the run
    that folds or unfolds the sidebar (:func:`viz.ui.board.fold_sidebar`). Call once per run."""
    now, was = presenter(), st.session_state.get(PRESENTER_SHOWN)
    st.session_state[PRESENTER_SHOWN] = now
    return now if was is None else now != was


def set_presenter(value: bool) -> None:
    """Presenter mode on or off (its first line says how the folded sidebar opens again:
    :func:`viz.ui.common.page_lead`)."""
    st.session_state[PRESENTER] = bool(value)


def notices() -> list[str]:
    """Messages about a share link that could not be fully restored."""
    return st.session_state[NOTICES]


def add_head(name: str, rule: str) -> None:
    """Add a head to the toy scenario (e.g. a rule found in a real model); reruns on success."""
    update("heads", lambda: scenario().with_head_added(name, rule))


def head() -> int:
    """The head shown in detail, 0-based, kept within the current scenario's heads."""
    return min(max(int(st.session_state.get(HEAD, 0)), 0), len(scenario().heads) - 1)


def set_head(index: int) -> None:
    st.session_state[HEAD] = min(max(int(index), 0), len(scenario().heads) - 1)


def position() -> int:
    """The Prefill page's query position, 1-based, kept within the current prompt."""
    return min(max(int(st.session_state.get(POSITION, 1)), 1), len(scenario().tokens))


def set_position(value: int) -> None:
    st.session_state[POSITION] = min(max(int(value), 1), len(scenario().tokens))


def tour_step() -> int:
    """The guided tour's step, 1-based (the tour page keeps it in range)."""
    return max(int(st.session_state.get(TOUR_STEP, 1)), 1)


def tour_choices() -> dict[int, str | None]:
    """The tour's revealed questions and what was chosen for each before Reveal."""
    return st.session_state.setdefault(TOUR_CHOICES, {})


def reveal(index: int, choice: str | None) -> None:
    """Reveal a tour question; the choice made before Reveal is recorded and no longer changes."""
    tour_choices().setdefault(index, choice)


def forget_choices() -> None:
    """Start the tour's questions afresh (nothing revealed, no choices)."""
    st.session_state[TOUR_CHOICES] = {}


def current_view() -> View:
    return View(scenario(), step(), mode(), presenter(), head(), position(), tour_step())


HOME_PATH = ""  # the home page's url path: it shows no view, so its address carries none
VIEW_KEYS = ("s", "step", "mode", "head", "pos")  # an old link at / with any of these meant Prefill


def url_params(url_path: str | None = None) -> dict[str, str]:
    """The query parameters of the current view on the page at ``url_path`` (None: a page that
    shows the view, e.g. from inside a page's fragment)."""
    view = {} if url_path == HOME_PATH else encode_view(current_view())
    return {**view, **st.session_state.get(CLASS_PARAMS, {})}


def link_params(url_path: str) -> dict[str, str]:
    """The query of a share link to the page at ``url_path``. A share link opens at / and names its
    page (``page=decode``): a new visitor's browser then connects at its first try, where a link to
    /decode first looks for Streamlit under /decode/, is refused and tries / a tenth of a second
    later. The address bar's own form (/decode?…) opens the same view."""
    return {} if url_path == HOME_PATH else link_query(url_path, current_view())


def _link_target(url_path: str, params: dict[str, str], pages: frozenset[str], problems: list[str]) -> str:
    """The page a first visit asks for: a link at / names it (``page``), and a link made before the
    home page (/ with a view in it, when / was Prefill) means Prefill; "" stays where it opened. A
    page kvlab does not have is a notice, and the link opens where it points."""
    if url_path != HOME_PATH:
        return ""
    asked = params.get(LINK_PAGE, "").strip().lower()  # typed by hand, as "Decode", it still counts
    if asked:
        if asked in pages:
            return asked
        problems.append(f"this link names no page of kvlab (use one of {', '.join(sorted(pages))})")
        return ""
    return "prefill" if any(key in params for key in VIEW_KEYS) else ""


def link_target() -> str:
    """The page this session's link asked for, once: app.py switches to it (``st.switch_page``) after
    ``st.navigation``; later visits to / stay home."""
    return st.session_state.pop(LINK_TARGET, "")


def sync_url(url_path: str | None = None) -> None:
    """Write the current view into the URL, so the address bar is always a share link.

    Compared with what the address bar holds now, not with what was written last: a page change
    in the navigation clears the query parameters, and they must come back at once.
    """
    params = url_params(url_path)
    shown = _address_query()
    if shown != params:
        st.query_params.from_dict(params)
