"""Tier 1: one visual language (viz.figures.meanings): one colour per meaning, told apart with a
colour-vision deficiency; every figure's colours from the table, one meaning per colour in a figure,
a legend for every mark, matrices that say which axis is the query and which the key, no text under
12 px at a desk or 16 px in presenter mode, and titles that fit their width."""

from __future__ import annotations

import html
import itertools
import re

import numpy as np
import plotly.graph_objects as go
import pytest

from figure_gallery import QK, gallery
from viz.figures.base import (DESKTOP_PX, INK, PHONE_PX, PRESENTER_EXTRA_PX, PRESENTER_FONTS, PRESENTER_PX, fit, frame,
                              font_sizes, title_chars)
from viz.figures.meanings import CACHE_SCALES, GREEN, MEANINGS, ORANGE, OWNERS, SERIES, VERMILLION, hatch

NAMES = [name for name, _, _ in gallery()]
FIGURES = {name: (fig, matrix) for name, fig, matrix in gallery()}
PLOTLY = [name for name in NAMES if isinstance(FIGURES[name][0], go.Figure)]
BOARDS = [name for name in NAMES if isinstance(FIGURES[name][0], dict)]
NEUTRAL = {INK, "#ffffff", "white", "#000000"}
ALLOWED = {c.lower() for c in [m.color for m in MEANINGS.values()] + list(SERIES) + list(OWNERS) + list(NEUTRAL)}
HEX = re.compile(r"#[0-9a-fA-F]{6}")
# a colour scale's legend swatch (a key of −1 or +1) wears the colour the scale gives that number: no meaning's
SCALE_SWATCHES = {c.lower() for entry in CACHE_SCALES for c in entry.colors}

# Machado, Oliveira and Fernandes (2009): full protanopia, deuteranopia and tritanopia on linear RGB
CVD = {"protanopia": [[0.152286, 1.052583, -0.204868], [0.114503, 0.786281, 0.099216], [-0.003882, -0.048116, 1.051998]],
       "deuteranopia": [[0.367322, 0.860646, -0.227968], [0.280085, 0.672501, 0.047413], [-0.011820, 0.042940, 0.968881]],
       "tritanopia": [[1.255528, -0.076749, -0.178779], [-0.078411, 0.930809, 0.147602], [0.004733, 0.691367, 0.303900]],
       "typical": np.eye(3).tolist()}


def _linear(color: str) -> np.ndarray:
    c = np.array([int(color[i:i + 2], 16) for i in (1, 3, 5)]) / 255
    return np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)


def _lab(rgb: np.ndarray) -> np.ndarray:
    xyz = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]]) @ np.clip(rgb, 0, 1)
    f = xyz / np.array([0.95047, 1.0, 1.08883])
    f = np.where(f > 0.008856, np.cbrt(f), 7.787 * f + 16 / 116)
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


def _distance(a: str, b: str, seen_as: list[list[float]]) -> float:
    m = np.array(seen_as)
    return float(np.linalg.norm(_lab(m @ _linear(a)) - _lab(m @ _linear(b))))


def test_no_two_meanings_share_a_colour_and_each_pair_stays_apart_for_colour_blind_eyes():
    """Every meaning has its own colour, and every two stay at least 10 ΔE apart (CIE Lab) seen with
    typical vision and simulated protanopia, deuteranopia and tritanopia."""
    colors = [m.color.lower() for m in MEANINGS.values()]
    assert len(set(colors)) == len(colors)
    for (a, ma), (b, mb) in itertools.combinations(MEANINGS.items(), 2):
        for vision, matrix in CVD.items():
            assert _distance(ma.color, mb.color, matrix) >= 10, (a, b, vision)


# charts that compare series (runs, models, modes, parts of a whole): their colours are SERIES' (or the grey
# baseline), told apart by each chart's own legend; every other figure speaks only in meanings and owners
SERIES_CHARTS = {"work", "waste board", "contexts compared", "logits compared", "bytes", "reservation", "metrics",
                 "utilisation", "prefix", "cache length", "traffic", "cache growth", "speed", "memory curve",
                 "GPU split", "cost decode", "cost prefill", "logit difference", "token times", "roofline",
                 "decode bytes", "throughput"}


