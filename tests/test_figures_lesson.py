"""Tier 1: the lesson screen's window, stale-key marks and figures (viz.core.lessons.lesson, viz.figures.lesson)."""

from __future__ import annotations


import pytest

from lesson_fixtures import long_scenario
from test_stale_lesson import assert_hatched
from viz import Scenario, generate, load_preset
from viz.core.engine.model import MODES
from viz.core.engine.explain import check_cache, fmt
from viz.core.lessons.lesson import WINDOW, decode_frame, make_window, prefill_frame
from viz.figures import lesson
from viz.figures.base import MEANINGS, fit, title_room
from viz.figures.meanings import FOCUS_NEWEST
from viz.ui.common import PRESENTER_TEXT_PX


def _runs(scenario: Scenario, steps: int) -> dict:
    return {mode: generate(scenario, steps + 1, mode) for mode in MODES}


def test_window_keeps_the_newest_rows_and_the_first_key():
    """A 35-row matrix shows rows 28–35 and keys 1 and 29–35 (the first key kept in front)."""
    window = make_window(35, 35, 34)
    assert window.rows == tuple(range(27, 35))
    assert window.keys == (0, *range(28, 35)) and window.skipped == 27
    assert not window.complete
    assert make_window(35, 35, 34, whole=True).complete
    assert make_window(4, 4, 3).complete and make_window(4, 4, 3).skipped == 0


def test_prefill_window_is_centred_on_the_position():
    """Prefill's window holds the position near its middle."""
    window = make_window(20, 20, 9, centre=True)
    assert 9 in window.rows and window.rows[0] == 5 and len(window.rows) == WINDOW


def test_seed_step_one_marks_the_stale_key_of_so():
    """At seed step 1 the cache view marks head 'last' at 'so' (position 4) stale, and only that."""
    runs = _runs(load_preset("seed"), 1)
    frame = decode_frame(runs["kv"], runs["kv"], runs["recompute"], 1, 1)
    assert frame.cache.stale == ((1, 3),) and frame.cache.written == (4,)
    fig = lesson.cache_figure(frame, load_preset("seed").head_names)
    assert [t.name for t in fig.data if t.type in ("scatter", "bar")][:2] == ["stale key", "new entry"]
    stale = [s for s in fig.layout.shapes if s.type == "rect" and s.line.color == MEANINGS["stale"].color]
    assert len(stale) == 1 and (stale[0].x0, stale[0].y0) == (2.5, 0.5)  # column of 'so', row of 'last'
    assert stale[0].line.dash == "dot"
    assert_hatched(fig, 3, 1)  # the pattern across the cell, as on the board: not a colour alone, not a slash
    swatch = next(t for t in fig.data if t.name == "stale key")
    assert swatch.type == "bar" and swatch.marker.pattern.shape == MEANINGS["stale"].pattern


def test_stale_summary_is_a_sentence():
    """The short warning names the head, both numbers and the stale key, as a sentence."""
    seed = load_preset("seed")
    check = check_cache(generate(seed, 2, "kv"), generate(seed, 2, "recompute"), 1)
    assert check.differing[0].summary == ("Head 'last' gets 6 with the KV cache but 7 when every key is "
                                          "encoded again, because the cached key of 'so' (position 4) went stale.")


def test_heatmap_cells_use_the_text_template_and_show_near_zeros_as_0():
    """Cell numbers travel in the trace's text (no annotations); 1e-7 reads 0, a third .33."""
    runs = _runs(load_preset("seed"), 1)
    frame = decode_frame(runs["kv"], runs["kv"], runs["recompute"], 1, 1)
    fig = lesson.attention_figure(frame, "last", newest_key=True)
    heat = fig.data[0]
    assert heat.texttemplate == "%{text}" and not fig.layout.annotations
    assert heat.text[4][0] == "0" and heat.text[2][0] == ".33" and heat.text[0][1] == ""
    assert "masked" in heat.customdata[0][1] and heat.customdata[4][0] == f"weight {fmt(5.6e-8)}" == "weight 0"
    assert [t.name for t in fig.data[1:]] == [FOCUS_NEWEST, "new key"]


@pytest.mark.parametrize("tokens, whole, numbers", [(13, True, True), (35, False, True), (35, True, False),
                                                    (64, True, False)])
