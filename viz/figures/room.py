"""Room inside a figure, worked out for the width it is drawn at: whether a heatmap's cells hold their
numbers, and how much space a legend under the plot needs so that it never covers the plot, its tick
labels or its axis titles. Used by :func:`viz.figures.base.fit`; pure plotly, no drawing.
"""

from __future__ import annotations

import html
from typing import Any

import numpy as np
import plotly.graph_objects as go


def at_least(font: Any, size: int) -> None:
    font.size = max(font.size or 0, size)


# Plotly sizes a heatmap's cell text itself when no size is set (plotly.js heatmap/plot.js, #6061): the
# largest that fits the narrowest cell, a character taking 0.65 em and a line 1.3 em, and never more
# than the layout's base size. So at a desk cell numbers shrink on a narrower screen (a phone's, which
# the server never learns) instead of running into each other. Presenter mode's screen is known (the
# sidebar folded, 1280 px and up): its cells keep a fixed 16 px (Plotly's 1.3-em line would shrink it).
CELL_CHAR_EM, CELL_LINE_EM = 0.65, 1.3
LABEL_CHAR_EM = 0.6  # a tick label's average character, in ems (generous: a label is never underestimated)
COLORBAR_PX = 90  # a colour bar beside the plot: the bar, its ticks and its title


def _longest(labels: Any) -> int:
    return max((len(html.unescape(str(label))) for label in labels), default=0) if labels is not None else 0


def cell_px(fig: go.Figure, trace: go.Heatmap, width: int, text_px: int) -> tuple[float, float]:
    """The width and height (px) of one cell of heatmap ``trace`` when ``fig`` is drawn ``width`` px
    wide with ``text_px`` tick labels: the plot's share of the figure (margins, the y tick labels and
    axis title, a colour bar taken off), its axes' domains, over the columns and rows, less the gaps."""
    layout = fig.layout
    xaxis, yaxis = layout[f"xaxis{(trace.xaxis or 'x')[1:]}"], layout[f"yaxis{(trace.yaxis or 'y')[1:]}"]
    rows, cols = np.shape(trace.z)
    labels = 0 if yaxis.showticklabels is False else _longest(
        yaxis.ticktext if yaxis.ticktext is not None else trace.y) * text_px * LABEL_CHAR_EM + 6
    wide = (width - (layout.margin.l or 0) - (layout.margin.r or 0) - labels
            - (text_px + 10 if yaxis.title.text else 0) - (COLORBAR_PX if trace.showscale else 0))
    high = (layout.height or 450) - (layout.margin.t or 0) - (layout.margin.b or 0)
    x_span, y_span = (axis.domain[1] - axis.domain[0] if axis.domain else 1.0 for axis in (xaxis, yaxis))
    return wide * x_span / cols - (trace.xgap or 0), high * y_span / rows - (trace.ygap or 0)


def cells_hold_text(fig: go.Figure, trace: go.Heatmap, width: int, text_px: int, shrink: bool) -> bool:
    """Whether every cell of ``trace`` holds its text at ``text_px`` when the figure is ``width`` px wide."""
    cells = [str(cell) for row in (trace.text if trace.text is not None else ()) for cell in row]
    chars = max((len(html.unescape(line)) for cell in cells for line in cell.split("<br>")), default=0)
    lines = max((cell.count("<br>") + 1 for cell in cells), default=1)
    cell_w, cell_h = cell_px(fig, trace, width, text_px)
    return chars * text_px * CELL_CHAR_EM <= cell_w and lines * text_px * (CELL_LINE_EM if shrink else 1) <= cell_h


def cell_text(fig: go.Figure, trace: go.Heatmap, width: int, text_px: int, shrink: bool) -> None:
    """Cell numbers that never overlap: where every cell holds its text at ``text_px`` at ``width``,
    sized by Plotly (``shrink``: see above) or at ``text_px``; left out where not (the hover and "As a
    table" have them)."""
    at_least(trace.textfont, text_px)
    if not cells_hold_text(fig, trace, width, text_px, shrink):
        trace.texttemplate = None
    elif shrink:
        trace.textfont.size = None  # Plotly's: as large as fits, at most the layout's base size


TURNED_DEG = -45  # a matrix's column labels, turned where level ones would run together


