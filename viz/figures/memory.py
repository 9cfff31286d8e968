"""Figures for cache memory: the calculator at scale, the paged pool, eviction and quantisation.

Pure functions from the core's results (:mod:`viz.core.scale.memory`, :mod:`viz.core.serving.paged`, :mod:`viz.core.serving.compress`)
to plotly figures or pandas tables; no arithmetic beyond unit conversion and labelling. User text
(tokens, head names, words) is HTML-escaped before it reaches plotly.
"""

from __future__ import annotations

from typing import Sequence

import pandas as pd
import plotly.graph_objects as go
import torch

from ..core.serving.compress import CacheComparison, StepComparison
from ..core.scale.cache_layout import LibraryLayout
from ..core.scale.memory import DTYPE_BITS, GIB, CacheMemory, GpuFit, MemoryCurve, ToyCacheMemory, format_bytes
from ..core.scale.words import CurveNotes
from ..core.serving.paged import PagedRun, PoolSnapshot, WasteReport
from .base import (BLUE, CHAR_EM, FREE, GREEN, INK, LEFT_OUT, MEANINGS, PHONE_PX, SERIES, SKY, balanced,
                   font_sizes, legend_item, legend_marker, safe, series, short, titled)
from .meanings import hatch, owner
from .board import colored_cell, shade
from .lesson import CELL_TEXT_COLUMNS

GREY = LEFT_OUT  # a baseline series (the full cache), and what lies outside the engine
SHARED, EMPTY = MEANINGS["shared"], MEANINGS["reserved"]
MAX_BLOCK_ROWS = 48  # physical blocks drawn; a long prompt's pool is summarised in the title
MAX_TEXT_COLUMNS = 40  # label heatmap cells only while they are wide enough to read


def _layout(fig: go.Figure, title: str, height: int, *, legend: bool = True, top: int = 50) -> go.Figure:
    fig.update_layout(**titled(title, height, top), plot_bgcolor="white", showlegend=legend,
                      legend=dict(orientation="h", x=0, y=-0.02, yanchor="top"))  # under the plot: fit() makes room
    fig.update_xaxes(gridcolor="#eceff4")
    fig.update_yaxes(gridcolor="#eceff4")
    return fig


# -- at scale -------------------------------------------------------------------------------
CURVE_PLOT_PX = PHONE_PX - 70  # the curve's plot on a phone: its figure less the y axis's title and numbers
NOTE_GAP_PX = 8  # between a vertical line and the words beside it
LABEL_ROW_PX = 18  # a line's label below another's, at the plot's top


def _label_side(at: float, lines: Sequence[float]) -> tuple[str, int]:
    """The side of the vertical line at ``at`` (a fraction of the x axis) with more room before the next
    line or the axis's end, for its label; and the shift that keeps the label off the line."""
    left = at - max([0.0, *(x for x in lines if x < at)])
    right = min([1.0, *(x for x in lines if x > at)]) - at
    return ("right", NOTE_GAP_PX) if right >= left else ("left", -NOTE_GAP_PX)


def _widest_gap(lines: Sequence[float]) -> tuple[float, float]:
    """The widest stretch of the x axis (fractions) between its ends and the vertical lines at ``lines``."""
    edges = sorted({0.0, 1.0, *(min(1.0, max(0.0, x)) for x in lines)})
    return max(zip(edges, edges[1:]), key=lambda gap: (gap[1] - gap[0], gap[0]))  # a tie: the right one


def note_placement(lines: Sequence[float]) -> dict:
    """Where the note 'far above this chart' goes, as annotation settings in fractions of the x axis: in
    the widest stretch between the vertical lines, clear of them by :data:`NOTE_GAP_PX` and in lines short
    enough for that stretch on a phone (none crosses a line). The rightmost stretch: at its foot, under the
    curves rising to the top right; another: at its top, above them, under the lines' labels."""
    a, b = _widest_gap(lines)
    room = (b - a) * CURVE_PLOT_PX - 2 * NOTE_GAP_PX
    chars = max(12, int(room / (font_sizes().text * CHAR_EM)))
    if b == 1.0:
        where = dict(x=b, xanchor="right", xshift=-NOTE_GAP_PX, align="right", y=0, yanchor="bottom", yshift=4)
    else:
        where = dict(x=a, xanchor="left", xshift=NOTE_GAP_PX, align="left", y=1, yanchor="top",
                     yshift=-2 * LABEL_ROW_PX)
    return dict(where, chars=chars)


