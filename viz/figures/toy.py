"""Figures for the toy model: annotated heatmaps of every attention stage, the growing decode
matrix, the KV cache, logits and probabilities, and work counts.

Pure functions from engine results (:class:`viz.core.engine.model.Trace`) to plotly figures or pandas tables,
built with the helpers in :mod:`viz.figures.base` (one validation pass per figure, escaped labels).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import torch

from ..core.engine.model import Trace
from ..core.engine.explain import CacheCheck, fmt
from ..core.lessons.lesson import Window
from ..core.lessons.words_work import same_as, work_panels
from ..core.rules.language import compile_rule
from .base import (BLUE, GOLD, MASKED, MEANINGS, RED, figure, frame, grid, heatmap, heatmap_trace, labels,
                   legend_marker, masked_unsaid, matrix_axes, outline, safe)
from .meanings import cache_scales, coinciding, scale_markers, way, way_style
from .lesson import CONTEXTS_TITLE

__all__ = ["BLUE", "GOLD", "MASKED", "RED", "MODE_COLORS", "MODE_NAMES", "STAGES", "safe", "labels",
           "heatmap", "causal_mask_figure", "stage_figure", "qk_figure", "contexts_figure",
           "small_multiples", "vocab_table", "prediction_figure",
           "growing_attention_figure", "cache_figure", "generated_table", "comparison_table", "work_figure"]

# each decode mode's look is its way of running's, as on Cost and Real model (viz.figures.meanings.way)
MODE_COLORS = {mode: way(mode)[0] for mode in ("kv", "recompute", "reencode")}
MODE_DASHES = {mode: way(mode)[1] for mode in MODE_COLORS}
MODE_NAMES = {"recompute": "no cache (recompute)", "reencode": "no cache (re-encode keys)", "kv": "KV cache"}


def _head(trace: Trace, head: int) -> str:
    return safe(trace.scenario.head_names[head])


# -- prefill -----------------------------------------------------------------------------------
def causal_mask_figure(trace: Trace) -> go.Figure:
    visible = trace.prefill.attention.visible  # (n, n) bool
    names = labels(trace.prefill.tokens)
    xaxis, yaxis = matrix_axes(len(names))
    marks = np.array([["✓" if v else "" for v in row] for row in visible.tolist()], dtype=object)
    trace_ = heatmap_trace(visible.double(), names, names, kind="weights", text=marks, annotate=True,
                           hover="query %{y}<br>key %{x}<br>visible: %{z}")
    return figure([trace_], frame("Causal mask: query i may see key j only if j ≤ i",
                                  max(200, 100 + 34 * len(names)), top=80, xaxis=xaxis, yaxis=yaxis))


STAGES = {
    "raw_scores": ("Raw scores Q·Kᵀ", "scores"),
    "scaled_scores": ("Scaled scores Q·Kᵀ / √d_k", "scores"),
    "masked_scores": ("After the causal mask", "scores"),
    "weights": ("Attention weights (softmax)", "weights"),
}


def stage_figure(trace: Trace, head: int, stage: str, position: int | None = None) -> go.Figure:
    """One prefill stage for one head, with hover naming query, key and the key's value."""
    pre = trace.prefill
    names = labels(pre.tokens)
    title, kind = STAGES[stage]
    z = getattr(pre.attention, stage)[head]  # (n, n)
    hover = ("query %{y}<br>key %{x} (value %{customdata})<br>"
             + {"weights": "weight %{z:.4g}"}.get(stage, "score %{z:.4g}"))
    return heatmap(z, names, names, f"{title} · head '{_head(trace, head)}'", kind=kind,
                   hover=hover, highlight_row=position, key_values=pre.v.tolist(),
                   visible=pre.attention.visible if stage == "weights" else None)


