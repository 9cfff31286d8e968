"""Figures and tables for the Serving page, drawn from the core's results
(:mod:`viz.core.serving.workload`, :mod:`viz.core.serving.speculative`; FlashAttention's in
:mod:`viz.figures.flash`).

Pure functions from results to plotly figures or pandas tables; no arithmetic beyond layout and unit
labels. Request names, prompts and words are HTML-escaped with :func:`safe` before they reach plotly.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from ..core.serving import words as say
from ..core.serving.speculative import SpecRun
from ..core.serving.workload import ServingRun
from .base import BLUE, FREE, INK, MEANINGS, figure, frame, grid, legend_marker, outline, safe, series
from .meanings import owner
from .memory import GREY

# what a request does in an iteration: a meaning each, its colour no other meaning's (no orange: it marks
# this iteration); an idle slot of static batching is reserved and still empty
PHASES = {"prefill": MEANINGS["prefill"], "decode": MEANINGS["decode"], "waiting": MEANINGS["waiting"],
          "swapped": MEANINGS["swapped"], "idle": replace(MEANINGS["reserved"], label="idle slot (static)")}
CACHED = MEANINGS["cached"]  # a block that only holds cached tokens (prefix caching), and the tokens taken from one
BLOCKS_PER_ROW = 16
# the timeline's plot height: per request, and per legend entry (on a phone each takes a line under the
# plot; in presenter mode they stand in a column beside it, in larger type)
TIMELINE_ROW_PX, LEGEND_LINE_PX = 21, 19
PRESENTER_ROW_PX, PRESENTER_LEGEND_LINE_PX = 24, 26


def plain_layout(title: str, height: int, top: int = 50, **extra) -> dict:
    """A white plot area, the legend below it (large presenter type cannot push it into the title):
    the layout of every chart here."""
    return frame(title, height, top=top, background="white",
                 legend=dict(orientation="h", yanchor="top", y=-0.18, x=0, xanchor="left"), **extra)


# -- continuous batching ------------------------------------------------------------------------
def _timeline_traces(run: ServingRun, names: list[str], axes: tuple[str, str] = ("x", "y"),
                     listed: set[str] | None = None) -> list:
    """A run's timeline drawn on ``axes``: a bar per request and iteration coloured by what it did, a mark
    per token produced, a triangle per arrival. Each meaning is listed in the legend once: ``listed``
    holds the names already there (a figure of several timelines shares one legend)."""
    listed = set() if listed is None else listed
    data, spans = [], run.spans()  # a request arriving mid-iteration waits from its arrival mark
    for phase, look in PHASES.items():
        xs, ys, bases, hover = [], [], [], []
        for span in spans:
            if span.phase == phase:
                i, s = span.request, run.iterations[span.iteration].states[span.request]
                xs.append(span.end - span.start)
                ys.append(names[i])
                bases.append(span.start)
                note = f" · {safe(s.event)}" if s.event else (f" · {safe(s.reason)}" if s.reason else "")
                hover.append(f"{names[i]}, iteration {span.iteration + 1}: {look.label}"
                             + (f", {s.fed} tokens" if s.fed else "") + note)
        if xs:
            data.append(go.Bar(x=xs, y=ys, base=bases, orientation="h", name=look.label,
                               marker=dict(color=look.color, line=dict(color="white", width=0.5),
                                           pattern=dict(shape=look.pattern, fgcolor=INK, fillmode="overlay")),
                               customdata=hover, hovertemplate="%{customdata}<extra></extra>"))
    tx, ty = [], []
    for i, o in enumerate(run.outcomes):
        tx += list(o.token_times)
        ty += [names[i]] * len(o.token_times)
    data.append(go.Scatter(x=tx, y=ty, mode="markers", name="a token is ready", hoverinfo="skip",
                           marker=dict(symbol="line-ns-open", size=14, color=INK, line=dict(width=2))))
    ax = [r.arrival for r in run.workload.requests]
    data.append(go.Scatter(x=ax, y=names, mode="markers", name="arrives", hovertemplate="arrives at %{x}<extra></extra>",
                           marker=dict(symbol="triangle-right", size=11, color=INK)))
    for trace in data:
        trace.update(xaxis=axes[0], yaxis=axes[1], legendgroup=trace.name, showlegend=trace.name not in listed)
        listed.add(trace.name)
    return data


def _requests_axis(names: list[str], **extra) -> dict:
    """A timeline's y axis: one row per request, the first at the top."""
    return dict(type="category", categoryorder="array", categoryarray=names[::-1], title=dict(text="request"), **extra)


