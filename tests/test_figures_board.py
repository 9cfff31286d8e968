"""Tier 1: the lesson board's specs (viz.figures.board): what each cell, outline and bar says, text
that reads on every cell colour, and visitor text carried as plain strings for textContent."""

from __future__ import annotations

import re
from pathlib import Path

import plotly.colors
import pytest
from hypothesis import given
from hypothesis import strategies as st

from hostile_text import HOSTILE
from lesson_fixtures import long_scenario
from viz import Scenario, generate, load_preset
from viz.core.engine.model import MODES
from viz.core.engine.explain import fmt
from viz.core.lessons.lesson import decode_frame, prefill_frame
from viz.figures import board
from viz.figures.base import MASKED, MEANINGS, Stat, hatch, plain_table, short, stats_row
from viz.figures.meanings import FOCUS_NEWEST, VALUE_SCALE, scale_color
from viz.figures.lesson import CONTEXTS_TITLE

BOARD_JS = Path(board.__file__).resolve().parents[1] / "ui" / "board" / "board.js"
FOCUS, NEW, STALE, CHOSEN = (MEANINGS[name].color for name in ("focus", "new", "stale", "chosen"))


def _frame(scenario: Scenario, step: int, head: int = 1, whole: bool = False):
    runs = {mode: generate(scenario, step + 1, mode) for mode in MODES}
    return decode_frame(runs["kv"], runs["kv"], runs["recompute"], step, head, whole=whole)


def _contrast(a: str, b: str) -> float:
    la, lb = (board._luminance(plotly.colors.hex_to_rgb(c)) for c in (a, b))
    return (max(la, lb) + 0.05) / (min(la, lb) + 0.05)


def test_seed_step_one_cache_marks_the_stale_key_of_so_and_the_new_entry():
    """Head 'last' at 'so' (position 4) is outlined as stale, hatched and says "stale" in its cell (not
    a colour alone); the entry written this step is outlined as new down both the keys and the value
    row; the legend names both, in that order, the stale entry with its hatch."""
    spec = board.cache_board(_frame(load_preset("seed"), 1), load_preset("seed").head_names)
    assert spec["title"].startswith("KV cache: 5 entries")
    assert [g["rows"][0]["label"] for g in spec["groups"]] == ["K even", "V"]
    assert [o for o in spec["outlines"] if o["color"] == STALE] == [{"group": 0, "row": 1, "col": 3, "color": STALE}]
    assert [o for o in spec["outlines"] if o["color"] == NEW] == [
        {"group": g, "row": None, "col": 4, "color": NEW} for g in (0, 1)]
    assert [item["label"] for item in spec["legend"]] == ["stale key", "new entry", "K −1", "K +1", "V: low → high"]
    assert spec["legend"][0]["color"] == hatch("stale") and spec["legend"][0]["fill"]
    stale_cell = spec["groups"][0]["rows"][1]["cells"][3]
    assert "stale" in stale_cell["tip"] and stale_cell["text"] in ("+1 stale", "−1 stale")
    assert STALE in stale_cell["bg"] and "gradient" in stale_cell["bg"]
    assert spec["axes"] == {"rows": "K per head, then V", "columns": "keys"}
    assert [c["text"] for c in spec["groups"][1]["rows"][0]["cells"]] == ['10', '20', '1', '5', '7']


@pytest.mark.parametrize("x, text", [(0.333, ".33"), (-0.5, "-.5"), (0.999, "1"), (2.25, "2.25"), (10.333, "10.33"),
                                     (99.997, "100"), (-123.4, "-123"), (999.7, "1k"), (1500, "1.5k"), (12345, "12k"),
                                     (833334, "833k"), (-1e6, "-1M"), (2.5e7, "25M"), (1e9, "1B"), (3e12, "3T"),
                                     (1e15, "1e15"), (4e-5, "0"), (-0.004, "0"), (float("inf"), "inf"),
                                     (float("nan"), "nan")])
def test_a_cell_number_is_short_as_people_write_it(x, text):
    assert short(x) == text


@given(st.floats(min_value=-1e15, max_value=1e15, allow_nan=False))
def test_a_cell_number_never_takes_more_than_five_characters_and_a_sign(x):
    assert len(short(x).removeprefix("-")) <= 5