def memory_curve_figure(curves: Sequence[tuple[str, MemoryCurve]], tokens: int, notes: CurveNotes,
                        budget_bytes: int | None = None, max_context: int | None = None,
                        state_bytes: int = 0) -> go.Figure:
    """Cache of the batch (GiB) against context length, one line per model; what the GPUs can hold
    for the cache as a dashed line, the chosen length as a dotted one; the first model's fixed state
    (linear-attention and state-space layers), which the curve includes, as a flat line under it.
    ``notes``: the words on those lines (:func:`viz.core.scale.words.curve_notes`). Each vertical line's
    label sits at its top on its roomier side, off the line; the note that the GPUs' line is far above
    the chart sits between the lines (:func:`note_placement`)."""
    fig = go.Figure()
    for i, (name, curve) in enumerate(curves):
        fig.add_trace(go.Scatter(
            x=list(curve.tokens), y=[b / GIB for b in curve.bytes], name=safe(name), mode="lines",
            line=dict(color=series(i)[0], dash=series(i)[1], width=3 if i == 0 else 2),
            customdata=[format_bytes(b) for b in curve.bytes],
            hovertemplate="%{x:,} tokens: %{customdata}<extra>" + safe(name) + "</extra>"))
    highest = max((max(curve.bytes) for _, curve in curves), default=0)
    span = max([tokens, max_context or 0, *(max(curve.tokens) for _, curve in curves)])
    trained = max_context is not None and max_context != tokens
    lines = [tokens / span] + ([max_context / span] if trained else [])
    if budget_bytes is not None and budget_bytes <= 2 * highest:
        fig.add_hline(y=budget_bytes / GIB, line=dict(color=INK, dash="dash"), annotation_text=notes.held,
                      annotation_position="top left")
    elif budget_bytes is not None:  # a line far above the curves would flatten them
        place = note_placement(lines)
        chars = place.pop("chars")
        fig.add_annotation(text=balanced(notes.above, chars), xref="paper", yref="paper",
                           showarrow=False, font_color=INK, **place)
    side, shift = _label_side(lines[0], lines)
    fig.add_vline(x=tokens, line=dict(color=INK, dash="dot", width=2),  # labelled where it is: neutral ink
                  annotation_text=notes.tokens, annotation_position=f"top {side}", annotation_xshift=shift)
    if trained:  # a row under the chosen length's label: the two never meet
        side, shift = _label_side(lines[1], lines)
        fig.add_vline(x=max_context, line=dict(color=GREY, dash="dot"), annotation_text=notes.trained,
                      annotation_position=f"top {side}", annotation_xshift=shift, annotation_yshift=-LABEL_ROW_PX)
    if state_bytes:  # the part that does not grow, against the K/V that does
        fig.add_hline(y=state_bytes / GIB, line=dict(color=SERIES[3], dash="dashdot"),
                      annotation_text=notes.state, annotation_position="bottom right")
    fig.update_xaxes(title="context length (tokens per sequence)", range=[0, span])  # the lines' fractions
    fig.update_yaxes(title="K/V + fixed state of the batch (GiB)" if state_bytes else "KV cache of the batch (GiB)",
                     rangemode="tozero")
    # 360: with the legend's row under the plot (fit() adds it) the figure stays whole in the first screen
    return _layout(fig, "Cache memory grows with every token", 360)  # one line on a phone too


