"""The lesson screen's three figures as light drawing specs for the board (``viz/ui/board.js``), and
the stale-cache lesson that takes the next word's place while the head concerned is shown.

A lesson window is small (at most :data:`viz.core.lessons.lesson.WINDOW` rows and a few more keys), and the
browser redraws it on every Step: drawn as Plotly charts it cost about a quarter of a second of
scripting per click, drawn as a grid of boxes it costs a few milliseconds. The specs here hold
everything the board shows, already decided: cell colours and the text colour that reads on them,
the numbers as the cells print them, every hover line, outlines, legend entries and titles. The
board only lays them out; nothing in the browser computes a number. Visitor text travels as plain
strings and the board writes it with ``textContent``, never as markup.

Windows larger than :data:`CELL_TEXT_COLUMNS` × :data:`CELL_TEXT_ROWS` (the "Whole" view of a long
sequence) stay Plotly figures (``viz.figures.lesson``), where zoom and pan matter.

Spec shapes (plain JSON):

* matrix: ``{"kind": "matrix", "title", "axes": {"rows", "columns"}, "columns": [label], "groups":
  [{"rows": [{"label", "cells": [{"bg", "fg", "text", "tip", "gap"?}]}]}], "outlines": [{"group", "row", "col",
  "color"}], "gap_after": col or null, "legend": [{"label", "color", "fill", "wide"?}], "label": str}``; an
  outline's ``col`` null spans the row, ``row`` null spans the group's rows. The title ends by saying
  what the rows and columns are (``axes``, in words). A cell with ``gap`` stands for keys left out of
  the window (dashed, not a key's look), its column label and the title saying which and what it holds.
* A cell's ``bg`` and a legend entry's ``color`` are CSS backgrounds: a colour, or for a patterned
  meaning (a stale key) its hatch over the cell's colour (:func:`viz.figures.meanings.hatch`). Every
  colour that marks something comes from :data:`viz.figures.meanings.MEANINGS` and has its legend entry;
  a colour scale that encodes a number (the cache's key signs and values) has its own entries
  (:func:`scale_legend`), a ``wide`` swatch drawing a scale from its low end to its high end.
* bars: ``{"kind": "bars", "title", "bars": [{"label", "share", "text", "color", "tip"}], "legend",
  "axis": "probability", "label"}``.
"""

from __future__ import annotations

from functools import lru_cache

import plotly.colors

from ..core.engine.model import Trace
from ..core.engine.explain import fmt
from ..core.lessons.lesson import LessonFrame
from ..core.lessons.stale import StaleLesson
from .base import INK, MASKED, MEANINGS, hatch, legend_item, short
from .meanings import FOCUS_NEWEST, FOCUS_POSITION, KEY_SCALE, VALUE_SCALE, cache_scales, scale_color, scale_items
from .lesson import CELL_TEXT_COLUMNS, CELL_TEXT_ROWS, CONTEXTS_TITLE, attention_title, cache_title

BLACK, WHITE = "#000000", "#ffffff"
WORDY_STALE_KEYS = 6  # up to this many keys a stale cell says "+1 stale"; beyond, "stale"
STALE_ROWS = 5  # the latest keys the stale-cache board shows (its rows: a third of 1280 × 720, under the controls)


def fits(frame_: LessonFrame) -> bool:
    """Whether the frame's window is small enough for the board (else: a Plotly figure)."""
    return len(frame_.window.keys) <= CELL_TEXT_COLUMNS and len(frame_.window.rows) <= CELL_TEXT_ROWS


def _luminance(rgb: tuple[int, int, int]) -> float:
    def channel(c: int) -> float:
        c = c / 255
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4
    r, g, b = (channel(c) for c in rgb)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def text_on(rgb: tuple[int, int, int]) -> str:
    """Black or white, whichever contrasts more with the cell (always at least 4.58 : 1)."""
    lum = _luminance(rgb)
    return BLACK if (lum + 0.05) / 0.05 >= 1.05 / (lum + 0.05) else WHITE


@lru_cache(maxsize=4096)
def shade(scale: str, share: float) -> tuple[str, str]:
    """Cell colour at ``share`` (0..1) of a Plotly colour scale, and the text colour that reads on it."""
    bg = scale_color(scale, share)  # as the legend's swatches sample it (viz.figures.meanings)
    return bg, text_on(plotly.colors.hex_to_rgb(bg))


def _cell(scale: str, share: float, text: str, tip: str) -> dict:
    bg, fg = shade(scale, share)
    return {"bg": bg, "fg": fg, "text": text, "tip": tip}