@pytest.mark.parametrize("scenario, step", [(load_preset("seed"), 0), (load_preset("seed"), 3), (long_scenario(), 15)])
def test_the_cache_boards_legend_says_what_every_cell_colour_encodes(scenario, step):
    """Besides the stale key and the new entry (issue 32: the ±1 colours and the V scale had no legend),
    the legend has a filled swatch in exactly the colour of a −1 key cell and of a +1 key cell, and a
    wide swatch running from the colour of the lowest V cell to that of the highest, at every step;
    the board draws them as sent, in presenter mode too (same spec)."""
    spec = board.cache_board(_frame(scenario, step), scenario.head_names)
    legend = {item["label"]: item for item in spec["legend"]}
    keys = [cell for row in spec["groups"][0]["rows"] for cell in row["cells"] if "stale" not in cell["text"]]
    for sign in ("−1", "+1"):
        colours = {cell["bg"] for cell in keys if cell["text"] == sign}
        assert colours <= {legend[f"K {sign}"]["color"]} and legend[f"K {sign}"]["fill"]
    assert legend["K −1"]["color"] != legend["K +1"]["color"]
    values = [cell for cell in spec["groups"][1]["rows"][0]["cells"] if not cell.get("gap")]  # the keys' own
    scale = legend["V: low → high"]
    assert scale["wide"] and scale["fill"] and scale["color"].startswith("linear-gradient(90deg")
    stops = re.findall(r"#[0-9a-f]{6}", scale["color"])
    low, high = _frame(scenario, step).cache.value_range  # every entry's, shown or not: the scale's ends
    assert (stops[0], stops[-1]) == (scale_color(VALUE_SCALE, 0.0), scale_color(VALUE_SCALE, 1.0))
    for cell in values:
        v = float(cell["tip"].rsplit(": ", 1)[1].replace(",", ""))
        assert cell["bg"] == scale_color(VALUE_SCALE, (v - low) / (high - low) if high > low else 0.5)
    assert not {item["color"] for item in board.scale_legend()} & {m.color for m in MEANINGS.values()}


def test_a_value_of_a_million_fits_its_cache_cell_and_keeps_every_digit_in_the_tip():
    """Large values (a visitor may type any finite number) read 1M, 833k in the V row, not
    1,000,000 cut off by the cell; the hover still says every digit."""
    seed = load_preset("seed")
    big = Scenario.from_dict({**seed.to_dict(), "values": [1_000_000.0, -833_334.0] + list(seed.values[2:])})
    cells = board.cache_board(_frame(big, 1), big.head_names)["groups"][1]["rows"][0]["cells"]
    assert [c["text"] for c in cells[:2]] == ["1M", "-833k"]
    assert cells[0]["tip"].endswith("1,000,000") and cells[1]["tip"].endswith("-833,334")


def test_attention_cells_read_as_people_write_numbers_and_masked_cells_are_empty():
    """A third reads .33, a near-zero 0; keys after the query are grey, empty and say 'masked' (in
    their tips and, since a student asked what the grey is, in the legend)."""
    frame = _frame(load_preset("seed"), 1)
    spec = board.attention_board(frame, "last", newest_key=True)
    rows = spec["groups"][0]["rows"]
    assert [r["label"] for r in rows] == [f"{i + 1} · {t}" for i, t in enumerate(frame.tokens)]
    assert rows[2]["cells"][0]["text"] == ".33" and rows[4]["cells"][0]["text"] == "0"
    assert rows[0]["cells"][1]["text"] == "" and "masked" in rows[0]["cells"][1]["tip"]
    assert rows[4]["cells"][0]["tip"].endswith(f"weight {fmt(5.6e-8)}")
    assert spec["outlines"] == [{"group": 0, "row": 4, "col": None, "color": FOCUS},
                                {"group": 0, "row": 4, "col": 4, "color": NEW}]
    assert [item["label"] for item in spec["legend"]] == [FOCUS_NEWEST, "new key", MEANINGS["masked"].label]
    assert spec["legend"][-1] == {"label": MEANINGS["masked"].label, "color": MASKED, "fill": True}  # the grey named
    assert spec["axes"] == {"rows": "queries", "columns": "keys"} and spec["title"].endswith(
        "rows: queries, columns: keys")


