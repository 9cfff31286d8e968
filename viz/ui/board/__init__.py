"""The lesson board: kvlab's one custom component (Streamlit Components v2, public API).

It draws a spec of :mod:`viz.figures.board` (a matrix or bars) as a CSS grid, and draws the next
frame the moment Step or Back is clicked (or ← → pressed), before the rerun the click starts has
answered. Everything else on screen is a Streamlit widget. ``board.js`` lays a spec out and writes
every string with ``textContent``; ``board.css`` styles it inside its shadow root; ``README.md``
gives the data contract :func:`board_data` fulfils.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from .. import state

_HERE = Path(__file__).resolve().parent
NAME = "kvlab_board"
DRAWS = "kv_board_draws"  # boards drawn in this session: every render carries a new number

# Registered once, when the module is imported (inline development: the script and style as text).
_mount = st.components.v2.component(NAME, js=(_HERE / "board.js").read_text(encoding="utf-8"),
                                    css=(_HERE / "board.css").read_text(encoding="utf-8"))


def button_selector(key: str) -> str:
    """The CSS selector of the button drawn under widget key ``key`` (Streamlit gives a keyed
    element the class ``st-key-<key>``): where a turn listens for its click."""
    return f".st-key-{key} button"


def board_data(spec: dict, *, presenter: bool, turns: list[dict], draw: int) -> list[dict]:
    """What the board's script is sent (README.md): the spec with presenter mode, the turns
    ({"selector", "key", "spec"}, each drawn at its button's click or its key) and this render's
    number, as the one item of a list. Streamlit checks every top-level value of a dict for a
    dataframe (about half a millisecond per board per run); a list goes through as plain JSON."""
    for turn in turns:
        if set(turn) != {"selector", "key", "spec"}:
            raise ValueError(f"a turn has selector, key and spec, not {sorted(turn)}")
    return [{**spec, "presenter": presenter, "turns": list(turns), "draw": draw}]


def board(spec: dict, key: str, turns: list[dict] = ()) -> None:
    """Draw one spec at full width; larger type in presenter mode. Each of ``turns`` is drawn the
    moment its button is clicked or its key pressed (the rerun the click starts brings the same spec)."""
    # a new number on every draw: the browser redraws the board from this run's data even when the
    # spec is unchanged (over a frame the board drew at a click, should the server have answered otherwise)
    st.session_state[DRAWS] = st.session_state.get(DRAWS, 0) + 1
    _mount(key=key, data=board_data(spec, presenter=state.presenter(), turns=list(turns),
                                    draw=st.session_state[DRAWS]), width="stretch", height="content")