def test_heatmaps_stay_readable_as_they_grow(tokens, whole, numbers):
    """Cell numbers only where they fit; the whole large matrix gets a colour scale instead."""
    runs = _runs(long_scenario(tokens - 5 if tokens > 8 else tokens), 5)
    frame = decode_frame(runs["kv"], runs["kv"], runs["recompute"], 5, 0, whole=whole)
    heat = lesson.attention_figure(frame, "even").data[0]
    assert (heat.text is not None) == numbers
    assert heat.showscale == (not numbers)
    assert heat.hovertext is not None and len(heat.hovertext) == len(frame.window.rows)


def test_a_whole_view_of_many_keys_stays_readable():
    """Whole on 64 tokens after 32 steps (96 keys): the cache's cells touch (gaps between 2-pixel cells
    would leave only the gaps), its outlines are thin, and the attention rows are labelled no closer
    than a label's height (every third of 96 six-pixel rows)."""
    scenario = long_scenario(64)
    runs = _runs(scenario, 32)
    frame = decode_frame(runs["kv"], runs["kv"], runs["recompute"], 32, 1, whole=True)
    cache = lesson.cache_figure(frame, list(scenario.head_names))
    assert len(frame.cache.keys) == 96 and [t.xgap for t in cache.data[:2]] == [0, 0]
    assert cache.layout.shapes and all(s.line.width <= 2 for s in cache.layout.shapes)
    attention = lesson.attention_figure(frame, "last")
    ticks = attention.layout.yaxis.tickvals
    rows = len(frame.window.rows)
    row_px = 640 // rows  # thin rows: the figure stays about 640 px high
    assert attention.layout.height == 36 + lesson.TICKS_PX + row_px * rows + 34 + title_room(attention.layout.title.text)
    assert rows == 96 and len(ticks) == 32 and (ticks[1] - ticks[0]) * row_px >= lesson.LABEL_PX
    assert ticks[-1] == rows - 1  # the newest query, outlined in gold, is labelled; the count runs back from it
    assert list(attention.layout.yaxis.ticktext[-1:]) == [f"96 · {frame.tokens[95]}"]


def test_presenter_text_is_at_least_16_px():
    """Presenter mode raises every font in a lesson figure (cells, ticks, legend, title) to ≥ 16 px."""
    runs = _runs(load_preset("seed"), 1)
    frame = decode_frame(runs["kv"], runs["kv"], runs["recompute"], 1, 1)
    for fig in (lesson.attention_figure(frame, "last"), lesson.cache_figure(frame, ["a", "b", "c", "d"])):
        spec = fit(fig, presenter=True).to_plotly_json()
        layout = spec["layout"]
        assert layout["font"]["size"] >= PRESENTER_TEXT_PX and layout["legend"]["font"]["size"] >= PRESENTER_TEXT_PX
        for name, axis in layout.items():
            if name.startswith(("xaxis", "yaxis")):
                assert axis["tickfont"]["size"] >= PRESENTER_TEXT_PX, name
        assert all(t["textfont"]["size"] >= PRESENTER_TEXT_PX for t in spec["data"] if "textfont" in t)


def test_prefill_frame_shows_what_prefill_writes():
    """Prefill's frame: every prompt key under the window, the chosen next word first or marked."""
    trace = generate(load_preset("seed"), 1)
    frame = prefill_frame(trace, 4, 0)
    assert frame.focus == 3 and frame.cache.cached and frame.cache.length == 4
    assert [w.token for w in frame.words if w.chosen] == ["nice"]
    tables = lesson.frame_tables(frame, load_preset("seed").head_names)
    assert [title for title, _ in tables][2] == "Next word" and len(tables[1][1]) == 4


def test_the_weights_table_of_a_windowed_frame_holds_the_keys_left_out_and_each_row_adds_up_to_one():
    """The "Figures as tables" tab is the boards' accessible twin: at step 11 of the seed keys 2–8 are left
    out, so their summed weight is a column after key 1, as on the board, and each row adds up to 1."""
    frame = decode_frame(*(generate(load_preset("seed"), 12, "kv"),) * 2, None, 11, 0)
    weights = lesson.frame_tables(frame, load_preset("seed").head_names)[0][1]
    assert list(weights.columns[:4]) == ["query", "1 Today", "2–8 … (keys 2–8 summed)", "9 nice"]
    assert weights.drop(columns="query").sum(axis=1).tolist() == pytest.approx([1.0] * len(weights), abs=1e-6)


