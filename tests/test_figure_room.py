"""Tier 1: room inside a figure (viz.figures.room, through viz.figures.base.fit): a heatmap's cell numbers
are sized by Plotly to fit their cells at a desk (so a phone's narrower cells shrink them rather than
overlap them) and left out where 12 px would not fit; presenter mode keeps a fixed 16 px; a legend under
the plot gets a margin of its own under the x axis's ticks and title; log axes draw no 9-px minor labels."""

from __future__ import annotations

import plotly.graph_objects as go
import torch

from viz.figures import real
from viz.figures.base import CROWDED_ON_A_PHONE, DESKTOP_PX, PRESENTER_PX, fit, font_sizes
from viz.figures.room import ENTRY_PX, NUMBERS, cell_px, legend_rows

PIECES = [f"piece {i}" for i in range(16)]


def _detail(tokens: int = 16) -> go.Figure:
    weights = torch.softmax(torch.randn(1, 1, tokens, tokens, generator=torch.Generator().manual_seed(0)), -1)
    return real.attention_detail(weights, PIECES[:tokens], 0, 0, height=real.DETAIL_PX)


def test_cell_numbers_are_plotly_sized_at_a_desk_and_fixed_in_presenter_mode():
    """At a desk column cells that hold 12-px numbers on a phone too leave the size to Plotly (it shrinks
    them on a narrower screen instead of letting them overlap); presenter mode sets 16 px, which its cells
    hold."""
    desk = fit(_detail(3), int(DESKTOP_PX * 0.75))
    trace = desk.data[0]
    assert trace.texttemplate == "%{text}" and trace.textfont.size is None
    assert desk.layout.font.size == font_sizes().base  # Plotly's cap on the size it picks
    assert cell_px(desk, trace, int(DESKTOP_PX * 0.75), 12)[0] >= 3 * 12 * 0.65  # ".42" fits at 12 px
    presenter = fit(_detail(), int(PRESENTER_PX * 0.75), presenter=True)
    assert presenter.data[0].texttemplate == "%{text}" and presenter.data[0].textfont.size == 16


def test_cells_too_narrow_for_12_px_numbers_drop_them():
    """Drawn in a phone's 358 px the 16 × 16 matrix's cells cannot hold '.42' at 12 px: no cell text
    (the hover and 'As a table' keep every number), never numbers run together."""
    narrow = fit(_detail(), 358)
    assert narrow.data[0].texttemplate is None and narrow.data[0].text is not None
    few = fit(_detail(3), 358)  # three keys fit
    assert few.data[0].texttemplate == "%{text}"


def test_a_heatmap_whose_cells_hold_numbers_at_a_desk_but_not_on_a_phone_says_so():
    """Fitted for a desk column, the 16 × 16 matrix keeps its numbers there (written by bars) but is marked
    crowded on a phone (Plotly drew them 3 px high in a 358-px column); three keys are not, nor is presenter
    mode (its screen is known), and fitting twice gives the same verdict."""
    desk = fit(_detail(), int(DESKTOP_PX * 0.7))
    assert [t.meta for t in desk.data].count(NUMBERS) == 1 and desk.layout.meta[CROWDED_ON_A_PHONE] is True
    assert fit(desk, int(DESKTOP_PX * 0.7)).layout.meta[CROWDED_ON_A_PHONE] is True
    assert fit(_detail(3), int(DESKTOP_PX * 0.7)).layout.meta[CROWDED_ON_A_PHONE] is False
    assert fit(_detail(), int(PRESENTER_PX * 0.7), presenter=True).layout.meta[CROWDED_ON_A_PHONE] is False
    assert fit(_detail(), 358).layout.meta[CROWDED_ON_A_PHONE] is False  # fitted for a phone: no numbers at all


