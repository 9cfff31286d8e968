"""Figures for the Cost page: theory (the engine's work counts) next to practice (measured time).

Pure functions from a :class:`viz.core.engine.cost.CostMeasurement` to plotly figures and pandas tables
(the plots' plain-language readings are the Cost page's words, :mod:`viz.core.lessons.words_cost`).
Both axes are logarithmic, so O(n) shows as a line of slope 1 and O(n²) as a line of slope 2. Nothing
here measures or computes a ratio of its own: the numbers come from
:func:`viz.core.engine.cost.live_cost` and :func:`viz.core.engine.cost.summarize_cost`.
"""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..core.engine.cost import DECODE_MODES, CostMeasurement, DecodePoint
from ..core.timing import Timing, format_seconds
from .base import titled
from .meanings import way, way_style

# one colour and dash per way of running, the same in both figures and every other chart that draws it
# (viz.figures.meanings.WAYS): no look means two things on the page
COLORS = {name: way(name)[0] for name in ("recompute", "kv", "cat", "batched", "one by one")}
NAMES = {"recompute": "no cache (recompute)", "kv": "KV cache", "cat": "torch.cat cache",
         "batched": "batched (one pass)", "one by one": "one token at a time"}


# the panels' titles, short enough to stand side by side on a phone (the axes say the rest; the page
# names the device right above the figure)
PANELS = ("Theory: work", "Practice: time")
LEGEND_PX = 40  # the legend's row, below the x axis's ticks and title (a presenter's 16-px type)
PANEL_GAP = 0.08  # between the panels (a share of the width): their y axes are on the outer sides


def _layout(fig: go.Figure, title: str, sizes: list[int]) -> go.Figure:
    """Log-log panels, ticks at the measured sizes, seconds on the right panel."""
    fig.update_xaxes(type="log", title_text="sequence length n", tickvals=sizes,
                     ticktext=[f"{n:,}" for n in sizes])
    # powers of ten: 10k, 1M; 100µs, 1ms. Each panel's y ticks and title on its outer side, in a margin
    # Plotly grows to hold them (automargin), so neither runs into the other panel at any width
    fig.update_yaxes(type="log", dtick=1, tickformat="~s", automargin=True)
    fig.update_yaxes(ticksuffix="s", side="right", row=1, col=2)
    layout = titled(title, 400 + LEGEND_PX, 70)
    layout["margin"]["b"] = LEGEND_PX + 55  # the legend at the bottom, under the ticks and the axis title
    fig.update_layout(**layout, legend=dict(orientation="h", x=0, y=0, yanchor="bottom", yref="container"),
                      plot_bgcolor="white")
    fig.update_xaxes(gridcolor="#e6e6e6")
    fig.update_yaxes(gridcolor="#e6e6e6")
    return fig


def _faded(color: str) -> str:
    red, green, blue = (int(color[i:i + 2], 16) for i in (1, 3, 5))
    return f"rgba({red},{green},{blue},0.35)"


def _time_trace(name: str, n: list[int], timings: list[Timing], legend: bool) -> go.Scatter:
    """Median seconds per call, with the fastest and slowest repeat as the error bar."""
    medians = [t.median_s for t in timings]
    return go.Scatter(
        x=n, y=medians, mode="lines+markers", name=NAMES[name], legendgroup=name, showlegend=legend,
        **way_style(name),
        error_y=dict(type="data", symmetric=False, array=[t.max_s - t.median_s for t in timings],
                     arrayminus=[t.median_s - t.min_s for t in timings], thickness=1, width=3,
                     color=_faded(COLORS[name])),
        customdata=[format_seconds(m) for m in medians],
        hovertemplate=f"{NAMES[name]}<br>n = %{{x}}<br>%{{customdata}} (median; the bar: fastest to slowest)"
                      "<extra></extra>")