def timeline_figure(run: ServingRun, current: int | None = None, title: str | None = None, *,
                    legend_beside: bool = False, large_type: bool = False, span: int | None = None) -> go.Figure:
    """One row per request, one bar per iteration coloured by what it did, a dot per token produced.
    ``legend_beside`` (presenter mode): the legend in a column right of the plot instead of rows under
    it, so a projector's first screen holds the narration above the whole figure. ``large_type``
    (presenter mode, legend under the plot): rows and legend lines measured at presenter type, so a
    legend that wraps in a narrow column cannot squeeze the rows together. ``span``: the time axis runs
    to that tick (a run compared with a longer one: their bars the same length per tick)."""
    names = [safe(r.name) for r in run.workload.requests]
    data = _timeline_traces(run, names)
    shapes = []
    if current is not None:
        it = run.iterations[current]
        shapes.append(outline("focus", it.start, it.end, 0, 1, ref=("x", "paper")))
        data.append(legend_marker("focus", "this iteration"))
    if legend_beside:
        plot_px = max(PRESENTER_ROW_PX * len(names), PRESENTER_LEGEND_LINE_PX * len(data))
    elif large_type:
        plot_px = PRESENTER_ROW_PX * len(names) + PRESENTER_LEGEND_LINE_PX * len(data)
    else:
        plot_px = TIMELINE_ROW_PX * len(names) + LEGEND_LINE_PX * len(data)
    # short enough for a phone's width on one line (Plotly titles do not wrap)
    layout = plain_layout(title or f"{run.config.policy.capitalize()} batching by iteration, in ticks",
                          72 + plot_px, top=42, barmode="overlay", shapes=shapes,
                          xaxis=dict(rangemode="tozero") if span is None else dict(range=[0, span * 1.02]),
                          yaxis=_requests_axis(names))
    layout["legend"] = _legend(legend_beside, len(data))
    return figure(data, layout)


TIMELINES_GAP_PX = 36  # between two timelines of one figure: the lower one's label (one time axis, ticked at the foot)


def _legend(beside: bool, entries: int) -> dict:
    """A timeline's legend: in a column right of the plot (presenter mode), else in rows at the figure's
    foot, under the axis's numbers however short the plot is."""
    if beside:  # each meaning is a legend group of its own: no gap between groups
        return dict(orientation="v", x=1.02, xanchor="left", y=1, yanchor="top", tracegroupgap=0,
                    maxheight=PRESENTER_LEGEND_LINE_PX * (entries + 1))  # px: never a scroll bar
    return dict(orientation="h", yref="container", y=0, yanchor="bottom", x=0, xanchor="left", tracegroupgap=0)


