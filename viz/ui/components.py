"""kvlab's small custom components (Streamlit custom components v2: no iframe, the script runs
in the page and writes visitor text with ``textContent`` only).

* the **lesson board** draws the lesson screen's figures from the specs of :mod:`viz.figures.board`,
  so a Step repaints in milliseconds instead of replotting three Plotly charts;
* the **copy link** box shows the link to this view in a read-only field with a Copy button
  (``st.code`` would load a syntax highlighter on every first view, about a third of a second of
  scripting, for one line of plain text);
* the **text field** is a labelled one-line input (the sidebar's prompt: Streamlit's text input
  loads a script of its own, about a tenth of a second of a first view);
* the **page style** holds the frame's CSS (``st.html`` loads an HTML sanitiser and a script of
  its own on every first view, for one style element);
* the **plain table** draws a small read-only table as an HTML ``<table>`` from
  :func:`viz.figures.base.plain_table` (Streamlit's data grid loads about 1.5 MB of script on a first
  view, and draws on a canvas that screen readers cannot read), and a **stats row** (labelled
  figures with their change, what ``st.metric`` showed) as a description list from
  :func:`viz.figures.base.stats_row`: one script for both, where every kind of Streamlit element
  loads its own on the first view that shows one;
* the **range** is a labelled ``<input type="range">`` that sends each move as a trigger (Streamlit's
  own sliders bring a script chunk of their own to a first view, 60 to 150 ms on a small machine);
* the **choice** (a row of pill buttons, one of N) and the **switch** (on/off), one script for both,
  in place of ``st.segmented_control``, ``st.pills`` and ``st.toggle``: each of Streamlit's baseui
  widgets costs about 20 to 25 ms of main-thread work on a first view.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from pathlib import Path

import streamlit as st

from ..figures.base import Stat, plain_table, stats_row
from . import state

_HERE = Path(__file__).resolve().parent
DRAWS = "kv_board_draws"  # boards drawn in this session


def _read(name: str) -> str:
    return (_HERE / name).read_text(encoding="utf-8")


def _component(name: str, css: bool = True, **options) -> Callable[..., object]:
    """Register ``viz/ui/<name>.js`` (and ``<name>.css``) as the component ``kvlab_<name>``; the
    returned mount sends its ``data`` payload as the one item of a list, which each script reads as
    ``data[0]``. Streamlit checks every top-level value of a dict for a dataframe, with
    typing-protocol checks that cost about half a millisecond per component per run on this machine
    (a lesson view draws about fifteen); a list goes through as plain JSON."""
    mount = st.components.v2.component(f"kvlab_{name}", js=_read(f"{name}.js"),
                                       css=_read(f"{name}.css") if css else None, **options)

    def send(*, data: dict, **kwargs) -> object:
        return mount(data=[data], **kwargs)
    return send


_board, _table, _copy_link, _field, _range, _choice = (
    _component(name) for name in ("board", "table", "copy_link", "field", "range", "choice"))
SESSION_MARK = "kv_component_session"  # this session's mark, sent with each range, choice and switch
# not in a shadow root: its style element applies to the whole page
_style = _component("style", css=False, isolate_styles=False)


def board(spec: dict, key: str, turns: list[dict] = ()) -> None:
    """Draw one spec (a matrix or bars) at full width; larger type in presenter mode. Each of
    ``turns`` ({"selector": a button's CSS selector, "key": a keyboard key, "spec"}) is drawn the
    moment that button is clicked or that key pressed, before the rerun the click starts has
    answered (it brings the same spec)."""
    # a new number on every draw: the browser redraws the board from this run's data even when the
    # spec is unchanged (over a frame the board drew at a click, should the server have answered otherwise)
    st.session_state[DRAWS] = st.session_state.get(DRAWS, 0) + 1
    _board(key=key, data={**spec, "presenter": state.presenter(), "turns": list(turns),
                          "draw": st.session_state[DRAWS]}, width="stretch", height="content")


def copy_link(link: str, label: str, key: str = "kv_copy_link") -> None:
    """A read-only field holding ``link`` (selectable, named ``label`` for screen readers) and a
    Copy button that puts it on the clipboard."""
    _copy_link(key=key, data={"link": link, "label": label}, width="stretch", height="content")


def table(rows, label: str, key: str) -> None:
    """A small read-only table (a DataFrame, or a dict of columns) at full width, every cell as text;
    ``label`` names it for screen readers. For tables of a few dozen rows: longer ones, which need
    scrolling, sorting or download, stay ``st.dataframe``."""
    _plain(plain_table(rows, label), key)


def stats(items: list[Stat], label: str, key: str) -> None:
    """A row of labelled figures at full width (each with its change and help, if any), wrapping on
    a narrow screen; ``label`` names the row for screen readers. Drawn by the plain table's script."""
    _plain(stats_row(items, label), key)


def _plain(spec: dict, key: str) -> None:
    """Draw a plain table or a stats row (the same component), larger in presenter mode."""
    _table(key=key, data={**spec, "presenter": state.presenter()}, width="stretch", height="content")


def slider(key: str, value: int, low: int, high: int, label: str, on_move: Callable[[int], None], *,
           format_label: Callable[[int], str] = str, help: str | None = None, inline: bool = False,
           width: int | str = "stretch") -> None:
    """A range from ``low`` to ``high`` (step 1) showing ``value``, the value this run decided: its
    label, ``format_label(value)`` as text (also what a screen reader says for it) and the track.
    Each move the visitor makes (a release, a key) calls ``on_move`` with the value moved to, clamped
    to the range this run drew, before the rerun it starts; a move to a value seen before counts too.
    Each move carries the browser's count of moves; the range shows ``value`` once the server has
    handled the latest (keys pressed faster than the reruns leave the thumb where the visitor put it).
    ``inline``: for a row of controls, the label for screen readers only and the value's text after
    the track. Disabled when ``low == high``. Labels are plain text (the range writes them as text)."""
    def moved() -> None:
        move = st.session_state[key].get("moved")  # the trigger's payload, as the browser sent it
        if not isinstance(move, dict):
            return
        _handled(f"{key}__seen", move.get("seq"))
        to = move.get("to")
        if _whole(to):
            on_move(min(max(to, low), high))

    _range(key=key, data={"label": label, "help": help, "min": low, "max": high, "value": value, **_sync(key),
                          "labels": [format_label(v) for v in range(low, high + 1)], "inline": inline,
                          "presenter": state.presenter()},
           on_moved_change=moved, width=width, height="content")


def _sync(key: str) -> dict:
    """What a range, choice or switch needs to tell its visitor's moves from the server's answers:
    the number of the latest move this session handled, and the session's mark (a page kept open
    across a new session, after a reconnect, counts its moves from that session's number again)."""
    if SESSION_MARK not in st.session_state:  # once per session, not on every control of every run
        st.session_state[SESSION_MARK] = secrets.token_hex(8)
    return {"seen": st.session_state.get(f"{key}__seen", 0), "session": st.session_state[SESSION_MARK]}


def _whole(value) -> bool:
    """A whole number as JSON sends one (not a bool, which Python counts as an int)."""
    return isinstance(value, int) and not isinstance(value, bool)


def _handled(seen: str, seq) -> bool:
    """Count a trigger's number (``seq``) as handled under ``seen``; False when it is not a number."""
    if not _whole(seq):
        return False
    st.session_state[seen] = max(st.session_state.get(seen, 0), seq)
    return True


def _payload(key: str, event: str) -> dict | None:
    """A choice's or switch's trigger, as the browser sent it, once its number is counted (None: not
    a dict with a whole ``seq``, which is ignored)."""
    sent = st.session_state[key].get(event)
    return sent if isinstance(sent, dict) and _handled(f"{key}__seen", sent.get("seq")) else None


def choice(key: str, options: list[str], value: int, label: str, on_pick: Callable[[int], None], *,
           help: str | None = None, label_visible: bool = False, arrows_pick: bool = True,
           width: int | str = "content") -> None:
    """A row of pill buttons (one of ``options``, plain text), ``options[value]`` chosen, wrapping on
    a narrow screen; ``label`` names the group (shown above it when ``label_visible``). A click (or
    an arrow key inside the row, unless ``arrows_pick`` is False: then arrows move the focus only, for
    a pick that costs something, and Enter or Space picks) calls ``on_pick`` with the index picked,
    before the rerun it starts; anything else the browser might send is ignored."""
    def picked() -> None:
        pick = _payload(key, "picked")
        index = pick.get("index") if pick else None
        if _whole(index) and 0 <= index < len(options):
            on_pick(index)

    _choice(key=key, data={"kind": "choice", "label": label, "help": help, "options": [str(o) for o in options],
                           "value": value, "label_visible": label_visible, "arrows_pick": arrows_pick,
                           **_sync(key), "presenter": state.presenter()},
            on_picked_change=picked, width=width, height="content")


def switch(key: str, value: bool, label: str, on_flip: Callable[[bool], None], *, help: str | None = None) -> None:
    """An on/off switch showing ``value`` with its label beside it; a click calls ``on_flip`` with
    the new value, before the rerun it starts (anything but a bool is ignored)."""
    def flipped() -> None:
        flip = _payload(key, "flipped")
        if flip and isinstance(flip.get("on"), bool):
            on_flip(flip["on"])

    _choice(key=key, data={"kind": "switch", "label": label, "help": help, "value": bool(value), **_sync(key),
                           "presenter": state.presenter()},
            on_flipped_change=flipped, width="content", height="content")


def text_field(label: str, value: str, key: str, on_send: Callable[[str], None], *, max_chars: int,
               help: str = "", error: str | None = None) -> None:
    """A one-line text field showing ``value`` (at most ``max_chars`` characters can be typed), with
    ``help`` written under it. When the visitor sends a text (Enter, or leaving the field after a
    change), ``on_send(text)`` runs as a callback, before the script, which then draws the outcome.
    ``error``: the message of a refused text, drawn below the field by the caller; the field is then
    marked invalid and reads the message out."""
    def sent() -> None:
        text = st.session_state[key].get("submitted")  # the trigger's payload, as the browser sent it
        if isinstance(text, str):
            on_send(text)

    _field(key=key, data={"label": label, "value": value, "help": help, "error": error, "max_chars": max_chars},
           on_submitted_change=sent, width="stretch", height="content")


# Captions and the links in them at a contrast of at least 4.5:1 (axe-core, WCAG AA; Streamlit fades
# them to 3.9:1).
ACCESSIBLE_CSS = ("[data-testid='stCaptionContainer'], [data-testid='stCaptionContainer'] p"
                  " { color: #5c5b59; opacity: 1; }"
                  " [data-testid='stCaptionContainer'] a { color: #1f5fa8; }")


def frame_style(presenter: bool) -> str:
    """The frame's CSS: caption contrast, the sidebar's width (in pixels, so presenter mode's large
    type does not widen it; presenter mode, its editors folded away, gives the room to the main
    area) and, in presenter mode, large type that still lets a lesson (controls, narration,
    figures) fit one screen from 1280 × 720 up (the root size follows the window's height: about
    17 px at 720 px, 21 px from 875 px up), a lesson page's title kept for screen readers only and
    the tour's answers large."""
    style = ACCESSIBLE_CSS + f" section[data-testid='stSidebar'] {{ width: {300 if presenter else 400}px !important; }}"
    if presenter:
        style += (" html { font-size: clamp(16px, 2.4vh, 21px); }"
                  " header[data-testid='stHeader'] { height: 2.75rem; min-height: 2.75rem; }"
                  " .block-container { max-width: 100%; padding: 3rem 2rem 2rem 2rem; }"
                  " .block-container h1 { padding-top: 0; }"
                  " .st-key-lesson_title { position: absolute !important; width: 1px; height: 1px;"
                  " overflow: hidden; clip-path: inset(50%); white-space: nowrap; }"
                  " [class*='st-key-tour_question_'] [data-testid='stRadio'] label p { font-size: 1.5rem; }")
    return style


STYLE_KEY = "kv_style"


def page_style(presenter: bool) -> None:
    """The frame's CSS (:func:`frame_style`, the app's own, never visitor text) for the whole page,
    drawn once a run by app.py; the element holding it takes no room."""
    _style(key=STYLE_KEY, data={"css": f".st-key-{STYLE_KEY} {{ display: none; }} {frame_style(presenter)}"},
           width="stretch", height="content")
