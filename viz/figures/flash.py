"""Figures and tables for the Serving page's FlashAttention section, drawn from
:mod:`viz.core.serving.flash`: the score matrix tile by tile, the current tile's running sums, and the
bytes each pass moves between slow and fast memory.

Pure functions from results to plotly figures or pandas tables; tokens are HTML-escaped with
:func:`safe` before they reach plotly.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from ..core.engine.explain import fmt
from ..core.serving import words as say
from ..core.serving.flash import FlashRun, TrafficPoint
from ..core.scale.memory import format_bytes
from .base import INK, MASKED, PHONE_PX, figure, frame, legend_marker, outline, rect, safe, series
from .memory import GREY
from .serving import plain_layout

# px of the stepped tile grid (rows × cells) that fit the first screen under its step control: at a desk
# (1440 × 900), and in presenter mode's larger type (1280 × 720), where the step control and the narration
# stand atop the controls' column beside the grid, so the grid starts under the section picker and takes
# the lesson column's whole width (beside its narration it drew 215 × 255 px of a 450-px column)
TILES_PX = {False: 310, True: 330}
# room beside the grid (px, at ``text_px`` type): the query labels ("22 · morning") and their axis title at
# its left, the colour bar with its numbers and title at its right
SIDE_EM, LABEL_GAP_EM, ROW_EM = 14, 1.2, 1.4


def label_every(cell_px: float, label_px: float) -> int:
    """Label every k-th row or column of cells ``cell_px`` wide: the smallest k whose labels, ``label_px``
    each, never touch (a 32-token grid in a projector's column: 6-px cells, every label would collide)."""
    return max(1, math.ceil(label_px / max(cell_px, 1)))


def flash_tiles_figure(run: FlashRun, index: int, head: int, head_name: str, *, plot_px: int = 480,
                       width_px: int = PHONE_PX, text_px: int = 12) -> go.Figure:
    """The n × n scores of one head (a colour bar says which colour is which score): tiles already
    done, the current one (outlined as the focus) with its numbers, the ones still to come, and the
    ones above the diagonal that are never loaded (the masked grey); a legend names each. The grid is
    at most ``plot_px`` high (rows of 30 px where they fit) in a column ``width_px`` wide; keys are
    labelled by position (level numbers), queries by position and token, each every k-th cell so
    that ``text_px`` labels never touch."""
    n = run.n
    z = np.full((n, n), np.nan)
    text = np.full((n, n), "", dtype=object)
    for visit in run.visits[: index + 1]:
        (r0, r1), (c0, c1) = visit.rows, visit.cols
        block = visit.scores[head].numpy()
        z[r0:r1, c0:c1] = np.where(np.isfinite(block), block, np.nan)
        if visit.index == index and n <= 24:
            text[r0:r1, c0:c1] = [[("" if not np.isfinite(s) else f"{s:.0f}") for s in row] for row in block]
    labels = [f"{i + 1} · {safe(t)}" for i, t in enumerate(run.tokens)]
    keys = [str(i + 1) for i in range(n)]
    shapes = []
    current = run.visits[index]
    q_tiles, k_tiles = run.tiles
    visited = {(v.q_tile, v.k_tile) for v in run.visits}
    for qi in range(q_tiles):
        for kj in range(k_tiles):
            r0, c0 = qi * run.block_q, kj * run.block_k
            r1, c1 = min(r0 + run.block_q, n), min(c0 + run.block_k, n)
            if (qi, kj) not in visited:
                shapes.append(dict(type="rect", x0=c0 - 0.5, x1=c1 - 0.5, y0=r0 - 0.5, y1=r1 - 0.5,
                                   fillcolor=MASKED, line=dict(width=0), layer="below"))
            else:
                shapes.append(rect(c0 - 0.5, c1 - 0.5, r0 - 0.5, r1 - 0.5, INK, 1))  # a tile's edge
    shapes.append(outline("focus", current.cols[0] - 0.5, current.cols[1] - 0.5, current.rows[0] - 0.5,
                          current.rows[1] - 0.5, 4))
    data = [go.Heatmap(z=z, x=keys, y=labels, text=text, texttemplate="%{text}", textfont=dict(size=12),
                       colorscale="RdBu", zmid=0, showscale=True, xgap=1, ygap=1,
                       colorbar=dict(title=dict(text="score", side="right"), thickness=12, len=0.8),
                       hovertemplate="query %{y}<br>key %{x}<br>score %{z}<extra></extra>"),
            legend_marker("focus", "current tile"),
            legend_marker("masked", "above the diagonal: never loaded", filled=True)]
    if index < len(run.visits) - 1:  # the white tiles, edged in ink: no meaning's colour, named all the same
        data.append(go.Scatter(x=[None], y=[None], mode="markers", name="tile still to come", hoverinfo="skip",
                               marker=dict(symbol="square", size=14, color="white", line=dict(color=INK, width=1))))
    cell = min(30, plot_px // n)
    column = (width_px - SIDE_EM * text_px) / n  # a column's px once the labels and colour bar have theirs
    every_key = label_every(column, (len(str(n)) + LABEL_GAP_EM) * text_px * 0.6)
    every_query = label_every(cell, ROW_EM * text_px)
    layout = frame(f"Head '{safe(head_name)}': tile {index + 1} of {len(run.visits)}, scores Q·Kᵀ/√d_k",
                   150 + cell * n, top=96, background="white", shapes=shapes, showlegend=True,
                   legend=dict(orientation="h", x=0, y=0, yanchor="bottom", yref="container"),
                   xaxis=dict(type="category", side="top", tickmode="array", tickvals=keys[::every_key],
                              title=dict(text="key (columns)"), tickfont=dict(size=text_px)),
                   yaxis=dict(type="category", autorange="reversed", title=dict(text="query (rows)"),
                              tickmode="array", tickvals=labels[::every_query], tickfont=dict(size=text_px)))
    layout["margin"]["b"] = 40  # the legend under the grid
    return figure(data, layout)


def running_table(run: FlashRun, index: int, head: int) -> pd.DataFrame:
    """The current tile's rows: the running max before → after, the rescale, the sum and the output
    (six columns: a phone's width holds them)."""
    v = run.visits[index]
    rows = range(v.rows[0], v.rows[1])
    return pd.DataFrame({
        "query": [f"{r + 1} · {run.tokens[r]}" for r in rows],
        "running max": [say.max_change(float(b), float(a), fmt) for b, a in zip(v.max_before[head], v.max_after[head])],
        "rescale": [float(x) for x in v.rescale[head]],
        "sum l": [float(x) for x in v.sum_after[head]],
        "output o": [float(x) for x in v.out_after[head]],
        "o / l": [float(x) for x in v.contexts[head]],
    })


def traffic_table(run: FlashRun) -> pd.DataFrame:
    """Every item both passes move between slow and fast memory."""
    rows = [("naive", what, r, w) for what, r, w in run.naive.items]
    rows += [("tiled", what, r, w) for what, r, w in run.flash.items]
    return pd.DataFrame({"pass": [r[0] for r in rows], "what": [r[1] for r in rows],
                         "read": [format_bytes(r[2]) if r[2] else "" for r in rows],
                         "written": [format_bytes(r[3]) if r[3] else "" for r in rows]})


def traffic_figure(points: Sequence[TrafficPoint], block_q: int, block_k: int,
                   large: Sequence[TrafficPoint] = (), large_tile: int = 0) -> go.Figure:
    """Bytes moved by the naive and the tiled pass against sequence length (log scales), and by a
    pass with large tiles for comparison."""
    n = [p.n for p in points]
    data = [go.Scatter(x=n, y=[p.naive for p in points], name="naive: writes and reads S and P", mode="lines+markers",
                       line=dict(color=series(1)[0], dash=series(1)[1]),
                       customdata=[format_bytes(p.naive) for p in points],
                       hovertemplate="n = %{x}: %{customdata}<extra></extra>"),
            go.Scatter(x=n, y=[p.flash for p in points], name=f"tiled, {block_q} × {block_k} tiles",
                       mode="lines+markers", line=dict(color=series(0)[0]),
                       customdata=[format_bytes(p.flash) for p in points],
                       hovertemplate="n = %{x}: %{customdata}<extra></extra>"),
            go.Scatter(x=n, y=[p.score_matrix for p in points], name="one n × n score matrix (all heads)",
                       mode="lines", line=dict(color=GREY, dash="dot"),
                       customdata=[format_bytes(p.score_matrix) for p in points],
                       hovertemplate="n = %{x}: %{customdata}<extra></extra>")]
    if large:
        data.append(go.Scatter(x=[p.n for p in large], y=[p.flash for p in large], mode="lines+markers",
                               name=f"tiled, {large_tile} × {large_tile} tiles",
                               line=dict(color=series(2)[0], dash=series(2)[1]),
                               customdata=[format_bytes(p.flash) for p in large],
                               hovertemplate="n = %{x}: %{customdata}<extra></extra>"))
    return figure(data, plain_layout("Bytes between slow and fast memory per prefill<br>pass, against tokens", 360,
                                     xaxis=dict(type="log", title="tokens in the prompt (n)"),
                                     yaxis=dict(title="bytes", type="log")))