def test_numbers_a_phone_would_shrink_under_the_text_size_are_written_by_bars_plotly_hides_there():
    """A student's phone (390 × 844): Real model's 16 × 16 weights printed their numbers 3-4 px high, Plotly
    sizing a heatmap's text to its cells with no least size. Fitted for a desk, that matrix's numbers are
    written by see-through bars over its cells instead, one a cell, which Plotly fits to the cell on the
    screen it draws on and hides under 9 px (layout.uniformtext, as for any bar's label): 12 px at a desk,
    none on a phone's 358 px (the hover and "As a table" have them). The bars stand on the heatmap's columns
    and an overlaid axis of its rows (the rows axis does not zoom, so they stay on their cells), each in
    the colour Plotly writes on that cell, every label as wide as the widest (all drawn, or none: a lone
    "0" stayed), hover and tables untouched; presenter mode's fixed 16 px keeps the heatmap's own."""
    import numpy as np

    from viz.figures.base import figure_table

    width = int(DESKTOP_PX * 0.7)
    weights = torch.softmax(torch.randn(1, 1, 16, 16, generator=torch.Generator().manual_seed(0)), -1)
    weights[0, 0, 0] = torch.nn.functional.one_hot(torch.tensor(0), 16)  # one cell of weight 1: dark blue
    built = real.attention_detail(weights, PIECES, 0, 0, height=real.DETAIL_PX)
    fig = fit(real.attention_detail(weights, PIECES, 0, 0, height=real.DETAIL_PX), width)
    heat = fig.data[0]
    bars = [t for t in fig.data if t.type == "bar"]
    assert heat.texttemplate is None and len(bars) == 1 and bars[0].meta == NUMBERS
    bar, text = bars[0], np.asarray(heat.text, dtype=object)
    cells = [(r, c) for r in range(16) for c in range(16) if text[r, c]]
    assert [t.strip("\u2007") for t in bar.text] == [text[r, c] for r, c in cells]
    assert len({len(t) for t in bar.text}) == 1  # as wide as the widest: all drawn or none
    assert list(bar.x) == [heat.x[c] for _, c in cells] and list(bar.base) == [r - 0.5 for r, _ in cells]
    assert set(bar.y) == {1} and bar.width == 1 and bar.textposition == "inside" and bar.hoverinfo == "skip"
    assert bar.textfont.size == 12 and (fig.layout.uniformtext.mode, fig.layout.uniformtext.minsize) == ("hide", 9)
    rows = fig.layout[f"yaxis{bar.yaxis[1:]}"]
    assert bar.xaxis == "x" and rows.overlaying == "y" and list(rows.range) == [15.5, -0.5] and rows.visible is False
    assert fig.layout.yaxis.fixedrange is True and rows.fixedrange is True
    colours = dict(zip(cells, bar.textfont.color))
    assert colours[0, 0] == "white" and colours[1, 1] == "#444"  # 1 on dark blue, a small weight on pale blue
    assert figure_table(fig).equals(figure_table(built))  # the numbers as a table: the heatmap's, once
    presenter = fit(fig, int(PRESENTER_PX * 0.7), presenter=True)
    assert [t.type for t in presenter.data] == [t.type for t in built.data] and presenter.data[0].texttemplate
    assert presenter.layout.uniformtext.mode is None and not presenter.layout.yaxis.fixedrange


def test_a_legend_under_the_plot_gets_room_under_the_ticks_and_title():
    """The next-token bars' legend sat at y = -0.02 over the x ticks: fitted, its first row stands right
    under the ticks and the axis title, with a margin that holds them and its rows, the figure growing
    by as much; fitting again changes nothing."""
    fig = real.top_k_figure([("a", 0.5), ("b", 0.3), ("c", 0.2)], "x", chosen=0)
    fit(fig, DESKTOP_PX)  # a title of one line there
    legend, margin = fig.layout.legend, fig.layout.margin
    ticks_and_title = 2 * 12 * 1.4
    assert (legend.yref, legend.yanchor) == ("container", "top")  # its top, px over the figure's bottom:
    assert ticks_and_title <= margin.b - legend.y * fig.layout.height <= ticks_and_title + 2 * 12  # under the ticks
    assert margin.b >= ticks_and_title + 12 * 1.5 and fig.layout.meta["legend"] == margin.b - 10
    assert fig.layout.height == fig.layout.meta["height"] + fig.layout.meta["legend"]
    again = (fig.layout.height, margin.b)
    fit(fig, DESKTOP_PX)
    assert (fig.layout.height, fig.layout.margin.b) == again


def test_a_legend_under_a_small_plot_is_placed_under_it_not_pushed_into_it():
    """The tour's pool (one row of blocks, no x axis) set its legend 0.18 of the plot under it: on a phone
    its rows needed Plotly to push the bottom margin past what the small plot allows, and were drawn over
    the blocks; at a desk its one row stood 90 px under them, the phone's rows' room above it. Fitted,
    the legend's first row is right under the blocks, the margin under them holds every phone row, and
    the plot keeps its height."""
    from viz.core.lessons.tour import tour_view
    from viz.figures import serving
    from viz.figures.room import LEGEND_PAD_PX, ROW_EM, _entries

    view = tour_view()
    fig = serving.pool_figure(view.continuous, view.shared_iteration)
    plot = _plot_px(fig)
    fit(fig, DESKTOP_PX)
    legend, rows = fig.layout.legend, legend_rows(_entries(fig), 358 - 20, 12)
    assert rows >= 2 and (legend.yref, legend.yanchor) == ("container", "top")
    assert abs(legend.y * fig.layout.height - fig.layout.margin.b) < 0.01  # no axis under the blocks: right under them
    assert fig.layout.margin.b >= LEGEND_PAD_PX + rows * 12 * ROW_EM and _plot_px(fig) == plot


