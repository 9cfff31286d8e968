"""Figures for the toy model: annotated heatmaps of every attention stage, the growing decode
matrix, the KV cache, logits and probabilities, and work counts.

Pure functions from engine results (:class:`viz.engine.Trace` and friends) to plotly figures or
pandas tables. All user text (tokens, head names, words) is HTML-escaped before it reaches plotly,
whose labels understand a little HTML, so a token such as ``<b>`` shows as typed.
"""

from __future__ import annotations

import html
import math
from typing import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import torch
from plotly.subplots import make_subplots

from ..engine import Trace
from ..explain import fmt
from ..rules import compile_rule

BLUE = "#1f5fa8"
GOLD = "#e0a100"
RED = "#c0392b"
MASKED = "#e6e6e6"
MODE_COLORS = {"recompute": RED, "reencode": "#8e44ad", "kv": BLUE}
MODE_NAMES = {"recompute": "no cache (recompute)", "reencode": "no cache (re-encode keys)", "kv": "KV cache"}


def safe(text: str) -> str:
    """User text for plotly labels: escaped, so it is shown and never interpreted."""
    return html.escape(str(text), quote=True)


def labels(tokens: Sequence[str], start: int = 1) -> list[str]:
    """Unique axis labels '1 · Today' (tokens repeat; categorical axes must not merge them)."""
    return [f"{i} · {safe(t)}" for i, t in enumerate(tokens, start)]


def _layout(fig: go.Figure, title: str, height: int, top: int = 46) -> go.Figure:
    fig.update_layout(title=dict(text=title, x=0, xanchor="left", y=1, yanchor="top", yref="container",
                                 pad=dict(t=8), font_size=15),
                      height=height, margin=dict(l=10, r=10, t=top, b=10), plot_bgcolor=MASKED)
    return fig


def _cell(x: float, kind: str) -> str:
    if kind == "weights" and 0 < abs(x) < 5e-4:
        return "≈0"  # softmax never gives exactly 0 to a visible key; the hover shows the number
    return fmt(x)