def _entries(fig) -> list[tuple[str, str]]:
    """(colour, words) of every legend entry of a Plotly figure or a board (a board's colour may be a
    CSS pattern: the meaning's colour is inside it)."""
    if isinstance(fig, dict):
        return [(item["color"].lower(), html.unescape(item["label"])) for item in fig["legend"]]
    return [(colour, html.unescape(words)) for (colour, _, _), words in _legend(fig)]


def test_a_colour_means_one_thing_across_every_figure_and_board():
    """Across the whole app a meaning's colour says that meaning's words, and a meaning's words wear
    its colour: sky blue cannot be 'another word' in one figure and 'prefill' or 'cached' in the next,
    nor the stale colour 'swapped out'. Only series charts (listed) reuse the series colours."""
    colour_of = {label: m.color.lower() for m in MEANINGS.values() for label in m.labels}
    wrong = []
    for name in NAMES:
        for colour, words in _entries(FIGURES[name][0]):
            if words in colour_of and colour_of[words] not in colour:
                wrong.append((name, words, colour))  # a meaning's words in another colour
            meant = [m for m in MEANINGS.values() if m.color.lower() in re.findall(r"#[0-9a-f]{6}", colour)]
            if name not in SERIES_CHARTS and meant and not any(words in m.labels for m in meant):
                wrong.append((name, words, colour))  # a meaning's colour saying something else
    assert not wrong, wrong
    assert SERIES_CHARTS <= set(NAMES)  # the exceptions are figures that exist


def test_waiting_and_an_idle_slot_are_told_apart_from_the_back_row():
    """Serving's timeline: a waiting request is dotted and at least 15 ΔE from an idle slot's grey with
    every vision (the two greys it had were 10 apart), so neither is mistaken for the other."""
    from dataclasses import replace

    from viz import load_preset
    from viz.core.lessons.tour import TOUR_SERVER, tour_workload
    from viz.core.serving.scheduler import serve
    from viz.figures.serving import PHASES, timeline_figure

    waiting, idle = PHASES["waiting"], PHASES["idle"]
    assert waiting.pattern and not idle.pattern
    for vision, matrix in CVD.items():
        assert _distance(waiting.color, idle.color, matrix) >= 15, vision
    served = load_preset("seed").cache_safe()
    fig = timeline_figure(serve(served, tour_workload(served), replace(TOUR_SERVER, policy="static")))
    bars = {t.name: t.marker for t in fig.data if t.type == "bar"}
    assert {waiting.label, idle.label} <= set(bars), set(bars)
    assert bars[waiting.label].pattern.shape == "." and bars[waiting.label].color == waiting.color
    assert not bars[idle.label].pattern.shape and bars[idle.label].color == idle.color


def _lightness(color: str, seen_as: list[list[float]]) -> float:
    return float(_lab(np.array(seen_as) @ _linear(color))[0])


@pytest.mark.parametrize("name", ["serving pool", "pool"])
def test_a_pools_blocks_that_nobody_holds_differ_in_lightness_not_only_hue(name):
    """The fills a pool gives blocks no request or sequence holds (free, cached with no holder, an empty
    slot of a used block) sit side by side: every two differ by at least 15 L* with typical vision and
    each simulated deficiency, since from the back row or with a deficiency only lightness is left
    (Serving's cached mint and the free near-white were 1 to 3 L* apart: one pale shade)."""
    heat = next(t for t in FIGURES[name][0].data if t.type == "heatmap")
    held = {c.lower() for c in OWNERS} | {MEANINGS["shared"].color.lower()}  # these write their holders
    fills = {c.lower() for _, c in heat.colorscale} - held
    assert len(fills) >= 2, fills
    for a, b in itertools.combinations(sorted(fills), 2):
        for vision, matrix in CVD.items():
            assert abs(_lightness(a, matrix) - _lightness(b, matrix)) >= 15, (a, b, vision)


def test_cached_and_free_blocks_differ_in_lightness_with_every_vision():
    """The two meanings themselves, wherever they are drawn: 'cached, no holder' is at least 15 L* darker
    than 'free' with every vision, and a legend swatch of either is outlined (free's near-white would
    vanish on the page otherwise)."""
    for vision, matrix in CVD.items():
        gap = _lightness(MEANINGS["free"].color, matrix) - _lightness(MEANINGS["cached"].color, matrix)
        assert gap >= 15, (vision, gap)
    swatches = {t.name: t.marker for t in FIGURES["serving pool, cached"][0].data if t.type == "scatter" and t.name}
    for look in (MEANINGS["free"], MEANINGS["cached"]):
        assert swatches[look.label].color == look.color and swatches[look.label].line.width >= 1, look.label