def test_a_desks_title_lines_are_ones_a_phones_figure_holds():
    """The server never learns a screen's width: a title fitted for a desk's column is in lines a phone's
    figure holds (the tour's cache title ran 201 px past it), balanced; presenter mode's known screen
    keeps its long line."""
    from viz.figures.base import PHONE_PX, frame, title_chars

    text = "KV cache: 5 entries after the prompt, one more for every new token"
    fig = fit(go.Figure(layout=frame(text, 200)), DESKTOP_PX)
    lines = fig.layout.title.text.split("<br>")
    assert len(lines) == 2 and " ".join(lines) == text and all(len(line) <= title_chars(PHONE_PX)[1] for line in lines)
    assert fit(fig, PRESENTER_PX, presenter=True).layout.title.text == text


def test_legend_rows_wrap_at_the_width():
    """Entries fill a row up to the width and wrap after it."""
    names = ["no cache (recompute)", "KV cache", "torch.cat cache"]
    assert legend_rows(names, 2000, 12) == 1
    assert legend_rows(names, ENTRY_PX + 20 * 12 * 0.6 + 1, 12) == 3
    # more than one row: every entry as wide as the widest (Plotly's columns), so on a phone the pool's
    # long entry puts each on a row of its own (two rows were counted, four drawn)
    assert legend_rows(["A", "B", "C", "handed out in this iteration"], 338, 12) == 4


def test_log_axes_label_powers_of_ten_only():
    """A log axis's minor labels (2, 5) are drawn at 0.75 of the tick size (9 px at a desk): none."""
    fig = go.Figure(go.Scatter(x=[1, 10, 100], y=[1, 2, 3]))
    fig.update_xaxes(type="log")
    fit(fig, DESKTOP_PX)
    assert fig.layout.xaxis.minorloglabels == "none" and fig.layout.yaxis.minorloglabels is None


def _plot_px(fig: go.Figure) -> float:
    return fig.layout.height - fig.layout.margin.t - fig.layout.margin.b


def test_a_matrix_keeps_its_top_labels_and_axis_title_under_its_title_and_its_plot_size():
    """A query × key matrix draws its key labels and axis title on top of the plot: the top margin holds
    the title's lines and, under them, labels turned 45° (the longer, the taller) and the axis title, on
    a phone (a title in more lines) as at a desk; the figure grows so the plot keeps its height, and
    fitting twice changes nothing. Presenter mode (a wide column, the figure sized for the projector's
    screen) keeps the margin its builder gave it."""
    def built(label: str) -> go.Figure:
        labels = [f"{i} · {label}" for i in range(1, 17)]
        return real.attention_detail(torch.full((1, 1, 16, 16), 1 / 16), labels, 0, 0, height=real.DETAIL_PX)

    short, long = built("a"), built("␣expression")
    plot = _plot_px(long)
    phone, desk = fit(built("␣expression"), 358), fit(built("␣expression"), DESKTOP_PX)
    assert phone.layout.title.text.count("<br>") >= desk.layout.title.text.count("<br>")
    assert phone.layout.margin.t >= desk.layout.margin.t > fit(short, DESKTOP_PX).layout.margin.t
    assert _plot_px(phone) == _plot_px(desk) == plot
    # the title's lines, then 45°-turned labels of 16 characters at 12 px, then the axis title's line
    lines = phone.layout.title.text.count("<br>") + 1
    assert phone.layout.margin.t >= phone.layout.title.pad.t + lines * font_sizes().line + 16 * 12 * 0.6 * 0.7 + 12 * 1.4
    assert fit(phone, 358).layout.margin.t == phone.layout.margin.t and fit(phone, 358).layout.height == phone.layout.height
    presenter = fit(built("␣expression"), PRESENTER_PX, presenter=True)
    assert presenter.layout.margin.t == fit(built("a"), PRESENTER_PX, presenter=True).layout.margin.t