def test_every_cell_text_reads_on_its_colour():
    """Black or white, whichever contrasts more: at least 4.5 : 1 on every shade of every scale."""
    for scale in ("Blues", "RdBu", "Viridis"):
        for i in range(101):
            bg, fg = board.shade(scale, i / 100)
            assert _contrast(bg, fg) >= 4.5, (scale, i, bg, fg)


def test_windows_that_fit_go_to_the_board_and_whole_long_matrices_to_plotly():
    """The default window always fits; the whole 35-token matrix does not (Plotly zooms it)."""
    scenario = long_scenario(30)
    assert board.fits(_frame(scenario, 5))
    assert not board.fits(_frame(scenario, 5, whole=True))
    assert board.fits(_frame(load_preset("seed"), 3, whole=True))


def test_next_word_bars_mark_the_chosen_word():
    """The chosen word's bar has the chosen colour; the title gives it with its probability; shares
    stay in 0..1. Greedy decoding filters nothing, so the legend says "another word", never "kept"."""
    frame = prefill_frame(generate(load_preset("seed"), 1), 4, 0)
    spec = board.words_board(frame)
    chosen = [b for b in spec["bars"] if b["color"] == CHOSEN]
    assert len(chosen) == 1 and chosen[0]["label"] == frame.next_token == "nice"
    assert spec["title"] == f"Next word: 'nice' (p = {frame.next_p:.2f})"
    assert all(0 <= b["share"] <= 1 for b in spec["bars"])
    assert [item["label"] for item in spec["legend"]] == ["chosen", "another word"]


def test_next_word_bars_under_top_k_say_kept_and_hatch_the_words_left_out():
    """With top-k = 2 the third word is filtered out: hatched and named so, and the word kept beside
    the chosen one says "kept by top-k/top-p"."""
    seed = load_preset("seed")
    sampled = Scenario.from_dict({**seed.to_dict(), "sampling": {"strategy": "sample", "temperature": 1,
                                                                 "top_k": 2, "top_p": 1, "seed": 0}})
    spec = board.words_board(prefill_frame(generate(sampled, 1), 4, 0))
    labels = [item["label"] for item in spec["legend"]]
    assert "filtered out by top-k/top-p" in labels and "kept by top-k/top-p" in labels
    left_out = [b for b in spec["bars"] if "filtered out" in b["tip"]]
    assert left_out and all(b["color"] == hatch("left out") for b in left_out)


@pytest.mark.parametrize("token", ["<img src=x onerror=alert(1)>", "**b** [l](u)", "&amp;"])
def test_visitor_text_travels_verbatim_and_is_written_as_text(token):
    """Tokens reach the spec unescaped: the board writes them with textContent, never as markup."""
    seed = load_preset("seed")
    scenario = seed.with_tokens([token, *seed.tokens[1:]], list(seed.values))
    spec = board.attention_board(_frame(scenario, 1), "last")
    assert spec["groups"][0]["rows"][0]["label"] == f"1 · {token}"


def test_the_board_writes_text_never_markup():
    """The board's script (kvlab's one custom component, drawing visitor tokens) sets text only."""
    source = BOARD_JS.read_text(encoding="utf-8")
    assert "textContent" in source or ".value" in source
    assert not re.search(r"innerHTML|outerHTML|insertAdjacentHTML|document\.write|eval\(|new Function", source)


def test_plain_table_cells_read_as_people_write_numbers():
    """Numbers as fmt writes them (whole numbers whole, with separators; a tiny nonzero size still
    shown, as a gap must be), truth values as yes/no, visitor text verbatim; numeric columns flagged
    for right alignment, booleans not."""
    spec = plain_table({"token": ["<b>x</b>", "**y**"], "count": [12345, 7], "share": [0.25, 1 / 3],
                        "tiny": [1e-9, -2.5], "ok": [True, False]}, "a label")
    assert spec["columns"] == ["token", "count", "share", "tiny", "ok"]
    assert spec["numeric"] == [False, True, True, True, False]
    assert spec["rows"] == [["<b>x</b>", "12,345", "0.25", "1e-09", "yes"], ["**y**", "7", "0.3333", "-2.5", "no"]]
    assert spec["label"] == "a label"