def colored_cell(bg: str, text: str, tip: str) -> dict:
    """A cell of the colour ``bg`` (#rrggbb) with the text colour that reads on it."""
    return {"bg": bg, "fg": text_on(plotly.colors.hex_to_rgb(bg)), "text": text, "tip": tip}


def _masked(tip: str) -> dict:
    return colored_cell(MASKED, "", tip)


def _labels(frame_: LessonFrame, positions: tuple[int, ...]) -> list[str]:
    return [f"{p + 1} · {frame_.tokens[p]}" for p in positions]


def _color(name: str) -> str:
    return MEANINGS[name].color


def _axes(title: str, rows: str, columns: str) -> dict:
    """A matrix spec's title, ending with what its rows and columns are, and those words."""
    return {"title": f"{title} · rows: {rows}, columns: {columns}", "axes": {"rows": rows, "columns": columns}}


def attention_board(frame_: LessonFrame, head: str, *, newest_key: bool = False) -> dict:
    """One head's attention window (see :func:`viz.figures.lesson.attention_figure`, same content):
    rows are queries, columns keys, the focus row outlined as the focus and, with ``newest_key``, the
    key written this step as new (viz.figures.meanings). Where the window leaves keys out after the
    first, a gap column in their place (dashed, not a key's look; the title says what it holds) holds
    each row's weight on them, so every row still adds up to 1."""
    window = frame_.window
    hidden = frame_.hidden.tolist() if frame_.hidden is not None and window.gap_label else None
    named = _axes(attention_title(frame_, head) + (f" · {window.gap_meaning}" if hidden is not None else ""),
                  "queries", "keys")
    columns, row_labels = _labels(frame_, window.keys), _labels(frame_, window.rows)
    rows = []
    for r, (label, weights) in enumerate(zip(row_labels, frame_.weights.detach().double().cpu().tolist())):
        cells = []
        for key, w in zip(columns, weights):
            where = f"query {label}\nkey {key}\n"
            cells.append(_cell("Blues", w, short(w), where + f"weight {fmt(w)}") if w == w and abs(w) != float("inf")
                         else _masked(where + "masked: this key comes after the query"))
        if hidden is not None:
            cells.insert(1, _gap_cell(label, window.hidden_span, hidden[r]))
        rows.append({"label": label, "cells": cells})
    gap = 1 if hidden is not None else 0  # the gap column stands after the first key: later keys move right
    outlines, legend = [], []
    focus = window.rows.index(frame_.focus) if frame_.focus in window.rows else None
    if focus is not None:
        outlines.append({"group": 0, "row": focus, "col": None, "color": _color("focus")})
        newest = newest_key or frame_.cache.written != window.keys
        legend.append(legend_item("focus", FOCUS_NEWEST if newest else FOCUS_POSITION))
        if newest_key and frame_.focus in window.keys:
            col = window.keys.index(frame_.focus)
            outlines.append({"group": 0, "row": focus, "col": col + (gap if col else 0), "color": _color("new")})
            legend.append(legend_item("new"))
    if any(cell["bg"] == MASKED for row in rows for cell in row["cells"]):  # grey says what it is
        legend.append(legend_item("masked", filled=True))
    if hidden is not None:
        columns.insert(1, window.gap_label)
    return {"kind": "matrix", **named, "columns": columns, "groups": [{"rows": rows}],
            "outlines": outlines, "gap_after": None, "legend": legend,
            "label": f"{named['title']}: attention weights"}


def _gap_cell(label: str, keys: str, weight: float) -> dict:
    """The gap column's cell of one query row: its weight on the keys left out, summed (dashed, on white:
    no key's colour; the board draws a cell marked ``gap`` so)."""
    where = f"query {label}\nkeys {keys} not shown\n"
    if weight != weight:  # the row sees none of them
        return {"bg": WHITE, "fg": INK, "text": "", "tip": where + "this query sees none of them", "gap": True}
    return {"bg": WHITE, "fg": INK, "text": short(weight), "tip": where + f"their weights together: {fmt(weight)}",
            "gap": True}


def _sign(v: float) -> str:
    return "+1" if v > 0 else ("−1" if v < 0 else "q·k")


def scale_legend(query_keys: bool = False) -> list[dict]:
    """The cache's colour scales as legend entries (numbers, not meanings, so none is a meaning's
    colour): a filled swatch for a key of −1 and one for +1, and a wide swatch running through the
    value scale, low to high, for the V row (:data:`viz.figures.meanings.CACHE_SCALES`, which the Plotly
    cache figures' legends draw too); with ``query_keys``, one for a key that reads the query (q·k)."""
    return scale_items(cache_scales(query_keys))


