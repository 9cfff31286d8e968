"""The lesson board: the lesson screen's figures drawn by a small Streamlit component (custom
components v2, no iframe) from the specs of :mod:`viz.figures.board`, so a Step repaints in
milliseconds instead of replotting three Plotly charts."""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from . import state

_HERE = Path(__file__).resolve().parent
_board = st.components.v2.component("kvlab_board", js=(_HERE / "board.js").read_text(encoding="utf-8"),
                                    css=(_HERE / "board.css").read_text(encoding="utf-8"))


def board(spec: dict, key: str) -> None:
    """Draw one spec (a matrix or bars) at full width; larger type in presenter mode."""
    _board(key=key, data={**spec, "presenter": state.presenter()}, width="stretch", height="content")
