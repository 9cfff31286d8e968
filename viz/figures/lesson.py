"""Plotly figures for one lesson screen (viz.core.lessons.lesson.LessonFrame) whose window is too large for
the light board (viz.figures.board): the attention heatmap and the keys and values under its
columns (stale cached keys marked), and the replay of every step; plus the screen as tables.

Built to fit a projector: rows and keys are the window's (the newest ones by default), cell
numbers appear only where they fit (the trace's own text template, one trace per matrix), every
cell has a hover, near-zero weights read 0, the axes say which are queries and which keys, and every
mark (viz.figures.meanings) is explained by a legend.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import torch

from ..core.engine.explain import fmt
from ..core.lessons.lesson import CacheView, LessonFrame
from .base import INK, QUERY_KEY, figure, frame, grid, legend_marker, outline, safe, short, stripes
from .meanings import FOCUS_NEWEST, FOCUS_POSITION, KEY_SCALE, VALUE_SCALE, cache_scales, scale_markers

CELL_TEXT_COLUMNS = 16  # cell numbers are drawn up to this many keys (they no longer fit beyond)
CELL_TEXT_ROWS = 24
ROW_PX = 24  # height of one matrix row (16 px cell text fits)
LABEL_PX = 18  # the least row height a tick label needs, presenter type too (thinner rows: every k-th labelled)
GAPPED = 40  # cells get 2-px gaps up to this many per row or column (beyond, the gaps would be all one sees)
TICKS_PX = 74  # room for key labels at -45°


def _ticks(frame_: LessonFrame, positions: tuple[int, ...]) -> list[str]:
    return [f"{p + 1} · {safe(frame_.tokens[p])}" for p in positions]


CONTEXTS_TITLE = "Contexts: Σ weights · values, one per head and position"


def attention_title(frame_: LessonFrame, head: str) -> str:
    """The attention window's title: the head (as the caller prepared it) and which rows it shows."""
    window = frame_.window
    return f"Attention · head '{head}'" + (
        "" if window.complete else f" · rows {window.rows[0] + 1}–{window.rows[-1] + 1} of {window.total_rows}")


def cache_title(view: CacheView) -> str:
    """The cache view's title: entries and bytes of the KV cache, or that every key was encoded again."""
    if view.cached and view.nbytes:
        title = f"KV cache: {view.length} entries, {view.nbytes:,} bytes"
    elif view.cached:
        title = f"Cache after prefill: {view.length} entries"
    else:
        title = "No cache: every key encoded again this step"
    return title + ("" if view.compared else " (not compared yet)")