def cache_board(frame_: LessonFrame, heads: list[str]) -> dict:
    """The keys (one ±1 row per head) and values under the window's keys (see
    :func:`viz.figures.lesson.cache_figure`, same content): each stale cached key hatched, outlined
    and named "stale" in its cell (never by colour alone), the entry written this step outlined as new."""
    view = frame_.cache
    columns = _labels(frame_, view.keys)
    stale = set(view.stale)
    signs = view.signs.detach().double().cpu().tolist()
    key_rows = []
    for h, (name, row) in enumerate(zip(heads, signs)):
        cells = []
        for c, (label, s) in enumerate(zip(columns, row)):
            tip = f"head {name}\n{'cached key' if view.cached else 'key'} of {label}: {_sign(s)}"
            cell = _cell(KEY_SCALE, (s + 1) / 2, _sign(s), tip)
            if (h, view.keys[c]) in stale:
                # the cached sign and the word where a cell holds both (up to six keys: a third of a
                # 1280-px projector gives each about 50 px), else the word (the sign is in the tip)
                said = f"{_sign(s)} stale" if len(columns) <= WORDY_STALE_KEYS else "stale"
                # the stripes on white and the words in ink: white words over stripes on a dark key
                # colour were hard to read from the back row (a teacher's review)
                cell.update(bg=hatch("stale"), fg=INK, text=said,
                            tip=tip + "\nstale: encoding it again gives the opposite")
            cells.append(cell)
        key_rows.append({"label": f"K {name}", "cells": cells})
    values = view.values.detach().double().cpu().tolist()
    low, high = view.value_range or ((min(values), max(values)) if values else (0.0, 0.0))  # every entry's
    value_row = {"label": "V", "cells": [
        _cell(VALUE_SCALE, (v - low) / (high - low) if high > low else 0.5, short(v), f"value of {label}: {fmt(v)}")
        for label, v in zip(columns, values)]}
    outlines = [{"group": 0, "row": h, "col": view.keys.index(p), "color": _color("stale")} for h, p in sorted(stale)]
    legend = [legend_item("stale")] if stale else []
    if len(view.written) == 1 and view.written[0] in view.keys:
        col = view.keys.index(view.written[0])
        outlines += [{"group": g, "row": None, "col": col, "color": _color("new")} for g in (0, 1)]
        legend.append(legend_item("new", "new entry" if view.cached else "new key"))
    legend += scale_legend(any(v == 0 for row in signs for v in row))  # what the cells' own colours say
    window = frame_.window
    gap = bool(window.hidden_keys) and not set(window.hidden_keys) & set(view.keys)
    if gap:  # the keys the window leaves out after the first: one column saying so, as on the attention board
        tip = f"keys {window.hidden_span} not shown: {window.cache_gap_meaning}"
        for row in key_rows + [value_row]:
            row["cells"].insert(1, {"bg": WHITE, "fg": INK, "text": "…", "tip": tip, "gap": True})
        columns.insert(1, window.gap_label)
        for o in outlines:
            o["col"] += 1 if o["col"] else 0
    named = _axes(cache_title(view) + (f" · keys {window.hidden_span} not shown" if gap else ""),
                  "K per head, then V", "keys")
    return {"kind": "matrix", **named, "columns": columns, "groups": [{"rows": key_rows}, {"rows": [value_row]}],
            "outlines": outlines, "gap_after": None, "legend": legend,
            "label": f"{named['title']}: one key row per head (+1, −1 or q·k) and the values V"}


def words_board(frame_: LessonFrame) -> dict:
    """The most likely next words as bars: the chosen one, the others, and (only where top-k or
    top-p filtered some out) the kept ones and the left-out ones, hatched; the title names the chosen
    word and its probability. Greedy decoding filters nothing, so its legend never says "kept"."""
    filtering = any(not w.kept for w in frame_.words)
    bars, seen = [], {}
    for w in frame_.words:
        look = ("chosen", None) if w.chosen else (("candidate", "kept by top-k/top-p" if filtering else None)
                                                  if w.kept else ("left out", "filtered out by top-k/top-p"))
        item = legend_item(*look, filled=True)
        seen.setdefault(item["label"], item)
        bars.append({"label": w.token, "share": min(max(w.p, 0.0), 1.0), "text": f"{w.p:.2f}", "color": item["color"],
                     "tip": f"{w.token}: p = {w.p:.4f} ({item['label']})"})
    title = f"Next word: '{frame_.next_token}' (p = {frame_.next_p:.2f})"
    return {"kind": "bars", "title": title, "bars": bars, "axis": "probability", "legend": list(seen.values()),
            "label": f"{title}: the {len(bars)} most likely next words and their probabilities"}