def test_owners_of_blocks_never_wear_a_meanings_colour_and_stay_apart_from_every_meaning():
    """Who holds a pool's blocks (a request, a sequence) has its own colours: none is a meaning's, each
    stays at least 10 ΔE from every meaning's colour and from every other owner's, with typical
    vision and each simulated deficiency."""
    meanings = {name: m.color for name, m in MEANINGS.items()} | {"ink": INK}
    assert not {c.lower() for c in OWNERS} & {c.lower() for c in meanings.values()}
    for who, colour in enumerate(OWNERS):
        for (name, other), (vision, matrix) in itertools.product(meanings.items(), CVD.items()):
            assert _distance(colour, other, matrix) >= 10, (who, name, vision)
    for (a, b), (vision, matrix) in itertools.product(itertools.combinations(OWNERS, 2), CVD.items()):
        assert _distance(a, b, matrix) >= 10, (a, b, vision)


@pytest.mark.parametrize("name", ["serving pool", "pool"])
def test_every_pool_draws_its_owners_in_owner_colours_never_a_meanings(name):
    """Serving's and Memory's pools: each request's or sequence's legend entry (and so its blocks) is an
    owner colour, so R1 is never the decode blue, R3 never the stale pink, B never a series vermillion."""
    owners = {c.lower() for c in OWNERS}
    meant = {label for m in MEANINGS.values() for label in m.labels}
    entries = [(colour, words) for (colour, _, _), words in _legend(FIGURES[name][0])
               if html.unescape(words) not in meant]
    assert len(entries) >= 2 and all(colour in owners for colour, _ in entries), entries
    meaning_colours = {m.color.lower() for m in MEANINGS.values()}
    assert not {colour for colour, _ in entries} & meaning_colours


def test_the_groups_of_query_heads_sharing_a_kv_head_are_owners_too():
    """GQA's picture: a K/V head and the query heads that read it wear one owner colour, never a meaning's."""
    spec = FIGURES["GQA"][0].to_plotly_json()
    drawn = {c.lower() for trace in spec["data"] for c in _colour(trace.get("marker", {}).get("color"))
             + _colour(trace.get("line", {}).get("color"))}
    assert drawn and drawn <= {c.lower() for c in OWNERS}, drawn


def test_problems_carry_a_pattern_and_orange_never_stands_beside_vermillion():
    """A stale key and a rejected guess are patterned (never told by colour alone); vermillion, hard
    to tell from orange (the focus) from the back row, means nothing; every legend word is one
    meaning's only."""
    assert MEANINGS["stale"].pattern and MEANINGS["rejected"].pattern
    assert MEANINGS["focus"].color == ORANGE and VERMILLION not in {m.color for m in MEANINGS.values()}
    words = [label for m in MEANINGS.values() for label in m.labels]
    assert len(words) == len(set(words))
    assert hatch("stale", "#123456").count(MEANINGS["stale"].color) == 1 and "#123456" in hatch("stale", "#123456")


def _colour(value) -> list[str]:
    if isinstance(value, str):
        return [value.lower()] if HEX.fullmatch(value) or value in NEUTRAL else []
    if isinstance(value, (list, tuple)):
        return [c for v in value for c in _colour(v)]
    return []


def _stepped(scale) -> bool:
    """kvlab's stepped colour scales (one colour per category, each colour at both ends of its step),
    as opposed to the continuous ones (Blues, RdBu, Viridis) Plotly writes out in full."""
    colours = [c for _, c in scale]
    return len(colours) % 2 == 0 and colours[::2] == colours[1::2]