def timelines_figure(runs: Sequence[tuple[str, ServingRun]], title: str, *, legend_beside: bool = False,
                     large_type: bool = False) -> go.Figure:
    """The same requests served several ways, one timeline above the other on one time axis (ticks, at the
    foot), each under its label, one legend for every meaning: a comparison read down the page (the tour's
    static and continuous batching, the request in question at the same height in both).
    ``legend_beside`` and ``large_type`` as for :func:`timeline_figure`."""
    names = [safe(r.name) for r in runs[0][1].workload.requests]
    row_px, line_px = (PRESENTER_ROW_PX, PRESENTER_LEGEND_LINE_PX) if large_type else (TIMELINE_ROW_PX, LEGEND_LINE_PX)
    rows_px = row_px * len(names) * len(runs) + TIMELINES_GAP_PX * (len(runs) - 1)
    axes, refs = grid(len(runs), 1, [safe(label) for label, _ in runs], vspace=TIMELINES_GAP_PX / rows_px)
    listed: set[str] = set()
    data = [trace for (_, run), ref in zip(runs, refs) for trace in _timeline_traces(run, names, ref, listed)]
    for i, (x, _) in enumerate(refs):  # one time axis: every timeline spans the longest one's ticks
        axes[f"xaxis{x[1:]}"].update(rangemode="tozero", matches="x" if i else None,
                                     showticklabels=i == len(refs) - 1)
        axes[f"yaxis{x[1:]}"].update(_requests_axis(names))
    legend_px = 0 if legend_beside else line_px * len(listed)  # a phone's column: an entry a line
    # the title and the first timeline's label above, the time axis's numbers and the legend below
    layout = plain_layout(title, 96 + max(rows_px, line_px * (len(listed) + 1) if legend_beside else 0) + legend_px,
                          top=66, barmode="overlay", **axes)
    layout["legend"] = _legend(legend_beside, len(listed))
    return figure(data, layout)


# presenter mode's pool and reservation under the stepped timeline (1280 × 720): rows of this many px, the
# title kept to one line, so stepper, timeline and memory fit a projector's first screen
COMPACT_ROW_PX = 36