def qk_figure(trace: Trace, head: int) -> go.Figure:
    """Q and K of a key-only head side by side: every query row is ones, K rows are ±1."""
    pre = trace.prefill
    names = labels(pre.tokens)
    d_k = pre.q.shape[-1]
    dims = [str(i + 1) for i in range(d_k)]
    layout, refs = grid(1, 2, ("Q (one row per query)", "K (one row per key)"), hspace=0.08)
    hover = "token %{y}<br>dimension %{x}<br>%{z:+.0f}"
    data = [heatmap_trace(tensor, dims, names, kind="signs", hover=hover, annotate=False, ref=ref, scale=scale)
            for tensor, ref, scale in ((pre.q[head], refs[0], None), (pre.k[head], refs[1], "entry"))]
    for suffix in ("", "2"):
        layout[f"xaxis{suffix}"].update(title=dict(text=f"dimension (d_k = {d_k})"), showticklabels=d_k <= 16)
        # K's rows share Q's labels; its panel's title names them (an axis title in the gap between the
        # panels ran over Q's cells on a phone)
        layout[f"yaxis{suffix}"].update(type="category", autorange="reversed", showticklabels=suffix == "",
                                        title=dict(text="query (rows)" if suffix == "" else ""))
    return figure(data, frame(f"Q and K for head '{_head(trace, head)}': Q·K = +d_k where the rule holds, "
                              "−d_k where it does not", max(220, 90 + 34 * len(names)), **layout))


def contexts_figure(trace: Trace, position: int | None = None) -> go.Figure:
    """Contexts (heads × positions): the weighted sums of values."""
    pre = trace.prefill
    heads = len(trace.scenario.heads)
    fig = heatmap(pre.contexts, labels(pre.tokens), [safe(h) for h in trace.scenario.head_names],
                  CONTEXTS_TITLE, kind="values", axes=("query position (columns)", "head (rows)"),
                  hover="head %{y}<br>position %{x}<br>context %{z:.4g}", scale="context")
    if position is not None:
        fig.layout.shapes = [outline("focus", position - 0.5, position + 0.5, -0.5, heads - 0.5)]
        fig.add_trace(legend_marker("focus"))
        fig.layout.update(showlegend=True, legend=dict(orientation="h", x=0, y=-0.02, yanchor="top"))
    return fig


def small_multiples(trace: Trace, position: int | None = None, window: Window | None = None) -> go.Figure:
    """Attention weights of every head in a grid, the current query row outlined; with ``window``
    only its query rows and keys (viz.core.lessons.lesson.make_window), so a long prompt stays light."""
    pre = trace.prefill
    n_all = len(pre.tokens)
    rows_at = torch.tensor(window.rows if window else range(n_all), dtype=torch.long)
    keys_at = torch.tensor(window.keys if window else range(n_all), dtype=torch.long)
    tokens = labels(pre.tokens)
    row_names, key_names = [tokens[i] for i in rows_at.tolist()], [tokens[j] for j in keys_at.tolist()]
    positions = [str(j + 1) for j in keys_at.tolist()]  # 1-based, as the labels count
    visible = pre.attention.visible[rows_at][:, keys_at]
    heads = trace.scenario.head_names
    n = len(key_names)
    cols = min(4, len(heads))
    rows = math.ceil(len(heads) / cols)
    layout, refs = grid(rows, cols, [safe(h) for h in heads], hspace=0.04,
                        vspace=0.12 if rows > 1 else 0.05)
    data, shapes = [], []
    focus = rows_at.tolist().index(position) if position is not None and position in rows_at.tolist() else None
    for h, ref in zip(range(len(heads)), refs):
        data.append(heatmap_trace(pre.weights[h][rows_at][:, keys_at], key_names, row_names, kind="weights",
                                  annotate=False, ref=ref, visible=visible,
                                  hover="query %{y}<br>key %{x}<br>weight %{z:.3f}",
                                  scale="weight" if h == len(heads) - 1 else None))  # one colour bar: the shades
        if focus is not None:
            shapes.append(outline("focus", -0.5, n - 0.5, focus - 0.5, focus + 0.5, 2, ref))
    for i, (xref, yref) in enumerate(refs):
        suffix = xref[1:]
        # keys under the bottom row of panels, queries left of the first column (when they fit)
        bottom = i + cols >= len(heads)
        # a narrow panel's keys by position, level (the rows name their tokens; the hover names both)
        layout[f"xaxis{suffix}"].update(type="category", showticklabels=bottom and n <= 12, tickangle=0,
                                        tickvals=key_names, ticktext=positions,
                                        title=dict(text="key" if bottom else ""))
        layout[f"yaxis{suffix}"].update(type="category", autorange="reversed",
                                        showticklabels=i % cols == 0 and n <= 12,
                                        title=dict(text="query" if i % cols == 0 else ""))
    marks = [legend_marker("focus")] if focus is not None else []
    if any(masked_unsaid(trace) for trace in data):  # cells without numbers: the legend says what grey is
        marks.append(legend_marker("masked", filled=True))
    fig = frame("Attention weights of every head (rows: queries, columns: keys)",
                max(260, 230 * rows) + (40 if n <= 12 else 0) + (30 if marks else 0), shapes=shapes,
                showlegend=bool(marks), legend=dict(orientation="h", x=0, y=0, yanchor="bottom", yref="container"),
                **layout)
    fig["margin"]["b"] = (50 if n <= 12 else 10) + (30 if marks else 0)
    return figure(data + marks, fig)


