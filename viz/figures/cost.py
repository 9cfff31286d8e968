"""Figures for the Cost page: theory (the engine's work counts) next to practice (measured time).

Pure functions from a :class:`viz.core.engine.cost.CostMeasurement` to plotly figures, pandas tables and the
plain-language reading of the plots. Both axes are logarithmic, so O(n) shows as a line of slope 1
and O(n²) as a line of slope 2. Nothing here measures or computes a ratio of its own: the numbers
come from :func:`viz.core.engine.cost.live_cost` and :func:`viz.core.engine.cost.summarize_cost`.
"""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..core.engine.cost import DECODE_MODES, CostMeasurement, CostSummary, DecodePoint
from ..core.timing import Timing, format_seconds
from .base import series, titled
from .toy import MODE_COLORS, MODE_DASHES

# one colour and dash per series: the decode modes as everywhere, the torch.cat cache the third
COLORS = {"recompute": MODE_COLORS["recompute"], "kv": MODE_COLORS["kv"], "cat": series(2)[0],
          "batched": series(0)[0], "one by one": series(1)[0]}
DASHES = {"recompute": MODE_DASHES["recompute"], "kv": MODE_DASHES["kv"], "cat": series(2)[1],
          "batched": series(0)[1], "one by one": series(1)[1]}
NAMES = {"recompute": "no cache (recompute)", "kv": "KV cache", "cat": "torch.cat cache",
         "batched": "batched (one pass)", "one by one": "one token at a time"}


# the panels' titles, short enough to stand side by side on a phone (the axes say the rest; the page
# names the device right above the figure)
PANELS = ("Theory: work", "Practice: time")
LEGEND_PX = 40  # the legend's row, below the x axis's ticks and title (a presenter's 16-px type)


def _layout(fig: go.Figure, title: str, sizes: list[int]) -> go.Figure:
    """Log-log panels, ticks at the measured sizes, seconds on the right panel."""
    fig.update_xaxes(type="log", title_text="sequence length n", tickvals=sizes,
                     ticktext=[f"{n:,}" for n in sizes])
    fig.update_yaxes(type="log", dtick=1, tickformat="~s")  # powers of ten: 10k, 1M; 100µs, 1ms
    fig.update_yaxes(ticksuffix="s", row=1, col=2)
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
        line=dict(color=COLORS[name], dash=DASHES[name]),
        error_y=dict(type="data", symmetric=False, array=[t.max_s - t.median_s for t in timings],
                     arrayminus=[t.median_s - t.min_s for t in timings], thickness=1, width=3,
                     color=_faded(COLORS[name])),
        customdata=[format_seconds(m) for m in medians],
        hovertemplate=f"{NAMES[name]}<br>n = %{{x}}<br>%{{customdata}} (median; the bar: fastest to slowest)"
                      "<extra></extra>")


def _work_trace(name: str, n: list[int], work: list[int], legend: bool) -> go.Scatter:
    return go.Scatter(x=n, y=work, mode="lines+markers", name=NAMES[name], legendgroup=name,
                      showlegend=legend, line=dict(color=COLORS[name], dash=DASHES[name]),
                      hovertemplate=f"{NAMES[name]}<br>n = %{{x}}<br>%{{y:,}} multiply-adds<extra></extra>")


def _series(measurement: CostMeasurement, mode: str) -> list[DecodePoint]:
    return sorted((p for p in measurement.decode if p.mode == mode), key=lambda p: p.n)


def decode_figure(measurement: CostMeasurement) -> go.Figure:
    """Left: multiply-adds per decode step (engine counts). Right: measured time per token."""
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.16, subplot_titles=PANELS)
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
    return _layout(fig, "Decode: O(n²) work without a cache, O(n) with one", sizes)


def prefill_figure(measurement: CostMeasurement) -> go.Figure:
    """Left: multiply-adds to read a prompt both ways. Right: measured time for the whole prompt."""
    points = sorted(measurement.prefill, key=lambda p: p.n)
    n = [p.n for p in points]
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.16, subplot_titles=PANELS)
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


def _times(ratio: float) -> str:
    return f"{ratio:,.0f}×" if ratio >= 100 else f"{ratio:.2g}×"


def decode_reading(summary: CostSummary, device_type: str) -> list[str]:
    """The decode plot in plain words, one paragraph per point, with this measurement's numbers.

    Each claim follows the data: where the measurement contradicts the usual story (a cache that
    does not win at tiny n, a torch.cat cache that keeps up), the text says so.
    """
    s = summary
    lines = [
        f"**Where the cache wins.** At n = {s.large_n}, one decode step took "
        f"{_times(s.speedup_large)} as long without the cache as with it. The engine's counters "
        f"say recomputing does {_times(s.work_ratio_large)} the multiply-adds there: it runs the "
        "whole n × n attention again for one new row, while the cache encodes one key and reads "
        "the others. The gap widens with n, because one side grows like n² and the other like n.",
    ]
    lines.append(_small_steps(s, device_type))
    if s.kv_size_growth > 1:
        lines.append(
            f"**The cached step grows slowly.** From the smallest n to n = {s.kv_n} the sequence grew "
            f"{s.kv_size_growth:,.0f}× and the cached step's time {s.kv_time_growth:.2g}×: its cost is "
            "the fixed price plus a part that grows with n, reading every cached key once.")
    lines.append(_memory_bound(s))
    if s.cat_over_kv is not None:
        lines.append(_growing(s))
    return lines


