"""Figures for the real model: its tokens, attention heatmaps, next-token bars, the KV cache per
layer, cache vs no cache, and heads scored against the toy's rules.

Pure functions from :mod:`viz.core.real` results to plotly figures or pandas tables (no streamlit),
built in one pass with the shared helpers of :mod:`viz.figures.base`. Token pieces come from a
tokenizer and a prompt a person typed, so every label goes through :func:`~viz.figures.base.safe`.
"""

from __future__ import annotations

from typing import Sequence

import pandas as pd
import plotly.graph_objects as go
import torch

from ..core.real.model import CacheComparison, CacheSnapshot, Prompt
from ..core.real.rules_match import RuleMatches
from .base import (MEANINGS, figure, frame, grid, heatmap, heatmap_trace, labels, legend_marker, outline, safe,
                   series)
from .meanings import OWNERS, way_style

WHITE = "white"


def _causal(n: int) -> torch.Tensor:
    return torch.ones(n, n, dtype=torch.bool).tril()  # (n, n) key at or before the query


# -- tokens and prefill ------------------------------------------------------------------------
def pieces_table(prompt: Prompt) -> pd.DataFrame:
    """The prompt read top to bottom: one row per position (1-based, as the toy counts), with the
    piece and its token id (three columns, so that the table fits a phone's width)."""
    return pd.DataFrame({"position": list(range(1, len(prompt) + 1)), "piece": list(prompt.pieces),
                         "token id": [str(i) for i in prompt.ids]})


HEAD_KEY = "L1H2: layer 1, head 2"  # what a head's short label says, wherever the labels stand alone
WEIGHT_SCALE = "weight"  # the colour bar of heatmaps without numbers in their cells: what the blues mean