# -- from context to the next word -------------------------------------------------------------
def _shown(values) -> list[float]:
    """Values at float32 precision (7 significant digits): 5, not 5.000001430511475."""
    flat = values.reshape(-1).tolist() if isinstance(values, torch.Tensor) else list(values)
    return [float(f"{float(v):.7g}") for v in flat]


def vocab_table(trace: Trace, step: int = 0) -> pd.DataFrame:
    """W_vocab with the context it multiplies: one row per head, one column per word."""
    s = trace.steps[step]
    data = {"head": trace.scenario.head_names, "context": _shown(s.context)}
    for word in trace.scenario.vocab:
        data[word.token] = [float(w) for w in word.weights]
    return pd.DataFrame(data)


def prediction_figure(trace: Trace, step: int = 0) -> go.Figure:
    """Logits and probabilities side by side: the chosen word, the others, and words top-k/top-p
    filtered out (hatched), each named in the legend."""
    s = trace.steps[step]
    words = [safe(w) for w in trace.scenario.vocab_tokens]
    kept = s.sample.kept.tolist()
    looks = [("chosen", None) if i == s.sample.index else
             (("candidate", "kept by top-k/top-p" if not all(kept) else None) if kept[i]
              else ("left out", "filtered out by top-k/top-p")) for i in range(len(words))]
    colors = [MEANINGS[name].color for name, _ in looks]
    patterns = dict(shape=[MEANINGS[name].pattern for name, _ in looks], fgcolor="white")
    logits = s.logits.double().numpy()
    layout, refs = grid(1, 2, ("Logits", "Probabilities"), hspace=0.16)
    data = [
        go.Bar(x=words, y=logits, marker=dict(color=colors, pattern=patterns), text=[fmt(float(v)) for v in logits],
               textposition="outside", hovertemplate="%{x}<br>logit %{y:.4g}<extra></extra>",
               xaxis=refs[0][0], yaxis=refs[0][1]),
        go.Bar(x=words, y=s.probs.numpy(), marker=dict(color=colors, pattern=patterns),
               text=[f"{float(p):.3f}" for p in s.probs], textposition="outside",
               customdata=s.sample.base_probs.numpy(), xaxis=refs[1][0], yaxis=refs[1][1],
               hovertemplate="%{x}<br>p = %{y:.4f}<br>before top-k/top-p: %{customdata:.4f}<extra></extra>"),
    ]
    low, high = min(0.0, float(logits.min())), max(1e-9, float(logits.max()))
    layout["yaxis"].update(range=[low * 1.15, high * 1.18])
    layout["yaxis2"].update(range=[0, 1.15])
    for suffix in ("", "2"):
        layout[f"xaxis{suffix}"].update(type="category", tickangle=-30 if len(words) > 3 else 0)  # level while they fit
    for trace_ in data:
        trace_.showlegend = False
    marks = [legend_marker(name, label, filled=True) for name, label in dict.fromkeys(looks)]
    return figure(data + marks, frame(f"Logits and probabilities → '{safe(s.token)}'", 360, background="white",
                                      legend=dict(orientation="h", x=0, y=-0.3), **layout))