def level_labels_fit(fig: go.Figure, trace: go.Heatmap, width: int, text_px: int) -> bool:
    """Whether the column labels of heatmap ``trace`` fit level, each within its column, when the figure
    is ``width`` px wide with ``text_px`` labels (level labels wider than their columns run together:
    '1 · Today2 · weather' on a phone)."""
    axis = fig.layout[f"xaxis{(trace.xaxis or 'x')[1:]}"]
    labels = axis.ticktext if axis.ticktext is not None else trace.x
    column = cell_px(fig, trace, width, text_px)[0] + (trace.xgap or 0)
    return _longest(labels) * text_px * LABEL_CHAR_EM + 4 <= column


def turn_crowded_labels(fig: go.Figure, width: int, text_px: int) -> list[str]:
    """Turn the level column labels of every heatmap whose labels would run together at ``width`` px
    (:func:`level_labels_fit`) to :data:`TURNED_DEG`, as a matrix with many columns has them; returns the
    axes turned (fit keeps them, so fitting again at another width starts from level labels)."""
    turned = []
    for trace in fig.data:
        name = f"xaxis{(trace.xaxis or 'x')[1:]}"
        if (trace.type == "heatmap" and fig.layout[name].tickangle == 0
                and not level_labels_fit(fig, trace, width, text_px)):
            fig.layout[name].tickangle = TURNED_DEG
            turned.append(name)
    return turned


# A legend's entry (Plotly's horizontal legend): the symbol's 40 px, then the name; a row is about
# 1.5 em of its type and the box has 10 px of padding. A tick label's line is about 1.4 em.
ENTRY_PX, LEGEND_PAD_PX, ROW_EM, TICK_EM = 40, 10, 1.5, 1.4


def _entries(fig: go.Figure) -> list[str]:
    names = [trace.name for trace in fig.data
             if trace.name and trace.showlegend is not False and trace.visible in (None, True)]
    return list(dict.fromkeys(names))  # a legend group shows once