def _work_trace(name: str, n: list[int], work: list[int], legend: bool) -> go.Scatter:
    return go.Scatter(x=n, y=work, mode="lines+markers", name=NAMES[name], legendgroup=name,
                      showlegend=legend, **way_style(name),
                      hovertemplate=f"{NAMES[name]}<br>n = %{{x}}<br>%{{y:,}} multiply-adds<extra></extra>")


def _series(measurement: CostMeasurement, mode: str) -> list[DecodePoint]:
    return sorted((p for p in measurement.decode if p.mode == mode), key=lambda p: p.n)


def decode_figure(measurement: CostMeasurement) -> go.Figure:
    """Left: multiply-adds per decode step (engine counts). Right: measured time per token."""
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=PANEL_GAP, subplot_titles=PANELS)
    for mode in DECODE_MODES:
        points = _series(measurement, mode)
        if not points:
            continue
        n = [p.n for p in points]
        if mode != "cat":  # the cat cache does the KV cache's arithmetic: one line serves both
            fig.add_trace(_work_trace(mode, n, [p.work.multiply_adds for p in points], legend=False),
                          row=1, col=1)
        fig.add_trace(_time_trace(mode, n, [p.per_token for p in points], legend=True), row=1, col=2)
    fig.update_yaxes(title_text="multiply-adds per token", row=1, col=1)
    fig.update_yaxes(title_text="time per token (median)", row=1, col=2)
    sizes = sorted({p.n for p in measurement.decode})
    return _layout(fig, "Decode: O(n²) without a cache, O(n) with one", sizes)  # one line on a phone too


def prefill_figure(measurement: CostMeasurement) -> go.Figure:
    """Left: multiply-adds to read a prompt both ways. Right: measured time for the whole prompt."""
    points = sorted(measurement.prefill, key=lambda p: p.n)
    n = [p.n for p in points]
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=PANEL_GAP, subplot_titles=PANELS)
    fig.add_trace(_work_trace("batched", n, [p.batched_work.multiply_adds for p in points], False),
                  row=1, col=1)
    fig.add_trace(_work_trace("one by one", n, [p.one_by_one_work.multiply_adds for p in points], False),
                  row=1, col=1)
    fig.add_trace(_time_trace("batched", n, [p.batched for p in points], True), row=1, col=2)
    fig.add_trace(_time_trace("one by one", n, [p.one_by_one for p in points], True), row=1, col=2)
    fig.update_yaxes(title_text="multiply-adds per prompt", row=1, col=1)
    fig.update_yaxes(title_text="time per prompt (median)", row=1, col=2)
    return _layout(fig, "Prefill: the same contexts, in one pass or one token at a time", n)


def decode_table(measurement: CostMeasurement) -> pd.DataFrame:
    """One row per measured (n, mode)."""
    rows = sorted(measurement.decode, key=lambda p: (p.n, DECODE_MODES.index(p.mode)))
    return pd.DataFrame({
        "n": [p.n for p in rows],
        "decode": [NAMES[p.mode] for p in rows],
        "time per token": [format_seconds(p.per_token.median_s) for p in rows],
        "repeats": [p.per_token.repeats for p in rows],
        "multiply-adds": [p.work.multiply_adds for p in rows],
        "keys encoded": [p.work.keys_encoded for p in rows],
        "keys read from cache": [p.work.keys_read for p in rows],
        "cache KiB": [round(p.cache_bytes / 1024, 1) for p in rows],
    })


def prefill_table(measurement: CostMeasurement) -> pd.DataFrame:
    rows = sorted(measurement.prefill, key=lambda p: p.n)
    return pd.DataFrame({
        "n": [p.n for p in rows],
        "batched": [format_seconds(p.batched.median_s) for p in rows],
        "one by one": [format_seconds(p.one_by_one.median_s) for p in rows],
        "multiply-adds batched": [p.batched_work.multiply_adds for p in rows],
        "multiply-adds one by one": [p.one_by_one_work.multiply_adds for p in rows],
        "largest |difference|": [p.max_abs_diff for p in rows],
    })