# -- decode ------------------------------------------------------------------------------------
def growing_attention_figure(trace: Trace, head: int) -> go.Figure:
    """The decode heatmap for one head: one row per step, the newest row outlined."""
    rows = trace.grown_attention(head)  # (rows, rows)
    names = labels(trace.tokens[: rows.shape[0]])
    newest = rows.shape[0] - 1
    decoded = len(trace.steps) > 1
    values = trace.prefill.v.tolist() + [s.value for s in trace.steps[:-1]]
    new_key = decoded and trace.mode == "kv"
    return heatmap(rows, names, names, f"Attention as it grew · head '{_head(trace, head)}'",
                   kind="weights", hover="query %{y}<br>key %{x} (value %{customdata})<br>weight %{z:.4g}",
                   key_values=values, highlight_row=newest if decoded else None,
                   row_label="newest query", highlight_cells=[(newest, newest)] if new_key else ())


def cache_figure(trace: Trace) -> go.Figure:
    """The KV cache now: per head the sign of each cached key, and the shared values row; the legend
    names the new entry and what the cells' colours say (a key of −1 or +1, the values' scale: the
    lesson board's entries), under the plot in the rows its fitted width takes (:func:`~viz.figures.base.fit`)."""
    cache = trace.cache
    keys = cache.keys()[:, :, 0].detach().double().cpu()  # (heads, len): every d_k entry is the same ±1
    values = cache.values().detach().double().cpu()  # (len,)
    key_only = [compile_rule(h.rule).key_only for h in trace.scenario.heads]
    heads = trace.scenario.head_names
    names = labels(trace.tokens[: len(cache)])
    n = len(names)
    signs = np.array([[(("+1" if v > 0 else "−1") if key_only[h] else "q·k") for v in keys[h].tolist()]
                      for h in range(len(heads))], dtype=object)
    layout, refs = grid(2, 1, ("K: one row per head (keys are ±1, d_k wide)",  # one line on a phone
                               "V: one value per token, shared by the heads"),
                        vspace=0.22 / math.sqrt(len(heads)), row_heights=[len(heads), 1])
    data = [
        heatmap_trace(keys, names, [safe(h) for h in heads], kind="signs", text=signs, annotate=n <= 40,
                      hover="head %{y}<br>cached key of %{x}<br>%{z:+.0f}", ref=refs[0]),
        heatmap_trace(values[None, :], names, ["V"], kind="values", annotate=n <= 40, ref=refs[1],
                      hover="value of %{x}: %{z:.4g}"),
    ]
    layout["xaxis"].update(type="category", showticklabels=False)
    layout["xaxis2"].update(type="category", tickangle=-45 if n > 8 else 0,
                            title=dict(text="key (one entry per token)"))
    for suffix, what in (("", "head"), ("2", "")):
        layout[f"yaxis{suffix}"].update(type="category", autorange="reversed", title=dict(text=what))
    shapes = [outline("new", n - 1.5, n - 0.5, -0.5, span - 0.5, 3, ref) for span, ref in ((len(heads), refs[0]),
                                                                                         (1, refs[1]))]
    data += [legend_marker("new", "new entry"), *scale_markers(cache_scales(not all(key_only)))]
    # one line in half a projector's width, beside the tour's work chart (the bytes reserved, the capacity
    # and its growth took three lines there and pushed the pair past 720 px: Memory teaches those)
    title = f"KV cache: {len(cache)} entries · {cache.nbytes:,} bytes"
    # as built, the title, the plot and 40 px under it; fit() adds the ticks', axis title's and legend's
    # rows for the width (the tour's pair, with the work chart beside it, ends above a 1280 × 720 fold)
    layout = frame(title, 130 + 30 * (len(heads) + 1), shapes=shapes, showlegend=True,
                   legend=dict(orientation="h", x=0, xref="container", y=-0.02, yanchor="top"), **layout)
    layout["margin"]["b"] = 40
    return figure(data, layout)