def legend_rows(names: list[str], width: float, text_px: int) -> int:
    """The rows a horizontal legend of ``names`` takes in ``width`` px. Plotly wraps it there, and a
    legend that takes more than one row gives every entry the widest one's width (plotly.js
    legend/draw.js: columns of ``maxItemWidth``): on a phone a long entry puts each on a row of its own."""
    entries = [ENTRY_PX + len(html.unescape(name.replace("<br>", " "))) * text_px * LABEL_CHAR_EM for name in names]
    if sum(entries) <= width:
        return 1
    per_row = max(1, int(width // max(entries)))
    return -(-len(entries) // per_row)


def _under_plot_px(fig: go.Figure, text_px: int) -> float:
    """What the x axes draw under their plot: tick labels (turned ones taller) and a title."""
    below, axes = [0.0], []
    fig.for_each_xaxis(axes.append)
    for axis in axes:
        if axis.side == "top" or axis.visible is False:
            continue
        ticks = 0.0 if axis.showticklabels is False else text_px * TICK_EM + 6
        if axis.tickangle not in (None, 0, "auto"):
            ticks += 0.5 * text_px * max((len(str(t)) for t in axis.ticktext or ()), default=4)
        below.append(ticks + (text_px * TICK_EM + 8 if axis.title.text else 0))
    return max(below)


def legend_below(fig: go.Figure, width: int, text_px: int, bottom: int) -> int:
    """A horizontal legend under the plot, placed where it covers nothing and leaves no gap: its first
    row right under the x axes' ticks and title (its top set in the figure's container, so Plotly
    reserves the margin under it rather than pushing the plot), the bottom margin (``bottom`` as built)
    grown to hold those and then every row the legend takes at ``width`` px (give the narrowest screen
    it may be drawn on), and the figure's height with it, so the plot keeps its size. Where a wider
    screen needs fewer rows than ``width`` (a desk's column, for a figure sized for a phone), the room
    left over lies under the legend, never between the plot and it. Returns the pixels added. Legends
    elsewhere (beside or above the plot, or placed in the container by their builder) stay."""
    layout, legend = fig.layout, fig.layout.legend
    names = _entries(fig)
    # a legend in the container was placed with room of its own (Cost's, Serving's): it stays
    if (legend.orientation != "h" or legend.yref == "container" or legend.y is None or legend.y >= 0
            or not names or layout.showlegend is False):
        return 0
    under = _under_plot_px(fig, text_px)
    rows_px = LEGEND_PAD_PX + legend_rows(names, width - 20, text_px) * text_px * ROW_EM
    # a legend set a share of the plot under it (-0.18) made Plotly push the margin, shrinking a small
    # plot (the tour's pool had its phone rows drawn over its blocks); anchored to the figure's bottom,
    # it stood under the room of a phone's rows at a desk (the pool's one row: 90 px under its blocks).
    # Its top in the container, the margin under the ticks and title is Plotly's to keep free for it.
    grow = max(0, round(under + rows_px) - bottom)
    layout.margin.b = bottom + grow
    layout.height = (layout.height or 450) + grow
    legend.update(yref="container", y=(layout.margin.b - under) / layout.height, yanchor="top")
    return grow


def _top_axis_px(fig: go.Figure, axis: Any, text_px: int) -> float:
    """What an x axis on top of its plot draws over it: tick labels (a turned label stands as tall as
    its length along the slant) and its title."""
    if axis.showticklabels is False:
        ticks = 0.0
    else:
        labels = axis.ticktext
        if labels is None:  # a category axis: its traces' x values
            ref = "x" + axis.plotly_name[len("xaxis"):]
            labels = [x for trace in fig.data if (trace.xaxis or "x") == ref and trace.x is not None for x in trace.x]
        turned = axis.tickangle not in (None, 0, "auto")
        ticks = ((_longest(labels) * LABEL_CHAR_EM + 1) * text_px * 0.71 if turned else text_px * TICK_EM) + 6
    return ticks + (text_px * TICK_EM + 8 if axis.title.text else 0)


def room_above(fig: go.Figure, text_px: int, title_px: float) -> int:
    """A top margin that holds the figure's title (``title_px`` from the top, its pad included) and,
    under it, what the x axes drawn on top of their plot need (tick labels, axis title), so none of
    them runs into the title; the figure grows with it, so the plot keeps its size. Returns the pixels
    added."""
    axes: list = []
    fig.for_each_xaxis(axes.append)
    on_top = [_top_axis_px(fig, axis, text_px) for axis in axes if axis.side == "top" and axis.visible is not False]
    layout = fig.layout
    if not on_top:
        return 0
    grow = max(0, round(title_px + 4 + max(on_top)) - (layout.margin.t or 0))
    layout.margin.t = (layout.margin.t or 0) + grow
    layout.height = (layout.height or 450) + grow
    return grow


# Cell numbers a phone's column would shrink under the text size (Real model's 16 × 16 weights: Plotly sized
# them 3-4 px there, having no least size for a heatmap's text) are written by a bar trace instead, one
# see-through bar a cell: Plotly fits a label inside its bar on the screen it is drawn on, and hides it below
# layout.uniformtext's minsize, as it does for any bar's label. So a desk draws them at the text size, a
# phone at what its cells hold down to READABLE_PX and none under it (the hover and "As a table" have them).
# The bars stand on the heatmap's own x axis and an overlaid linear y axis of rows; the heatmap's y axis does
# not zoom (a drag zooms across, where both share the axis).
NUMBERS = "cell numbers"  # the meta of such a bar trace
READABLE_PX = 9  # the least size they are drawn at (a phone's); a desk's cells hold the text size
FIGURE_SPACE = "\u2007"  # as wide as a digit: every label padded to the longest, all drawn or none


def _rgb(colour: str) -> tuple[float, ...]:
    """'#0072B2', 'rgb(0, 114, 178)' or 'rgba(…)' as its red, green and blue."""
    if colour.startswith("#"):
        return tuple(int(colour[i:i + 2], 16) for i in (1, 3, 5))
    return tuple(float(part) for part in colour[colour.index("(") + 1:-1].split(",")[:3])


def _colour_at(scale: Any, share: float) -> tuple[float, ...]:
    """The colour of a Plotly colour scale (position, colour pairs) at ``share`` of its range. Not
    ``plotly.colors.sample_colorscale``: it cannot blend a hex colour, nor a stepped scale whose
    positions repeat (the rounds grid's), where it raises."""
    steps = [(float(at), _rgb(colour)) for at, colour in scale]
    for (a, low), (b, high) in zip(steps, steps[1:]):
        if share <= b:
            part = (share - a) / (b - a) if b > a else 1.0
            return tuple(lo + (hi - lo) * part for lo, hi in zip(low, high))
    return steps[-1][1]


def _text_colours(trace: go.Heatmap, cells: list[tuple[int, int]]) -> list[str]:
    """The colour Plotly writes a heatmap cell's number in (plotly.js Color.contrast): white on a dark
    cell (brightness under 128), #444 on a light one and on an empty (masked) cell, the plot's light grey."""
    z = np.asarray(trace.z, dtype=float)
    low = trace.zmin if trace.zmin is not None else np.nanmin(z)
    high = trace.zmax if trace.zmax is not None else np.nanmax(z)
    if trace.zmid is not None and (trace.zmin is None or trace.zmax is None):
        reach = max(abs(np.nanmin(z) - trace.zmid), abs(np.nanmax(z) - trace.zmid))
        low, high = trace.zmid - reach, trace.zmid + reach
    colours = []
    for r, c in cells:
        if np.isnan(z[r, c]):
            colours.append("#444")
            continue
        red, green, blue = _colour_at(trace.colorscale, float(np.clip((z[r, c] - low) / ((high - low) or 1), 0, 1)))
        colours.append("white" if 0.299 * red + 0.587 * green + 0.114 * blue < 128 else "#444")
    return colours


def numbers_layer(fig: go.Figure, trace: go.Heatmap, text_px: int) -> str:
    """Move the cell numbers of heatmap ``trace`` to a bar trace (:data:`NUMBERS`) over it, at ``text_px``
    at most; returns the name of the y axis of rows it adds."""
    text = np.asarray(trace.text, dtype=object)
    rows, cols = text.shape
    cells = [(r, c) for r in range(rows) for c in range(cols) if str(text[r, c]).strip()]
    labels = [str(text[r, c]) for r, c in cells]
    longest = max((len(html.unescape(label)) for label in labels), default=0)
    padded = [label.center(len(label) + longest - len(html.unescape(label)), FIGURE_SPACE) for label in labels]
    axes: list = []
    fig.for_each_yaxis(axes.append)
    rows_axis = f"yaxis{len(axes) + 1}"
    base = (trace.yaxis or "y")
    fig.layout[rows_axis] = dict(overlaying=base, anchor=trace.xaxis or "x", range=[rows - 0.5, -0.5],
                                 visible=False, fixedrange=True)
    fig.layout[f"yaxis{base[1:]}"].fixedrange = True
    fig.layout.uniformtext = dict(minsize=READABLE_PX, mode="hide")  # fit raises it to the text size for other bars
    fig.add_trace(go.Bar(x=[trace.x[c] for _, c in cells] if trace.x is not None else [c for _, c in cells],
                         y=[1] * len(cells), base=[r - 0.5 for r, _ in cells], width=1, text=padded,
                         textposition="inside", insidetextanchor="middle", textangle=0, cliponaxis=True,
                         textfont=dict(size=text_px, color=_text_colours(trace, cells)), meta=NUMBERS,
                         marker=dict(color="rgba(0, 0, 0, 0)", line=dict(width=0)), hoverinfo="skip",
                         showlegend=False, xaxis=trace.xaxis or "x", yaxis="y" + rows_axis[len("yaxis"):]))
    trace.texttemplate = None
    return rows_axis


def unlayer(fig: go.Figure) -> None:
    """Undo :func:`numbers_layer` where a fitted figure is fitted again: its heatmaps write their numbers
    again, their y axes zoom, and the bars, their axes of rows and the least size of bar labels go."""
    layered = fig.layout.meta.get("numbers", []) if isinstance(fig.layout.meta, dict) else []
    if not layered:
        return
    for index, rows_axis in layered:
        trace = fig.data[index]
        trace.texttemplate = "%{text}"
        fig.layout[f"yaxis{(trace.yaxis or 'y')[1:]}"].fixedrange = None
    gone = {rows_axis for _, rows_axis in layered} | {"uniformtext"}
    fig.data = [trace for trace in fig.data if trace.meta != NUMBERS]
    fig.layout = {name: value for name, value in fig.layout.to_plotly_json().items() if name not in gone}
