"""Tier 1: every Plotly figure's tick labels, axis titles, colour-bar numbers and titles, notes and
numbers written beside bars or points read on a projector: a colour of kvlab's own (Streamlit's theme
would otherwise grey them, rgb(128, 132, 149): 3.7:1 on white) at least 4.5:1 on the white page (WCAG
2.x contrast), at a desk and at both presenter sizes."""

from __future__ import annotations

import plotly.graph_objects as go
import pytest

from figure_gallery import gallery
from viz.figures.base import DESKTOP_PX, LABEL_INK, PRESENTER_PX, fit
from viz.figures.room import NUMBERS

PLOTLY = {name: fig for name, fig, _ in gallery() if isinstance(fig, go.Figure)}
WIDTHS = [(DESKTOP_PX, False), (PRESENTER_PX, True), (1736, True)]  # 1736: the main column at 1920 × 1080
STREAMLIT_GREY = "#808495"  # what Streamlit's theme gives a text that sets no colour


def _luminance(color: str) -> float:
    if color.startswith("rgb"):
        rgb = [int(v) / 255 for v in color[color.index("(") + 1:-1].split(",")[:3]]
    else:
        rgb = [int(color[i:i + 2], 16) / 255 for i in (1, 3, 5)]
    linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in rgb]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def contrast(a: str, b: str = "#ffffff") -> float:
    """WCAG 2.x contrast ratio of two colours (1 to 21)."""
    lighter, darker = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (lighter + 0.05) / (darker + 0.05)


def test_the_walk_finds_the_labels_the_teacher_saw():
    """Real model's token rows, Serving's time axis and Cost's axes are among what the test reads."""
    assert ("yaxis ticks", LABEL_INK) in _label_colours(fit(go.Figure(PLOTLY["real attention detail"]), DESKTOP_PX))
    assert any(where == "colour bar numbers" for name in PLOTLY for where, _ in _label_colours(PLOTLY[name]))
    for name in ("timeline", "cost decode", "cost prefill"):
        assert {"xaxis ticks", "yaxis ticks"} <= {where for where, _ in _label_colours(PLOTLY[name])}, name


def test_the_contrast_formula_matches_wcag():
    assert contrast("#000000") == pytest.approx(21)
    assert contrast(STREAMLIT_GREY) == pytest.approx(3.7, abs=0.05)  # the teacher's measurement
    assert contrast(LABEL_INK) >= 7


def _label_colours(fig: go.Figure) -> list[tuple[str, str | None]]:
    """(where, colour) of every text on the page around the plot: ticks, axis titles, colour bars,
    notes (but white ones, written over a dark cell) and the numbers beside bars and points."""
    found: list[tuple[str, str | None]] = []

    def axis(a) -> None:
        if a.visible is not False and a.showticklabels is not False:
            found.append((f"{a.plotly_name} ticks", a.tickfont.color))
        if a.title.text:
            found.append((f"{a.plotly_name} title", a.title.font.color))
    fig.for_each_xaxis(axis)
    fig.for_each_yaxis(axis)
    for trace in fig.data:
        if "colorbar" in trace and trace.showscale is not False:
            found += [("colour bar numbers", trace.colorbar.tickfont.color)]
            if trace.colorbar.title.text:
                found.append(("colour bar title", trace.colorbar.title.font.color))
        on_cells = trace.meta == NUMBERS  # a heatmap's numbers, written by bars in each cell's contrast
        if trace.type == "bar" and not on_cells and (trace.text is not None or trace.texttemplate):
            found.append(("bar numbers", trace.outsidetextfont.color))
        if trace.type == "scatter" and "text" in (trace.mode or ""):
            found.append(("point labels", trace.textfont.color))
    found += [("note", note.font.color) for note in fig.layout.annotations
              if str(note.font.color).lower() not in ("white", "#ffffff")]
    return found


@pytest.mark.parametrize("width,presenter", WIDTHS)
@pytest.mark.parametrize("name", sorted(PLOTLY))
def test_every_figures_labels_read_at_least_4_5_to_1_on_white(name, width, presenter):
    fig = fit(go.Figure(PLOTLY[name]), width=width, presenter=presenter)
    for where, colour in _label_colours(fig):
        assert colour is not None, f"{name}: {where} takes Streamlit's grey (3.7:1)"
        assert contrast(colour) >= 4.5, (name, where, colour, round(contrast(colour), 2))