def gpu_split_figure(fit: GpuFit, batch: int) -> go.Figure:
    """One bar for one GPU's memory: its slice of the weights, the reserve, the batch's cache share,
    what is left for more sequences, and what the engine leaves alone."""
    weights = min(fit.weights_bytes, fit.requested_bytes)
    reserve = min(fit.reserve_bytes, fit.requested_bytes - weights)
    wanted = batch * fit.sequence_bytes
    cache = min(wanted, fit.cache_budget_bytes)
    state = min(batch * fit.state_bytes, cache)  # the part that does not grow with the context
    parts = [("weights" + (f" (1/{fit.gpus})" if fit.gpus > 1 else ""), weights, SKY),
             ("activation peak + CUDA graphs", reserve, GREEN),
             ("KV cache of the batch", cache - state, BLUE),
             *([("fixed state of the batch", state, SERIES[3])] if fit.state_bytes else []),
             ("free for more sequences", fit.cache_budget_bytes - cache, FREE),
             (f"outside the engine's {fit.utilization:.0%}", fit.outside_bytes, GREY)]
    fig = go.Figure()
    for name, size, color in parts:
        fig.add_trace(go.Bar(x=[size / GIB], y=["GPU"], orientation="h", name=name, marker_color=color,
                             marker_line=dict(color="#99a", width=1), text=[format_bytes(size)],
                             textposition="inside", insidetextanchor="middle",
                             hovertemplate=f"{name}: {format_bytes(size)}<extra></extra>"))
    overflow = max(0, wanted - fit.cache_budget_bytes) + max(0, fit.weights_bytes + fit.reserve_bytes
                                                               - fit.requested_bytes)
    if overflow:
        fig.add_trace(go.Bar(x=[overflow / GIB], y=["GPU"], orientation="h", name="does not fit",
                             marker=dict(color=MEANINGS["rejected"].color, pattern_shape=MEANINGS["rejected"].pattern,
                                         pattern_fgcolor="white"), text=[f"{format_bytes(overflow)} too much"],
                             textposition="inside", hovertemplate="does not fit: %{text}<extra></extra>"))
    fig.update_layout(barmode="stack", legend_traceorder="normal")
    fig.update_xaxes(title="GiB")
    fig.update_yaxes(showticklabels=False)
    each = " on each of the GPUs" if fit.gpus > 1 else ""
    return _layout(fig, f"Where the {format_bytes(fit.gpu_bytes)} of a {safe(fit.gpu.name)} go{each}", 220)


def dtype_table(rows: Sequence[CacheMemory]) -> pd.DataFrame:
    """Per token, per sequence and per batch for each cache dtype."""
    return pd.DataFrame({
        "cache dtype": [m.dtype for m in rows],
        "per token": [format_bytes(m.bytes_per_token) for m in rows],
        "per sequence": [format_bytes(m.bytes_per_sequence) for m in rows],
        "per batch": [format_bytes(m.bytes_per_batch) for m in rows],
    })


def gpu_table(fits: Sequence[GpuFit]) -> pd.DataFrame:
    """Sequences that fit for each GPU (named with its size on the box), budget per GPU: five short
    columns, so that the table fits a phone's width."""
    return pd.DataFrame({
        "GPU": [f"{fit.gpu.name} ({fit.gpu.marketed})" for fit in fits],
        "weights fit": ["yes" if fit.weights_fit else "no" for fit in fits],
        "cache budget per GPU": [format_bytes(fit.cache_budget_bytes) for fit in fits],
        "sequences that fit": [fit.sequences for fit in fits],
        "tokens of cache": [fit.tokens for fit in fits],
    })


def layout_table(layout: LibraryLayout) -> pd.DataFrame:
    """transformers' cache layer by layer, runs of identical layers folded into one row."""
    rows: list[list] = []
    for layer in layout.layers:
        same = (layer.kind, layer.cache_class, layer.key_shape, layer.value_shape, layer.storage_bytes,
                layer.formula_bytes)
        if rows and rows[-1][-1] == same:
            rows[-1][1] = layer.layer
            continue
        rows.append([layer.layer, layer.layer, same])
    return pd.DataFrame({
        "layers": [f"{a}" if a == b else f"{a}–{b}" for a, b, _ in rows],
        "config says": [same[0] for _, _, same in rows],
        "transformers class": [same[1] for _, _, same in rows],
        "K shape": [str(list(same[2])) for _, _, same in rows],
        "V shape": [str(list(same[3])) for _, _, same in rows],
        "storage per layer": [format_bytes(same[4]) for _, _, same in rows],
        "formula per layer": [format_bytes(same[5]) for _, _, same in rows],
    })