def test_stage_heatmaps_at_13_tokens_have_no_colliding_labels():
    """At 13 tokens the stage cells drop 'masked' (grey says it) and show two decimals; 1e-7 reads 0."""
    from viz.figures import toy
    trace = generate(long_scenario(13), 1)
    text = toy.stage_figure(trace, 0, "weights").data[0].text
    assert all(cell != "masked" and len(cell) <= 4 for row in text for cell in row)
    assert text[0][1] == "" and list(text[3][:5]) == ["0", ".5", "0", ".5", ""]
    seed = toy.stage_figure(generate(load_preset("seed"), 1), 0, "weights").data[0].text
    assert seed[0][1] == "masked" and seed[3][0] == "0"  # four keys: the word fits, near-zero is 0


def test_a_long_figure_title_breaks_by_the_figures_width_into_even_lines_and_keeps_the_plot_size():
    """Plotly does not wrap titles: one longer than its chart is broken at spaces for the width the
    figure is drawn at (a phone's unless told), its first line clear of the toolbar, into even lines
    (no word left alone), and the figure grows by the extra lines above the plot. Escaped visitor text
    keeps its entities whole."""
    from viz.figures.base import DESKTOP_PX, PHONE_PX, PRESENTER_PX, title_chars, frame

    long = "Per request: waiting for the first token, then the pace of the rest &lt;b&gt;"
    short = frame("Short title", 300, top=40)
    wrapped = frame(long, 300, top=40)
    lines = wrapped["title"]["text"].split("<br>")
    first, rest = title_chars(PHONE_PX)
    assert short["title"]["text"] == "Short title" and len(lines) == 3 and " ".join(lines) == long
    assert len(lines[0]) <= first and all(len(line) <= rest for line in lines)
    assert max(map(len, lines)) - min(map(len, lines)) <= 4  # even: no orphan
    assert wrapped["height"] - short["height"] == wrapped["margin"]["t"] - short["margin"]["t"] == 2 * 20
    # at a desk: fewer lines, none longer than a phone's figure holds (the same page may be a phone's)
    wide = frame(long, 300, top=40, width=DESKTOP_PX)["title"]["text"].split("<br>")
    assert len(wide) == 2 and " ".join(wide) == long and all(len(line) <= rest for line in wide)
    assert frame(long, 300, top=40, width=PRESENTER_PX, presenter=True)["title"]["text"] == long  # a known screen


def test_fit_refits_a_title_for_a_presenter_screen_and_raises_every_text_to_16_px():
    """fit() breaks the title again for the width and type it is drawn at (presenter: 20-px type, so
    a title that fit one desktop line takes two at a narrow column) and raises cells, ticks, legends
    and notes to 16 px; at a desk nothing is under 12 px."""
    from viz.figures.base import PRESENTER_EXTRA_PX, PRESENTER_FONTS, fit, font_sizes
    runs = _runs(load_preset("seed"), 1)
    frame = decode_frame(runs["kv"], runs["kv"], runs["recompute"], 1, 1)
    fig = lesson.cache_figure(frame, ["a", "b", "c", "d"])
    base_height = fig.layout.meta["height"]
    fit(fig, width=420, presenter=True)
    assert fig.layout.title.font.size == PRESENTER_FONTS.title
    lines = fig.layout.title.text.count("<br>") + 1
    legend = fig.layout.meta["legend"]  # and room under the plot for the legend's rows there
    assert lines >= 2 and fig.layout.height == base_height + PRESENTER_FONTS.line * (lines - 1) + PRESENTER_EXTRA_PX + legend
    spec = fig.to_plotly_json()
    assert all(t["textfont"]["size"] >= 16 for t in spec["data"] if "textfont" in t)
    assert spec["layout"]["legend"]["font"]["size"] >= 16
    desk = lesson.attention_figure(frame, "last").to_plotly_json()
    assert desk["layout"]["font"]["size"] >= font_sizes().text
    assert all(t["textfont"]["size"] >= 12 for t in desk["data"] if t.get("texttemplate"))


def test_whole_shows_more_only_past_a_windows_size():
    """Whole changes what shows only for a matrix larger than the window, whether Whole is on or off."""
    from viz.core.lessons.lesson import WINDOW, make_window

    for whole in (False, True):
        assert not make_window(WINDOW, WINDOW, 0, whole=whole).whole_shows_more
        assert make_window(WINDOW + 1, WINDOW + 1, 0, whole=whole).whole_shows_more
        assert make_window(WINDOW + 1, WINDOW + 1, 0, whole=whole).complete == whole


