"""One visual language: every mark that means something has one colour, one line style and one fill
pattern, the same in every figure and board, and a legend entry that says it in the same words.

The colours are Okabe and Ito's colour-blind-safe palette (orange, sky blue, bluish green, yellow,
blue, vermillion, reddish purple, black) and three neutral greys. Two rules keep marks apart for a
visitor with a colour-vision deficiency and for the back row of a lecture hall:

* a meaning that marks a problem (a stale key, a rejected guess) carries a pattern and its label,
  never a colour alone; the greys always come with their words (in the cell, or its hover);
* orange and vermillion, hard to tell apart from afar and for red-green deficiencies, never mean
  two things: orange is the focus, vermillion no meaning at all (it only tells series apart).

Series (the things a line or bar chart compares: decode modes, models, runs, requests) take the
:data:`SERIES` colours in order, each with its own dash, so two lines differ by more than hue.
A colour marks one meaning per figure (a test holds every figure to it); the series colours repeat
across charts, identified by each chart's legend. This module decides looks only; the terms in the
legends are defined in the glossary (:mod:`viz.core.lessons.glossary`).
"""

from __future__ import annotations

from dataclasses import dataclass

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
INK = "#262730"  # text, and marks that must read on any cell colour


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


MEANINGS: dict[str, Meaning] = {
    "focus": Meaning(ORANGE, "query in focus",
                     also=("newest query", "current tile", "this iteration", "this round", "selected head",
                           "selected request", "chosen length")),
    "new": Meaning(GREEN, "new key",
                   also=("new entry", "handed out in this iteration", "bonus word (every guess kept)")),
    "stale": Meaning(PURPLE, "stale key", dash="dot", pattern="/"),
    "shared": Meaning(YELLOW, "shared by several (ref > 1)"),
    "chosen": Meaning(BLUE, "chosen", also=("kept guess", "best rule")),
    "candidate": Meaning(SKY, "another word", also=("another token", "kept by top-k/top-p", "the target's own word")),
    "rejected": Meaning(BLACK, "rejected", pattern="x", also=("does not fit",)),
    "left out": Meaning(LEFT_OUT, "left out", also=("filtered out by top-k/top-p", "evicted", "not checked")),
    "reserved": Meaning(RESERVED, "reserved, still empty",
                        also=("reserved, never filled", "empty slot in a used block", "empty end of last block",
                              "idle slot (static)")),
    "masked": Meaning(MASKED, "masked: key after the query", also=("above the diagonal: never loaded",)),
    "free": Meaning(FREE, "free"),
}

# lines and bars that compare things: a colour and a dash each, in this order (no orange: the focus)
SERIES = (BLUE, VERMILLION, GREEN, PURPLE, SKY, BLACK)
SERIES_DASHES = ("solid", "dash", "dot", "dashdot", "longdash", "longdashdot")


def meaning(name: str) -> Meaning:
    """The look of ``name`` (a key of :data:`MEANINGS`)."""
    return MEANINGS[name]


def series(i: int) -> tuple[str, str]:
    """The colour and dash of the i-th series of a chart (cycling)."""
    return SERIES[i % len(SERIES)], SERIES_DASHES[i % len(SERIES_DASHES)]


_CSS_ANGLES = {"/": "45deg", "\\": "135deg", "x": "45deg"}


def hatch(name: str, under: str = "#ffffff") -> str:
    """A CSS background for a board cell or legend swatch of a patterned meaning: its colour in
    stripes over ``under`` (the cell's own colour), so the cell reads as that meaning without the
    colour; a meaning without a pattern is its colour."""
    look = MEANINGS[name]
    if not look.pattern:
        return look.color
    stripes = f"repeating-linear-gradient({_CSS_ANGLES[look.pattern]}, {look.color} 0 2px, {under} 2px 7px)"
    if look.pattern == "x":
        return f"repeating-linear-gradient(-45deg, {look.color} 0 2px, transparent 2px 7px), {stripes}"
    return stripes