def stale_board(lesson: StaleLesson) -> dict:
    """The stale-cache lesson in the next word's place (see :func:`viz.figures.stale.stale_figure`, every
    key; here the latest :data:`STALE_ROWS`): rows are keys, the columns the KV cache and recomputation,
    each cell ✓ or ✗ (the head's rule matched the key or not) and the newest query's weight on it; each
    stale key's cached cell hatched, outlined and saying "stale"."""
    shown = lesson.keys[-STALE_ROWS:]
    runs = (("KV cache", "cached", lambda k: (k.cached_match, k.cached_weight)),
            ("recompute", "encoded again", lambda k: (k.recomputed_match, k.recomputed_weight)))
    rows, outlines = [], []
    for r, key in enumerate(shown):
        label = f"{key.position + 1} · {key.token}"
        cells = []
        for c, (run, how, said) in enumerate(runs):
            matched, weight = said(key)
            cell = _cell("Blues", weight, f"{'✓' if matched else '✗'} {short(weight)}",
                         f"key {label}, {how}: the rule {'matched' if matched else 'did not match'}\n"
                         f"the newest query's weight {fmt(weight)} ({run})")
            if key.stale and c == 0:
                cell.update(bg=hatch("stale"), fg=INK, text=cell["text"] + " stale",
                            tip=cell["tip"] + "\nstale: encoding it again gives the opposite")
                outlines.append({"group": 0, "row": r, "col": 0, "color": _color("stale")})
            cells.append(cell)
        rows.append({"label": label, "cells": cells})
    title = (f"Head '{lesson.name}': context {fmt(lesson.cached_context)} cached, "
             f"{fmt(lesson.recomputed_context)} recomputed")
    if len(shown) < len(lesson.keys):  # the earlier keys are left out: the title says which are shown
        title += f" · keys {shown[0].position + 1}–{shown[-1].position + 1} of {len(lesson.keys)}"
    named = _axes(title, "keys", "✓ match, weight")
    hidden = len(lesson.stale) - sum(k.stale for k in shown)  # stale keys before the latest (said to screen readers)
    label = (f"{named['title']}: the newest query's weight on the latest {len(shown)} of {len(lesson.keys)} keys, "
             f"with the KV cache and recomputed" + (f"; {hidden} more stale keys before them" if hidden else ""))
    return {"kind": "matrix", **named, "columns": [run for run, _, _ in runs], "groups": [{"rows": rows}],
            "outlines": outlines, "gap_after": None, "legend": [legend_item("stale")], "label": label}


def contexts_board(trace: Trace, position: int, whole: bool = False) -> dict | None:
    """Every head's context at the prompt's positions (see :func:`viz.figures.toy.contexts_figure`, same
    content: rows are heads, columns positions, Viridis over all the contexts' range), the column of
    ``position`` (0-based) outlined as the focus. A prompt longer than the board's cell-text width shows
    the positions around ``position`` (the title says which); None when ``whole`` asks for all of
    them and they do not fit."""
    pre = trace.prefill
    n = len(pre.tokens)
    if n > CELL_TEXT_COLUMNS and whole:  # (a scenario's heads, at most 16, always fit its rows)
        return None
    start = min(max(position - CELL_TEXT_COLUMNS // 2, 0), max(n - CELL_TEXT_COLUMNS, 0))
    shown = range(start, min(n, start + CELL_TEXT_COLUMNS))
    columns = [f"{p + 1} · {pre.tokens[p]}" for p in shown]
    contexts = pre.contexts.detach().double().cpu().tolist()
    flat = [c for row in contexts for c in row]
    low, high = min(flat), max(flat)  # the colours mean the same whichever positions are shown
    rows = [{"label": name, "cells": [
        _cell("Viridis", (row[p] - low) / (high - low) if high > low else 0.5, short(row[p]),
              f"head {name}\nposition {label}\ncontext {fmt(row[p])}") for label, p in zip(columns, shown)]}
        for name, row in zip(trace.scenario.head_names, contexts)]
    title = (CONTEXTS_TITLE if len(shown) == n
             else f"{CONTEXTS_TITLE} (positions {start + 1}–{shown[-1] + 1} of {n}; Whole shows all)")
    named = _axes(title, "heads", "query positions")
    return {"kind": "matrix", **named, "columns": columns, "groups": [{"rows": rows}],
            "outlines": [{"group": 0, "row": None, "col": position - start, "color": _color("focus")}],
            "gap_after": None, "legend": [legend_item("focus")], "label": named["title"]}