def heatmap(z: torch.Tensor, x: list[str], y: list[str], title: str, *, kind: str = "weights",
            hover: str = "", highlight_row: int | None = None,
            highlight_cells: Sequence[tuple[int, int]] = (), annotate: bool | None = None,
            height: int | None = None, visible: torch.Tensor | None = None,
            key_values: Sequence[float] | None = None) -> go.Figure:
    """An annotated heatmap. Masked cells (-inf, or False in ``visible``) are grey, labelled 'masked'.

    kind: "weights" (0..1, blues), "scores" (diverging around 0), "values" (sequential).
    ``hover`` is a plotly hovertemplate fragment (``%{customdata}`` is the key's value when
    ``key_values`` is given); x and y labels are already escaped.
    """
    z = z.detach().double().cpu()
    rows, cols = z.shape
    finite = torch.isfinite(z) if visible is None else torch.isfinite(z) & visible.cpu()
    # numpy arrays, not nested lists: plotly validates nested lists element by element (slow)
    shown = torch.where(finite, z, torch.nan).numpy()
    annotate = (rows * cols <= 400) if annotate is None else annotate
    text = None
    if annotate:
        values, keep = z.tolist(), finite.tolist()
        text = np.array([[(_cell(v, kind) if k else "masked") for v, k in zip(vr, kr)]
                         for vr, kr in zip(values, keep)], dtype=object)
    scale = {"weights": dict(colorscale="Blues", zmin=0, zmax=1),
             "scores": dict(colorscale="RdBu", zmid=0),
             "values": dict(colorscale="Viridis")}[kind]
    custom = np.array([[fmt(v) for v in key_values]] * rows, dtype=object) if key_values is not None else None
    fig = go.Figure(go.Heatmap(
        z=shown, x=x, y=y, text=text, texttemplate="%{text}" if annotate else None, textfont_size=12,
        xgap=2 if cols <= 40 else 0, ygap=2 if rows <= 40 else 0,
        customdata=custom,
        hovertemplate=(hover or "query %{y}<br>key %{x}<br>%{z:.4g}") + "<extra></extra>",
        showscale=False, **scale))
    fig.update_yaxes(autorange="reversed", type="category")
    fig.update_xaxes(type="category", side="top", tickangle=0 if cols <= 8 else -45)
    for r in ([highlight_row] if highlight_row is not None else []):
        fig.add_shape(type="rect", x0=-0.5, x1=cols - 0.5, y0=r - 0.5, y1=r + 0.5,
                      line=dict(color=GOLD, width=3))
    for r, c in highlight_cells:
        fig.add_shape(type="rect", x0=c - 0.5, x1=c + 0.5, y0=r - 0.5, y1=r + 0.5,
                      line=dict(color=RED, width=3))
    cell = 34 if rows <= 16 else max(8, 640 // rows)  # long sequences shrink their rows
    return _layout(fig, title, height or max(200, 100 + cell * rows), top=80)


# -- prefill -----------------------------------------------------------------------------------
def causal_mask_figure(trace: Trace) -> go.Figure:
    mask = trace.prefill.attention.visible.double()  # (n, n) 1 where visible
    names = labels(trace.prefill.tokens)
    fig = heatmap(mask, names, names, "Causal mask: query i may see key j only if j ≤ i", kind="weights",
                  hover="query %{y}<br>key %{x}<br>visible: %{z}")
    fig.data[0].text = [["✓" if v else "" for v in row] for row in mask.bool().tolist()]
    return fig


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
    return heatmap(z, names, names, f"{title} · head '{safe(trace.scenario.head_names[head])}'", kind=kind,
                   hover=hover, highlight_row=position, key_values=pre.v.tolist(),
                   visible=pre.attention.visible if stage == "weights" else None)


def qk_figure(trace: Trace, head: int) -> go.Figure:
    """Q and K of a key-only head side by side: every query row is ones, K rows are ±1."""
    pre = trace.prefill
    names = labels(pre.tokens)
    d_k = pre.q.shape[-1]
    dims = [str(i + 1) for i in range(d_k)]
    fig = make_subplots(rows=1, cols=2, subplot_titles=("Q (one row per query)", "K (one row per key)"),
                        horizontal_spacing=0.08)
    for col, tensor in ((1, pre.q[head]), (2, pre.k[head])):
        fig.add_trace(go.Heatmap(z=tensor.double().tolist(), x=dims, y=names, zmid=0, colorscale="RdBu",
                                 zmin=-1, zmax=1, showscale=False, xgap=1, ygap=2,
                                 hovertemplate="token %{y}<br>dimension %{x}<br>%{z:+.0f}<extra></extra>"),
                      row=1, col=col)
    fig.update_yaxes(autorange="reversed", type="category")
    fig.update_xaxes(title_text=f"dimension (d_k = {d_k})", showticklabels=d_k <= 16)
    return _layout(fig, f"Q and K for head '{safe(trace.scenario.head_names[head])}': "
                        "Q·K = +d_k where the rule holds, −d_k where it does not",
                   max(220, 90 + 34 * len(names)))


def contexts_figure(trace: Trace, position: int | None = None) -> go.Figure:
    """Contexts (heads × positions): the weighted sums of values."""
    pre = trace.prefill
    fig = heatmap(pre.contexts, labels(pre.tokens), [safe(h) for h in trace.scenario.head_names],
                  "Contexts: Σ weights · values, one per head and position", kind="values",
                  hover="head %{y}<br>position %{x}<br>context %{z:.4g}")
    if position is not None:
        fig.add_shape(type="rect", x0=position - 0.5, x1=position + 0.5, y0=-0.5,
                      y1=len(trace.scenario.heads) - 0.5, line=dict(color=GOLD, width=3))
    return fig


def small_multiples(trace: Trace, position: int | None = None) -> go.Figure:
    """Attention weights of every head in a grid."""
    pre = trace.prefill
    names = labels(pre.tokens)
    heads = trace.scenario.head_names
    cols = min(4, len(heads))
    rows = math.ceil(len(heads) / cols)
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=[safe(h) for h in heads],
                        horizontal_spacing=0.04, vertical_spacing=0.12 if rows > 1 else 0.05)
    n = len(names)
    for h in range(len(heads)):
        w = torch.where(trace.prefill.attention.visible, pre.weights[h].double(), torch.nan)  # (n, n)
        fig.add_trace(go.Heatmap(
            z=w.numpy(),
            x=names, y=names, zmin=0, zmax=1, colorscale="Blues", showscale=False, xgap=1, ygap=1,
            hovertemplate="query %{y}<br>key %{x}<br>weight %{z:.3f}<extra>" + safe(heads[h]) + "</extra>"),
            row=h // cols + 1, col=h % cols + 1)
    fig.update_yaxes(autorange="reversed", type="category", showticklabels=False)
    fig.update_yaxes(showticklabels=n <= 12, col=1)
    fig.update_xaxes(type="category", showticklabels=False)
    if position is not None:
        for h in range(len(heads)):
            fig.add_shape(type="rect", x0=-0.5, x1=n - 0.5, y0=position - 0.5, y1=position + 0.5,
                          line=dict(color=GOLD, width=2), row=h // cols + 1, col=h % cols + 1)
    return _layout(fig, "Attention weights of every head (rows: queries, columns: keys)",
                   max(260, 230 * rows))


# -- from context to the next word -------------------------------------------------------------
def vocab_table(trace: Trace, step: int = 0) -> pd.DataFrame:
    """W_vocab with the context it multiplies: one row per head, one column per word."""
    s = trace.steps[step]
    data = {"head": trace.scenario.head_names, "context": [float(c) for c in s.context]}
    for v, word in enumerate(trace.scenario.vocab):
        data[word.token] = [float(w) for w in word.weights]
    return pd.DataFrame(data)


def prediction_figure(trace: Trace, step: int = 0) -> go.Figure:
    """Logits and probabilities side by side; the chosen word in gold, filtered words faded."""
    s = trace.steps[step]
    words = [safe(w) for w in trace.scenario.vocab_tokens]
    chosen = s.sample.index
    kept = s.sample.kept.tolist()
    colors = [GOLD if i == chosen else (BLUE if kept[i] else "#b8c4d6") for i in range(len(words))]
    fig = make_subplots(rows=1, cols=2, subplot_titles=("Logits", "Probabilities"))
    fig.add_trace(go.Bar(x=words, y=s.logits.double().tolist(), marker_color=colors,
                         text=[fmt(float(v)) for v in s.logits], textposition="outside",
                         hovertemplate="%{x}<br>logit %{y:.4g}<extra></extra>"), row=1, col=1)
    fig.add_trace(go.Bar(x=words, y=s.probs.tolist(), marker_color=colors,
                         text=[f"{float(p):.3f}" for p in s.probs], textposition="outside",
                         customdata=s.sample.base_probs.tolist(),
                         hovertemplate="%{x}<br>p = %{y:.4f}<br>before top-k/top-p: %{customdata:.4f}"
                                       "<extra></extra>"), row=1, col=2)
    fig.update_yaxes(range=[0, 1.15], row=1, col=2)
    low = min(0.0, float(s.logits.min()))
    fig.update_yaxes(range=[low * 1.15, max(1e-9, float(s.logits.max())) * 1.18], row=1, col=1)
    fig.update_layout(showlegend=False)
    return _layout(fig, f"Next word: '{safe(s.token)}'", 330).update_layout(plot_bgcolor="white")


# -- decode ------------------------------------------------------------------------------------
def decode_rows(trace: Trace) -> tuple[torch.Tensor, list[str]]:
    """The attention matrix as it grew: prefill rows, then one row per decode step (heads, rows, keys).

    Row for step k is the newest query's weights at that step; keys it could not see are -inf.
    """
    pre = trace.prefill.attention.weights  # (heads, P, P)
    heads, prompt = pre.shape[0], pre.shape[1]
    total = prompt + len(trace.steps) - 1
    grid = torch.full((heads, total, total), -torch.inf, dtype=torch.float64)
    grid[:, :prompt, :prompt] = torch.where(trace.prefill.attention.visible, pre.double(), -torch.inf)
    for s in trace.steps[1:]:
        grid[:, s.seq_len - 1, : s.seq_len] = s.attention.weights[:, 0].double()
    return grid, trace.tokens[:total]


def growing_attention_figure(trace: Trace, head: int) -> go.Figure:
    """The decode heatmap for one head: one row per step, the newest row outlined."""
    grid, tokens = decode_rows(trace)
    names = labels(tokens)
    newest = len(tokens) - 1
    values = trace.prefill.v.tolist() + [s.value for s in trace.steps[:-1]]
    fig = heatmap(grid[head], names, names, f"Attention as it grew · head '{safe(trace.scenario.head_names[head])}'",
                  kind="weights", hover="query %{y}<br>key %{x} (value %{customdata})<br>weight %{z:.4g}",
                  key_values=values,
                  highlight_row=newest if len(trace.steps) > 1 else None,
                  highlight_cells=[(newest, newest)] if len(trace.steps) > 1 and trace.mode == "kv" else ())
    return fig


def cache_figure(trace: Trace) -> go.Figure:
    """The KV cache now: per head the sign of each cached key, and the shared values row."""
    cache = trace.cache
    keys = cache.keys()[:, :, 0].detach().double().cpu()  # (heads, len) every d_k entry is the same ±1
    values = cache.values().detach().double().cpu()  # (len,)
    key_only = [compile_rule(h.rule).key_only for h in trace.scenario.heads]
    heads = trace.scenario.head_names
    names = labels(trace.tokens[: len(cache)])
    text = [[(("+1" if v > 0 else "−1") if key_only[h] else "q·k") for v in keys[h].tolist()]
            for h in range(len(heads))] + [[fmt(v) for v in values.tolist()]]
    fig = make_subplots(rows=2, cols=1, row_heights=[len(heads), 1], vertical_spacing=0.22 / (len(heads) ** 0.5),
                        subplot_titles=("K: one row per head (each entry is a d_k-wide ±1 row)",
                                        "V: one value per token, shared by the heads"))
    fig.add_trace(go.Heatmap(z=keys.numpy(), x=names, y=[safe(h) for h in heads], zmin=-1, zmax=1,
                             colorscale="RdBu", showscale=False, xgap=2, ygap=2,
                             text=np.array(text[:-1], dtype=object),
                             texttemplate="%{text}",
                             hovertemplate="head %{y}<br>cached key of %{x}<br>%{z:+.0f}<extra></extra>"),
                  row=1, col=1)
    fig.add_trace(go.Heatmap(z=values.numpy()[None, :], x=names, y=["V"], colorscale="Viridis",
                             showscale=False, xgap=2, text=np.array([text[-1]], dtype=object),
                             texttemplate="%{text}",
                             hovertemplate="value of %{x}: %{z:.4g}<extra></extra>"), row=2, col=1)
    fig.update_yaxes(autorange="reversed", type="category")
    fig.update_xaxes(type="category", showticklabels=False, row=1, col=1)
    fig.update_xaxes(type="category", tickangle=-45 if len(names) > 8 else 0, row=2, col=1)
    n = len(names)
    for row, span in ((1, len(heads)), (2, 1)):
        fig.add_shape(type="rect", x0=n - 1.5, x1=n - 0.5, y0=-0.5, y1=span - 0.5,
                      line=dict(color=GOLD, width=3), row=row, col=1)
    title = (f"KV cache: {len(cache)} entries · {cache.nbytes:,} bytes used · "
             f"{cache.allocated_nbytes:,} bytes reserved (capacity {cache.capacity}, grown {cache.growth_events}×)")
    return _layout(fig, title, 150 + 34 * (len(heads) + 1))


def generated_table(trace: Trace) -> pd.DataFrame:
    """Each prediction: the query token, the chosen word and its probability."""
    return pd.DataFrame({
        "step": [s.index for s in trace.steps],
        "query token": [s.query_token for s in trace.steps],
        "keys seen": [s.seq_len for s in trace.steps],
        "chosen": [s.token for s in trace.steps],
        "p": [float(s.probs[s.sample.index]) for s in trace.steps],
        **{f"p({w})": [float(s.probs[i]) for s in trace.steps]
           for i, w in enumerate(trace.scenario.vocab_tokens)},
    })


def comparison_table(kv: Trace, full: Trace, step: int) -> pd.DataFrame:
    """Per head: the context with the KV cache and with recomputation at ``step``, and the gap."""
    a, b = kv.steps[step].context.double(), full.steps[step].context.double()
    cacheable = kv.cacheable
    return pd.DataFrame({
        "head": kv.scenario.head_names,
        "rule": [h.rule for h in kv.scenario.heads],
        "cacheable": cacheable,
        "KV cache": a.tolist(),
        "recompute": b.tolist(),
        "|difference|": (a - b).abs().tolist(),
    })


def work_figure(traces: dict[str, Trace], cumulative: bool = False) -> go.Figure:
    """Scores and keys encoded per decode step (or summed) against sequence length, per mode."""
    fig = make_subplots(rows=1, cols=2, subplot_titles=("Query-key scores", "Keys encoded (per head)"))
    for mode, trace in traces.items():
        steps = trace.steps[1:]
        x = [s.seq_len for s in steps]
        for col, field in ((1, "scores"), (2, "keys_encoded")):
            y = [getattr(s.counts, field) for s in steps]
            if cumulative:
                y = [sum(y[: i + 1]) for i in range(len(y))]
            fig.add_trace(go.Scatter(x=x, y=y, mode="lines+markers", name=MODE_NAMES[mode],
                                     line=dict(color=MODE_COLORS[mode], dash="dot" if mode == "reencode" else None),
                                     legendgroup=mode, showlegend=col == 1,
                                     hovertemplate=f"{MODE_NAMES[mode]}<br>length %{{x}}<br>%{{y:,}}<extra></extra>"),
                          row=1, col=col)
    fig.update_xaxes(title_text="sequence length n", tickformat="d")
    fig.update_yaxes(rangemode="tozero")
    fig.update_layout(legend=dict(orientation="h", y=-0.25))
    what = "summed over the steps so far" if cumulative else "in each decode step"
    return _layout(fig, f"Work {what}, counted by the engine", 360).update_layout(plot_bgcolor="white")