def _colours(fig: go.Figure) -> set[str]:
    """Every colour a figure draws with, but continuous colour scales (Blues, RdBu, Viridis)."""
    spec = fig.to_plotly_json()
    found = set()
    for shape in spec["layout"].get("shapes", []):
        found |= set(_colour(shape.get("line", {}).get("color"))) | set(_colour(shape.get("fillcolor")))
    for trace in spec["data"]:
        found |= set(_colour(trace.get("marker", {}).get("color"))) | set(_colour(trace.get("line", {}).get("color")))
        scale = trace.get("colorscale")
        if isinstance(scale, (list, tuple)) and _stepped(scale):
            found |= {c for _, c in scale}
    return {c.lower() for c in found}


def _legend(fig: go.Figure) -> list[tuple[tuple, str]]:
    """The figure's legend: ((colour, dash or symbol, pattern), words) per entry."""
    entries = []
    for trace in fig.to_plotly_json()["data"]:
        if trace.get("showlegend") is False or not trace.get("name") or trace.get("type") == "heatmap":
            continue
        marker, line = trace.get("marker", {}), trace.get("line", {})
        colour = marker.get("color") if isinstance(marker.get("color"), str) else line.get("color")
        style = line.get("dash") if trace.get("mode", "lines").startswith("lines") else marker.get("symbol")
        pattern = marker.get("pattern", {}).get("shape")
        entries.append(((str(colour).lower(), style, pattern if isinstance(pattern, str) else None), trace["name"]))
    return entries


@pytest.mark.parametrize("name", PLOTLY)
def test_every_figure_draws_its_colours_from_the_table(name):
    """A figure's colours are the meanings', the series' or neutral ink, or a colour scale's in its
    legend swatch: no colour of its own."""
    assert _colours(FIGURES[name][0]) <= ALLOWED | SCALE_SWATCHES, _colours(FIGURES[name][0]) - ALLOWED


@pytest.mark.parametrize("name", PLOTLY)
def test_in_a_figure_one_look_means_one_thing_and_orange_never_stands_beside_vermillion(name):
    """No two legend entries of a figure look alike (colour, dash or symbol, pattern) with different
    words; a figure never uses both orange and vermillion."""
    looks: dict[tuple, set[str]] = {}
    for look, words in _legend(FIGURES[name][0]):
        looks.setdefault(look, set()).add(words)
    assert all(len(words) == 1 for words in looks.values()), looks
    assert not {ORANGE.lower(), VERMILLION.lower()} <= _colours(FIGURES[name][0])


@pytest.mark.parametrize("name", PLOTLY)
def test_every_mark_of_a_meaning_has_a_legend_entry(name):
    """Each outline drawn in a meaning's colour is explained by a legend entry in that colour."""
    fig = FIGURES[name][0]
    meaning_colours = {m.color.lower() for m in MEANINGS.values()}
    marks = {s.line.color.lower() for s in fig.layout.shapes if s.line.color} & meaning_colours
    assert marks <= {look[0] for look, _ in _legend(fig)}, marks


@pytest.mark.parametrize("name", BOARDS)
def test_every_board_colour_is_the_tables_and_every_outline_has_its_legend(name):
    """A board's outlines are meanings' colours, each with a legend entry (a patterned one shows its
    hatch); its legend words are the table's."""
    spec = FIGURES[name][0]
    legend = " ".join(item["color"] for item in spec["legend"]).lower()
    for o in spec.get("outlines", []):
        assert o["color"].lower() in ALLOWED and o["color"].lower() in legend, o
    series = {c.lower() for c in SERIES}
    for item in spec["legend"]:  # a meaning's colour (not also a series') says that meaning's words
        meant = [m for m in MEANINGS.values() if m.color.lower() in item["color"].lower()]
        assert all(item["label"] in m.labels for m in meant if m.color.lower() not in series), item


@pytest.mark.parametrize("name", [n for n in NAMES if FIGURES[n][1]])
def test_every_matrix_says_what_its_rows_and_columns_are(name):
    """Every heatmap and board matrix names its axes; a query × key matrix says the rows are queries
    and the columns keys (in its axis titles, or a board in its title and axes)."""
    fig, matrix = FIGURES[name]
    if isinstance(fig, dict):
        assert fig["axes"]["rows"] and fig["axes"]["columns"]
        if matrix == QK:
            assert "quer" in fig["axes"]["rows"] and "key" in fig["axes"]["columns"]
            assert fig["title"].endswith("rows: queries, columns: keys")
        return
    layout = fig.to_plotly_json()["layout"]
    titles = {axis: (layout[axis].get("title") or {}).get("text") or "" for axis in layout
              if axis.startswith(("xaxis", "yaxis"))}
    x = " ".join(t for a, t in titles.items() if a.startswith("x"))
    y = " ".join(t for a, t in titles.items() if a.startswith("y"))
    title = layout["title"]["text"].replace("<br>", " ")
    assert (x and y) or "rows" in title, titles
    if matrix == QK:
        assert ("key" in x and "quer" in y) or "rows: queries, columns: keys" in title, titles