def _small_steps(s: CostSummary, device_type: str) -> str:
    """Where the cache wins less, or not at all: the fixed price of a step."""
    if s.small_n == s.large_n:
        small = "**Where it wins less.** "
    elif s.speedup_small < 1:
        small = f"**Where it does not.** At n = {s.small_n} the cached step was slower. "
    else:
        small = (f"**Where it wins less.** At n = {s.small_n} the cache was only {_times(s.speedup_small)} "
                 "as fast. ")
    small += ("Every step pays a fixed price, with or without a cache: Python, building small "
              "tensors, starting dozens of tensor operations. With little data that price is most of "
              "the step, so skipping work saves little.")
    if device_type == "cuda":
        small += (" On a GPU each operation is a kernel launch costing microseconds however small "
                  "it is, so short steps are launch-bound and the GPU sits mostly idle.")
    return small


def _memory_bound(s: CostSummary) -> str:
    """Why decode ends up waiting for memory, with this measurement's bytes and copy speed."""
    verdict = ("so at this size the fixed price still outweighs reading the cache"
               if s.kv_time > 3 * s.floor_s else "so reading the cache is most of the step")
    bandwidth = s.bandwidth_bytes_per_s / 1e9
    floor, step = format_seconds(s.floor_s), format_seconds(s.kv_time)
    return (
        "**Why decode ends up memory-bound.** A cached step does one multiply-add per number it "
        f"reads from the cache ({s.bytes_per_multiply_add:.1f} bytes per multiply-add): far too "
        "little arithmetic to keep a processor busy while the bytes arrive, so once the cache is "
        f"large the step waits for memory. At n = {s.kv_n} the cache holds {s.kv_cache_bytes:,} "
        f"bytes; at the measured copy speed of {bandwidth:.1f} GB/s reading them would take {floor}, "
        f"and the step took {step}, {verdict}. The toy has no weights to speak of; a real model's "
        "decode step also reads every one of its weights, once per step, to make one token per "
        "sequence. At batch 1 the weights are most of the bytes (a 7-billion-parameter model reads "
        "about 13 GB of fp16 weights each step, far more than its cache at a few thousand tokens); "
        "the cache dominates only when batch × context grows large. Batching shares one read of "
        "the weights among all the sequences, which is why it raises throughput; shrinking the "
        "cache (fewer K/V heads, 8-bit numbers) matters once the cache is the larger part. The At "
        "scale page weighs both for real models, against a GPU's bandwidth and compute.")


def _growing(s: CostSummary) -> str:
    """The torch.cat cache against the preallocated one."""
    if s.cat_over_kv >= 1.2:
        outcome = (f"at n = {s.kv_n} it took {_times(s.cat_over_kv)} as long as the preallocated "
                   "cache, which writes one row in place")
    else:
        outcome = (f"at n = {s.kv_n} that did not cost more ({_times(s.cat_over_kv)} the time of "
                   "the preallocated cache): copying a cache this small is cheap next to the "
                   "fixed price of a step. The full benchmark shows the gap at n = 16,384")
    return ("**Growing the cache.** The torch.cat cache does the same arithmetic but copies the whole "
            f"cache into a new tensor on every step; {outcome}.")


def prefill_reading(summary: CostSummary) -> list[str]:
    """The prefill plot in plain words (nothing if the sweep measured no prefill)."""
    if summary.prefill_large is None:
        return []
    (n_small, r_small), (n_large, r_large) = summary.prefill_small, summary.prefill_large
    lines = ["Both ways give the same contexts (the table's last column). The batched pass scores "
             "every (query, key) pair, the masked half too, so it does about twice the multiply-adds "
             "of the loop, which only scores the keys each query can see."]
    if r_large >= 1:
        also = f" ({_times(r_small)} at n = {n_small})" if n_small != n_large else ""
        lines.append(
            f"Still, one token at a time took {_times(r_large)} as long as one batched pass at "
            f"n = {n_large}{also}. In the toy that is the fixed price of a step (Python, small "
            "tensor operations) paid n times. In a real model the reason is reuse: a batched "
            "prefill multiplies each weight it reads by all n prompt tokens at once, so it is "
            "limited by arithmetic (compute-bound), while decoding reads every weight again for "
            "one token per sequence, so it waits for memory (memory-bound). That is why a model "
            "reads your prompt quickly and then writes its answer slowly.")
    else:
        lines.append(
            f"Here the loop was faster at n = {n_large} ({_times(1 / r_large)}): the batched pass "
            "builds several n × n tensors, and moving them through memory cost more than the loop's "
            "per-step price. Real models avoid that with fused attention kernels (FlashAttention) "
            "that never write the n × n scores out.")
    return lines
