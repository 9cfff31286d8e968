"""Figures for "what limits a decode step": the roofline, bytes per step, throughput against batch.

Pure functions from :class:`viz.core.scale.roofline.StepCost` results to plotly figures and pandas tables
(the roofline's reading in words is the page's, :func:`viz.core.scale.words.roof_reading`); no arithmetic
beyond unit conversion. Model names come from a visitor's config.json, so
every label goes through :func:`~viz.figures.toy.safe`. Colours follow one visual language
(:mod:`viz.figures.meanings`): steps and bounds are series, in the series colours and dashes; a marker
line labelled where it stands (the ridge point, what fits in memory) is neutral ink, dotted, as the
cache curve's chosen length is; no colour of its own, never the focus orange beside vermillion.
"""

from __future__ import annotations

from typing import Sequence

import pandas as pd
import plotly.graph_objects as go

from ..core.scale.memory import GIB, format_bytes
from ..core.scale.roofline import StepCost, format_flops, format_seconds
from .meanings import INK, series
from .memory import GREY, _layout
from .toy import safe

TFLOP = 1e12


def roofline_figure(points: Sequence[tuple[str, StepCost]]) -> go.Figure:
    """Attainable FLOP/s against arithmetic intensity (log-log): the GPU's roof, its ridge point, and
    each step where its intensity puts it."""
    step = points[0][1]
    peak, bandwidth, ridge = step.peak_flops, step.gpu.bandwidth, step.ridge
    low = min([0.5] + [s.intensity / 3 for _, s in points])
    high = max([ridge * 30] + [s.intensity * 3 for _, s in points])
    xs = [low, ridge, high]
    roof = go.Scatter(x=xs, y=[min(peak, bandwidth * x) / TFLOP for x in xs], mode="lines", name="the roof",
                      line=dict(color=INK, width=3),
                      hovertemplate="intensity %{x:.3g} FLOP/byte<br>at most %{y:.4g} TFLOP/s<extra></extra>")
    marks = [go.Scatter(x=[s.intensity], y=[s.attainable_flops / TFLOP], mode="markers+text", name=safe(label),
                        text=[safe(label)], cliponaxis=False,  # under the roof's line, towards the plot's middle
                        textposition="bottom right" if s.intensity < ridge else "bottom left",
                        marker=dict(size=14, color=series(i)[0], line=dict(color="white", width=1)),
                        hovertemplate=(f"{safe(label)}<br>%{{x:.3g}} FLOP/byte<br>%{{y:.4g}} TFLOP/s "
                                       f"attainable<br>{s.bound}-bound<extra></extra>"))
             for i, (label, s) in enumerate(points)]
    bottom = min([bandwidth * low] + [s.attainable_flops for _, s in points]) / TFLOP
    fig = go.Figure([roof, _vertical(ridge, bottom, peak / TFLOP, f"ridge point:<br>{ridge:,.0f} FLOPs<br>per byte",
                               low=True),  # three short lines: the room right of the ridge is a third of a phone's plot
                     *marks])
    fig.update_xaxes(type="log", title="arithmetic intensity (FLOPs per byte read)")
    fig.update_yaxes(type="log", title="attainable TFLOP/s")
    fig = _layout(fig, f"Roofline: {safe(step.gpu.name)}, {step.compute}", 380)  # whole under its tab's lead
    fig.update_layout(legend=dict(orientation="h", yanchor="top", y=-0.2, x=0, xanchor="left"))
    return fig


def _vertical(x: float, y0: float, y1: float, label: str, low: bool = False) -> go.Scatter:
    """A dotted vertical marker in ink from ``y0`` to ``y1``, labelled above its top, or with ``low`` to
    the right of its foot (clear of a line that meets its top, as the roof does at the ridge), as a
    trace (shapes on a log axis would need log coordinates)."""
    return go.Scatter(x=[x, x], y=[y0, y1], mode="lines+text", name=label, text=[label, ""] if low else ["", label],
                      textposition="top right" if low else "top center", line=dict(color=INK, dash="dot", width=2),
                      hovertemplate=f"{label}<extra></extra>", showlegend=False, cliponaxis=False)


