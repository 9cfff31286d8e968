"""One visual language: every mark that means something has one colour, one line style and one fill
pattern, the same in every figure and board, and a legend entry that says it in the same words.

The colours are Okabe and Ito's colour-blind-safe palette (orange, sky blue, bluish green, yellow,
blue, vermillion, reddish purple, black) and three neutral greys. Two rules keep marks apart for a
visitor with a colour-vision deficiency and for the back row of a lecture hall:

* a meaning that marks a problem (a stale key, a rejected guess) carries a pattern and its label,
  never a colour alone; the greys always come with their words (in the cell, or its hover);
* orange and vermillion, hard to tell apart from afar and for red-green deficiencies, never mean
  two things: orange is the focus, vermillion no meaning at all (it only tells series apart).

Series (the things a line or bar chart compares: decode modes, models, runs) take the
:data:`SERIES` colours in order, each with its own dash, so two lines differ by more than hue.
Who holds a block of a pool (a request on Serving, a sequence on Memory) is no meaning and no series:
owners take the :data:`OWNERS` colours, which no meaning uses and which stay apart from every meaning's
colour with a colour-vision deficiency, and every block also writes its owner's name.
A colour marks one meaning across every figure and board (a test holds the whole app to it); only the
series colours repeat across charts, identified by each chart's legend. Serving's phases (prefill,
decode, waiting, swapped out) and its cached blocks are meanings too, in colours of their own.
Figures draw a meaning only through the helpers at the end (an outline, a Plotly or board legend
entry, a pattern's stripes across heatmap cells, as a board hatches its cells), which refuse
legend words the table does not list; the terms in the legends are defined in the glossary
(:mod:`viz.core.lessons.glossary`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import plotly.colors
import plotly.graph_objects as go

# Okabe and Ito (2008), "Color Universal Design"
ORANGE = "#E69F00"
SKY = "#56B4E9"
GREEN = "#009E73"
YELLOW = "#F0E442"
BLUE = "#0072B2"
VERMILLION = "#D55E00"
PURPLE = "#CC79A7"
BLACK = "#000000"
# neutrals, lightest first: nothing there, not visible, set aside, left out
FREE = "#f4f6f9"
MASKED = "#d9d9d9"
RESERVED = "#bdbdbd"
LEFT_OUT = "#707070"
# a contiguous buffer's slots reserved and never filled: dark grey stripes (hatched "\\"), so this waste never
# looks like a block's empty end (the reserved grey) beside it in Memory's three-ways bars
UNFILLED = "#454545"
INK = "#262730"  # text, and marks that must read on any cell colour
# owners of pool blocks (Paul Tol's indigo and olive, ColorBrewer's brown and tan): none is a meaning's
INDIGO = "#332288"
BROWN = "#8C510A"
OLIVE = "#999933"
TAN = "#C7A96B"
# what a request does in a serving iteration, and a block that only holds cached tokens: colours of their
# own (no meaning's, no owner's), each at least 10 ΔE from every other with a colour-vision deficiency
VIOLET = "#906EF7"  # prefill
LEAF = "#548A42"  # decode
PEACH = "#FABCA8"  # waiting, dotted: far lighter and warmer than the idle slot's grey
MAROON = "#610505"  # swapped out
# cached, no holder: a block beside the free ones in Serving's pool, so darker than the free near-white by
# about 20 L* with every vision (the mint it had was 1 to 3 L* from it: one pale shade from the back row)
MIST = "#90C0D8"


@dataclass(frozen=True)
class Meaning:
    """How one meaning looks everywhere: ``color`` (a fill, or an outline around cells), ``dash``
    (the outline's or line's style, Plotly's names), ``pattern`` (a fill pattern, Plotly's bar
    pattern shapes: "/" hatch, "x" cross; "" none) and ``label``, the legend's words.
    ``also`` lists the other legend words a figure may use for the same meaning (the newest query is
    the query in focus on Decode)."""

    color: str
    label: str
    dash: str = "solid"
    pattern: str = ""
    also: tuple[str, ...] = ()

    @property
    def labels(self) -> tuple[str, ...]:
        return (self.label, *self.also)


# the lesson screens' outlined row: Decode's newest query, Prefill's query in focus (the meaning's own label;
# the glossary's "query in focus" defines both; Decode's legend has no room for more words at 1280 × 720)
FOCUS_NEWEST, FOCUS_POSITION = "newest query", "query in focus"
MEANINGS: dict[str, Meaning] = {
    "focus": Meaning(ORANGE, "query in focus",
                     also=(FOCUS_NEWEST, "current tile", "this iteration", "this round",
                           "selected head",
                           "the longest prompt", "chosen length")),
    "new": Meaning(GREEN, "new key",
                   also=("new entry", "handed out in this iteration", "handed out now", "bonus word (every guess kept)",
                         "the target's new word")),
    "stale": Meaning(PURPLE, "stale key", dash="dot", pattern="/"),
    "shared": Meaning(YELLOW, "shared by several (ref > 1)", also=("shared (ref > 1)",)),
    "chosen": Meaning(BLUE, "chosen", also=("kept guess", "best rule")),
    "candidate": Meaning(SKY, "another word", also=("another token", "kept by top-k/top-p")),
    "rejected": Meaning(BLACK, "rejected", pattern="x", also=("does not fit",)),
    "left out": Meaning(LEFT_OUT, "left out", also=("filtered out by top-k/top-p", "evicted", "not checked")),
    "reserved": Meaning(RESERVED, "reserved, still empty",
                        also=("empty slot in a used block", "empty end of last block",
                              "idle slot (static)")),
    "unfilled": Meaning(UNFILLED, "reserved, never filled", pattern="\\"),
    "masked": Meaning(MASKED, "masked: key after the query", also=("above the diagonal: never loaded",)),
    "free": Meaning(FREE, "free"),
    # Serving: what a request does in an iteration (an idle slot is "reserved"), and prefix caching's blocks
    "prefill": Meaning(VIOLET, "prefill (prompt or recompute)"),
    "decode": Meaning(LEAF, "decode one token"),
    "waiting": Meaning(PEACH, "waiting (arrived, not computing)", pattern="."),
    "swapped": Meaning(MAROON, "swapped out"),
    "cached": Meaning(MIST, "cached, no holder", also=("taken from cached blocks",)),
}

# lines and bars that compare things: a colour and a dash each, in this order (no orange: the focus)
SERIES = (BLUE, VERMILLION, GREEN, PURPLE, SKY, BLACK)
SERIES_DASHES = ("solid", "dash", "dot", "dashdot", "longdash", "longdashdot")


# who holds a pool's blocks (requests, sequences), cycling: never a meaning's colour (a test holds it)
OWNERS = (INDIGO, BROWN, OLIVE, TAN)


def owner(i: int) -> str:
    """The colour of the i-th owner of a pool's blocks (a request, a sequence), cycling: told apart
    from the meanings by colour and from each other by colour and the name written in each block."""
    return OWNERS[i % len(OWNERS)]


def meaning(name: str) -> Meaning:
    """The look of ``name`` (a key of :data:`MEANINGS`)."""
    return MEANINGS[name]


def series(i: int) -> tuple[str, str]:
    """The colour and dash of the i-th series of a chart (cycling)."""
    return SERIES[i % len(SERIES)], SERIES_DASHES[i % len(SERIES_DASHES)]


# The ways of running the model that several charts compare (Decode's work chart, Cost's two figures, Real
# model's speed): each keeps one series' look in every chart that draws it, and no two share one, so on a
# page with several such charts a colour and dash mean one thing (a test holds it). Other charts' series
# (models, policies, runs) are told apart by their own legends.
WAYS = ("kv", "recompute", "reencode", "cat", "batched", "one by one")


def way(name: str) -> tuple[str, str]:
    """The colour and dash of the way of running ``name`` (one of :data:`WAYS`), in every chart."""
    return series(WAYS.index(name))


# each way's marker, open where it can surround another's: two ways whose points coincide still show both
WAY_SYMBOLS = ("circle", "square-open", "diamond-open", "x-thin-open", "triangle-up-open", "cross-thin-open")
COVERED_WIDTH, LINE_WIDTH = 6, 2  # px: a line another lies on is drawn wide, so it shows on both sides


def way_style(name: str, covered: bool = False) -> dict:
    """A Plotly Scatter's ``line`` and ``marker`` for the way of running ``name``: its colour and dash
    (:func:`way`) and its own marker; ``covered`` (another way's line is drawn exactly on this one) makes
    its line wide and its marker large, so both series show where they coincide."""
    color, dash = way(name)
    return dict(line=dict(color=color, dash=dash, width=COVERED_WIDTH if covered else LINE_WIDTH),
                marker=dict(symbol=WAY_SYMBOLS[WAYS.index(name) % len(WAY_SYMBOLS)], color=color,
                            size=14 if covered else 8, line=dict(width=2, color=color)))


def coinciding(series_y: dict[str, Sequence[float]]) -> dict[str, str]:
    """For each series (in drawing order) whose every point is an earlier one's, the first such earlier
    series: it is drawn over that one, which must show through (:func:`way_style`, ``covered``)."""
    over: dict[str, str] = {}
    names = list(series_y)
    for i, name in enumerate(names):
        under = next((other for other in names[:i] if list(series_y[other]) == list(series_y[name])), None)
        if under is not None:
            over[name] = under
    return over


# a CSS gradient's angle points across its stripes: 135deg draws stripes that rise to the right, as "/"
_CSS_ANGLES = {"/": "135deg", "\\": "45deg", "x": "45deg"}


def hatch(name: str, under: str = "#ffffff") -> str:
    """A CSS background for a board cell or legend swatch of a patterned meaning: its colour in
    stripes over ``under`` (the cell's own colour), so the cell reads as that meaning without the
    colour; a meaning without a pattern is its colour."""
    look = MEANINGS[name]
    if not look.pattern:
        return look.color
    if look.pattern == ".":  # dots of ink over the meaning's own colour
        return f"radial-gradient({INK} 1px, {look.color} 1.5px) 0 0 / 6px 6px"
    stripes = f"repeating-linear-gradient({_CSS_ANGLES[look.pattern]}, {look.color} 0 2px, {under} 2px 7px)"
    if look.pattern == "x":
        return f"repeating-linear-gradient(-45deg, {look.color} 0 2px, transparent 2px 7px), {stripes}"
    return stripes


# -- drawing a meaning: an outline, a legend entry (Plotly or board), a pattern over cells ----------
def _look(name: str, label: str | None) -> tuple[Meaning, str]:
    """A meaning and the legend words for it: its label, or one of the other words it may go by."""
    look = MEANINGS[name]
    label = look.label if label is None else label
    if label not in look.labels:
        raise ValueError(f"{label!r} is not a word for {name!r}: say one of {look.labels}")
    return look, label


def outline(name: str, x0: float, x1: float, y0: float, y1: float, width: int = 3,
            ref: tuple[str, str] = ("x", "y")) -> dict:
    """A rectangle drawn in the colour and dash of the meaning ``name``."""
    return dict(type="rect", x0=x0, x1=x1, y0=y0, y1=y1, xref=ref[0], yref=ref[1],
                line=dict(color=MEANINGS[name].color, width=width, dash=MEANINGS[name].dash))


def legend_marker(name: str, label: str | None = None, filled: bool = False) -> go.Scatter | go.Bar:
    """A Plotly legend entry for the meaning ``name`` (an outline, or with ``filled`` a filled
    square; a striped meaning, a swatch striped as its cells are): shapes and cell colours have no
    legend entry of their own."""
    look, label = _look(name, label)
    if look.pattern in ("/", "\\"):  # a bar's legend swatch is the one Plotly legend entry with a pattern
        return go.Bar(x=[None], y=[None], name=label, hoverinfo="skip",
                      marker=dict(color=look.color, line=dict(color=look.color, width=1),  # the stripes' colour
                                  pattern=dict(shape=look.pattern, bgcolor="white", solidity=0.35)))
    symbol = _PATTERN_SYMBOLS.get(look.pattern, "square" if filled else "square-open")
    return go.Scatter(x=[None], y=[None], mode="markers", name=label, hoverinfo="skip",
                      marker=dict(symbol=symbol, size=14, color=look.color,
                                  line=dict(width=3 if not filled or look.pattern else 1, color=look.color)))


_PATTERN_SYMBOLS = {"x": "x-thin-open", ".": "circle-dot"}


_STRIPES = {"/": (1,), "\\": (-1,), "x": (1, -1)}  # which way a pattern's stripes rise (to the right: 1)


def stripes(name: str, cells: Sequence[tuple[float, float]], count: int = 5, width: int = 2,
            ref: tuple[str, str] = ("x", "y")) -> list[dict]:
    """The stripes of the meaning ``name`` across heatmap cells, as a board hatches its cells (a heatmap
    cell has no fill pattern): ``count`` lines in its colour across each unit cell centred at (x, y)
    of a matrix whose rows run downwards (every matrix here), rising as its pattern does."""
    look = MEANINGS[name]
    shapes = []
    for (x, y), rise in ((cell, rise) for cell in cells for rise in _STRIPES[look.pattern]):
        for k in range(count):
            t = -1 + (2 * k + 1) / count  # the stripe u - v = t of the unit cell (u right, v up)
            u0, u1 = max(0.0, t), min(1.0, 1 + t)
            x0, x1 = (x - 0.5 + u0, x - 0.5 + u1) if rise > 0 else (x + 0.5 - u0, x + 0.5 - u1)
            shapes.append(dict(type="line", x0=x0, x1=x1, y0=y + 0.5 - (u0 - t), y1=y + 0.5 - (u1 - t),
                               xref=ref[0], yref=ref[1], line=dict(color=look.color, width=width)))
    return shapes


def legend_item(name: str, label: str | None = None, filled: bool = False) -> dict:
    """A board legend entry (``viz/ui/board``) for the meaning ``name``: an outlined swatch, or a
    filled one (its pattern drawn, for a patterned meaning)."""
    look, label = _look(name, label)
    filled = filled or bool(look.pattern)
    return {"label": label, "color": hatch(name) if look.pattern else look.color, "fill": filled}


# -- colour scales that encode a number (no meaning: a cell's colour says its number) -------------------
KEY_SCALE, VALUE_SCALE = "RdBu", "Viridis"  # the cache's key signs (−1 … +1) and values (low … high)
SCALE_STOPS = (0.0, 0.25, 0.5, 0.75, 1.0)  # where a wide swatch samples a scale


def scale_color(scale: str, share: float) -> str:
    """The colour (#rrggbb) at ``share`` (0..1) of a Plotly colour scale, as a heatmap cell draws it."""
    rgb = plotly.colors.unlabel_rgb(plotly.colors.sample_colorscale(scale, [min(max(share, 0.0), 1.0)])[0])
    return "#{:02x}{:02x}{:02x}".format(*(int(round(c)) for c in rgb))


@dataclass(frozen=True)
class ScaleEntry:
    """A legend entry for a colour scale: ``label`` and where on ``scale`` its swatch samples (one stop:
    a filled swatch of that colour; several: a wide swatch running through them, low to high)."""

    label: str
    scale: str
    stops: tuple[float, ...]

    @property
    def colors(self) -> tuple[str, ...]:
        return tuple(scale_color(self.scale, s) for s in self.stops)


# the KV cache's cells (a board's or a Plotly figure's): a key of −1, of +1, and the values' scale
CACHE_SCALES = (ScaleEntry("K −1", KEY_SCALE, (0.0,)), ScaleEntry("K +1", KEY_SCALE, (1.0,)),
                ScaleEntry("V: low → high", VALUE_SCALE, SCALE_STOPS))
# a cached key that reads the query (its rule reads q.pos): no sign to store, worked out at each read
QUERY_KEY = ScaleEntry("q·k: worked out when a query reads it", KEY_SCALE, (0.5,))


def cache_scales(query_keys: bool) -> tuple[ScaleEntry, ...]:
    """The cache's scale entries, with :data:`QUERY_KEY` after the two signs where a cell says q·k."""
    return CACHE_SCALES[:2] + ((QUERY_KEY,) if query_keys else ()) + CACHE_SCALES[2:]


def scale_items(entries: Sequence[ScaleEntry] = CACHE_SCALES) -> list[dict]:
    """Board legend entries (``viz/ui/board``) for colour scales: a filled swatch, or a ``wide`` one
    drawing the scale from its low end to its high end."""
    return [{"label": e.label, "color": e.colors[0], "fill": True} if len(e.stops) == 1 else
            {"label": e.label, "color": f"linear-gradient(90deg, {', '.join(e.colors)})", "fill": True, "wide": True}
            for e in entries]


def scale_markers(entries: Sequence[ScaleEntry] = CACHE_SCALES) -> list[go.Scatter]:
    """Plotly legend entries for colour scales, the same as :func:`scale_items`: a filled square, or a
    strip whose fill runs through the scale, low to high (a fill gradient; Plotly draws it in the legend)."""
    marks = []
    for e in entries:
        if len(e.stops) == 1:
            marks.append(go.Scatter(x=[None], y=[None], mode="markers", name=e.label, hoverinfo="skip",
                                    marker=dict(symbol="square", size=14, color=e.colors[0],
                                                line=dict(width=1, color=e.colors[0]))))
        else:
            scale = [[i / (len(e.colors) - 1), c] for i, c in enumerate(e.colors)]
            marks.append(go.Scatter(x=[None], y=[None], mode="none", fill="toself", name=e.label, hoverinfo="skip",
                                    fillgradient=dict(type="horizontal", colorscale=scale)))
    return marks
