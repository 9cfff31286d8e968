"""The few helpers kvlab puts around Streamlit's own widgets, where a page would otherwise repeat
itself. Everything here is Streamlit's documented API; the one custom component, the lesson board,
lives in :mod:`viz.ui.board`.

* :func:`stats`: a row of ``st.metric`` (labelled figures with their change, green or red by
  whether that way is good news), from the :class:`viz.figures.base.Stat` a page builds;
* :func:`table`: a small read-only table as ``st.table`` (real HTML rows and cells, which a screen
  reader reads as a table), every cell as :func:`viz.figures.base.plain_table` writes it;
* :func:`presenter_style`: presenter mode's large type, one ``<style>`` element for the root font
  size and inline code (no selector aimed at Streamlit's own elements).
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from ..figures.base import Stat, plain_table, stats_row
from ..core.lessons.glossary import defined
from .common import defined_caption, md_escape

# a delta's colour by its tone (viz.figures.base._delta): green good news, red bad, grey a note
_TONE_COLOR = {"good": "green", "bad": "red", "neutral": "gray"}


def metric_args(stat: dict) -> dict:
    """The keyword arguments of ``st.metric`` for one stat of :func:`viz.figures.base.stats_row`:
    label, value and help escaped (Streamlit renders them as Markdown), the delta as text, the
    delta's arrow from its direction (none for a delta without one) and its colour from its tone,
    both given outright (Streamlit would read a direction off a leading "-" only). The arrow says the
    sign, so a signed delta is written without it ("↓ 61", never "↓ -61")."""
    delta = stat["delta"] or {"text": None, "direction": "", "tone": "neutral"}
    text = delta["text"].lstrip("+-\u2212").lstrip() if delta["direction"] else delta["text"]  # its sign: the arrow
    return {"label": md_escape(stat["label"]), "value": md_escape(stat["value"]), "delta": text,
            "delta_color": _TONE_COLOR[delta["tone"]], "delta_arrow": delta["direction"] or "off",
            "help": md_escape(defined(stat["label"], stat["help"])) or None}


def stats(items: list[Stat], label: str, key: str) -> None:
    """A row of labelled figures (``st.metric``), wrapping on a narrow screen, under ``label`` as
    a caption (plain text: escaped)."""
    with st.container(key=key, horizontal=True, gap="medium"):
        row = stats_row(items, label)
        for stat in row["stats"]:
            st.metric(**metric_args(stat), width="content")
    defined_caption(md_escape(label))


def table_frame(rows, label: str) -> pd.DataFrame:
    """A small table as ``st.table`` shows it: every cell as text (numbers with separators, yes/no)
    and every cell and column name escaped, since ``st.table`` renders them as Markdown."""
    spec = plain_table(rows, label)
    return pd.DataFrame([[md_escape(cell) for cell in row] for row in spec["rows"]],
                        columns=[md_escape(name) for name in spec["columns"]])


def table(rows, label: str, key: str) -> None:
    """A small read-only table (a DataFrame, or a dict of columns); ``label`` names it for screen
    readers (``alt``). For tables of a few dozen rows: longer ones, which need scrolling, sorting or
    download, stay ``st.dataframe``. ``key`` names its container (``st.table`` takes no key)."""
    with st.container(key=key):
        st.table(table_frame(rows, label), hide_index=True, alt=label)


# 18.4 px at 720 px high, 21 px from 824 px: Streamlit's widget text (buttons, labels, tabs, captions,
# 0.875 rem) is then at least 16 px on a projector; so is inline code (HTML's own element), which
# Markdown draws at 0.75 em (13.8 px in a fold's text)
PRESENTER_CSS = "html { font-size: clamp(18.3px, 2.55vh, 21px); } :root code { font-size: max(16px, 0.75em); }"


def presenter_style(presenter: bool) -> None:
    """Presenter mode's large type (the root font size follows the window's height, so a lesson
    still fits one screen from 1280 × 720 up); nothing outside presenter mode. A ``<style>``-only
    ``st.html`` takes no room on the page."""
    if presenter:
        st.html(f"<style>{PRESENTER_CSS}</style>")


def grid(count: int, per_row: int):
    """Columns for ``count`` items laid out ``per_row`` to a row: yields (column, item index) in
    order, a new row of ``st.columns(per_row)`` every ``per_row`` items (the last row may be short)."""
    for start in range(0, count, per_row):
        yield from zip(st.columns(per_row), range(start, min(start + per_row, count)))