def toy_table(toy: ToyCacheMemory, memory: CacheMemory) -> pd.DataFrame:
    """The toy's cache as the engine holds it next to the real model's: one row per fact, one column
    each (three columns, so that the table fits a phone's width)."""
    real = memory.config
    return pd.DataFrame({
        "": ["layers", "cached per token and layer", "bytes per number", "per token", "tokens", "whole cache"],
        "the toy": [f"{1:,}", f"{toy.heads} keys × {toy.d_k} + 1 value", f"{toy.element_size:g}",
                    format_bytes(toy.bytes_per_token), f"{toy.tokens:,}", format_bytes(toy.nbytes)],
        f"{real.name} ({memory.dtype})": [f"{real.layers:,}", f"{real.elements_per_token_layer:,} numbers",
                                          f"{DTYPE_BITS[memory.dtype] / 8:g}", format_bytes(memory.bytes_per_token),
                                          f"{memory.tokens:,}", format_bytes(memory.bytes_per_sequence)],
    })


# -- paged blocks ---------------------------------------------------------------------------
def _pool(run: PagedRun, snapshot: PoolSnapshot, names: Sequence[str]):
    """What the pool picture shows, for both renderers: the palette (free, empty slot, shared, one
    colour per sequence), the blocks drawn, and per block its label and per slot (colour index,
    token or "", hover lines). User text is left raw: each renderer escapes it as it must."""
    used = [b for b, count in enumerate(snapshot.refcounts) if count]
    shown = list(range(min(MAX_BLOCK_ROWS, (max(used) + 1) if used else 0)))
    hidden = len(snapshot.refcounts) - len(shown)
    palette = [FREE, EMPTY.color, SHARED.color] + [owner(i) for i in range(len(names))]
    copies = dict(snapshot.copied_from)
    rows = []
    for block in shown:
        owners = snapshot.owners[block]
        color = (2 if len(owners) > 1 else 3 + owners[0]) if owners else 0
        holder = ", ".join(names[i] for i in owners) or "nobody (free)"
        copy = copies.get(block)  # copied on write: said in its label and tips, not by a colour
        made = () if copy is None else (f"copied from block {copy} on write",)
        cells = []
        for slot, token in enumerate(snapshot.slots[block]):
            filled = bool(token) and bool(owners)
            cells.append((color if filled else (1 if owners else 0), token if filled else "",
                          (f"block {block}, slot {slot}", token if filled else "empty", f"held by {holder}", *made)))
        rows.append((_block_label(block, snapshot.refcounts[block], copy is not None), cells))
    rest_free = not any(snapshot.refcounts[len(shown):])  # the blocks past the last one drawn
    title = (f"Physical blocks after {snapshot.label}: {len(used)} in use, {snapshot.copies} copied on write"
             + (f"; {hidden} {'free ' if rest_free else 'more '}blocks not drawn" if hidden else ""))
    seen = {color for _, cells in rows for color, _, _ in cells}  # a legend entry for each colour drawn
    legend = [(f"sequence {name}", palette[3 + i]) for i, name in enumerate(names) if 3 + i in seen]
    legend += [(label, palette[i]) for i, label in ((2, SHARED.label), (1, "empty slot in a used block"),
                                                    (0, MEANINGS["free"].label)) if i in seen]
    return palette, rows, title, legend


def _block_label(block: int, refs: int, copied: bool) -> str:
    """A pool row's label, short enough for the board's 9-em label column: 'block 3 · ref 1', and for a
    private copy made on write 'block 3 · copy' (its tips say which block it copied); a copy shared
    again later says its references, as any shared block (its tips still say it is a copy)."""
    return f"block {block} · copy" if copied and refs == 1 else f"block {block} · ref {refs}"