def test_plain_table_of_the_seed_cache_check_says_six_and_seven():
    """The decode comparison as the plain table shows it: head 'last' reads 6 cached and 7 recomputed."""
    from viz.core.engine.explain import check_cache
    from viz.figures.toy import comparison_table
    seed = load_preset("seed")
    check = check_cache(generate(seed, 2, "kv"), generate(seed, 2, "recompute"), 1)
    spec = plain_table(comparison_table(check), "comparison")
    row = spec["rows"][1]  # heads in order: even, last, first, all
    assert row[:2] == ["last", "k.pos == n"]
    assert row[spec["columns"].index("KV cache")] == "6" and row[spec["columns"].index("recompute")] == "7"


def test_stats_row_writes_values_as_plain_tables_do_and_says_which_way_each_delta_goes():
    """Values as a plain table writes them; a number's delta gets its sign and "up"/"down" in words,
    a text delta's leading sign gives its direction, and the tone is good where that way is good,
    bad where not, neutral for no direction or a mere note; no delta, no change shown."""
    spec = stats_row([Stat("count", 12345, delta=1), Stat("share", 1 / 3, delta=-0.25, good="down"),
                      Stat("same?", True), Stat("size", "12 KiB", delta="-3 KiB vs full", good="up"),
                      Stat("formula", "4,096", delta="equal", good=None), Stat("flat", 7, delta="+0"),
                      Stat("still", 7, delta=0), Stat("time", "4 ms", delta="+1.5 ms", good=None, help="one run")],
                     "the row")
    assert spec["layout"] == "stats" and spec["label"] == "the row"
    items = {item["label"]: item for item in spec["stats"]}
    assert [items[k]["value"] for k in ("count", "share", "same?", "size")] == ["12,345", "0.3333", "yes", "12 KiB"]
    assert items["count"]["delta"] == {"text": "+1", "spoken": "up 1", "direction": "up", "tone": "good"}
    assert items["share"]["delta"] == {"text": "-0.25", "spoken": "down 0.25", "direction": "down", "tone": "good"}
    assert items["same?"]["delta"] is None and items["same?"]["help"] == ""
    assert items["size"]["delta"] == {"text": "-3 KiB vs full", "spoken": "down 3 KiB vs full", "direction": "down",
                                      "tone": "bad"}
    assert items["formula"]["delta"] == {"text": "equal", "spoken": "equal", "direction": "", "tone": "neutral"}
    assert items["flat"]["delta"]["direction"] == items["still"]["delta"]["direction"] == ""
    assert items["still"]["delta"]["text"] == "0" and items["flat"]["delta"]["tone"] == "neutral"
    assert items["time"]["delta"]["tone"] == "neutral" and items["time"]["delta"]["spoken"] == "up 1.5 ms"
    assert items["time"]["help"] == "one run"
    with pytest.raises(ValueError, match="good must be"):
        Stat("x", 1, good="better")


@pytest.mark.parametrize("text", HOSTILE)
def test_stats_row_carries_visitor_text_verbatim(text):
    """Markup, Markdown, LaTeX and directives in a label, value, delta or help reach the spec as
    typed (viz.ui.widgets escapes them for st.metric, tests/test_widgets.py)."""
    item = stats_row([Stat(text, text, delta=text, help=text)], text)["stats"][0]
    assert item["label"] == item["value"] == item["help"] == item["delta"]["text"] == text


def test_contexts_board_holds_every_heads_context_and_windows_long_prompts():
    """The article's contexts (head 'all' at 'so': 9), the focus column outlined, hovers with the
    number in full; a prompt past the board's cell-text width shows the positions around the focus
    (coloured over all of them), and asked for whole gets no board (Plotly draws it)."""
    seed = load_preset("seed")
    spec = board.contexts_board(generate(seed, 1, "kv"), 3)
    last_row = spec["groups"][0]["rows"][3]
    assert last_row["label"] == "all" and [c["text"] for c in last_row["cells"]] == ["10", "15", "10.33", "9"]
    assert last_row["cells"][2]["tip"] == "head all\nposition 3 · is\ncontext 10.33"
    assert spec["outlines"] == [{"group": 0, "row": None, "col": 3, "color": FOCUS}]
    long = seed.with_tokens([f"t{i}" for i in range(40)], [float(i) for i in range(40)])
    trace = generate(long, 1, "kv")
    spec = board.contexts_board(trace, 20)
    assert spec["columns"][0] == "13 · t12" and spec["columns"][-1] == "28 · t27"
    assert spec["outlines"][0]["col"] == 8 and "(positions 13–28 of 40; Whole shows all)" in spec["title"]
    later = board.contexts_board(trace, 22)  # a column both windows show keeps its colour
    assert [r["cells"][7] for r in spec["groups"][0]["rows"]] == [r["cells"][5] for r in later["groups"][0]["rows"]]
    short_prompt = long.with_tokens(list(long.tokens[:16]), list(long.values[:16]))
    sixteen = board.contexts_board(generate(short_prompt, 1, "kv"), 3)
    assert len(sixteen["columns"]) == 16 and sixteen["title"].startswith(CONTEXTS_TITLE + " · rows: heads")
    assert board.contexts_board(trace, 39)["columns"][-1] == "40 · t39"  # the window stays inside the prompt
    assert board.contexts_board(trace, 20, whole=True) is None