def pool_figure(run: ServingRun, index: int, *, compact: bool = False) -> go.Figure:
    """The block pool after one iteration: each block coloured by the request holding it (its name
    written inside), the shared colour and its count when several hold it, the cached colour when it
    only holds cached tokens, the free colour when free; the blocks handed out now outlined as new.
    ``compact`` (presenter mode, under the timeline): rows of :data:`COMPACT_ROW_PX`."""
    it = run.iterations[index]
    names = [r.name for r in run.workload.requests]
    size = run.config.block_size
    n = len(it.blocks)
    rows = -(-n // BLOCKS_PER_ROW)
    z = np.full((rows, BLOCKS_PER_ROW), np.nan)
    text = np.full((rows, BLOCKS_PER_ROW), "", dtype=object)
    hover = np.full((rows, BLOCKS_PER_ROW), "", dtype=object)
    palette = [FREE, CACHED.color, MEANINGS["shared"].color] + [owner(i) for i in range(len(names))]
    for b, block in enumerate(it.blocks):
        r, c = divmod(b, BLOCKS_PER_ROW)
        if len(block.owners) > 1:
            z[r, c] = 2
        elif block.owners:
            z[r, c] = 3 + block.owners[0]
        else:
            z[r, c] = 1 if block.cached else 0
        holders = ", ".join(safe(names[o]) for o in block.owners)
        text[r, c] = (safe(names[block.owners[0]]) if len(block.owners) == 1 else
                      f"×{len(block.owners)}" if block.owners else ("cached" if block.cached else ""))
        new = " (handed out now)" if b in it.allocated else (" (given back now)" if b in it.freed else "")
        hover[r, c] = (f"block {b}{new}<br>{block.filled} of {size} slots filled<br>"
                       + (f"held by {holders}" if holders else "cached, free to reuse" if block.cached else "free"))
    k = len(palette)
    colorscale = [item for i in range(k) for item in ([i / k, palette[i]], [(i + 1) / k, palette[i]])]
    data = [go.Heatmap(z=z, text=text, texttemplate="%{text}", textfont_size=12, customdata=hover,
                       hovertemplate="%{customdata}<extra></extra>", colorscale=colorscale, zmin=-0.5,
                       zmax=k - 0.5, showscale=False, xgap=3, ygap=3)]
    held = {o for block in it.blocks for o in block.owners}
    data += [go.Scatter(x=[None], y=[None], mode="markers", name=safe(names[i]), hoverinfo="skip",
                        marker=dict(color=owner(i), size=12, symbol="square")) for i in sorted(held)]
    for label, color in _pool_meanings(it.blocks):
        data.append(go.Scatter(x=[None], y=[None], mode="markers", name=label, hoverinfo="skip",
                               marker=dict(color=color, size=12, symbol="square", line=dict(color=GREY, width=1))))
    if it.allocated:
        data.append(legend_marker("new", "handed out now"))  # short words: a phone's legend in fewer rows
    shapes = [outline("new", b % BLOCKS_PER_ROW - 0.5, b % BLOCKS_PER_ROW + 0.5, b // BLOCKS_PER_ROW - 0.5,
                      b // BLOCKS_PER_ROW + 0.5, 3) for b in it.allocated]
    used = it.reserved_slots // size
    layout = plain_layout(f"Pool after iteration {index + 1}: {used} of {n} blocks of {size} in use",
                          56 + COMPACT_ROW_PX * rows if compact else 110 + 44 * rows,
                          shapes=shapes,
                          xaxis=dict(visible=False), yaxis=dict(visible=False, autorange="reversed"))
    return figure(data, layout)


def _pool_meanings(blocks: Sequence) -> list[tuple[str, str]]:
    """The legend's block meanings this pool draws (shared, cached, free, always in that order): none it
    does not show (without prefix caching no block is shared or cached; with it, an iteration may have
    no cached block that nobody holds)."""
    drawn = {"shared": any(len(b.owners) > 1 for b in blocks), "cached": any(b.cached and not b.owners for b in blocks),
             "free": any(not b.owners and not b.cached for b in blocks)}
    looks = {"shared": ("shared (ref > 1)", MEANINGS["shared"].color), "cached": (CACHED.label, CACHED.color),
             "free": (MEANINGS["free"].label, FREE)}
    return [looks[name] for name, shown in drawn.items() if shown]


def reservation_figure(run: ServingRun, index: int, *, compact: bool = False) -> go.Figure:
    """Static batching's memory after one iteration: slots each request reserved and how many it filled
    (``compact``: presenter mode, under the timeline: a title of one line, the legend beside the bars)."""
    it = run.iterations[index]
    names = [safe(r.name) for r in run.workload.requests]
    live = [i for i, s in enumerate(it.states) if s.phase in ("prefill", "decode", "idle")]
    filled = [it.states[i].cache_length for i in live]
    reserved = [run.workload.requests[i].max_cached for i in live]
    data = [go.Bar(y=[names[i] for i in live], x=filled, orientation="h", name="filled", marker_color=BLUE),
            go.Bar(y=[names[i] for i in live], x=[r - f for r, f in zip(reserved, filled)], orientation="h",
                   name=MEANINGS["reserved"].label, marker_color=MEANINGS["reserved"].color)]
    counts = f"{it.reserved_slots} of {run.config.slots} slots, {it.filled_slots} filled"
    axes = dict(barmode="stack", xaxis=dict(title="token slots", range=[0, max(run.config.slots / 2, 1)]))
    if not compact:
        return figure(data, plain_layout(f"Static batching reserves prompt + every new token up front: {it.reserved_slots} of "
                                         f"{run.config.slots} slots reserved, {it.filled_slots} filled",
                                         140 + 30 * max(1, len(live)), **axes))
    # one title line, the legend beside the bars, the axis's numbers and title in the bottom margin
    layout = plain_layout(f"Reserved up front: {counts}", 96 + 24 * max(1, len(live)), **axes)
    layout["legend"] = dict(orientation="v", x=1.02, xanchor="left", y=1, yanchor="top")
    layout["margin"]["b"] = 60
    return figure(data, layout)


def metrics_figure(runs: Sequence[tuple[str, ServingRun]]) -> go.Figure:
    """Time to first token and time per output token per request, one bar group per run."""
    layout_axes = dict(xaxis=dict(domain=[0, 0.47]), xaxis2=dict(domain=[0.53, 1], anchor="y2"),
                       yaxis=dict(title="ticks"), yaxis2=dict(anchor="x2"))
    data = []
    for k, (label, run) in enumerate(runs):
        names = [safe(o.name) for o in run.outcomes]
        data.append(go.Bar(x=names, y=[o.ttft for o in run.outcomes], name=safe(label),
                           marker_color=series(k)[0], legendgroup=label,
                           hovertemplate=f"{safe(label)}: %{{x}} first token after %{{y}} ticks<extra></extra>"))
        data.append(go.Bar(x=names, y=[o.tpot if o.tpot is not None else 0 for o in run.outcomes], name=safe(label),
                           marker_color=series(k)[0], legendgroup=label, showlegend=False, xaxis="x2", yaxis="y2",
                           hovertemplate=f"{safe(label)}: %{{x}} %{{y:.3g}} ticks per token<extra></extra>"))
    # two lines each: side by side on a phone, one line each would run into the other
    annotations = [dict(text=text, x=x, y=1.02, xref="paper", yref="paper", showarrow=False, yanchor="bottom")
                   for text, x in (("time to first<br>token (TTFT)", 0.235), ("time per output<br>token (TPOT)", 0.765))]
    return figure(data, plain_layout("Per request: waiting for the first token,<br>then the pace of the rest", 396, top=66,
                                     barmode="group", annotations=annotations, **layout_axes))


def utilisation_figure(runs: Sequence[tuple[str, ServingRun]]) -> go.Figure:
    """Share of the pool's slots reserved and filled over time."""
    data = []
    for k, (label, run) in enumerate(runs):
        x = [t for it in run.iterations for t in (it.start, it.end)]
        for what, dash in (("reserved", "solid"), ("filled", "dot")):
            y = [getattr(it, f"{what}_slots") / run.config.slots for it in run.iterations for _ in (0, 1)]
            data.append(go.Scatter(x=x, y=y, mode="lines", name=f"{safe(label)}: {what}",
                                   line=dict(color=series(k)[0], dash=dash)))
    return figure(data, plain_layout("Pool use over time (ticks):<br>slots set aside and slots holding a token", 320,
                                     yaxis=dict(title="share of the pool", tickformat=".0%", range=[0, 1.05])))


def requests_table(run: ServingRun) -> pd.DataFrame:
    """Per request: timings, words, and a note with its prompt, arrival, preemptions and prefix hits
    (five columns, so that the table fits a phone's width)."""
    return pd.DataFrame({
        "request": [o.name for o in run.outcomes],
        "TTFT": [o.ttft for o in run.outcomes],
        "TPOT": [None if o.tpot is None else round(o.tpot, 2) for o in run.outcomes],
        "words": [" ".join(o.words) for o in run.outcomes],
        "note": [say.request_note(o.prompt_length, o.arrival, o.preemptions, o.recomputed, o.prefix_hits)
                 for o in run.outcomes],
    })


def iteration_table(run: ServingRun, index: int) -> pd.DataFrame:
    """Every request during one iteration (five columns: a phone's width holds them)."""
    it = run.iterations[index]
    return pd.DataFrame({
        "request": [r.name for r in run.workload.requests],
        "doing": [say.iteration_doing(s.phase, s.fed, s.event or s.reason) for s in it.states],
        "entries": [s.cache_length for s in it.states],
        "blocks": [" ".join(map(str, s.table)) for s in it.states],
        "chose": [s.predicted or "" for s in it.states],
    })


def token_times_figure(runs: Sequence[tuple[str, ServingRun]], highlight: int) -> go.Figure:
    """When each request's tokens are ready, one panel per run; the request with the longest prompt
    (``highlight``, the one chunking is about) as the focus, its legend saying so."""
    data, annotations = [], []
    height = 1 / len(runs)
    layout: dict = {}
    for k, (label, run) in enumerate(runs):
        suffix = "" if k == 0 else str(k + 1)
        names = [safe(o.name) for o in run.outcomes]
        for i, o in enumerate(run.outcomes):
            focus = MEANINGS["focus"].color
            data.append(go.Scatter(x=list(o.token_times), y=[names[i]] * len(o.token_times), mode="markers+lines",
                                   marker=dict(size=8, color=focus if i == highlight else BLUE),
                                   line=dict(color=focus if i == highlight else GREY, width=1),
                                   showlegend=False, xaxis=f"x{suffix}", yaxis=f"y{suffix}",
                                   hovertemplate=f"{names[i]}: a token at %{{x}}<extra></extra>"))
        top = 1 - k * height
        layout[f"xaxis{suffix}"] = dict(anchor=f"y{suffix}", title="time (ticks)" if k == len(runs) - 1 else None,
                                        matches="x" if k else None)
        layout[f"yaxis{suffix}"] = dict(domain=[top - height + 0.08, top - 0.04], type="category")
        annotations.append(dict(text=safe(label), x=0, y=top - 0.02, xref="paper", yref="paper", showarrow=False,
                                xanchor="left", yanchor="bottom", font=dict(size=13)))
    data.append(legend_marker("focus", "the longest prompt", filled=True))  # nobody selects it
    return figure(data, plain_layout("Every dot is a token ready; long gaps are<br>requests stalled behind a prefill",
                                     140 + 180 * len(runs), annotations=annotations, **layout))


def prefix_figure(off: ServingRun, on: ServingRun) -> go.Figure:
    """Per request: prompt tokens computed and taken from cached blocks, with and without prefix caching."""
    names = [safe(o.name) for o in on.outcomes]
    computed = [o.prompt_length - o.prefix_hits for o in on.outcomes]
    data = [go.Bar(x=names, y=[o.prompt_length for o in off.outcomes], name="computed, no prefix caching",
                   marker_color=GREY, offsetgroup="off"),
            go.Bar(x=names, y=computed, name="computed, with prefix caching", marker_color=BLUE, offsetgroup="on"),
            go.Bar(x=names, y=[o.prefix_hits for o in on.outcomes], base=computed, name="taken from cached blocks",
                   marker=dict(color=CACHED.color, line=dict(color=GREY, width=1)), offsetgroup="on")]
    return figure(data, plain_layout("Prompt tokens per request:<br>keys and values computed, or reused", 320,
                                     barmode="group", yaxis=dict(title="prompt tokens")))


# -- speculative decoding -----------------------------------------------------------------------
ROUNDS_SHOWN = 4  # rounds the stepped grid shows at once: it fits the first screen under its step control


def rounds_window(count: int, current: int, shown: int) -> range:
    """The ``shown`` rounds of ``count`` drawn around round ``current`` (0-based): the rounds before it,
    and one after where there is one, so stepping moves the window with the focus."""
    start = max(0, min(current - shown + 2, count - shown))
    return range(start, min(count, start + shown))


def rounds_figure(run, current: int | None = None, *, shown: int | None = None) -> go.Figure:
    """One row per round: the fed word, then each guess kept (the chosen colour) or rejected (black,
    crossed; the ones after it grey: not checked), then the target's new word, as new (a bonus after
    every guess was kept; the target's own choice in place of a rejected guess, or with no guess); a guess
    the round did not make says so on white. ``shown``: at most that many rounds, around the ``current``
    one (every round without it), and the title then says which rounds of how many."""
    rounds = run.rounds
    width = max((len(r.guesses) for r in rounds), default=0) + 2  # the same columns wherever the window is
    window = range(len(rounds))
    if shown is not None and current is not None:
        window = rounds_window(len(rounds), current, shown)
        rounds, current = rounds[window.start:window.stop], current - window.start
    z = np.full((len(rounds), width), np.nan)
    text = np.full((len(rounds), width), "", dtype=object)
    for r, rnd in enumerate(rounds):
        z[r, 0], text[r, 0] = 0, safe(rnd.fed)
        for i, guess in enumerate(rnd.guesses):
            z[r, i + 1] = 1 if i < rnd.accepted else (2 if i == rnd.accepted else 3)
            text[r, i + 1] = safe(guess)
        for i in range(len(rnd.guesses) + 1, width - 1):  # the draft guessed fewer: said, on the white page
            z[r, i], text[r, i] = 6, say.NO_GUESS
        z[r, width - 1] = 4 if rnd.bonus and rnd.guesses else 5  # no guess: a plain step
        text[r, width - 1] = safe(rnd.new_word)
    palette = [FREE, MEANINGS["chosen"].color, MEANINGS["rejected"].color, MEANINGS["left out"].color,
               MEANINGS["new"].color, MEANINGS["new"].color, "#ffffff"]
    k = len(palette)
    colorscale = [item for i in range(k) for item in ([i / k, palette[i]], [(i + 1) / k, palette[i]])]
    y = [f"round {r.index + 1}" for r in rounds]
    x = ["fed"] + [f"guess {i}" for i in range(1, width - 1)] + ["target's word"]
    crossed = np.argwhere(z == 2)  # (row, column) of each rejected guess: crossed, not told by colour alone
    for r, c in crossed:  # a cross in the word itself: a mark over the cell would hide its letters
        text[r, c] = f"✗ {text[r, c]}"
    data = [go.Heatmap(z=z, x=x, y=y, text=text, texttemplate="%{text}", textfont_size=12, colorscale=colorscale,
                       zmin=-0.5, zmax=k - 0.5, showscale=False, xgap=3, ygap=3, hoverinfo="skip")]
    if len(crossed):
        data.append(legend_marker("rejected", "rejected", filled=True))
    data += [legend_marker(name, label, filled=True) for name, label in
             (("chosen", "kept guess"), ("left out", "not checked"), ("new", "the target's new word"))]
    shapes = [outline("focus", -0.5, width - 0.5, current - 0.5, current + 0.5)] if current is not None else []
    if current is not None:
        data.append(legend_marker("focus", "this round"))
    # 180 px of title, top axis and legend: with a projector column's true width (viz.ui.common.column_px)
    # the legend takes one more row there, and four rounds still fit under the step control in 1280 × 720
    layout = plain_layout(say.rounds_title(window.start + 1, window.stop, len(run.rounds)),
                          180 + 30 * max(1, len(rounds)), top=90, shapes=shapes,
                          xaxis=dict(side="top", type="category", title=dict(text="word (columns)")),
                          yaxis=dict(autorange="reversed", type="category", title=dict(text="round (rows)")))
    layout["legend"]["y"] = -0.02  # no x axis below this grid
    return figure(data, layout)


def cache_length_figure(run) -> go.Figure:
    """The target's cache length: up by the verification pass, down by the rollback, round by round."""
    xs, ys = [], []
    for rnd in run.rounds:
        xs += [rnd.index + 0.0, rnd.index + 0.5, rnd.index + 1.0]
        ys += [rnd.cache_before, rnd.cache_verified, rnd.cache_after]
    data = [go.Scatter(x=xs, y=ys, mode="lines+markers", line=dict(color=BLUE, shape="linear"),
                       name="entries", hovertemplate="%{y} entries<extra></extra>")]
    return figure(data, plain_layout("Cache length: the verification pass appends<br>every guess; rejected ones are cut",
                                     280, xaxis=dict(title="round"), yaxis=dict(title="entries in the cache"),
                                     showlegend=False))


def spec_table(run) -> pd.DataFrame:
    """Speculative against plain decoding: passes, work and measured time."""
    toy = isinstance(run, SpecRun)
    spec_work = run.target_work.multiply_adds + run.draft_work.multiply_adds if toy else None
    return pd.DataFrame({
        "": ["speculative", "plain"],
        "target passes": [run.target_passes, run.plain_passes],
        "words": [len(run.words)] * 2,
        "multiply-adds (target + draft)": [spec_work, run.plain_work.multiply_adds] if toy else ["—", "—"],
        "time": [f"{run.seconds * 1e3:.2f} ms", f"{run.plain_seconds * 1e3:.2f} ms"],
    })