def _sizes(fig: go.Figure) -> list[tuple[str, float]]:
    """Every type size a figure sets: its base, legend, notes, axes, colour bars and cell text."""
    spec = fig.to_plotly_json()
    layout = spec["layout"]
    sizes = [("base", layout.get("font", {}).get("size")), ("legend", layout.get("legend", {}).get("font", {}).get("size"))]
    sizes += [("note", note.get("font", {}).get("size")) for note in layout.get("annotations", [])]
    for axis, value in layout.items():
        if axis.startswith(("xaxis", "yaxis")):
            sizes += [(f"{axis} ticks", value.get("tickfont", {}).get("size")),
                      (f"{axis} title", (value.get("title") or {}).get("font", {}).get("size"))]
    for trace in spec["data"]:  # a heatmap shrinks unsized cell text to fit; other text takes the base size
        if trace["type"] == "heatmap" and trace.get("texttemplate"):
            sizes.append(("cell text", trace.get("textfont", {}).get("size")))
    return sizes


@pytest.mark.parametrize("name", PLOTLY)
def test_no_text_under_12_px_at_a_desk_and_none_under_16_px_in_presenter_mode(name):
    """Built for a desk, every size a figure sets is at least 12 px (cell text too: Plotly's own
    would shrink it to fit a cell); fitted for presenter mode, every text is at least 16 px."""
    fig = go.Figure(FIGURES[name][0])
    unset_is_fine = {"legend", "note"}  # Plotly's and Streamlit's defaults for these are 12 px
    for where, size in _sizes(fig):
        assert (size is None and (where in unset_is_fine or "axis" in where)) or size >= font_sizes().text, where
    fit(fig, PRESENTER_PX, presenter=True)
    for where, size in _sizes(fig):
        assert size is not None and size >= PRESENTER_FONTS.text, (where, size)
    spec = fig.to_plotly_json()
    assert all(t["textfont"]["size"] >= PRESENTER_FONTS.text for t in spec["data"] if t.get("text") is not None)
    assert fig.layout.font.size >= PRESENTER_FONTS.base and fig.layout.title.font.size == PRESENTER_FONTS.title


@pytest.mark.parametrize("name", PLOTLY)
def test_titles_fit_the_width_they_are_drawn_at_and_grow_the_figure_above_the_plot(name):
    """At a phone's width (the default) and once fitted for a desktop column, each title line fits
    (the first beside the toolbar), and the figure grows by exactly its extra lines."""
    fig = go.Figure(FIGURES[name][0])
    for width in (PHONE_PX, DESKTOP_PX):
        if width != PHONE_PX:
            fit(fig, width)
        first, rest = title_chars(width)
        lines = fig.layout.title.text.split("<br>")
        assert len(lines[0]) <= first or " " not in lines[0], lines
        assert all(len(line) <= rest or " " not in line for line in lines), lines
        legend = fig.layout.meta.get("legend", 0)  # fit() makes room under the plot for a legend there
        above = fig.layout.meta.get("above", 0)  # and above it for a top axis's labels under the title's lines
        assert fig.layout.height == fig.layout.meta["height"] + font_sizes().line * (len(lines) - 1) + legend + above


def test_a_presenter_title_wraps_sooner_and_pushes_the_plot_down_by_its_lines():
    """A title that fits one desktop line takes more in presenter type at the same width, and the top
    margin grows by the presenter line height for each."""
    # a title of its own (a page's titles change): one desktop line at 400 px, not one presenter line
    fig = go.Figure(layout=frame("Each round: the guesses kept", 250, top=90))
    fit(fig, 400)
    desk_lines, desk_top = fig.layout.title.text.count("<br>") + 1, fig.layout.margin.t
    fit(fig, 400, presenter=True)
    lines = fig.layout.title.text.count("<br>") + 1
    assert lines > desk_lines and fig.layout.margin.t == (fig.layout.meta["top"] + PRESENTER_FONTS.line * (lines - 1)
                                                          + PRESENTER_EXTRA_PX)
    assert fig.layout.margin.t > desk_top


