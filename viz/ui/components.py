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
  own sliders bring a script chunk of their own to a first view, 60 to 150 ms on a small machine).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import streamlit as st

from ..figures.base import Stat, plain_table, stats_row
from . import state

_HERE = Path(__file__).resolve().parent
DRAWS = "kv_board_draws"  # boards drawn in this session


def _read(name: str) -> str:
    return (_HERE / name).read_text(encoding="utf-8")


_board = st.components.v2.component("kvlab_board", js=_read("board.js"), css=_read("board.css"))
_table = st.components.v2.component("kvlab_table", js=_read("table.js"), css=_read("table.css"))
_copy_link = st.components.v2.component("kvlab_copy_link", js=_read("copy_link.js"), css=_read("copy_link.css"))
_field = st.components.v2.component("kvlab_field", js=_read("field.js"), css=_read("field.css"))
_range = st.components.v2.component("kvlab_range", js=_read("range.js"), css=_read("range.css"))
# not in a shadow root: its style element applies to the whole page
_style = st.components.v2.component("kvlab_style", js=_read("style.js"), isolate_styles=False)


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
    ``inline``: for a row of controls, the label for screen readers only and the value's text after
    the track. Disabled when ``low == high``. Labels are plain text (the range writes them as text)."""
    def moved() -> None:
        to = st.session_state[key].get("moved")  # the trigger's payload, as the browser sent it
        if isinstance(to, int) and not isinstance(to, bool):
            on_move(min(max(to, low), high))

    _range(key=key, data={"label": label, "help": help, "min": low, "max": high, "value": value,
                          "labels": [format_label(v) for v in range(low, high + 1)], "inline": inline,
                          "presenter": state.presenter()},
           on_moved_change=moved, width=width, height="content")


def text_field(label: str, value: str, key: str, on_send: Callable[[str], None], help: str = "",
               invalid: bool = False) -> None:
    """A one-line text field showing ``value``, with ``help`` written under it. When the visitor
    sends a text (Enter, or leaving the field after a change), ``on_send(text)`` runs as a callback,
    before the script, which then draws the outcome. ``invalid`` marks the field for screen readers
    (its message is drawn beside it)."""
    _field(key=key, data={"label": label, "value": value, "help": help, "invalid": invalid,
                          "presenter": state.presenter()},
           on_submitted_change=lambda: on_send(st.session_state[key].submitted), width="stretch", height="content")


STYLE_KEY = "kv_style"


def page_style(css: str) -> None:
    """The app's own CSS (never visitor text) for the whole page, drawn once a run by app.py; the
    element holding it takes no room."""
    _style(key=STYLE_KEY, data={"css": f".st-key-{STYLE_KEY} {{ display: none; }} {css}"},
           width="stretch", height="content")