def attention_grid(attentions: torch.Tensor, layers: Sequence[int],
                   selected: tuple[int, int] | None = None) -> go.Figure:
    """Small multiples: one heatmap per head, one row of heads per chosen layer; the head shown in
    detail is outlined as the focus."""
    heads, n = attentions.shape[1], attentions.shape[-1]
    titles = [f"L{layer}H{head}" for layer in layers for head in range(heads)]
    layout, refs = grid(len(layers), heads, titles, hspace=0.02, vspace=0.3 / max(3, len(layers)))
    visible = _causal(n)
    data, shapes = [], []
    cells = [(layer, head) for layer in layers for head in range(heads)]
    axis = list(range(1, n + 1))
    for k, ((layer, head), ref) in enumerate(zip(cells, refs)):
        data.append(heatmap_trace(attentions[layer, head], axis, axis, visible=visible, annotate=False,
                                  ref=ref, hover=f"L{layer}H{head}<br>query %{{y}}<br>key %{{x}}<br>"
                                                 "weight %{z:.3f}",
                                  scale=WEIGHT_SCALE if k == len(cells) - 1 else None))  # one bar for all
        if selected == (layer, head):
            shapes.append(outline("focus", 0.5, n + 0.5, 0.5, n + 0.5, 3, ref))
    for xref, yref in refs:
        layout[f"xaxis{xref[1:]}"].update(showticklabels=False, range=[0.5, n + 0.5])
        layout[f"yaxis{yref[1:]}"].update(showticklabels=False, range=[n + 0.5, 0.5])
    row_height = max(90, min(200, 1000 // heads))
    marks = [legend_marker("focus", "selected head")] if shapes else []
    # two lines, each short enough for a phone's width (the desk's one line ran 170 px past a phone's figure)
    layout_ = frame(f"Attention of every head ({HEAD_KEY})<br>rows: queries, columns: keys · grey: masked",
                    70 + row_height * len(layers) + (30 if marks else 0), top=60, shapes=shapes,
                    showlegend=bool(marks), legend=dict(orientation="h", x=0, y=0, yanchor="bottom", yref="container"),
                    **layout)
    layout_["margin"]["b"] = 40 if marks else 10
    return level_scale_title(figure(data + marks, layout_))


DETAIL_PX = 440  # the one-head figure's height, whatever the prompt's length: whole in a projector's first screen


def attention_detail(attentions: torch.Tensor, pieces: Sequence[str], layer: int, head: int,
                     height: int | None = None) -> go.Figure:
    """One head's attention with the token pieces on both axes (``height``: the plot's, else one that
    grows with the prompt)."""
    names = labels(pieces)
    return heatmap(attentions[layer, head], names, names,
                   f"Layer {layer}, head {head}: how much each query (row) attends to each key (column)",
                   visible=_causal(len(names)), hover="query %{y}<br>key %{x}<br>weight %{z:.4f}", height=height)


def top_k_figure(candidates: Sequence[tuple[str, float]], after: str, chosen: int | None = None) -> go.Figure:
    """Next-token probabilities as horizontal bars, most likely on top, for the token after the piece
    ``after``; ``chosen`` (an index into candidates) in the chosen colour, the others as candidates."""
    names = labels([piece for piece, _ in candidates])
    probs = [p for _, p in candidates]
    looks = ["chosen" if i == chosen else "candidate" for i in range(len(names))]
    bar = go.Bar(x=probs, y=names, orientation="h", marker_color=[MEANINGS[look].color for look in looks],
                 text=[f"{p:.3f}" for p in probs], textposition="outside", cliponaxis=False, showlegend=False,
                 hovertemplate="%{y}<br>p = %{x:.4f}<extra></extra>")
    marks = [legend_marker(look, None if look == "chosen" else "another token", filled=True)
             for look in dict.fromkeys(looks)]
    title = f"After “{safe(after)}”: the {len(names)} most likely next tokens"
    return figure([bar, *marks], frame(title, 120 + 26 * len(names), background=WHITE,
                                       xaxis=dict(range=[0, max(probs + [1e-9]) * 1.25], title_text="probability"),
                                       yaxis=dict(type="category", autorange="reversed"),
                                       legend=dict(orientation="h", x=0, y=-0.02, yanchor="top")))


# -- the KV cache -------------------------------------------------------------------------------
def cache_table(snap: CacheSnapshot) -> pd.DataFrame:
    """Per layer: the cache class, the K and V shapes [batch, kv_heads, seq, head_dim], the bytes
    those shapes make and the bytes of the storage behind them."""
    return pd.DataFrame({
        "layer": [layer.layer for layer in snap.layers],
        "class": [layer.cache_class for layer in snap.layers],
        "K shape": [str(list(layer.key_shape)) for layer in snap.layers],
        "V shape": [str(list(layer.value_shape)) for layer in snap.layers],
        "bytes (K + V)": [layer.nbytes for layer in snap.layers],
        "storage bytes": [layer.storage_bytes for layer in snap.layers],
    })


SHIPPED_ROWS = ("layers", "query heads", "K/V heads", "head dim", "cache per token (measured)",
                "cache after the prompt (measured)")


def shipped_cache_table(rows: Sequence[tuple[str, object, CacheSnapshot]]) -> pd.DataFrame:
    """One column per model (narrow enough for a phone), one row per fact: its heads and the cache
    measured after the same prompt's prefill."""
    return pd.DataFrame({"": list(SHIPPED_ROWS), **{
        name: [real.shape.layers, real.shape.heads, real.shape.kv_heads, real.shape.head_dim,
               f"{snap.bytes_per_token:,.0f} B", f"{snap.total_bytes:,} B"] for name, real, snap in rows}})


GROUP_COLORS = OWNERS  # a K/V head and the query heads reading it: an owner, as a pool's request is


def gqa_figure(heads: int, kv_heads: int) -> go.Figure:
    """Query heads (top row) drawn over the K/V heads they read (bottom row): each group of
    heads / kv_heads query heads shares one key and one value per token."""
    group = heads // kv_heads
    query_x = list(range(heads))
    kv_x = [g * group + (group - 1) / 2 for g in range(kv_heads)]  # under the middle of its group
    lines = [go.Scatter(x=[q, kv_x[q // group]], y=[1, 0], mode="lines", showlegend=False, hoverinfo="skip",
                        line=dict(color=GROUP_COLORS[(q // group) % len(GROUP_COLORS)], width=2))
             for q in query_x]
    queries = go.Scatter(x=query_x, y=[1] * heads, mode="markers+text", name="query heads",
                         text=[f"q{q}" for q in query_x], textposition="top center",
                         marker=dict(size=22, symbol="square",
                                     color=[GROUP_COLORS[(q // group) % len(GROUP_COLORS)] for q in query_x]),
                         hovertemplate="query head %{x}<extra></extra>")
    keys = go.Scatter(x=kv_x, y=[0] * kv_heads, mode="markers+text", name="K/V heads",
                      text=[f"K/V {g}" for g in range(kv_heads)], textposition="bottom center",
                      marker=dict(size=30, symbol="diamond",
                                  color=[GROUP_COLORS[g % len(GROUP_COLORS)] for g in range(kv_heads)]),
                      hovertemplate="K/V head: read by " + str(group) + " query heads<extra></extra>")
    title = (f"{heads} query heads share {kv_heads} K/V heads: {group} per group" if group > 1 else
             f"{heads} query heads, each with its own K/V head")
    return figure([*lines, queries, keys], frame(title, 230, background=WHITE, showlegend=False,
                                                 xaxis=dict(visible=False, range=[-1, heads]),
                                                 yaxis=dict(visible=False, range=[-0.7, 1.6])))


CACHE_PX = 330  # the cached keys' height, however many tokens: whole in a projector's first screen


def key_norms_figure(snap: CacheSnapshot, layer: int, pieces: Sequence[str], height: int | None = None,
                     appended: bool = True) -> go.Figure:
    """One layer's cached keys as a picture: a row per token, a column per kv head, the colour the
    key vector's length ‖k‖. The newest row is outlined as the entry just appended, where a decode
    step appended one (``appended``; after the prefill every row is as new: none is). ``height``: the
    plot's, else one that grows with the cache."""
    norms = snap.layers[layer].key_norms.T  # (seq, kv_heads)
    seq, kv_heads = norms.shape
    # a short title and bare head numbers: one line and readable ticks in a phone's 358 px too (the
    # legend's "new entry" says which row is the newest, the axis title what the numbers are)
    fig = heatmap(norms, [str(h) for h in range(kv_heads)], labels(pieces[:seq]),
                  f"Layer {layer}: {seq} cached keys, length ‖k‖ per head",  # the symbol said in words
                  kind="values", hover="token %{y}<br>K/V head %{x}<br>‖k‖ = %{z:.3f}", scale="‖k‖",
                  highlight_cells=[(seq - 1, h) for h in range(kv_heads)] if appended else (), cells_label="new entry",
                  axes=("K/V head (columns)", "cached token (rows)"), height=height,
                  annotate=seq * kv_heads <= 160 and (height or 100 + 34 * seq) - 100 >= 18 * seq)  # rows with room
    return level_scale_title(fig)


def level_scale_title(fig: go.Figure) -> go.Figure:
    """The colour bar's short title level above the bar (turned on end beside it, '‖k‖' read as a
    smudge from the back row)."""
    return fig.update_traces(colorbar_title_side="top", selector=dict(type="heatmap"))


def cache_growth_figure(growth: Sequence[tuple[int, int, int]]) -> go.Figure:
    """Cache bytes measured (the tensors' storage) against the formula, after prompts of a few lengths
    and after each decode step; rows are (tokens in the cache, measured bytes, formula bytes)."""
    seq = [g[0] for g in growth]
    lines = [go.Scatter(x=seq, y=[g[2] for g in growth], mode="lines", name="formula",
                        line=dict(color=series(1)[0], width=5, dash=series(1)[1]),
                        hovertemplate="%{x} tokens<br>formula %{y:,} bytes<extra></extra>"),
             go.Scatter(x=seq, y=[g[1] for g in growth], mode="markers", name="measured", marker_size=9,
                        marker_color=series(0)[0],
                        hovertemplate="%{x} tokens<br>measured %{y:,} bytes<extra></extra>")]
    title = "Cache bytes: measured vs the formula" + (
        "" if len(growth) > 1 else " (one point so far: each decode step adds one)")
    return figure(lines, frame(title, 320, background=WHITE,
                               xaxis=dict(title_text="tokens in the cache (shorter prompts, then each step)",
                                          rangemode="tozero"),
                               yaxis=dict(title_text="bytes", rangemode="tozero"),
                               legend=dict(orientation="h", x=0, y=1, yanchor="bottom")))


# -- cache vs no cache ---------------------------------------------------------------------------
def speed_figure(comparison: CacheComparison) -> go.Figure:
    """Tokens per second of each decode step against the sequence length, both ways."""
    lines = [go.Scatter(x=comparison.seq_lens, y=[1 / s for s in seconds], mode="lines+markers", name=name,
                        **way_style(mode),
                        hovertemplate=f"{name}<br>length %{{x}}<br>%{{y:,.0f}} tokens/s<extra></extra>")
             for name, seconds, mode in (("with the KV cache", comparison.cached_seconds, "kv"),
                                         ("without a cache", comparison.uncached_seconds, "recompute"))]
    return figure(lines, frame("Measured speed of each decode step", 360, background=WHITE,
                               xaxis=dict(title_text="sequence length when the token is produced"),
                               yaxis=dict(title_text="tokens per second (one step)", rangemode="tozero"),
                               legend=dict(orientation="h", y=-0.3)))


def diff_figure(comparison: CacheComparison) -> go.Figure:
    """Max |logit difference| between the two ways at each prediction, on a log axis."""
    diffs = comparison.max_abs_diff
    floor = 1e-12  # an exact 0 has no place on a log axis: drawn at the floor, the hover says 0
    line = go.Scatter(x=list(range(len(diffs))), y=[max(d, floor) for d in diffs], mode="lines+markers",
                      line_color=series(0)[0], marker_size=4, customdata=diffs,
                      hovertemplate="prediction %{x}<br>max |difference| %{customdata:.3g}<extra></extra>")
    return figure([line], frame("Cached vs uncached logits: max |difference| per prediction", 300,
                                background=WHITE,
                                xaxis=dict(title_text="prediction (0 = right after the prefill)"),
                                yaxis=dict(type="log", exponentformat="e",
                                           title_text="max |logit difference|")))


# -- heads that look like rules ------------------------------------------------------------------
CHANCE_ROW = "chance"  # its label short: a long one left a phone 64 px of plot (the rules tab says what chance is)


def matches_table(matches: RuleMatches) -> pd.DataFrame:
    """One row per real head: the rule it looks most like, that rule's text, the score, the rule's
    chance level and whether the head beats it."""
    return pd.DataFrame({
        "head": [m.label for m in matches.heads],
        "looks like": [matches.rules[m.best].name for m in matches.heads],
        "rule": [matches.rules[m.best].rule for m in matches.heads],
        "score": [round(m.score, 3) for m in matches.heads],
        "chance": [round(m.chance, 3) for m in matches.heads],
        "beats chance": ["yes" if m.beats_chance else "no" for m in matches.heads],
    })


def scores_figure(matches: RuleMatches, selected: str | None = None) -> go.Figure:
    """Every head (rows) against every rule (columns), each head's best cell outlined as the chosen
    rule and the selected head's row as the focus; the last row is each rule's chance level."""
    layers, heads, rules = matches.scores.shape
    rows = [m.label for m in matches.heads] + [CHANCE_ROW]
    columns = [safe(r.name).replace(" ", "<br>") for r in matches.rules]  # one word per line
    z = torch.cat([matches.scores.reshape(layers * heads, rules), matches.chance[None, :]])  # (heads + 1, rules)
    focus = rows.index(selected) if selected in rows else None
    # one line a phone's width holds (its last row's label says it is chance)
    return level_scale_title(heatmap(z, columns, rows, "Every head against every rule (1 = same attention)",
                                     hover="head %{y}<br>rule %{x}<br>score %{z:.3f}", kind="values", scale="score",
                                     highlight_cells=[(i, m.best) for i, m in enumerate(matches.heads)],
                                     cells_mean="chosen", cells_label="best rule", highlight_row=focus,
                                     row_label="selected head", axes=("toy rule (columns)", "real head (rows)")))


def head_vs_rule_figure(attentions: torch.Tensor, matches: RuleMatches, layer: int, head: int,
                        pieces: Sequence[str]) -> go.Figure:
    """The real head's attention beside the attention of the rule it matches best."""
    match = matches.head(layer, head)
    rule = matches.rules[match.best]
    names = labels(pieces)
    n = len(names)
    titles = [f"real head L{layer}H{head}: layer {layer}, head {head}",
              f"toy rule '{safe(rule.name)}': {safe(rule.rule)}"]
    layout, refs = grid(1, 2, titles, hspace=0.05, vspace=0.0)
    data = [heatmap_trace(z, names, names, visible=_causal(n), annotate=False, ref=ref,
                          hover="query %{y}<br>key %{x}<br>weight %{z:.3f}", scale=WEIGHT_SCALE if k else None)
            for k, (z, ref) in enumerate(zip((attentions[layer, head], matches.patterns[match.best]), refs))]
    for i, (xref, yref) in enumerate(refs):
        layout[f"xaxis{xref[1:]}"].update(type="category", showticklabels=False, title=dict(text="key (columns)"))
        layout[f"yaxis{yref[1:]}"].update(type="category", autorange="reversed",
                                         showticklabels=i == 0 and n <= 24,
                                         title=dict(text="query (rows)" if i == 0 else ""))
    return level_scale_title(figure(data, frame(f"Score {match.score:.3f}: the mean overlap of the two rows<br>over "
                                                f"queries 2 to {n}", max(320, 140 + 18 * n), top=80, **layout)))
