"""Tier 1: every heatmap says what its shades mean: numbers in its cells or a colour bar beside it
(issue 32's review: Real model's grid of every head and its head-against-rule pair drew blues without
either)."""

from __future__ import annotations

import plotly.graph_objects as go
import pytest

from figure_gallery import gallery

HEATMAPS = {name: fig for name, fig, _ in gallery()
            if isinstance(fig, go.Figure) and any(t.type == "heatmap" for t in fig.data)}


@pytest.mark.parametrize("name", list(HEATMAPS))
def test_every_heatmap_has_numbers_or_a_colour_bar(name):
    heatmaps = [t for t in HEATMAPS[name].data if t.type == "heatmap"]
    numbers = any(t.texttemplate for t in heatmaps)
    bars = [t for t in heatmaps if t.showscale]
    assert numbers or bars, name
    assert len(bars) <= 1 or len({str(t.colorscale) for t in bars}) > 1, f"{name}: one scale, drawn twice"