def test_pool_board_carries_tokens_verbatim_and_the_plotly_pool_escapes_them():
    """The paged pool with a token that looks like markup: the board's cell holds it as typed (the
    board writes text), the Plotly picture (wide blocks) escaped; both show the same cells."""
    from viz.core.serving.paged import decode_together, variants
    from viz.figures import memory
    token = "<b>x</b>"
    scenario = load_preset("cache-safe").with_tokens([token, "b", "c"], [1.0, 2.0, 3.0])
    run = decode_together(scenario, variants(scenario, 2), 2, max_new_tokens=16)
    snapshot, names = run.snapshots[-1], [s.name for s in run.sequences]
    spec = memory.pool_board(run, snapshot, names)
    first = spec["groups"][0]["rows"][0]["cells"][0]
    assert first["text"] == token and token in first["tip"]
    fig = memory.pool_figure(run, snapshot, names)
    assert fig.data[0].text[0][0] == "&lt;b&gt;x&lt;/b&gt;"
    assert [[c["text"] for c in row["cells"]] for row in spec["groups"][0]["rows"]] == [
        [t.replace("&lt;", "<").replace("&gt;", ">") for t in row] for row in fig.data[0].text]


def test_a_stale_cell_in_a_full_window_says_stale_alone():
    """Past six keys a cell is too narrow on a projector for "+1 stale": it says "stale" (the sign in its
    tip); up to six it says both."""
    from dataclasses import replace

    long = replace(load_preset("seed"), tokens=load_preset("seed").tokens * 4, values=load_preset("seed").values * 4)
    spec = board.cache_board(_frame(long, 2), long.head_names)
    assert len(spec["columns"]) > board.WORDY_STALE_KEYS
    said = [c["text"] for row in spec["groups"][0]["rows"] for c in row["cells"] if "stale:" in c["tip"]]
    assert said and set(said) == {"stale"}


def test_the_eviction_board_pairs_each_heads_full_and_compressed_rows_and_marks_evicted_keys():
    """Memory's eviction tab draws its lesson figure as a board (a grid that fits a phone's width):
    per head the full cache's row above the compressed one's, the same weights as the Plotly figure,
    evicted keys grey with ✕ (in the legend), tokens carried as typed; past the cell-text width, Plotly."""
    from viz.core.serving.compress import CacheSpec, EvictionPolicy, compare_with_full
    from viz.figures import memory
    from viz.figures.lesson import CELL_TEXT_COLUMNS
    token = "<b>x</b>"
    safe = load_preset("cache-safe")
    scenario = safe.with_tokens([token, *safe.tokens[1:]], list(safe.values))
    comparison = compare_with_full(scenario, 4, CacheSpec(policy=EvictionPolicy(window=2)))
    step = comparison.steps[-1]
    spec = memory.attention_compare_board(step, comparison.tokens, scenario.head_names)
    fig = memory.attention_compare_figure(step, comparison.tokens, scenario.head_names)
    rows = [row for group in spec["groups"] for row in group["rows"]]
    assert [len(group["rows"]) for group in spec["groups"]] == [2] * len(scenario.head_names)
    assert [row["label"] for row in rows] == [f"{n} · {c}" for n in scenario.head_names for c in ("full", "compressed")]
    assert spec["columns"][0] == f"1 · {token}" and spec["title"].endswith("rows: head · cache, columns: keys")
    evicted = [(r, c) for r, row in enumerate(rows) for c, cell in enumerate(row["cells"]) if cell["text"] == "✕"]
    assert evicted and all(r % 2 == 1 for r, _ in evicted)  # only the compressed rows lose keys
    assert all(rows[r]["cells"][c]["bg"] == MEANINGS["left out"].color for r, c in evicted)
    assert [(r, c) for r, line in enumerate(fig.data[0].z) for c, v in enumerate(line) if v is None] == evicted
    assert [[c["text"] for c in row["cells"] if c["text"] != "✕"] for row in rows] == \
        [[short(v) for v in line if v is not None] for line in fig.data[0].z]
    assert spec["legend"] == [{"label": "evicted", "color": MEANINGS["left out"].color, "fill": True}]
    assert len(spec["columns"]) <= CELL_TEXT_COLUMNS
    long = safe.with_tokens(list(safe.tokens) * 4, list(safe.values) * 4)
    wide = compare_with_full(long, 2, CacheSpec(policy=EvictionPolicy(window=2)))
    assert memory.attention_compare_board(wide.steps[-1], wide.tokens, long.head_names) is None


