"""Tier 1 and 2: the stale-cache lesson on Decode's lesson screen: a button shows the head concerned,
one sentence says why, the cache and recomputation side by side with the stale keys marked by
pattern and label, and nothing is said of stale keys at step 0."""

from __future__ import annotations

import pytest
from apptest_helpers import board, boards, by_label, cells, figure, rerun

from viz import generate, load_preset
from viz.core.engine.explain import check_cache
from viz.core.lessons.decode import decode_view
from viz.core.lessons.stale import cache_note, stale_lesson
from viz.figures.board import STALE_ROWS, stale_board
from viz.figures.meanings import MEANINGS, hatch
from viz.figures.stale import stale_figure
from viz.ui import state
from viz.ui.common import md_escape

SEED = load_preset("seed")


def runs(steps: int):
    return generate(SEED, steps + 1, "kv"), generate(SEED, steps + 1, "recompute")


def test_the_seed_lesson_names_head_last_and_its_stale_key():
    """Step 1: head 'last' (index 1), 'so' (position 4) stale, 6 with the cache against 7 recomputed."""
    kv, full = runs(1)
    lesson = stale_lesson(kv, full, check_cache(kv, full, 1))
    assert (lesson.head, lesson.name, lesson.button) == (1, "last", "Show head 'last'")
    assert lesson.stale == (3,) and lesson.keys[3].token == "so"
    assert (lesson.keys[3].cached_match, lesson.keys[3].recomputed_match) == (True, False)
    assert (lesson.cached_context, lesson.recomputed_context) == (pytest.approx(6.0), pytest.approx(7.0))
    assert [k.cached_weight for k in lesson.keys] == pytest.approx([0, 0, 0, 0.5, 0.5], abs=1e-6)
    assert [k.recomputed_weight for k in lesson.keys] == pytest.approx([0, 0, 0, 0, 1], abs=1e-6)
    assert "reads n" in lesson.why and "n = 5" in lesson.why and lesson.why.count(".") == 1 + lesson.why.count("k.pos")


def test_no_lesson_without_a_difference():
    """At step 0, and for a cache-safe scenario, there is nothing stale to show."""
    kv, full = runs(0)
    assert stale_lesson(kv, full, check_cache(kv, full, 0)) is None
    safe = load_preset("cache-safe")
    kv, full = generate(safe, 3, "kv"), generate(safe, 3, "recompute")
    assert stale_lesson(kv, full, check_cache(kv, full, 2)) is None


def test_step_zero_does_not_speak_of_stale_keys_as_if_they_existed():
    """Right after prefill the note says no key can be stale yet; a cache-safe scenario gets no note."""
    kv, full = runs(0)
    note = cache_note(check_cache(kv, full, 0), kv.cacheable)
    assert "no cached key can be stale yet" in note and "do not change" not in note
    safe = load_preset("cache-safe")
    kv, full = generate(safe, 1, "kv"), generate(safe, 1, "recompute")
    assert cache_note(check_cache(kv, full, 0), kv.cacheable) == ""


def test_the_figure_marks_stale_cells_by_pattern_and_label():
    """Two rows (cache, recomputed); each stale cell says 'stale' in its cached row, carries the
    stale pattern and its outline, and the legend names it."""
    kv, full = runs(2)
    lesson = stale_lesson(kv, full, check_cache(kv, full, 2))
    fig = stale_figure(lesson)
    heat = fig.data[0]
    assert list(heat.y) == ["with the KV cache", "recomputed"]
    stale_cells = [c for c, k in enumerate(lesson.keys) if k.stale]
    assert stale_cells == [3, 4]
    assert all("stale" in heat.text[0][c] for c in stale_cells)
    assert not any("stale" in t for c, t in enumerate(heat.text[0]) if c not in stale_cells)
    assert sum(s.type == "rect" and s.line.color == MEANINGS["stale"].color for s in fig.layout.shapes) == 2
    for c in stale_cells:  # hatched as the board hatches it: stripes across the cell, no slash mark over it
        assert_hatched(fig, c, 0)
    assert not [t for t in fig.data if getattr(t, "mode", None) == "markers" and t.x and t.x[0] is not None]
    legend = [t for t in fig.data if t.name == MEANINGS["stale"].label and t.showlegend is not False]
    assert len(legend) == 1 and legend[0].marker.pattern.shape == MEANINGS["stale"].pattern  # a hatched swatch