def pool_figure(run: PagedRun, snapshot: PoolSnapshot, names: Sequence[str]) -> go.Figure:
    """Every physical block as a row of slots, coloured by the sequence that holds it (the shared
    colour when several share it), with the token in each slot and the reference count on the left."""
    palette, rows, title, legend = _pool(run, snapshot, names)
    z = [[color for color, _, _ in cells] for _, cells in rows]
    text = [[safe(token) for _, token, _ in cells] for _, cells in rows]
    hover = [["<br>".join(safe(line) for line in lines) for _, _, lines in cells] for _, cells in rows]
    n = len(palette)  # a stepped colour scale: value i is palette[i]
    colorscale = [item for i in range(n) for item in ([i / n, palette[i]], [(i + 1) / n, palette[i]])]
    fig = go.Figure(go.Heatmap(
        z=z, x=[f"slot {s}" for s in range(run.block_size)], y=[label for label, _ in rows], text=text,
        texttemplate="%{text}", textfont_size=12, customdata=hover, hovertemplate="%{customdata}<extra></extra>",
        colorscale=colorscale, zmin=-0.5, zmax=n - 0.5, showscale=False, xgap=3, ygap=3))
    for name, color in legend:  # legend entries for the colours
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", name=safe(name),
                                 marker=dict(color=color, size=12, symbol="square")))
    fig.update_yaxes(autorange="reversed", type="category", title="physical block (rows)")
    fig.update_xaxes(side="top", type="category", showgrid=False, title="slot (columns)")
    fig = _layout(fig, safe(title), 190 + 30 * max(1, len(rows)), top=100)  # the block numbers sit on top
    fig.update_layout(legend=dict(orientation="h", yanchor="top", y=-0.02, x=0, xanchor="left"))
    return fig


def pool_board(run: PagedRun, snapshot: PoolSnapshot, names: Sequence[str]) -> dict | None:
    """The same picture as :func:`pool_figure` as a board spec (``viz/ui/board.js``: tokens written as
    text, never markup); None when a block has more slots than cell text fits (Plotly draws it)."""
    if run.block_size > CELL_TEXT_COLUMNS:
        return None
    palette, rows, title, legend = _pool(run, snapshot, names)
    groups = [{"rows": [{"label": label, "cells": [colored_cell(palette[color], token, "\n".join(lines))
                                                   for color, token, lines in cells]}
                        for label, cells in rows]}]
    return {"kind": "matrix", "title": title, "axes": {"rows": "physical blocks", "columns": "slots"},
            "columns": [f"slot {s}" for s in range(run.block_size)],
            "groups": groups, "outlines": [], "gap_after": None,
            "legend": [{"label": name, "color": color, "fill": True} for name, color in legend],
            "label": f"{title}: one row per physical block, one cell per slot with the token it holds"}


def block_table_frame(snapshot: PoolSnapshot, names: Sequence[str]) -> pd.DataFrame:
    """Each sequence's block table: logical block i -> physical block, and the tokens it holds."""
    names = list(names)[: len(snapshot.tables)]  # sequences admitted by this iteration
    width = max((len(t) for t in snapshot.tables), default=0)
    data: dict[str, list] = {"sequence": names, "tokens": list(snapshot.lengths)}
    for i in range(width):
        data[f"logical {i}"] = [f"→ {t[i]}" if i < len(t) else "" for t in snapshot.tables]
    return pd.DataFrame(data)


def sequences_frame(run: PagedRun) -> pd.DataFrame:
    """What each sequence is, what it shared, and what it generated."""
    return pd.DataFrame({
        "sequence": [s.name for s in run.sequences],
        "prompt": [" ".join(s.tokens[: s.prompt_length]) for s in run.sequences],
        "shares": [f"{s.prefix_hits} tokens with {s.shared_with}" if s.shared_with else "—"
                   for s in run.sequences],
        "generated": [" ".join(s.words) for s in run.sequences],
    })


WASTE_TITLE = "Memory for the same sequences, three ways"


def _waste_rows(waste: WasteReport, max_new_tokens: int) -> list[tuple[str, list[tuple[str, int, str]]]]:
    """The three layouts, each as (label, [(part, slots, look)]): a look is a CSS background, the never-filled
    reservation hatched so it never reads as a block's empty end."""
    never = MEANINGS["unfilled"]
    return [
        (f"contiguous: prompt + {max_new_tokens} new tokens reserved each",
         [("held tokens", waste.tokens, BLUE), (never.label, waste.contiguous_waste, hatch("unfilled"))]),
        ("paged blocks, no sharing",
         [("held tokens", waste.tokens, BLUE), ("empty end of last block", waste.unshared_fragmentation, EMPTY.color)]),
        ("paged blocks + shared prefixes",
         [("held tokens", waste.stored_slots, BLUE), ("empty end of last block", waste.fragmentation, EMPTY.color)]),
    ]