def test_the_pool_title_says_the_blocks_not_drawn_are_free():
    """Memory's pool draws blocks up to the last one in use: its title says the rest are free blocks
    not drawn (it said "25 more below, not drawn", as if something were missing under the picture)."""
    from viz.core.serving.paged import decode_together, variants
    from viz.figures import memory
    scenario = load_preset("cache-safe")
    run = decode_together(scenario, variants(scenario, 2), 4, max_new_tokens=16)
    snapshot, names = run.snapshots[-1], [s.name for s in run.sequences]
    used = [b for b, count in enumerate(snapshot.refcounts) if count]
    hidden = len(snapshot.refcounts) - (max(used) + 1)
    spec = memory.pool_board(run, snapshot, names)
    assert hidden > 0 and spec["title"].endswith(f"; {hidden} free blocks not drawn"), spec["title"]
    assert len(spec["groups"][0]["rows"]) == max(used) + 1


def test_the_pool_names_each_block_copied_on_write():
    """The title counts the copies; each copied block's row says 'copy' (within the board's 9-em label
    column) and its cells' tips say which block it copied: not a colour alone."""
    from viz.core.serving.paged import decode_together, variants
    from viz.figures import memory
    soup = load_preset("your soup").cache_safe()
    run = decode_together(soup, variants(soup, 4), 4, share_prefix=True, max_new_tokens=32)
    snapshot, names = run.snapshots[-1], [s.name for s in run.sequences]
    rows = memory.pool_board(run, snapshot, names)["groups"][0]["rows"]
    assert snapshot.copied_from
    for block, source in snapshot.copied_from:
        assert rows[block]["label"] == f"block {block} · copy" and len(rows[block]["label"]) <= 15
        assert all(f"copied from block {source} on write" in cell["tip"] for cell in rows[block]["cells"])
    copied = {block for block, _ in snapshot.copied_from}
    assert all("copy" not in row["label"] for b, row in enumerate(rows) if b not in copied)


def test_a_pool_row_label_fits_the_label_column_whatever_the_block():
    """'block 12 · ref 2 · copy' ran past the board's 9-em label column: a copy shared again says its
    references only (its tips say it is a copy); every label stays within 16 characters."""
    from viz.figures.memory import _block_label

    labels = [_block_label(block, refs, copied) for block in (3, 12, 99) for refs in (1, 2, 9) for copied in (False, True)]
    assert max(len(label) for label in labels) <= 16 and "block 12 · copy" in labels and "block 12 · ref 2" in labels


def _printed(text: str) -> float:
    return float(text) if text else 0.0


@pytest.mark.parametrize("scenario, step, whole", [(load_preset("seed"), 11, False), (long_scenario(), 6, False),
                                                   (load_preset("seed"), 3, False), (load_preset("seed"), 11, True)])