def attention_figure(frame_: LessonFrame, head: str, *, newest_key: bool = False) -> go.Figure:
    """The window of one head's attention weights: query rows × keys, the focus row outlined as the
    focus, with ``newest_key`` the key written this step outlined as new."""
    window = frame_.window
    title = attention_title(frame_, safe(head))
    z = frame_.weights.detach().double().cpu()
    rows, cols = z.shape
    visible = torch.isfinite(z)
    values = z.tolist()
    keep = visible.tolist()
    fits = cols <= CELL_TEXT_COLUMNS and rows <= CELL_TEXT_ROWS
    text = np.array([[short(v) if k else "" for v, k in zip(vr, kr)] for vr, kr in zip(values, keep)],
                    dtype=object)
    hover = np.array([[f"weight {fmt(v)}" if k else "masked: this key comes after the query"
                       for v, k in zip(vr, kr)] for vr, kr in zip(values, keep)], dtype=object)
    x_labels, y_labels = _ticks(frame_, window.keys), _ticks(frame_, window.rows)
    trace = go.Heatmap(
        z=z.numpy(), x=list(range(cols)), y=list(range(rows)), text=text if fits else None,
        texttemplate="%{text}" if fits else None, textfont=dict(size=12), customdata=hover, hoverongaps=True,
        xgap=2 if cols <= GAPPED else 0, ygap=2 if rows <= GAPPED else 0, colorscale="Blues", zmin=0, zmax=1,
        showscale=not fits, colorbar=dict(title=dict(text="weight"), thickness=12),
        # the axes are numeric (tokens repeat), so the query and key labels travel as hover text
        hovertext=np.array([[f"query {y}<br>key {x}" for x in x_labels] for y in y_labels], dtype=object),
        hovertemplate="%{hovertext}<br>%{customdata}<extra></extra>", name="")
    focus = window.rows.index(frame_.focus) if frame_.focus in window.rows else None
    shapes, legend = [], []
    if focus is not None:
        shapes.append(outline("focus", -0.5, cols - 0.5, focus - 0.5, focus + 0.5, 4))
        newest = newest_key or frame_.cache.written != window.keys
        legend.append(legend_marker("focus", FOCUS_NEWEST if newest else FOCUS_POSITION))
    if newest_key and focus is not None and frame_.focus in window.keys:
        col = window.keys.index(frame_.focus)
        shapes.append(outline("new", col - 0.5, col + 0.5, focus - 0.5, focus + 0.5, 4))
        legend.append(legend_marker("new"))
    if window.skipped:  # a dashed line where keys were left out
        shapes.append(dict(type="line", x0=0.5, x1=0.5, y0=-0.5, y1=rows - 0.5, xref="x", yref="y",
                           line=dict(color=INK, width=2, dash="dot")))
    row_px = ROW_PX if rows <= CELL_TEXT_ROWS else max(6, 640 // rows)
    every = -(-LABEL_PX // row_px)  # every row where rows are as tall as a label, else every k-th, counted
    labelled = range((rows - 1 if focus is None else focus) % every, rows, every)  # from the row in focus
    layout = frame(title, 36 + TICKS_PX + row_px * rows + (34 if legend else 0), top=36,
                   xaxis=dict(tickvals=list(range(cols)), ticktext=x_labels, side="bottom", tickangle=-45,
                              showticklabels=cols <= 64, showgrid=False, zeroline=False, title=dict(text=QUERY_KEY[0])),
                   yaxis=dict(tickvals=list(labelled), ticktext=[y_labels[r] for r in labelled], autorange="reversed",
                              showgrid=False, zeroline=False, title=dict(text=QUERY_KEY[1])),
                   shapes=shapes, showlegend=bool(legend),
                   legend=dict(orientation="h", x=0, xref="container", y=0, yanchor="bottom", yref="container"))
    layout["margin"]["b"] = TICKS_PX + (34 if legend else 0)
    return figure([trace, *legend], layout)


def _sign_text(signs: torch.Tensor) -> np.ndarray:
    return np.array([["+1" if v > 0 else ("−1" if v < 0 else "q·k") for v in row] for row in signs.tolist()],
                    dtype=object)


def _stale_text(signs: torch.Tensor, stale: set[tuple[int, int]], positions: tuple[int, ...]) -> np.ndarray:
    """The key cells' text: each sign, and "stale" after it in a stale cell (said, not only drawn)."""
    text = _sign_text(signs)
    for h, position in stale:
        text[h, positions.index(position)] += " stale"
    return text


def cache_figure(frame_: LessonFrame, heads: list[str]) -> go.Figure:
    """The keys (one ±1 row per head) and values under the window's key columns: the KV cache's
    entries, or the keys encoded again without a cache. Each stale cached key is hatched and
    outlined (dotted), the entry written this step outlined as new; a legend says which is which, and
    what the cells' own colours say (a key of −1 or +1, the values' scale: the board's entries, so a
    "Whole" view whose cells carry no numbers is read from it). The legend sits under the plot, in
    as many rows as the width it is fitted to takes (:func:`viz.figures.base.fit`)."""
    view: CacheView = frame_.cache
    positions = view.keys
    cols = len(positions)
    gap = 2 if cols <= GAPPED else 0
    labels = _ticks(frame_, positions)
    fits = cols <= CELL_TEXT_COLUMNS
    head_labels = [safe(h) for h in heads]
    signs = view.signs.detach().double().cpu()
    values = view.values.detach().double().cpu()
    layout, refs = grid(2, 1, (), vspace=0.16 / max(1.0, len(heads) ** 0.5), row_heights=[len(heads), 1])
    stale = set(view.stale)
    key_hover = np.array([[f"head {head_labels[h]}<br>cached key of {labels[c]}: {_sign_text(signs[h:h + 1, c:c + 1])[0, 0]}"
                           + ("<br><b>stale</b>: encoding it again gives the opposite" if (h, positions[c]) in stale else "")
                           for c in range(cols)] for h in range(len(heads))], dtype=object)
    data = [
        go.Heatmap(z=signs.numpy(), x=list(range(cols)), y=list(range(len(heads))), colorscale=KEY_SCALE,
                   zmin=-1, zmax=1, showscale=False, texttemplate="%{text}" if fits else None,
                   text=_stale_text(signs, stale, positions) if fits else None, textfont=dict(size=12),
                   customdata=key_hover, xgap=gap, ygap=2,
                   hovertemplate="%{customdata}<extra></extra>", xaxis=refs[0][0], yaxis=refs[0][1], name=""),
        go.Heatmap(z=values[None, :].numpy(), x=list(range(cols)), y=[0], colorscale=VALUE_SCALE, showscale=False,
                   zmin=view.value_range[0] if view.value_range else None,  # every entry's range, shown or not
                   zmax=view.value_range[1] if view.value_range else None,
                   text=np.array([[short(v) for v in values.tolist()]], dtype=object) if fits else None,
                   texttemplate="%{text}" if fits else None, textfont=dict(size=12), xgap=gap,
                   customdata=np.array([[f"value of {label}: {fmt(v)}" for label, v in zip(labels, values.tolist())]],
                                       dtype=object),
                   hovertemplate="%{customdata}<extra></extra>", xaxis=refs[1][0], yaxis=refs[1][1], name=""),
    ]
    shapes, legend = _cache_marks(view, len(heads), gap, refs)
    layout["xaxis"].update(tickvals=list(range(cols)), ticktext=labels, showticklabels=False, showgrid=False,
                           zeroline=False, range=[-0.5, cols - 0.5])
    layout["xaxis2"].update(tickvals=list(range(cols)), ticktext=labels, tickangle=-45, showgrid=False,
                            zeroline=False, range=[-0.5, cols - 0.5], showticklabels=cols <= 64,
                            title=dict(text=QUERY_KEY[0]))
    layout["yaxis"].update(tickvals=list(range(len(heads))), ticktext=[f"K {h}" for h in head_labels],
                           autorange="reversed", showgrid=False, zeroline=False)
    layout["yaxis2"].update(tickvals=[0], ticktext=["V"], showgrid=False, zeroline=False)
    scales = scale_markers(cache_scales(bool((signs == 0).any())))  # what the cells' own colours say
    legend += scales
    title = cache_title(view)
    # under the plot: fit() makes room for the ticks and every row the legend takes at the figure's width
    extra = dict(showlegend=True, legend=dict(orientation="h", x=0, xref="container", y=-0.02, yanchor="top"))
    if len(legend) > len(scales):  # wrapped, Plotly gives each entry its widest one's width and its
        # symbol's, one a row in a third of a projector: two a row, the rows fit() makes room for there
        extra["legend"].update(entrywidth=0.5, entrywidthmode="fraction")
    row_px = min(30, 200 // len(heads))  # many heads: thinner rows, the figure stays one screen high
    height = 36 + row_px * (len(heads) + 1) + 16 + TICKS_PX
    layout_ = frame(title, height, top=36, background="white", shapes=shapes, **extra, **layout)
    layout_["margin"]["b"] = 10 + TICKS_PX
    return figure([*data, *legend], layout_)


def _cache_marks(view: CacheView, heads: int, gap: int, refs) -> tuple[list, list]:
    """The cache figure's shapes and legend entries for its marked cells: each stale key hatched and
    outlined, as the board hatches it (a hatched swatch), the entry written this step outlined as new."""
    positions, shapes, legend = view.keys, [], []
    at = [(positions.index(position), h) for h, position in sorted(set(view.stale))]  # (column, row) of each
    shapes += [outline("stale", c - 0.5, c + 0.5, h - 0.5, h + 0.5, 5 if gap else 1, refs[0]) for c, h in at]
    if at:
        shapes += stripes("stale", at, count=5 if gap else 3, width=2 if gap else 1, ref=refs[0])
        legend.append(legend_marker("stale"))
    if len(view.written) == 1 and view.written[0] in positions:
        c = positions.index(view.written[0])
        shapes += [outline("new", c - 0.5, c + 0.5, -0.5, span - 0.5, 3 if gap else 2, ref)
                   for span, ref in ((heads, refs[0]), (1, refs[1]))]
        legend.append(legend_marker("new", "new entry" if view.cached else "new key"))
    return shapes, legend


def frame_tables(frame_: LessonFrame, heads: list[str]) -> list[tuple[str, pd.DataFrame]]:
    """The lesson screen's figures as tables (for screen readers, and to copy numbers from)."""
    window, view = frame_.window, frame_.cache
    keys = [f"{p + 1} {frame_.tokens[p]}" for p in window.keys]
    weights = pd.DataFrame(frame_.weights.numpy(), columns=keys)
    if frame_.hidden is not None and window.gap_label:  # the keys left out, summed (as the board's gap column)
        weights.insert(1, f"{window.gap_label} (keys {window.hidden_span} summed)", frame_.hidden.numpy())
    weights.insert(0, "query", [f"{p + 1} {frame_.tokens[p]}" for p in window.rows])
    cache = pd.DataFrame({"key": keys, "value V": [float(v) for v in view.values]})
    stale = set(view.stale)
    for h, name in enumerate(heads):
        cache[f"K {name}"] = [("q·k" if s == 0 else f"{s:+.0f}") + (" stale" if (h, p) in stale else "")
                              for s, p in zip(view.signs[h].tolist(), window.keys)]
    words = pd.DataFrame({"word": [w.token for w in frame_.words], "p": [w.p for w in frame_.words],
                          "chosen": [w.chosen for w in frame_.words],
                          "kept by top-k/top-p": [w.kept for w in frame_.words]})
    return [("Attention weights (rows: queries, columns: keys; empty: masked)", weights),
            ("Keys and values" + (" in the KV cache" if view.cached else " encoded again"), cache),
            ("Next word", words)]


def replay_figure(frames: list[LessonFrame], head: str) -> go.Figure:
    """The attention window of every step computed so far in one figure: a slider (and Play) steps
    through them in the browser, with no round trip to the server. Every frame is the engine's."""
    figs = [attention_figure(f, head) for f in frames]
    last = figs[-1]
    names = [str(f.step) for f in frames]
    animate = dict(mode="immediate", frame=dict(duration=0, redraw=True), transition=dict(duration=0))
    layout = last.layout.to_plotly_json()
    layout["height"] = max(fig.layout.height for fig in figs) + 70
    layout["margin"]["b"] += 70
    layout["showlegend"] = False
    layout["sliders"] = [dict(active=len(frames) - 1, currentvalue=dict(prefix="step "), pad=dict(t=TICKS_PX),
                              steps=[dict(label=name, method="animate", args=[[name], animate]) for name in names])]
    return go.Figure(
        data=[last.data[0]], layout=layout,
        frames=[go.Frame(name=name, data=[fig.data[0]], traces=[0],
                         layout=dict(title=fig.layout.title, xaxis=fig.layout.xaxis, yaxis=fig.layout.yaxis,
                                     shapes=fig.layout.shapes))
                for name, fig in zip(names, figs)])
