"""The stale-cache lesson: one head's newest query over its keys, with the KV cache and recomputed,
side by side (two rows), each stale key hatched, outlined and labelled 'stale' in its cell."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
import torch

from ..core.engine.explain import fmt
from ..core.lessons.stale import StaleLesson
from .base import heatmap, labels, safe, short
from .meanings import stripes

ROWS = ("with the KV cache", "recomputed")
WORDY_KEYS = 12  # up to this many keys a cell says "match · 0.25"; beyond, "✓" or "✗" over the weight


def stale_figure(lesson: StaleLesson) -> go.Figure:
    """Weights of the newest query on every key, cache row over recomputed row; each cell says
    whether the head's rule matched the key (as cached, as encoded again) and 'stale' where they differ."""
    x = labels([k.token for k in lesson.keys])
    z = torch.tensor([[k.cached_weight for k in lesson.keys], [k.recomputed_weight for k in lesson.keys]],
                     dtype=torch.float64)
    matches = [[k.cached_match for k in lesson.keys], [k.recomputed_match for k in lesson.keys]]
    def said(matched: bool, weight: float) -> str:  # a long sequence's narrow cells: ✓ or ✗ over the weight
        if len(lesson.keys) > WORDY_KEYS:
            return ("✓" if matched else "✗") + f"<br>{short(weight)}"
        return ("match" if matched else "no match") + f" · {short(weight)}"

    text = np.array([[said(m, w) + ("<br> <br><b>stale</b>" if k.stale and not i else "")  # said; the hatch between
                      for m, w, k in zip(row, weights, lesson.keys)]
                     for i, (row, weights) in enumerate(zip(matches, z.tolist()))], dtype=object)
    stale = [(0, c) for c, k in enumerate(lesson.keys) if k.stale]
    title = (f"Head '{safe(lesson.name)}' at step {lesson.step}, the newest query cached against recomputed: context "
             f"{fmt(lesson.cached_context)} vs {fmt(lesson.recomputed_context)}"
             + (" (✓ the rule matched the key, ✗ it did not)" if len(lesson.keys) > WORDY_KEYS else ""))
    fig = heatmap(z, x, list(ROWS), title, highlight_cells=stale, cells_mean="stale", annotate=True, height=230,
                  axes=("key (columns)", "run (rows)"),  # short: two rows are too low for more
                  hover="%{y}<br>key %{x}<br>weight %{z:.4g}")
    fig.data[0].text = text
    for shape in stripes("stale", [(c, 0) for _, c in stale], count=7):  # hatched, as the board hatches it
        fig.add_shape(shape)
    return fig
