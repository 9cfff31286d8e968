"""Shared pieces for every figure: colours, safe labels, annotated heatmaps, subplot grids.

Figures are built in one go, from a list of traces and one layout dict, because plotly validates
every incremental ``update_*``/``add_shape`` call again (several times slower on every rerun).
Numbers travel as numpy arrays, which plotly sends without checking cell by cell. All user text is
HTML-escaped with :func:`safe` before it reaches plotly, whose labels understand a little HTML.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import torch

from ..core.engine.explain import NEAR_ZERO, fmt
from ..core.lessons.glossary import Term, terms_in
from .meanings import (BLACK, BLUE, FREE, GREEN, INK, KEY_SCALE, LEFT_OUT, MASKED, MEANINGS, ORANGE, PURPLE,
                       RESERVED, SERIES, SKY, VALUE_SCALE, VERMILLION, YELLOW, Meaning, hatch, legend_item,
                       legend_marker, meaning, outline, series, stripes)
from .room import (NUMBERS, at_least, cell_text, cells_hold_text, legend_below, numbers_layer, room_above,
                   turn_crowded_labels, unlayer)

# The colours and what each means live in one table (viz.figures.meanings), imported from here by
# every figure module; GOLD and RED are the older names of two of them.
GOLD = ORANGE  # the focus
RED = VERMILLION  # a series colour only


# Tick labels, axis titles, colour-bar numbers and notes: a softer ink than a title's, yet 8.3:1 on white
# (WCAG; at least 4.5:1 is needed, and a projector washes colours out)
LABEL_INK = "#4b4e5c"


def safe(text: str) -> str:
    """User text for plotly labels: &, < and > escaped, so no tag can form and it shows as typed.
    (Quotes stay: outside a tag they are plain text, and plotly would show &quot; literally.)"""
    return html.escape(str(text), quote=False)


def labels(tokens: Sequence[str], start: int = 1) -> list[str]:
    """Unique axis labels '1 · Today' (tokens repeat; categorical axes must not merge them)."""
    return [f"{i} · {safe(t)}" for i, t in enumerate(tokens, start)]


@dataclass(frozen=True)
class FontSizes:
    """Type sizes inside a figure: ``text`` the least any text may be (cells, ticks, legends, notes),
    ``base`` what nothing sets for itself, ``title`` the title's, ``line`` a title line's height."""

    text: int
    base: int
    title: int
    line: int


DESKTOP_FONTS = FontSizes(text=12, base=12, title=15, line=20)
PRESENTER_FONTS = FontSizes(text=16, base=18, title=20, line=26)
# presenter type's first title line and subplot titles are taller than a desk's: room above the plot
PRESENTER_EXTRA_PX = 4 * (PRESENTER_FONTS.line - DESKTOP_FONTS.line)


def font_sizes(presenter: bool = False) -> FontSizes:
    """The type sizes of a figure at a desk (no text under 12 px) or on a projector (none under 16 px)."""
    return PRESENTER_FONTS if presenter else DESKTOP_FONTS


# Widths a figure is drawn at (px): a phone's chart (390-px screen), the main column at 1440 × 900
# beside the sidebar, and presenter mode's at 1280 × 720 with the sidebar folded (as measured in
# Chromium: 880 and 1096 px, presenter mode's root font of 2.55 vh widening the 5-rem margins; the gaps
# between columns: viz.ui.common.column_px). Plotly does not
# wrap titles: :func:`titled` breaks them for the width it is told, a phone's unless the Streamlit
# layer, which knows its columns, re-fits the figure (:func:`fit`). Outside presenter mode (whose
# screen is known) a line is never longer than a phone's figure holds: the same page may be a phone's.
PHONE_PX = 358
DESKTOP_PX = 880
PRESENTER_PX = 1096
TOOLBAR_PX = 150  # Streamlit's element toolbar (full screen), over the chart's top right on hover: the title's first line stays clear of it
CHAR_EM = 0.52  # an average character of the title's type, in ems


def _greedy(words: list[str], first: int, rest: int) -> list[str]:
    """Words into lines of at most ``first`` (the first line) and ``rest`` characters; a word longer
    than its line stays whole."""
    lines: list[str] = []
    for word in words:
        limit = first if len(lines) == 1 else rest
        if lines and len(lines[-1]) + 1 + len(word) <= limit:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return lines


def _wrap(line: str, first: int, rest: int) -> list[str]:
    """One title line broken at spaces: the first at most ``first`` characters, the others ``rest``,
    and balanced (the fewest lines, then as even as they go: no word left alone on the last). Never at a
    no-break space, which keeps a number with its unit."""
    words = [word for word in line.split(" ") if word]
    if not words:
        return [""]
    count = len(_greedy(words, first, rest))
    while rest > 1 and len(_greedy(words, min(first, rest - 1), rest - 1)) == count:
        rest -= 1
    return _greedy(words, min(first, rest), rest)


def balanced(text: str, chars: int) -> str:
    """``text`` in the fewest lines of at most ``chars`` characters, as even as they go, joined by <br>."""
    return "<br>".join(_wrap(text, chars, chars))


def title_chars(width: int = PHONE_PX, presenter: bool = False) -> tuple[int, int]:
    """How many characters of a title fit on its first line (beside the toolbar) and on the others."""
    per_char = font_sizes(presenter).title * CHAR_EM
    return max(12, int((width - TOOLBAR_PX) / per_char)), max(12, int(width / per_char))


def _title_lines(text: str, width: int = PHONE_PX, presenter: bool = False) -> list[str]:
    first, rest = title_chars(width, presenter)
    if not presenter:  # the server never learns a screen's width: a desk's line is one a phone's figure holds too
        phone = title_chars(PHONE_PX)[1]
        first, rest = min(first, phone), min(rest, phone)
    return [wrapped for line in text.split("<br>") for wrapped in _wrap(line, first, rest)]


def title(text: str, width: int = PHONE_PX, presenter: bool = False) -> dict:
    """A figure's title: left-aligned, in lines that fit ``width`` pixels (escaped text keeps its
    entities whole: they hold no spaces)."""
    return dict(text="<br>".join(_title_lines(text, width, presenter)), x=0, xanchor="left",
                font=dict(size=font_sizes(presenter).title))


def title_room(text: str, width: int = PHONE_PX, presenter: bool = False) -> int:
    """The top margin a title's lines take beyond its first."""
    return font_sizes(presenter).line * (len(_title_lines(text, width, presenter)) - 1)