def test_each_attention_row_adds_up_to_one_with_the_keys_left_out_in_their_own_column(scenario, step, whole):
    """The seed after eleven steps shows rows 8–15 over keys 1 and 9–15: keys 2–8 are left out, so row 15 of
    head 'even' read three cells of .14 (.42). The core gives each row's weight on the keys left out; shown +
    hidden make 1 exactly (softmax over the keys a row sees), and the board prints it in a dashed gap column
    "2–8 …" after key 1 (the title says what it holds), so the printed numbers add up to 1 to the cells'
    rounding (half a hundredth each).
    Decode's frames and Prefill's (its window centred on a position) alike; with every key shown, no gap."""
    runs = {mode: generate(scenario, step + 1, mode) for mode in ("kv", "recompute")}
    frames = [decode_frame(runs["kv"], runs["kv"], runs["recompute"], step, head, whole=whole)
              for head in range(len(scenario.heads))]
    frames += [prefill_frame(runs["kv"], p, 0, whole=whole) for p in range(1, len(scenario.tokens) + 1)]
    for frame in frames:
        shown = frame.weights.nan_to_num(0.0).sum(1)
        spec = board.attention_board(frame, "h")
        rows = spec["groups"][0]["rows"]
        if not frame.window.hidden_keys:
            assert frame.hidden is None and not any(c.get("gap") for r in rows for c in r["cells"])
            assert shown.tolist() == pytest.approx([1.0] * len(rows), abs=1e-6)
            continue
        assert (shown + frame.hidden).tolist() == pytest.approx([1.0] * len(rows), abs=1e-6)
        first, last = frame.window.hidden_keys[0] + 1, frame.window.hidden_keys[-1] + 1
        assert spec["columns"][1] == f"{first}–{last} …" and len(spec["columns"]) == len(frame.window.keys) + 1
        assert f" · keys {first}–{last} summed in one column · rows: queries" in spec["title"]  # what it holds
        for row in rows:
            gap = row["cells"][1]
            assert gap["gap"] and not any(c.get("gap") for c in row["cells"][:1] + row["cells"][2:])
            assert gap["bg"] == "#ffffff" and f"keys {first}–{last} not shown" in gap["tip"]  # no key's colour
            printed = sum(_printed(c["text"]) for c in row["cells"])
            assert printed == pytest.approx(1.0, abs=0.005 * len(row["cells"])), row


def test_the_seed_at_step_eleven_gives_head_even_row_fifteen_its_hidden_weight():
    """Head 'even' at step 11 of the seed: row 15 reads .14 on keys 10, 12 and 14, and .57 on keys 2–8 (4 of
    its 7 keys matched there), the new key outlined in its own column, moved right past the gap."""
    frame = _frame(load_preset("seed"), 11, head=0)
    spec = board.attention_board(frame, "even", newest_key=True)
    last = spec["groups"][0]["rows"][-1]
    assert last["label"] == "15 · nice" and [c["text"] for c in last["cells"]] == [
        "0", ".57", "0", ".14", "0", ".14", "0", ".14", "0"]
    assert spec["columns"][:3] == ["1 · Today", "2–8 …", "9 · nice"]
    assert {"group": 0, "row": 7, "col": 8, "color": NEW} in spec["outlines"]


@pytest.mark.parametrize("scenario, step", [(load_preset("seed"), 11), (long_scenario(), 15), (load_preset("seed"), 3)])
def test_the_cache_board_marks_the_keys_the_window_leaves_out_as_the_attention_board_does(scenario, step):
    """A student typed a longer prompt: the cache board said "12 entries" over 8 columns, keys 2–5 gone
    with no mark, beside the attention board's "2–5 …" column. Now the cache board has the same column
    after key 1, a dashed "…" in every row (no key's colour, no number: a cache has no sum to show),
    its tip saying the entries are in the cache; the title says which keys are not shown; the stale and
    new outlines move right past it with their keys. With every key shown, no such column."""
    frame = _frame(scenario, step)
    spec = board.cache_board(frame, scenario.head_names)
    rows = [row for group in spec["groups"] for row in group["rows"]]
    assert all(len(row["cells"]) == len(spec["columns"]) for row in rows)
    hidden = frame.window.hidden_keys
    if not hidden:
        assert not any(c.get("gap") for row in rows for c in row["cells"]) and "not shown" not in spec["title"]
        return
    span = f"{hidden[0] + 1}–{hidden[-1] + 1}"
    assert spec["columns"][1] == f"{span} …" and f" · keys {span} not shown · rows:" in spec["title"]
    for row in rows:
        gap = row["cells"][1]
        assert gap["gap"] and gap["text"] == "…" and gap["bg"] == "#ffffff" and "in the cache" in gap["tip"]
    keys = [spec["columns"].index(label) for label in spec["columns"] if label != f"{span} …"]
    for o in spec["outlines"]:  # every outline stands on a key's column, never on the gap
        assert o["col"] in keys
    view = frame.cache
    for h, p in view.stale:  # the stale outline sits on the cell saying "stale"
        col = next(o["col"] for o in spec["outlines"] if o["color"] == STALE and o["row"] == h
                   and spec["columns"][o["col"]].startswith(f"{p + 1} ·"))
        assert "stale" in spec["groups"][0]["rows"][h]["cells"][col]["text"]