def waste_board(waste: WasteReport, max_new_tokens: int) -> dict:
    """Bytes three ways (contiguous max-length buffers, blocks, blocks with shared prefixes) as a
    board spec (``viz/ui/board.js``): one stacked bar per layout, its length the bytes it takes (the
    longest the full width), its parts' slots and its bytes written after it."""
    rows = _waste_rows(waste, max_new_tokens)
    longest = max(waste.nbytes(sum(slots for _, slots, _ in parts)) for _, parts in rows) or 1
    bars, legend = [], {}
    for label, parts in rows:
        total = sum(slots for _, slots, _ in parts)
        segments = [{"share": waste.nbytes(slots) / longest, "color": color,
                     "tip": f"{name}: {slots} slots, {format_bytes(waste.nbytes(slots))}"}
                    for name, slots, color in parts if slots]
        for name, _, color in parts:
            legend.setdefault(name, color)
        said = " + ".join(f"{slots} {name}" for name, slots, _ in parts if slots)
        counts = " + ".join(str(slots) for _, slots, _ in parts if slots)
        bars.append({"label": label, "segments": segments,
                     "text": f"{counts} slots · {format_bytes(waste.nbytes(total))}",
                     "tip": f"{label}: {said} slots, {format_bytes(waste.nbytes(total))}"})
    return {"kind": "bars", "title": WASTE_TITLE, "bars": bars, "axis": "bytes", "wrap_labels": True,
            "legend": [{"label": name, "color": color, "fill": True} for name, color in legend.items()],
            "label": f"{WASTE_TITLE}: " + "; ".join(bar["tip"] for bar in bars)}


# -- eviction and quantisation ----------------------------------------------------------------
def attention_compare_figure(step: StepComparison, tokens: Sequence[str], head_names: Sequence[str]) -> go.Figure:
    """The query's attention row per head, full cache above compressed; evicted keys greyed."""
    length = len(step.positions)
    x = [f"{p}<br>{safe(tokens[p - 1])}" for p in step.positions.tolist()]  # two short lines: never turned
    z, text, y = [], [], []
    for h, name in enumerate(head_names):
        for label, weights, kept in (("full", step.weights_full, torch.ones(length, dtype=torch.bool)),
                                     ("compressed", step.weights_compressed, step.kept)):
            row = weights[h].double()
            z.append([float(row[j]) if kept[j] else None for j in range(length)])
            text.append([f"{float(row[j]):.2f}" if kept[j] else "✕" for j in range(length)])  # fits any cell
            y.append(f"{safe(name)} · {label}")
    fig = go.Figure(go.Heatmap(z=z, x=x, y=y, text=text,
                               texttemplate="%{text}" if length <= MAX_TEXT_COLUMNS else "", textfont_size=12,
                               colorscale="Blues", zmin=0, zmax=1, xgap=2, ygap=2,
                               hovertemplate="%{y}<br>key %{x}<br>weight %{z:.4f}<extra></extra>"))
    fig.add_trace(legend_marker("left out", "evicted", filled=True))  # the empty cells (✕) show the plot's colour
    fig.update_yaxes(autorange="reversed", type="category", title="head · cache (rows)")
    fig.update_xaxes(type="category", side="top", title="key (columns)", tickangle=0)
    fig = _layout(fig, f"Attention of {safe(tokens[length - 1])} (prediction {step.index}), full vs compressed",
                  160 + 26 * len(y), top=96)  # the key labels sit on top
    fig.update_layout(plot_bgcolor=MEANINGS["left out"].color,
                      legend=dict(orientation="h", yanchor="top", y=-0.02, x=0, xanchor="left"))
    return fig