def _cache_figures():
    """Every Plotly cache figure, with the attention figure that stands beside it on Decode or the tour's
    step it stands on: Decode's "Whole" view (stale keys, none yet, no cache), the tour's, and the toy's
    figure of a longer run (on no page yet)."""
    from viz.core.lessons.tour import tour_view
    from viz.figures import toy
    scenario = long_scenario(30)
    runs, heads = _runs(scenario, 12), list(scenario.head_names)
    for mode, step in (("kv", 12), ("kv", 0), ("recompute", 12)):
        frame = decode_frame(runs[mode], runs["kv"], runs["recompute"], step, 1, whole=True)
        yield lesson.cache_figure(frame, heads), lesson.attention_figure(frame, "last", newest_key=step > 0)
    yield toy.cache_figure(tour_view().cache_run), "tour"
    yield toy.cache_figure(runs["kv"]), None


def _hex(colour: str) -> str:
    import plotly.colors
    return "#{:02x}{:02x}{:02x}".format(*(round(c) for c in plotly.colors.unlabel_rgb(colour)))


def _scale_end(trace, share: float) -> str:
    import plotly.colors
    return _hex(plotly.colors.sample_colorscale([list(stop) for stop in trace.colorscale], [share])[0])


TOUR_PAIR_TOP_PX = 275  # where the tour's cache figure and work chart start at 1280 × 720 (Chromium, presenter; the intro follows them)


@pytest.mark.parametrize("index", range(5))
def test_every_plotly_cache_figure_says_what_its_cells_colours_encode(index):
    """Issue 32 ("every colour has a legend"): the board's cache legend has swatches for a key of −1 and
    +1 and the V scale, the Plotly cache figures had none (Decode's Whole view, whose cells carry no
    numbers, and the tour's). Each has the board's entries, in the board's words and colours, each the
    colour its heatmap gives a −1 key, a +1 key, the lowest and highest value; fitted, the legend's rows
    get room under the plot, and the figure stays no taller than the attention figure beside it (the
    lesson row's height) or, in the tour, than a 1280 × 720 projector has under the step's text."""
    from viz.figures import board
    from viz.figures.base import PRESENTER_PX, font_sizes
    from viz.figures.room import ROW_EM, legend_rows
    fig, beside = list(_cache_figures())[index]
    keys, values = [t for t in fig.data if t.type == "heatmap"]
    entries = {t.name: t for t in fig.data if t.type == "scatter" and t.showlegend is not False}
    wanted = {item["label"]: item for item in board.scale_legend()}
    assert set(wanted) == {"K −1", "K +1", "V: low → high"} <= set(entries)
    for sign, share in (("K −1", 0.0), ("K +1", 1.0)):
        assert entries[sign].marker.color == wanted[sign]["color"] == _scale_end(keys, share)
        assert entries[sign].marker.symbol == "square"  # filled, as the board's swatch
    gradient = entries["V: low → high"].fillgradient
    stops = [colour for _, colour in gradient.colorscale]
    assert gradient.type == "horizontal" and entries["V: low → high"].fill == "toself"
    assert (stops[0], stops[-1]) == (_scale_end(values, 0.0), _scale_end(values, 1.0))
    assert f"linear-gradient(90deg, {', '.join(stops)})" == wanted["V: low → high"]["color"]
    decode = beside not in ("tour", None)
    share = 1 / 3 if decode else 1 / 2  # Decode's lesson row gives the cache a third, the tour half
    for presenter in (False, True):
        width, px = round(PRESENTER_PX * share), font_sizes(presenter).text
        fitted = fit(fig, width=width, presenter=presenter)
        names = [t.name for t in fitted.data if t.type != "heatmap"]
        rows = legend_rows(names, width - 20 if presenter else min(width, 358) - 20, px)
        assert fitted.layout.legend.yref == "container" and fitted.layout.legend.yanchor == "top"  # under the plot
        assert fitted.layout.margin.b >= rows * px * ROW_EM + lesson.TICKS_PX * decode
        if presenter and decode:
            assert fitted.layout.height <= fit(beside, width=round(PRESENTER_PX * 1.3 / 3), presenter=True).layout.height
        elif presenter and beside == "tour":
            assert fitted.layout.height <= 720 - TOUR_PAIR_TOP_PX
