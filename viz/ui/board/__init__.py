"""The lesson board: kvlab's one custom component (Streamlit Components v2, public API).

It draws a spec of :mod:`viz.figures.board` (a matrix or bars) as a CSS grid, and draws the next
frame the moment Step or Back is clicked, before the rerun the click starts has answered. Its
keys-only form (:func:`lesson_keys`, nothing drawn) gives a page's step control the lesson's keys:
→, PageDown and Space press Step, ← and PageUp press Back, whatever has focus. Everything else on
screen is a Streamlit widget. ``board.js`` lays a spec out and writes
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
# The lesson's keys (event.key values): a presentation clicker sends PageDown/PageUp (some Space).
STEP_KEYS = ("ArrowRight", "PageDown", " ")
BACK_KEYS = ("ArrowLeft", "PageUp")
STEP_KEYS_HELP = "→, PageDown, Space"  # as the buttons' help texts name them
BACK_KEYS_HELP = "←, PageUp"

# Registered once, when the module is imported (inline development: the script and style as text).
_mount = st.components.v2.component(NAME, js=(_HERE / "board.js").read_text(encoding="utf-8"),
                                    css=(_HERE / "board.css").read_text(encoding="utf-8"))


def button_selector(key: str) -> str:
    """The CSS selector of the button drawn under widget key ``key`` (Streamlit gives a keyed
    element the class ``st-key-<key>``): where a turn listens for its click."""
    return f".st-key-{key} button"


STEP_FIELDS = {"label", "selector", "disabled", "primary"}  # one button of a phone's step bar (README.md)


def step_bar(step: str, back: str, labels: tuple[str, str], at_start: bool, at_end: bool) -> list[dict]:
    """The buttons of a phone's step bar over the board (README.md, "steps"): Back then Step, each
    pressing the page's own button under widget key ``back`` / ``step``; ``labels`` are (Back, Step)
    as the page's buttons are named."""
    return [{"label": f"← {labels[0]}", "selector": button_selector(back), "disabled": at_start, "primary": False},
            {"label": f"{labels[1]} →", "selector": button_selector(step), "disabled": at_end, "primary": True}]


def board_data(spec: dict, *, presenter: bool, turns: list[dict], draw: int, steps: list[dict] = ()) -> list[dict]:
    """What the board's script is sent (README.md): the spec with presenter mode, the turns
    ({"selector", "spec"}, each drawn at its button's click, which a lesson key makes too), this
    render's number and, where given, a phone's step bar (:func:`step_bar`), as the one item of a list.
    Streamlit checks every top-level value of a dict for a dataframe (about half a millisecond per
    board per run); a list goes through as plain JSON."""
    for turn in turns:
        if set(turn) != {"selector", "spec"}:
            raise ValueError(f"a turn has selector and spec, not {sorted(turn)}")
    for button in steps:
        if set(button) != STEP_FIELDS:
            raise ValueError(f"a step bar's button has {sorted(STEP_FIELDS)}, not {sorted(button)}")
    data = {**spec, "presenter": presenter, "turns": list(turns), "draw": draw}
    return [{**data, "steps": list(steps)} if steps else data]


def board(spec: dict, key: str, turns: list[dict] = (), steps: list[dict] = ()) -> None:
    """Draw one spec at full width; larger type in presenter mode. Each of ``turns`` is drawn the
    moment its button is clicked (the rerun the click starts brings the same spec). ``steps``: a step
    bar over the board, shown on a phone only (:func:`step_bar`)."""
    # with turns, a new number on every draw: the browser redraws the board from this run's data even
    # when the spec is unchanged (over a frame the board drew at a click, should the server have answered
    # otherwise). Without turns nothing but the server's data is ever drawn, so the number stays 0 and the
    # script keeps a board whose data did not change (a following student's lesson, rerun every poll)
    draw = 0
    if turns:
        st.session_state[DRAWS] = st.session_state.get(DRAWS, 0) + 1
        draw = st.session_state[DRAWS]
    _mount(key=key, data=board_data(spec, presenter=state.presenter(), turns=list(turns), draw=draw,
                                    steps=list(steps)), width="stretch", height="content")


def keys_data(step: str, back: str, *, presenter: bool = False) -> list[dict]:
    """What the keys-only form is sent (README.md): for each lesson key, the selector of the button
    it presses (``step`` and ``back`` are the buttons' widget keys), and whether the page is in
    presenter mode (there the keys step even from a focused slider)."""
    return [{"kind": "keys", "presenter": presenter,
             "keys": {**{k: button_selector(back) for k in BACK_KEYS},
                      **{k: button_selector(step) for k in STEP_KEYS}}}]


def lesson_keys(step: str, back: str) -> None:
    """Give the step control whose buttons have widget keys ``step`` and ``back`` the lesson's keys
    (→ PageDown Space, ← PageUp), whatever has focus; draws nothing. One script listens for the whole
    page: with several step controls, a key goes to the one clicked last (else the first shown)."""
    _mount(key=f"{step}_keys", data=keys_data(step, back, presenter=state.presenter()),
           width="content", height="content")


def sidebar_data(fold: bool) -> list[dict]:
    """What the sidebar form is sent (README.md, "The sidebar"): fold it (presenter mode on) or unfold
    the sidebar it folded (off)."""
    return [{"kind": "sidebar", "fold": bool(fold)}]


def fold_sidebar(fold: bool) -> None:
    """Fold the sidebar (``fold``) or unfold the one folded here, whatever the visitor did by hand
    before (Streamlit's initial state gives way to that); draws nothing. Mounted in the run where
    presenter mode turns on or off, at the sidebar's end."""
    _mount(key="kv_sidebar_fold", data=sidebar_data(fold), width="content", height="content")