def bytes_figure(sweep: Sequence[StepCost], overtakes: int | None) -> go.Figure:
    """Bytes one decode step reads at each batch size: weights and KV cache stacked."""
    batches = [str(s.batch) for s in sweep]
    bars = [go.Bar(x=batches, y=[getattr(s, field) / GIB for s in sweep], name=name, marker_color=color,
                   customdata=[format_bytes(getattr(s, field)) for s in sweep],
                   hovertemplate="batch %{x}: %{customdata}<extra>" + name + "</extra>")
            for field, name, color in (("weight_bytes", "weights", GREY), ("cache_bytes", "KV cache", series(0)[0]))]
    fig = go.Figure(bars)
    fig.update_layout(barmode="stack")
    fig.update_xaxes(title="batch (sequences decoded together)", type="category")
    fig.update_yaxes(title="GiB read per step (per GPU)")
    fig = _layout(fig, "Bytes per decode step", 360)
    if overtakes:
        fig.update_layout(annotations=[dict(text=f"cache > weights from a batch of {overtakes:,}", xref="paper",
                                            yref="paper", x=0.01, y=0.98, showarrow=False, font_color=series(0)[0])])
    return fig


def throughput_figure(sweep: Sequence[StepCost], fit_limit: int | None = None) -> go.Figure:
    """Tokens per second against batch: what memory bandwidth allows, what compute allows, and the
    smaller of the two (the step's bound), drawn first so the dashed bounds show on top of it where
    one of them is the step (memory's, at small batches)."""
    batches = [s.batch for s in sweep]
    lines = [
        go.Scatter(x=batches, y=[s.tokens_per_second for s in sweep], name="the step (the smaller)",
                   mode="lines+markers", line=dict(color=INK, width=4),
                   customdata=[s.bound for s in sweep],
                   hovertemplate="batch %{x}: %{y:,.0f} tokens/s, %{customdata}-bound<extra></extra>"),
        go.Scatter(x=batches, y=[s.memory_tokens_per_second for s in sweep], name="memory allows",
                   mode="lines", line=dict(color=series(0)[0], dash="dash", width=2),
                   hovertemplate="batch %{x}: %{y:,.0f} tokens/s if only bytes counted<extra></extra>"),
        go.Scatter(x=batches, y=[s.compute_tokens_per_second for s in sweep], name="compute allows",
                   mode="lines", line=dict(color=series(1)[0], dash="dashdot", width=2),
                   hovertemplate="batch %{x}: %{y:,.0f} tokens/s if only FLOPs counted<extra></extra>"),
    ]
    if fit_limit and fit_limit <= batches[-1]:
        rates = [s.tokens_per_second for s in sweep]
        lines.append(_vertical(fit_limit, min(rates), max(rates) * 3,  # its label between the step and compute's line
                               f"{fit_limit:,} fit in memory"))
    fig = go.Figure(lines)
    fig.update_xaxes(type="log", title="batch (sequences decoded together)")
    fig.update_yaxes(type="log", title="tokens per second (all sequences, at peak)")
    fig = _layout(fig, "Throughput against batch size", 360)
    fig.update_layout(legend=dict(orientation="h", yanchor="top", y=-0.25, x=0, xanchor="left"), margin=dict(b=10))
    return fig


STEP_ROWS = ["weights read", "KV cache read (decode) / written (prefill)", "FLOPs", "FLOPs per byte",
             "ridge point (FLOPs per byte)", "time if only bytes counted", "time if only FLOPs counted", "bound",
             "time per token", "tokens per second"]


def steps_table(steps: Sequence[tuple[str, StepCost]]) -> pd.DataFrame:
    """One column per step: bytes, FLOPs, intensity against the ridge, and the time each bound allows."""
    return pd.DataFrame({"": STEP_ROWS, **{
        label: [format_bytes(s.weight_bytes), format_bytes(s.cache_bytes), format_flops(s.flops),
                      f"{s.intensity:,.1f}", f"{s.ridge:,.0f}", format_seconds(s.memory_seconds),
                      format_seconds(s.compute_seconds), f"{s.bound}-bound",
                      format_seconds(s.seconds_per_token),
                      f"{s.tokens_per_second:,.0f}"]
        for label, s in steps}})