def assert_hatched(fig, column: int, row: int) -> None:
    """The cell at (column, row) of a matrix whose rows run downwards carries the stale stripes, rising to
    the right on screen as the board's CSS hatch does (its gradient's 135deg points across such stripes)."""
    lines = [s for s in fig.layout.shapes if s.type == "line" and s.line.color == MEANINGS["stale"].color
             and column - 0.5 <= min(s.x0, s.x1) and max(s.x0, s.x1) <= column + 0.5
             and row - 0.5 <= min(s.y0, s.y1) and max(s.y0, s.y1) <= row + 0.5]
    assert len(lines) >= 3, lines
    assert all((s.x1 - s.x0) * (s.y1 - s.y0) < 0 for s in lines)  # y grows downwards: rising means y falls
    assert "135deg" in hatch("stale") and MEANINGS["stale"].pattern == "/"


def test_the_board_puts_the_latest_keys_side_by_side_and_marks_the_stale_cells():
    """The lesson screen's form: rows the latest five keys, columns the KV cache and recomputation, each cell
    ✓ or ✗ and the weight; each stale key's cached cell says 'stale', hatched and outlined, and the
    legend names it; the title gives both contexts."""
    kv, full = runs(2)
    spec = stale_board(stale_lesson(kv, full, check_cache(kv, full, 2)))
    assert spec["columns"] == ["KV cache", "recompute"] and spec["axes"]["rows"] == "keys"
    labels = [row["label"] for row in spec["groups"][0]["rows"]]
    assert labels == ["2 · weather", "3 · is", "4 · so", "5 · nice", "6 · nice"]  # the latest STALE_ROWS = 5 of 6
    assert cells(spec) == [["✗ 0", "✗ 0"], ["✗ 0", "✗ 0"], ["✓ .33 stale", "✗ 0"], ["✓ .33 stale", "✗ 0"],
                           ["✓ .33", "✓ 1"]]
    stale_cells = [row["cells"][0] for row in spec["groups"][0]["rows"][2:4]]
    assert all(c["bg"].startswith(hatch("stale").split(",")[0]) for c in stale_cells)
    assert spec["outlines"] == [{"group": 0, "row": r, "col": 0, "color": MEANINGS["stale"].color} for r in (2, 3)]
    assert [item["label"] for item in spec["legend"]] == [MEANINGS["stale"].label]
    assert spec["title"].startswith("Head 'last': context 6.333 cached, 7 recomputed")  # as the warning says it


def test_the_boards_title_says_which_keys_it_shows_once_it_leaves_earlier_ones_out():
    """A student read "context 6.5 cached, 7 recomputed" over rows starting at key 2 and looked for
    Today: past STALE_ROWS keys the title says which keys the rows are ("keys 2–6 of 6"); with every
    key shown it says nothing of the kind."""
    kv, full = runs(2)
    assert stale_board(stale_lesson(kv, full, check_cache(kv, full, 2)))["title"].startswith(
        "Head 'last': context 6.333 cached, 7 recomputed · keys 2–6 of 6 · rows: keys")
    kv, full = runs(1)
    assert " of " not in stale_board(stale_lesson(kv, full, check_cache(kv, full, 1)))["title"]


def test_a_long_sequences_board_shows_its_latest_keys_and_says_how_many_it_leaves_out():
    """Past STALE_ROWS keys the board keeps the latest ones (the newest key last, never stale), and
    says in its label for screen readers how many stale keys lie before them."""
    from dataclasses import replace

    long = replace(SEED, tokens=SEED.tokens * 4, values=SEED.values * 4)  # 16 prompt tokens
    kv, full = generate(long, 9, "kv"), generate(long, 9, "recompute")
    lesson = stale_lesson(kv, full, check_cache(kv, full, 8))
    spec = stale_board(lesson)
    rows = spec["groups"][0]["rows"]
    assert len(rows) == STALE_ROWS and rows[-1]["label"] == f"{len(lesson.keys)} · {lesson.keys[-1].token}"
    assert [c[0].endswith("stale") for c in cells(spec)] == [k.stale for k in lesson.keys[-STALE_ROWS:]]
    hidden = len(lesson.stale) - sum(k.stale for k in lesson.keys[-STALE_ROWS:])
    assert hidden > 0 and f"{hidden} more stale keys before them" in spec["label"]