def test_a_matrixs_column_labels_never_run_together_level():
    """Every matrix in the gallery, fitted for a phone's column, a desk's and the tour's half of a
    projector: level column labels fit within their columns, or fit turns them (the tour's contexts
    read '1 · Today2 · weather' on a phone), and fitting again at a wide column brings them back level."""
    from figure_gallery import gallery
    from viz.core.lessons.tour import tour_view
    from viz.figures import toy
    from viz.figures.room import level_labels_fit

    # copies: the gallery is built once per test session, and other tests read its figures as built
    figures = [go.Figure(fig) for _, fig, _ in gallery() if isinstance(fig, go.Figure)]
    figures.append(toy.contexts_figure(tour_view().prefill))
    for fig in figures:
        for width, presenter in ((358, False), (DESKTOP_PX, False), (PRESENTER_PX // 2, True)):
            fit(fig, width, presenter)
            for trace in fig.data:
                axis = fig.layout[f"xaxis{(trace.xaxis or 'x')[1:]}"]
                if trace.type == "heatmap" and axis.tickangle == 0:
                    assert level_labels_fit(fig, trace, min(width, 358) if not presenter else width,
                                            font_sizes(presenter).text), (fig.layout.title.text, width)
    contexts = fit(toy.contexts_figure(tour_view().prefill), 358)
    assert contexts.layout.xaxis.tickangle == -45
    assert fit(contexts, PRESENTER_PX, presenter=True).layout.xaxis.tickangle == 0


def test_a_label_inside_a_bar_is_hidden_where_it_would_shrink_below_the_text_size():
    """Plotly shrinks a label inside a bar to the bar's width (At scale's one-GPU split on a phone: "2 GiB"
    at 1.5-3 px): fitted, such labels are hidden below the text size instead, at a desk and on a projector;
    a figure with no label inside a bar is left as it was."""
    from viz.core.scale.memory import cache_memory, gpu_fit
    from viz.core.scale.model_config import DEFAULT_MODEL, preset
    from viz.core.scale.gpus import DEFAULT_GPU, GPU_BY_NAME
    from viz.figures import memory

    split = gpu_fit(cache_memory(preset(DEFAULT_MODEL), 4096), GPU_BY_NAME[DEFAULT_GPU])
    for presenter in (False, True):
        fitted = fit(memory.gpu_split_figure(split, 4), PRESENTER_PX if presenter else DESKTOP_PX, presenter)
        assert any(t.type == "bar" and t.textposition == "inside" for t in fitted.data)
        assert (fitted.layout.uniformtext.mode, fitted.layout.uniformtext.minsize) == ("hide", font_sizes(presenter).text)
    assert fit(_detail(3), DESKTOP_PX).layout.uniformtext.mode is None


# Figures whose titles a student read broken in two at 1440 × 900 (25-30 characters a line on a figure 600-880 px
# wide), with the share of the main column each is drawn in at a desk and in presenter mode (viz.ui.common.column_px)
WIDE_TITLES = {"cost decode": (1.0, 1.0), "memory curve": (1.0, 0.75), "timeline": (0.75, 0.68),
               "rounds": (0.75, 0.68)}


def _column_px(share: float, presenter: bool) -> int:
    return int((PRESENTER_PX if presenter else DESKTOP_PX) * share - ((37 if presenter else 32) if share < 1 else 0))


def test_wide_figures_titles_wrap_only_as_their_width_needs():
    """A title wraps only where its width needs it: at a desk (1440 × 900 beside the sidebar) and in presenter
    mode (1280 × 720) these titles take the lines their column's width takes, one for a short title, and on a
    phone's 358 px (where the same desk figure may be drawn: the server never learns a screen's width) every
    line of the desk's still fits; no line is a word alone."""
    from figure_gallery import gallery

    from viz.figures.base import PHONE_PX, _wrap, title_chars

    figures = {name: fig for name, fig, _ in gallery()}
    for name, shares in WIDE_TITLES.items():
        fig = go.Figure(figures[name])
        text = fig.layout.meta["title"]
        for share, presenter in zip(shares, (False, True)):
            width = _column_px(share, presenter)
            lines = fit(fig, width, presenter=presenter).layout.title.text.split("<br>")
            needed = [piece for line in text.split("<br>") for piece in _wrap(line, *title_chars(width, presenter))]
            assert len(lines) == len(needed), (name, presenter, lines)
            assert all(" " in line for line in lines) or len(lines) == 1, (name, lines)
            if not presenter:
                assert all(len(line) <= title_chars(PHONE_PX)[1] for line in lines), (name, lines)