def attention_compare_board(step: StepComparison, tokens: Sequence[str], head_names: Sequence[str]) -> dict | None:
    """The same picture as :func:`attention_compare_figure` as a board spec (``viz/ui/board.js``: a
    grid that fits any column, a phone's included; tokens written as text, never markup): a group of
    two rows per head, the full cache above the compressed one, evicted keys grey with ✕. None when
    there are more keys than cell text fits (Plotly draws it)."""
    positions = step.positions.tolist()
    if len(positions) > CELL_TEXT_COLUMNS:
        return None
    columns = [f"{p} · {tokens[p - 1]}" for p in positions]
    groups = []
    for h, name in enumerate(head_names):
        rows = []
        for label, weights, kept in (("full", step.weights_full, None), ("compressed", step.weights_compressed,
                                                                          step.kept)):
            cells = []
            for j, w in enumerate(weights[h].double().tolist()):
                where = f"{name} · {label}\nkey {columns[j]}\n"
                if kept is not None and not bool(kept[j]):
                    cells.append(colored_cell(LEFT_OUT, "✕", where + "evicted: not in the compressed cache"))
                else:
                    bg, fg = shade("Blues", w)
                    cells.append({"bg": bg, "fg": fg, "text": short(w), "tip": where + f"weight {w:.4f}"})
            rows.append({"label": f"{name} · {label}", "cells": cells})
        groups.append({"rows": rows})
    title = (f"Attention of {tokens[len(positions) - 1]} (prediction {step.index}), full vs compressed"
             " · rows: head · cache, columns: keys")
    return {"kind": "matrix", "title": title, "axes": {"rows": "head · cache", "columns": "keys"},
            "columns": columns, "groups": groups, "outlines": [], "gap_after": None,
            "legend": [legend_item("left out", "evicted", filled=True)],
            "label": f"{title}: attention weights, the full cache's row above the compressed one's"}

def _paired_bars(labels: Sequence[str], full: torch.Tensor, compressed: torch.Tensor, title: str,
                 axis: str) -> go.Figure:
    fig = go.Figure()
    for name, values, color in (("full cache", full, GREY), ("compressed", compressed, BLUE)):  # series
        fig.add_trace(go.Bar(x=list(labels), y=values.double().tolist(), name=name, marker_color=color,
                             text=[f"{float(v):.3g}" for v in values], textposition="outside",
                             hovertemplate="%{x}: %{y:.4g}<extra>" + name + "</extra>"))
    fig.update_layout(barmode="group")
    fig.update_yaxes(title=axis)
    return _layout(fig, title, 320)


def context_compare_figure(step: StepComparison, head_names: Sequence[str]) -> go.Figure:
    """Context per head with the full and the compressed cache."""
    return _paired_bars([safe(n) for n in head_names], step.context_full, step.context_compressed,
                        f"Context per head (largest difference {step.context_error:.3g})", "context")


def logits_compare_figure(step: StepComparison, words: Sequence[str]) -> go.Figure:
    """Logit per word with the full and the compressed cache; which word each picks."""
    title = (f"Logits (largest difference {step.logit_error:.3g}): "
             + ("the chosen word changes" if step.token_changed else "the same word wins"))
    return _paired_bars([safe(w) for w in words], step.logits_full, step.logits_compressed, title, "logit")


def bytes_figure(comparison: CacheComparison) -> go.Figure:
    """Bytes each cache holds after each prediction."""
    steps = [s.index for s in comparison.steps]
    fig = go.Figure()
    for name, values, color in (("full cache", [s.nbytes_full for s in comparison.steps], GREY),
                                (safe(comparison.spec.label), [s.nbytes_compressed for s in comparison.steps], BLUE)):
        fig.add_trace(go.Scatter(x=steps, y=values, name=name, mode="lines+markers", line_color=color,
                                 customdata=[format_bytes(v) for v in values],
                                 hovertemplate="prediction %{x}: %{customdata}<extra></extra>"))
    fig.update_xaxes(title="prediction", dtick=1)
    fig.update_yaxes(title="bytes held", rangemode="tozero")
    return _layout(fig, "Bytes in the cache", 300)


def comparison_table(comparison: CacheComparison) -> pd.DataFrame:
    """One row per prediction: entries kept, the errors, the word each cache picks and the bytes, each
    pair as full → compressed in one column (six columns, so that the table fits a phone's width)."""
    steps = comparison.steps
    return pd.DataFrame({
        "prediction": [s.index for s in steps],
        "kept": [f"{int(s.kept.sum())} of {len(s.positions)}" for s in steps],
        "context error": [s.context_error for s in steps],
        "logit error": [s.logit_error for s in steps],
        "picks": [f"{s.token_full} → {s.token_compressed}" for s in steps],
        "bytes": [f"{format_bytes(s.nbytes_full)} → {format_bytes(s.nbytes_compressed)}" for s in steps],
    })