def generated_table(trace: Trace) -> pd.DataFrame:
    """Each prediction: the query token, the chosen word and its probability."""
    return pd.DataFrame({
        "step": [s.index for s in trace.steps],
        "query token": [s.query_token for s in trace.steps],
        "context length": [s.seq_len for s in trace.steps],
        "chosen": [s.token for s in trace.steps],
        "p": [float(s.probs[s.sample.index]) for s in trace.steps],
        **{f"p({w})": [float(s.probs[i]) for s in trace.steps]
           for i, w in enumerate(trace.scenario.vocab_tokens)},
    })


# What the tables below hold, for screen readers (the plain table's label)
POSITIONS_LABEL = "Positions, tokens and values"
VOCAB_LABEL = "W_vocab, one row per head, with the last position's context"
COMPARISON_LABEL = "Each head's context with the KV cache and recomputed"


def positions_table(trace: Trace, value_label: str = "value") -> pd.DataFrame:
    """The prompt's tokens with their positions (from 1) and values."""
    tokens = trace.prefill.tokens
    return pd.DataFrame({"position": list(range(1, len(tokens) + 1)), "token": list(tokens),
                         value_label: list(trace.scenario.values)})


def comparison_table(check: CacheCheck) -> pd.DataFrame:
    """Per head: the context with the KV cache and with recomputation at one step, and the gap."""
    return pd.DataFrame({
        "head": [h.head for h in check.heads],
        "rule": [h.rule for h in check.heads],
        "cacheable": [h.cacheable for h in check.heads],
        "KV cache": _shown(h.kv_context for h in check.heads),
        "recompute": _shown(h.full_context for h in check.heads),
        "|difference|": _shown(h.gap for h in check.heads),
    })


def work_figure(traces: dict[str, Trace], cumulative: bool = False, height: int = 360,
                title: str | None = None) -> go.Figure:
    """Scores and keys encoded per decode step (or summed) against sequence length, per mode; ``height``
    as built and ``title`` (plain text) for the tour's, beside its cache figure: lower, its title one line,
    so the pair fits a projector's first screen."""
    heads = len(next(iter(traces.values())).scenario.head_names) if traces else 0
    layout, refs = grid(1, 2, work_panels(heads), hspace=0.1)
    data = []
    for (xref, yref), field in zip(refs, ("scores", "keys_encoded")):
        x, y = {}, {}
        for mode, trace in traces.items():
            steps = trace.steps[1:]
            x[mode] = np.array([s.seq_len for s in steps])
            counts = np.array([getattr(s.counts, field) for s in steps])
            y[mode] = np.cumsum(counts) if cumulative else counts
        over = coinciding({mode: (*x[mode], *y[mode]) for mode in traces})  # exactly on an earlier line
        for mode in traces:
            note = f"<br>{same_as(MODE_NAMES[over[mode]])}" if mode in over else ""
            data.append(go.Scatter(
                x=x[mode], y=y[mode], mode="lines+markers", name=MODE_NAMES[mode],
                **way_style(mode, covered=mode in over.values()),
                legendgroup=mode, showlegend=xref == "x", xaxis=xref, yaxis=yref,
                hovertemplate=f"{MODE_NAMES[mode]}<br>length %{{x}}<br>%{{y:,}}{note}<extra></extra>"))
    lengths = [s.seq_len for t in traces.values() for s in t.steps[1:]]
    span = max(lengths) - min(lengths) if lengths else 0
    for suffix in ("", "2"):  # whole lengths only: never "5 5 5 6 6 6"
        layout[f"xaxis{suffix}"].update(title=dict(text="sequence length n"), tickformat="d",
                                        tick0=min(lengths, default=0), dtick=max(1, math.ceil(span / 8)))
        layout[f"yaxis{suffix}"].update(rangemode="tozero")
    what = "summed over the steps so far" if cumulative else "in each decode step"
    return figure(data, frame(title or f"Work {what}, counted by the engine", height, background="white",
                              legend=dict(orientation="h", y=-0.25), **layout))