def test_a_cached_key_that_reads_the_query_says_q_k_and_the_legend_defines_it():
    """After "Fix: n → q.pos" head 'last' reads the query: its cached keys say q·k (no sign to store);
    the legend names that colour ("q·k: worked out when a query reads it"), in exactly the cells'
    colour; a cache without such keys has no such entry."""
    fixed = load_preset("seed").cache_safe()
    spec = board.cache_board(_frame(fixed, 3), fixed.head_names)
    legend = {item["label"]: item for item in spec["legend"]}
    qk = [c for row in spec["groups"][0]["rows"] for c in row["cells"] if c["text"] == "q·k"]
    assert qk and {c["bg"] for c in qk} == {legend["q·k: worked out when a query reads it"]["color"]}
    plain = board.cache_board(_frame(load_preset("seed"), 3), load_preset("seed").head_names)
    assert not any(item["label"].startswith("q·k") for item in plain["legend"])
    from viz.figures.lesson import cache_figure  # the Plotly cache (a long window) names it too
    names = {trace.name for trace in cache_figure(_frame(fixed, 3), fixed.head_names).data}
    assert "q·k: worked out when a query reads it" in names



def test_a_stale_cells_words_read_from_the_back_row_on_both_colours_of_its_stripes():
    """A teacher's review: white words over pink stripes on a dark key colour (and on the white of a
    light one) were hard to read. A stale cell, on the cache board and the stale board, is the stale
    stripes on white with its words in ink: at least 4.5 : 1 (WCAG AA) against both stripe colours."""
    from viz.figures.base import INK
    spec = board.cache_board(_frame(long_scenario(), 15), long_scenario().head_names)
    stale = [c for row in spec["groups"][0]["rows"] for c in row["cells"] if "stale" in c["text"]]
    kv, full = (generate(load_preset("seed"), 4, mode) for mode in ("kv", "recompute"))
    from viz.core.engine.explain import check_cache
    from viz.core.lessons.stale import stale_lesson
    side = board.stale_board(stale_lesson(kv, full, check_cache(kv, full, 3)))
    stale += [c for row in side["groups"][0]["rows"] for c in row["cells"] if "stale" in c["text"]]
    assert len(stale) > 5
    for cell in stale:
        assert cell["fg"] == INK and cell["bg"] == hatch("stale")
        for stripe in re.findall(r"#[0-9a-fA-F]{6}", cell["bg"]):
            assert _contrast(cell["fg"], stripe) >= 4.5, (cell["text"], stripe)


def test_a_values_colour_keeps_its_meaning_when_the_window_leaves_keys_out():
    """A teacher's review: Today's value 10 was teal at step 1 and the scale's top (yellow) from step 6,
    once 20 (weather) had left the window. The V row's colours come from every entry's range, shown or
    not: Today's cell is the same colour at steps 1 and 12, and so in the Plotly figure's scale."""
    seed = load_preset("seed")
    early, late = (board.cache_board(_frame(seed, step), seed.head_names) for step in (1, 12))
    today = [spec["groups"][1]["rows"][0]["cells"][0] for spec in (early, late)]
    assert [c["text"] for c in today] == ["10", "10"] and today[0]["bg"] == today[1]["bg"]
    assert _frame(seed, 12).cache.value_range == (1.0, 20.0)
    from viz.figures.lesson import cache_figure
    v = cache_figure(_frame(seed, 12), seed.head_names).data[1]
    assert (v.zmin, v.zmax) == (1.0, 20.0)