def test_the_view_puts_the_lesson_beside_each_frame_it_sends_where_the_head_shown_went_stale():
    """At step 1 with head 'last' shown the lesson stands beside the frame and the Step turn's (step 2),
    not the Back turn's (step 0: nothing stale yet); with head 'even' shown, beside none."""
    now = {m: generate(SEED, 2, m) for m in ("kv", "recompute")}
    following = {m: generate(SEED, 3, m) for m in ("kv", "recompute")}
    view = decode_view(now, {}, following, 1, "kv", 1)
    assert (view.frame.step, view.after.step, view.before.step) == (1, 2, 0)
    assert sorted(view.beside) == [1, 2] and view.beside[1] == view.stale
    assert (view.beside[2].step, view.beside[2].stale) == (2, (3, 4))
    assert decode_view(now, {}, following, 1, "kv", 0).beside == {}


def test_decode_offers_the_head_and_shows_the_lesson(decode):
    """Step 1 on the seed (head 'even' shown): the warning offers "Show head 'last'"; clicking it
    selects that head, the warning says why in one sentence, and the side by side takes the next
    word's place on the lesson screen (every key of it in the comparison tab)."""
    by_label(decode.button, "Step").click().run()
    assert decode.session_state[state.HEAD] == 0
    assert board(decode, "Next word:")  # head 'even' agrees: the next word stays
    by_label(decode.button, md_escape("Show head 'last'")).click().run()
    assert decode.session_state[state.HEAD] == 1
    assert not [b for b in decode.button if b.label == md_escape("Show head 'last'")]  # already shown
    kv, full = runs(1)
    lesson = stale_lesson(kv, full, check_cache(kv, full, 1))
    assert [w.value for w in decode.warning] == [md_escape(lesson.why)]  # the warning now says why
    drawn = figure(decode, "Head 'last' at")
    assert drawn["data"][0]["y"] == ["with the KV cache", "recomputed"]
    beside = board(decode, "Head 'last': context 6 cached, 7 recomputed")
    assert cells(beside)[3] == ["✓ .5 stale", "✗ 0"]  # 'so' (position 4)
    assert len(boards(decode)) == 3 and not [b for b in boards(decode) if b["title"].startswith("Next word")]


def test_step_zero_on_decode_has_no_stale_talk(decode):
    """At step 0 no warning, no lesson button, and the comparison tab's note says nothing is stale yet."""
    rerun(decode)
    assert not decode.warning and not [b for b in decode.button if b.label.startswith("Show head")]
    assert any("no cached key can be stale yet" in i.value for i in decode.info)


def test_a_long_sequences_cells_say_match_by_a_mark_and_the_title_reads_it():
    """Past 12 keys a cell is too narrow for 'match · 0.25': it says ✓ or ✗ over the weight, the title says
    what the marks mean, and the stale cells still say 'stale'."""
    from dataclasses import replace

    from viz.figures.stale import WORDY_KEYS

    long = replace(SEED, tokens=SEED.tokens * 4, values=SEED.values * 4)  # 16 prompt tokens
    kv, full = generate(long, 3, "kv"), generate(long, 3, "recompute")
    lesson = stale_lesson(kv, full, check_cache(kv, full, 2))
    assert lesson is not None and len(lesson.keys) > WORDY_KEYS
    fig = stale_figure(lesson)
    cells = [t.split("<br>")[0] for row in fig.data[0].text for t in row]
    assert set(cells) <= {"✓", "✗"} and "✓ the rule matched the key" in fig.layout.title.text.replace("<br>", " ")
    assert all("stale" in fig.data[0].text[0][c] for c in lesson.stale)
    seed_kv, seed_full = runs(2)
    seed_lesson = stale_lesson(seed_kv, seed_full, check_cache(seed_kv, seed_full, 2))
    assert "match · " in stale_figure(seed_lesson).data[0].text[0][0]  # four keys: the words