def titled(text: str, height: int, top: int, *, width: int = PHONE_PX, presenter: bool = False,
           **placement: Any) -> dict:
    """Layout entries for a figure titled ``text``: the title (placed by ``placement``) in lines that
    fit ``width``, tight margins, the height and top margin grown by the title's extra lines (so the
    plot keeps its size), the base type size, and in ``meta`` what :func:`fit` needs to do it again."""
    room = title_room(text, width, presenter)
    sizes = font_sizes(presenter)
    return dict(title=dict(**title(text, width, presenter), **placement), height=height + room,
                margin=dict(l=10, r=10, t=top + room, b=10), font=dict(size=sizes.base),
                meta=dict(title=text, height=height, top=top))


def frame(title_text: str, height: int, top: int = 46, background: str = MASKED, *, width: int = PHONE_PX,
          presenter: bool = False, **extra: Any) -> dict:
    """The layout every figure shares: a left-aligned title at the top (in lines for ``width``),
    tight margins, a height."""
    # Plotly lifts a title's first line by part of the lines below it when anchored at its top
    layout = titled(title_text, height, top, width=width, presenter=presenter, y=1, yanchor="top",
                    yref="container", pad=dict(t=8 + title_room(title_text, width, presenter) // 2))
    layout["meta"]["pad"] = True
    return dict(**layout, plot_bgcolor=background, **extra)


def fit(fig: go.Figure, width: int = PHONE_PX, presenter: bool = False) -> go.Figure:
    """Fit a figure to where it is drawn: its title broken again for ``width`` pixels (its height and
    top margin following, so the plot keeps its size and a long title never runs into subplot
    titles), and every text inside at least :func:`font_sizes`' ``text`` (16 px in presenter mode:
    cells, ticks, axis titles, legends, notes, colour bars). The Streamlit layer calls it with the
    width of the column a figure goes in."""
    sizes = font_sizes(presenter)
    unlayer(fig)  # as built: a heatmap writes its own numbers
    layout = fig.layout
    # the height and bottom margin as built, kept in meta: fitting twice gives what fitting once does
    legend = layout.legend
    meta = {"height": layout.height, "bottom": layout.margin.b or 0, "margin_top": layout.margin.t or 0,
            "legend_at": [legend.y, legend.yref, legend.yanchor],
            **(layout.meta if isinstance(layout.meta, dict) else {})}
    layout.meta, layout.height, layout.margin.t = meta, meta["height"], meta["margin_top"]
    legend.y, legend.yref, legend.yanchor = meta["legend_at"]
    for axis in meta.get("turned", []):  # as built: level
        layout[axis].tickangle = 0
    if "title" in meta:
        text, room = meta["title"], title_room(meta["title"], width, presenter)
        room += PRESENTER_EXTRA_PX if presenter else 0
        layout.title.update(title(text, width, presenter))
        layout.height, layout.margin.t = meta["height"] + room, meta["top"] + room
        if meta.get("pad"):
            layout.title.pad.t = 8 + room // 2
    # column labels that would run together level (a phone's column, the tour's half of a projector) turn
    turned = turn_crowded_labels(fig, width if presenter else min(width, PHONE_PX), sizes.text)
    above = 0
    if not presenter or turned:  # presenter mode's wide column keeps a title to its line, above its builder's top margin
        lines = len(layout.title.text.split("<br>")) if layout.title.text else 0
        above = room_above(fig, sizes.text, (layout.title.pad.t or 0) + lines * sizes.line if lines else 0)
    at_least(layout.font, sizes.base)
    at_least(layout.legend.font, sizes.text)
    for note in layout.annotations:
        at_least(note.font, sizes.text)
        note.font.color = note.font.color or LABEL_INK  # Streamlit's theme greys the colourless ones
    # Streamlit's theme sizes and colours its own (rgb(128, 132, 149): 3.7:1 on white, too faint on a projector)
    big = dict(tickfont_size=sizes.text, title_font_size=sizes.text, tickfont_color=LABEL_INK,
               title_font_color=LABEL_INK)
    # a log axis labels its minor ticks (2, 5) at 0.75 of the tick size: none, only powers of ten
    fig.for_each_xaxis(lambda axis: axis.update(big, minorloglabels="none" if axis.type == "log" else None))
    fig.for_each_yaxis(lambda axis: axis.update(big, minorloglabels="none" if axis.type == "log" else None))
    crowded, layered = False, []  # cell numbers a phone's column could not hold (the server never learns its width)
    for i, trace in enumerate(fig.data):
        if trace.type == "heatmap" and trace.texttemplate:
            cell_text(fig, trace, width, sizes.text, shrink=not presenter)
            if not presenter and trace.texttemplate and _crowded_on_a_phone(fig, trace, sizes.text):
                crowded = True  # written by bars, which Plotly hides on a screen where they would be under 9 px
                layered.append([i, numbers_layer(fig, trace, sizes.text)])
        elif "textfont" in trace:
            at_least(trace.textfont, sizes.text)
            _label_ink(trace)
        if "colorbar" in trace:
            trace.colorbar.update(big)
    if any(t.type == "bar" and t.meta != NUMBERS and t.textposition in ("inside", "auto") for t in fig.data):
        # Plotly shrinks a label inside a bar to the bar's width: on a phone At scale's "2 GiB" came out at
        # 1.5-3 px. Below the text size it is hidden instead (the hover and the legend still say it)
        layout.uniformtext = dict(minsize=sizes.text, mode="hide")
    layout.meta = {**meta, "legend": legend_below(fig, width if presenter else min(width, PHONE_PX), sizes.text,
                                                 meta["bottom"]), "above": above, "turned": turned,
                   CROWDED_ON_A_PHONE: crowded, "numbers": layered}
    return fig


def _label_ink(trace: Any) -> None:
    """Numbers a trace writes on the white page (a bar's above it, a line's beside its points) in
    :data:`LABEL_INK` where the figure chose no colour (a bar's inside text keeps Plotly's contrast)."""
    if trace.type == "bar":
        trace.outsidetextfont.color = trace.outsidetextfont.color or trace.textfont.color or LABEL_INK
    elif trace.type == "scatter" and not trace.textfont.color:
        trace.textfont.color = LABEL_INK


CROWDED_ON_A_PHONE = "crowded_on_a_phone"  # fit's verdict in a figure's meta: see _crowded_on_a_phone


def _crowded_on_a_phone(fig: go.Figure, trace: go.Heatmap, text_px: int) -> bool:
    """Whether a heatmap whose cells hold their numbers at a desk could not hold them at ``text_px`` in a
    phone's column (:data:`PHONE_PX`), where Plotly would shrink them to a few pixels (Real model's 16 ×
    16 weights: 3 px). Decided from the cells as :func:`~viz.figures.room.cell_text` decides; fit then
    has bars write them (:func:`~viz.figures.room.numbers_layer`: none on a phone) and the Streamlit
    layer offers them in an "As a table" fold."""
    return not cells_hold_text(fig, trace, PHONE_PX, text_px, shrink=True)


def figure_terms(drawn: go.Figure | dict) -> list[Term]:
    """The glossary terms a figure or board spec shows in its title, axis titles, subplot titles and
    legend: what the Streamlit layer defines beside it (a hover or a caption per term)."""
    if isinstance(drawn, dict):
        words = [drawn.get("title", ""), drawn.get("axis", ""), *drawn.get("axes", {}).values(),
                 *(item["label"] for item in drawn.get("legend", []))]
    else:
        layout = drawn.layout
        words = [layout.title.text or "", *(note.text or "" for note in layout.annotations),
                 *(trace.name or "" for trace in drawn.data if trace.showlegend is not False)]
        drawn.for_each_xaxis(lambda axis: words.append(axis.title.text or ""))
        drawn.for_each_yaxis(lambda axis: words.append(axis.title.text or ""))
    return terms_in(html.unescape(" · ".join(words).replace("<br>", " ")))


def figure(data: list, layout: dict) -> go.Figure:
    return go.Figure(data=data, layout=layout)


def rect(x0: float, x1: float, y0: float, y1: float, color: str, width: int = 3,
         ref: tuple[str, str] = ("x", "y")) -> dict:
    return dict(type="rect", x0=x0, x1=x1, y0=y0, y1=y1, xref=ref[0], yref=ref[1],
                line=dict(color=color, width=width))


def grid(rows: int, cols: int, titles: Sequence[str] = (), *, hspace: float = 0.06, vspace: float = 0.12,
         row_heights: Sequence[float] | None = None) -> tuple[dict, list[tuple[str, str]]]:
    """Axes for a rows × cols grid of subplots: layout entries, and (xref, yref) per cell, row-major."""
    heights = list(row_heights or [1.0] * rows)
    usable = 1.0 - vspace * (rows - 1)
    scale = usable / sum(heights)
    width = (1.0 - hspace * (cols - 1)) / cols
    layout: dict[str, Any] = {}
    refs, annotations = [], []
    top = 1.0
    for r in range(rows):
        bottom = max(0.0, top - heights[r] * scale)  # clamp float error: plotly insists on [0, 1]
        for c in range(cols):
            i = r * cols + c + 1
            suffix = "" if i == 1 else str(i)
            left = c * (width + hspace)
            layout[f"xaxis{suffix}"] = dict(domain=[left, min(1.0, left + width)], anchor=f"y{suffix}")
            layout[f"yaxis{suffix}"] = dict(domain=[bottom, min(1.0, top)], anchor=f"x{suffix}")
            refs.append((f"x{suffix}", f"y{suffix}"))
            if i - 1 < len(titles):
                annotations.append(dict(text=titles[i - 1], x=left + width / 2, y=top, xref="paper",
                                        yref="paper", xanchor="center", yanchor="bottom", showarrow=False,
                                        font=dict(size=13)))
        top = bottom - vspace
    layout["annotations"] = annotations
    return layout, refs


_THOUSANDS = (("k", 1e3), ("M", 1e6), ("B", 1e9), ("T", 1e12))  # thousand, million, billion, trillion


def _trimmed(x: float, decimals: int) -> str:
    return f"{x:.{decimals}f}".rstrip("0").rstrip(".") if decimals else f"{x:.0f}"


def short(x: float) -> str:
    """A number in a small cell, at most five characters and a sign: .33, .5, 1, 10.33 (the article's
    numbers as it writes them), 833, 1.5k, 833k, 1M, 0 for near-zeros (the hover has every digit)."""
    if abs(x) < NEAR_ZERO:
        return "0"
    size, sign = abs(x), "-" if x < 0 else ""
    if size < 999.5:  # two decimals below 100, none above (999.7 is 1k)
        text = _trimmed(size, 2 if size < 100 else 0)
        return "0" if text == "0" else sign + (text[1:] if text.startswith("0.") else text)  # -0.004 is 0
    for suffix, unit in _THOUSANDS:
        scaled = size / unit
        if scaled < 999.5:
            return sign + _trimmed(scaled, 1 if scaled < 9.95 else 0) + suffix
    return sign + f"{size:.0e}".replace("e+", "e")  # 1e15 and up (and inf, nan as themselves)


def _cell(x: float, narrow: bool) -> str:
    """Cell text: the number as people write it (0 for near-zeros; the hover has every digit), in
    :func:`short`'s few characters when the cells are narrow."""
    return short(x) if narrow else fmt(x)


COLOR_SCALES = {"weights": dict(colorscale="Blues", zmin=0, zmax=1),
                "scores": dict(colorscale="RdBu", zmid=0),
                "signs": dict(colorscale=KEY_SCALE, zmin=-1, zmax=1),  # the cache's scales (viz.figures.meanings)
                "values": dict(colorscale=VALUE_SCALE)}


def heatmap_trace(z: torch.Tensor, x: list[str], y: list[str], *, kind: str = "weights", hover: str = "",
                  visible: torch.Tensor | None = None, key_values: Sequence[float] | None = None,
                  annotate: bool | None = None, text: np.ndarray | None = None,
                  ref: tuple[str, str] = ("x", "y"), scale: str | None = None) -> go.Heatmap:
    """One heatmap trace. Masked cells (-inf, or False in ``visible``) are left empty (grey) and
    labelled 'masked'; ``%{customdata}`` in ``hover`` is the key's value when ``key_values`` is given;
    ``scale`` titles a colour bar (none without it)."""
    z = z.detach().double().cpu()
    rows, cols = z.shape
    finite = torch.isfinite(z) if visible is None else torch.isfinite(z) & visible.cpu()
    annotate = (rows * cols <= 400) if annotate is None else annotate
    if annotate and text is None:  # "masked" only where it fits; grey says it everywhere
        values, keep = z.tolist(), finite.tolist()
        narrow = cols > 8
        text = np.array([[(_cell(v, narrow) if k else ("" if narrow else "masked")) for v, k in zip(vr, kr)]
                         for vr, kr in zip(values, keep)], dtype=object)
    custom = np.array([[fmt(v) for v in key_values]] * rows, dtype=object) if key_values is not None else None
    return go.Heatmap(
        z=torch.where(finite, z, torch.nan).numpy(), x=x, y=y, text=text if annotate else None,
        texttemplate="%{text}" if annotate else None, textfont=dict(size=12),
        xgap=2 if cols <= 40 else 0, ygap=2 if rows <= 40 else 0, customdata=custom,
        hovertemplate=(hover or "query %{y}<br>key %{x}<br>%{z:.4g}") + "<extra></extra>",
        showscale=scale is not None, colorbar=_colorbar(kind, scale), xaxis=ref[0], yaxis=ref[1],
        **COLOR_SCALES[kind])


def masked_unsaid(trace: go.Heatmap) -> bool:
    """Whether the trace leaves masked cells grey (empty) without writing 'masked' in them (too narrow
    for the word, or no numbers at all)."""
    empty = np.isnan(np.asarray(trace.z, dtype=float))
    if not empty.any():
        return False
    return trace.text is None or not any(str(t) == "masked" for t in np.asarray(trace.text, dtype=object)[empty])


def _colorbar(kind: str, title: str | None) -> dict | None:
    if title is None:
        return None
    bar: dict[str, Any] = dict(title=dict(text=title, side="right"), thickness=12, len=0.9)
    if kind == "signs":
        bar.update(tickvals=[-1, 1], ticktext=["−1", "+1"])
    return bar


QUERY_KEY = ("key (columns)", "query (rows)")  # the axis titles of every query × key matrix


def matrix_axes(cols: int, side: str = "top", titles: tuple[str, str] = QUERY_KEY) -> tuple[dict, dict]:
    """x and y axis settings for a matrix: categories, first row at the top, and axis titles that
    say what the columns and the rows are (keys and queries unless ``titles`` says otherwise)."""
    return (dict(type="category", side=side, tickangle=0 if cols <= 8 else -45, title=dict(text=titles[0])),
            dict(type="category", autorange="reversed", title=dict(text=titles[1])))


def heatmap(z: torch.Tensor, x: list[str], y: list[str], title: str, *, kind: str = "weights",
            hover: str = "", highlight_row: int | None = None, row_label: str | None = None,
            highlight_cells: Sequence[tuple[int, int]] = (), cells_mean: str = "new", cells_label: str | None = None,
            annotate: bool | None = None, height: int | None = None, visible: torch.Tensor | None = None,
            key_values: Sequence[float] | None = None, scale: str | None = None,
            axes: tuple[str, str] = QUERY_KEY) -> go.Figure:
    """An annotated heatmap figure (see :func:`heatmap_trace`) of a matrix whose columns and rows
    ``axes`` names, the row in focus outlined as the focus and ``highlight_cells`` as the meaning
    ``cells_mean``, each with its legend entry (``row_label`` and ``cells_label``: the words, the
    meaning's own by default). x and y labels must already be escaped."""
    rows, cols = z.shape
    shapes, marks = [], []
    if highlight_row is not None:
        shapes.append(outline("focus", -0.5, cols - 0.5, highlight_row - 0.5, highlight_row + 0.5))
        marks.append(legend_marker("focus", row_label))
    if highlight_cells:
        shapes += [outline(cells_mean, c - 0.5, c + 0.5, r - 0.5, r + 0.5) for r, c in highlight_cells]
        marks.append(legend_marker(cells_mean, cells_label))
    xaxis, yaxis = matrix_axes(cols, titles=axes)
    cell = 34 if rows <= 16 else max(8, 640 // rows)  # long sequences shrink their rows
    trace = heatmap_trace(z, x, y, kind=kind, hover=hover, visible=visible, key_values=key_values,
                          annotate=annotate, scale=scale)
    if masked_unsaid(trace):  # grey cells with no word in them: the legend says what grey is
        marks.append(legend_marker("masked", filled=True))
    extra = dict(showlegend=True, legend=dict(orientation="h", x=0, y=-0.02, yanchor="top")) if marks else {}
    return figure([trace, *marks], frame(title, (height or max(200, 100 + cell * rows)) + (30 if marks else 0),
                                         top=96, xaxis=xaxis, yaxis=yaxis, shapes=shapes, **extra))


def figure_table(fig: go.Figure) -> pd.DataFrame:
    """A figure's numbers as one long table (the accessible alternative to looking at it): one row
    per heatmap cell, bar or point, named by its panel (trace or subplot title), row and column."""
    titles = [note.text for note in fig.layout.annotations or ()]
    rows = []
    for trace in (t for t in fig.data if t.meta != NUMBERS):  # not the bars that write a heatmap's numbers
        cell = int((trace.xaxis or "x")[1:] or 1) - 1  # the subplot the trace is drawn in
        panel = " · ".join(p for p in (titles[cell] if cell < len(titles) else "", trace.name or "") if p)
        if trace.type == "heatmap":
            z = np.asarray(trace.z, dtype=float)
            xs = list(trace.x) if trace.x is not None else list(range(z.shape[1]))
            ys = list(trace.y) if trace.y is not None else list(range(z.shape[0]))
            rows += [(panel, html.unescape(str(y)), html.unescape(str(x)), None if np.isnan(v) else float(v))
                     for y, line in zip(ys, z) for x, v in zip(xs, line)]
        elif trace.x is not None and trace.y is not None and trace.x[0] is not None:
            rows += [(panel, "", html.unescape(str(x)), float(y)) for x, y in zip(trace.x, trace.y)]
    return pd.DataFrame(rows, columns=["panel", "row", "column", "value"])


def _text(value: Any) -> str:
    """One cell of a plain table as people read it: numbers by :func:`fmt` (integers whole, with
    thousands separators; a size below fmt's 0 in two significant digits, since a table's reader
    compares the numbers: a gap of 4e-05 is not 0), yes/no for truth values, anything else as text."""
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, (int, np.integer)):
        return f"{int(value):,}"
    if isinstance(value, (float, np.floating)):
        return f"{float(value):.2g}" if 0 < abs(value) < NEAR_ZERO else fmt(float(value))
    return str(value)


def plain_table(table: pd.DataFrame | dict, label: str) -> dict:
    """A small table as ``viz.ui.widgets.table`` shows it (``st.table``): column names, every cell as
    text, which columns are numbers, and ``label`` for screen readers."""
    table = pd.DataFrame(table)
    numeric = [pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_bool_dtype(dtype)
               for dtype in table.dtypes]
    return {"columns": [str(c) for c in table.columns], "numeric": numeric, "label": label,
            "rows": [[_text(v) for v in row] for row in table.itertuples(index=False, name=None)]}


@dataclass(frozen=True)
class Stat:
    """One labelled figure of a stats row (what ``st.metric`` showed): ``value`` and ``delta`` as
    numbers (written here) or text (shown as given; a text delta's leading + or - gives its
    direction, as st.metric read it); ``good`` says which direction is good news ("up", "down",
    or None when a delta is only a note); ``help`` is shown as small text under the figure."""

    label: str
    value: Any
    delta: Any = None
    good: str | None = "up"
    help: str = ""

    def __post_init__(self):
        if self.good not in ("up", "down", None):
            raise ValueError(f"good must be 'up', 'down' or None, not {self.good!r}")


_SIGNED = re.compile(r"([+\-\u2212])\s*(.*)", re.S)
_ZERO = re.compile(r"[0.,]*0[0.,]*(?:\s.*)?", re.S)  # "0", "0.0 ms", "0 B vs full"


def _delta(stat: Stat) -> dict | None:
    """A stat's change: the text shown, the words a screen reader says ("up 1", "down 3 ms"), its
    direction ("up", "down", or "" when none) and its tone ("good", "bad" or "neutral")."""
    delta = stat.delta
    if delta is None or delta == "":
        return None
    if isinstance(delta, str):
        text = delta
        signed = _SIGNED.fullmatch(text)
        sign, size = (signed.group(1), signed.group(2)) if signed else ("", text)
        if sign and _ZERO.fullmatch(size):
            sign = ""
    else:  # a number
        size = _text(abs(delta))
        sign = "" if size == "0" else "+" if delta > 0 else "-" if delta < 0 else ""
        text = sign + size
    direction = {"+": "up", "-": "down", "\u2212": "down"}.get(sign, "")
    tone = "neutral" if not direction or stat.good is None else "good" if direction == stat.good else "bad"
    return {"text": text, "spoken": f"{direction} {size}".strip(), "direction": direction, "tone": tone}


def stats_row(stats: Sequence[Stat], label: str) -> dict:
    """A row of labelled figures as ``viz.ui.widgets.stats`` shows it (``st.metric``s): each stat's
    label, value as text (numbers as in :func:`plain_table`), delta (see :func:`_delta`) and help;
    ``label`` names the row."""
    return {"layout": "stats", "label": label,
            "stats": [{"label": str(s.label), "value": _text(s.value), "delta": _delta(s), "help": str(s.help)}
                      for s in stats]}