def test_a_new_key_is_green_everywhere_and_the_focus_orange():
    """The same meaning, the same look, across pages: the lesson board's new key, the Plotly lesson's,
    the toy's growing attention and the serving pool's new blocks are one green; the focus one orange."""
    new = {look for name in ("lesson attention", "attention as it grew", "serving pool", "lesson cache")
           for look, words in _legend(FIGURES[name][0]) if words in MEANINGS["new"].labels}
    assert {colour for colour, _, _ in new} == {GREEN.lower()}
    focus = {look[0] for name in ("lesson attention", "timeline", "tiles", "rounds")
             for look, words in _legend(FIGURES[name][0]) if words in MEANINGS["focus"].labels}
    assert focus == {ORANGE.lower()}


def test_a_rejected_guess_is_crossed_in_its_own_text_and_only_it():
    """Speculative decoding's rounds: every rejected guess (black) reads '✗ word', a cross no mark
    laid over the cell could give without hiding the word; no other cell carries one."""
    from viz import load_preset
    from viz.core.serving.speculative import DraftSpec, speculate
    from viz.figures import serving

    run = speculate(load_preset("previous-token"), 12, 4, DraftSpec(kind="fewer heads"))
    heat = serving.rounds_figure(run, 0).data[0]
    cells = [(z, t) for zr, tr in zip(heat.z, heat.text) for z, t in zip(zr, tr)]
    rejected = [t for z, t in cells if z == 2]
    assert rejected and all(t.startswith("✗ ") and len(t) > 2 for t in rejected)
    assert not any("✗" in t for z, t in cells if z != 2)


def test_a_legend_names_why_a_mark_stands_out():
    """Chunked prefill's token times mark the request with the longest prompt, the one chunking is about,
    and the legend says so (it said 'selected request', where nobody selects anything)."""
    from viz import load_preset
    from viz.core.serving.scheduler import serve
    from viz.core.serving.view import chunking_view
    from viz.core.serving.workload import ServingConfig, workload_preset
    from viz.figures.serving import token_times_figure

    scenario = load_preset("cache-safe")
    workload = workload_preset(scenario, "one long prompt, four short")
    whole = serve(scenario, workload, ServingConfig(num_blocks=32))
    view = chunking_view(whole, serve(scenario, workload, ServingConfig(num_blocks=32, chunk_size=8)))
    fig = token_times_figure([("whole prompts", whole)], view.longest)
    marked = {trace.y[0] for trace in fig.data if trace.y and trace.y[0] and trace.marker.color == ORANGE}
    assert marked == {workload.requests[view.longest].name}
    assert [trace.name for trace in fig.data if trace.showlegend is not False and trace.name] == ["the longest prompt"]


def test_the_pools_legend_lists_only_the_blocks_its_figure_draws():
    """Serving's pool: the legend offers a block colour only where the iteration drawn has such a block
    (it listed 'cached, no holder' on the tour's step 9 and Prefix caching, where no block wore it), in
    one order (shared, cached, free) whichever are there."""
    from viz import load_preset
    from viz.core.serving.scheduler import serve
    from viz.core.serving.workload import ServingConfig, workload_preset
    from viz.figures.serving import pool_figure

    scenario = load_preset("cache-safe")
    order = ["shared (ref > 1)", MEANINGS["cached"].label, MEANINGS["free"].label]  # the pool's short words

    def legend(run, index):
        return [trace.name for trace in pool_figure(run, index).data if trace.name in order]

    def drawn(it):
        return [any(len(b.owners) > 1 for b in it.blocks), any(b.cached and not b.owners for b in it.blocks),
                any(not b.owners and not b.cached for b in it.blocks)]

    plain = serve(scenario, workload_preset(scenario, "a burst"), ServingConfig(num_blocks=32))
    assert legend(plain, 0) == [MEANINGS["free"].label]
    shared = workload_preset(scenario, "a shared system prompt")
    cached = serve(scenario, shared, ServingConfig(num_blocks=32, prefix_caching=True))
    looks = {tuple(drawn(it)) for it in cached.iterations}
    assert (True, False, True) in looks and (False, True, True) in looks and (True, True, True) in looks
    for it in cached.iterations:
        assert legend(cached, it.index) == [words for words, shown in zip(order, drawn(it)) if shown], it.index


def test_a_log_axis_says_what_it_counts():
    """A log axis's ticks (100, 1000) say nothing alone: every log axis has a title (FlashAttention's
    bytes chart had tokens on an untitled axis)."""
    untitled = [(name, axis.plotly_name) for name in PLOTLY for axis in
                [*FIGURES[name][0].select_xaxes(), *FIGURES[name][0].select_yaxes()]
                if axis.type == "log" and not (axis.title and axis.title.text)]
    assert not untitled, untitled
    assert any(axis.type == "log" for axis in FIGURES["traffic"][0].select_xaxes())


def test_the_flash_grid_names_the_tiles_still_to_come():
    """FlashAttention's grid draws the tiles still to come white, edged in ink: its legend names them while
    any remain (it named the current tile and the masked ones only), and not after the last tile."""
    from viz import load_preset
    from viz.core.serving.flash import flash_attention
    from viz.figures.flash import flash_tiles_figure

    run = flash_attention(load_preset("cache-safe"), 2, 2)

    def legend(index):
        return [trace.name for trace in flash_tiles_figure(run, index, 0, "first").data if trace.type == "scatter"]

    assert legend(0) == ["current tile", "above the diagonal: never loaded", "tile still to come"]
    assert "tile still to come" not in legend(len(run.visits) - 1)


def test_grey_masked_cells_without_their_word_have_a_legend_entry():
    """Real model's one head over a 16-token prompt leaves the keys after each query grey with no word in
    them (too narrow for 'masked'): its legend says what grey is; a short matrix writes 'masked' in the
    cells and needs no entry."""
    import torch

    from viz.figures.real import attention_detail

    def legend(n):
        causal = torch.triu(torch.ones(n, n, dtype=torch.bool), 1)
        weights = torch.softmax(torch.zeros(1, 1, n, n).masked_fill(causal, -float("inf")), -1)
        fig = attention_detail(weights, [f"t{i}" for i in range(n)], 0, 0)
        return [trace.name for trace in fig.data if trace.type == "scatter"]

    assert legend(16) == [MEANINGS["masked"].label] and legend(4) == []


def test_a_markers_label_stands_clear_of_the_charts_lines():
    """At scale's ridge point and 'fit in memory' markers write their label where no other line runs at
    that x (within half a decade of a log axis): the ridge's sat on the roof's corner, the fit's on the
    compute line."""
    def at(trace, x):  # the trace's y at x, interpolated on log axes
        xs, ys = np.log10(np.array(trace.x, float)), np.log10(np.array(trace.y, float))
        return float(np.interp(np.log10(x), xs, ys))

    for name in ("roofline", "throughput"):
        fig = FIGURES[name][0]
        markers = [t for t in fig.data if t.mode == "lines+text"]
        lines = [t for t in fig.data if t.mode in ("lines", "lines+markers") and len(t.x) > 1]
        assert markers and lines, name
        for marker in markers:
            y = np.log10(marker.y[[bool(text) for text in marker.text].index(True)])
            assert all(abs(at(line, marker.x[0]) - y) > 0.5 for line in lines), (name, marker.name)


def test_the_two_wastes_memory_compares_look_different_in_the_bars_and_the_legend():
    """Memory's three-ways bars compare a contiguous buffer's reserved, never-filled slots with a block's
    empty end: each wears its own meaning (the first hatched), in its bars and its legend swatch."""
    spec = FIGURES["waste board"][0]
    swatch = {item["label"]: item["color"] for item in spec["legend"]}
    never, block_end = swatch["reserved, never filled"], swatch["empty end of last block"]
    assert never != block_end
    assert never == hatch("unfilled") and block_end == MEANINGS["reserved"].color
    looks = {s["tip"].split(":")[0]: s["color"] for bar in spec["bars"] for s in bar["segments"]}
    assert looks["reserved, never filled"] == never and looks["empty end of last block"] == block_end
