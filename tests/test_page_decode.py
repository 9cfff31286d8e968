"""Tier 2 (AppTest): the Decode page steps, scrubs, compares cache and recomputation, and fixes."""

from __future__ import annotations

import pytest

from apptest_helpers import (array, by_label, choice_data, flip, label_beside, pick, board, boards, figure, figures, move_range, plain_table, plain_tables, range_data, scenario, shown, stat,
                             stat_value)
from viz.ui import state


def test_step_advances_the_trace(decode):
    """Step appends the predicted word and grows the cache by one entry (its stat says "up 1")."""
    assert stat_value(decode, "Entries") == "4" and stat(decode, "Entries")["delta"] is None
    by_label(decode.button, "Step").click().run()
    assert decode.session_state[state.STEP] == 1
    assert stat_value(decode, "Entries") == "5"
    assert stat(decode, "Entries")["delta"] == {"text": "1", "direction": "up", "tone": "good"}
    assert "'nice' joins at position 5" in shown(decode.info[0].value)


def test_seed_cache_bug_is_shown_with_its_numbers(decode):
    """After one step the 'last' head gives 6 with the cache and 7 recomputed, said in a sentence."""
    by_label(decode.button, "Step").click().run()
    assert stat_value(decode, "Largest |difference| in the context") == "1"
    warning = shown(decode.warning[0].value)
    assert warning == ("Head 'last' gets 6 with the KV cache but 7 when every key is encoded again, "
                       "because the cached key of 'so' (position 4) went stale.")
    assert not plain_tables(decode)  # the head-by-head table is folded, not built
    decode.session_state["decode_compare_open"] = True  # its fold opened (pages/decode.py COMPARE_FOLD)
    table = plain_table(decode.run(), "|difference|")
    assert (table["head"][1], table["KV cache"][1], table["recompute"][1], table["|difference|"][1]) == (
        "last", "6", "7", "1")


def test_one_click_fix_makes_the_cache_agree(decode):
    """The fix button rewrites the rule; afterwards cache and recomputation agree."""
    by_label(decode.button, "Step").click().run()
    by_label(decode.button, "Fix: n → q.pos").click().run()
    assert scenario(decode).heads[1].rule == "k.pos == q.pos"
    assert stat_value(decode, "Largest |difference| in the context") == "0"
    assert decode.success


def _run_size(at, n: int):
    """Choose how many tokens the Run button generates."""
    return pick(at, "decode_run_n", n)


def test_run_n_back_reset_and_timeline(decode):
    """Run N jumps ahead, Back steps back, the timeline scrubs, Reset returns to prefill."""
    _run_size(decode, 4)
    by_label(decode.button, "Run 4").click().run()
    assert decode.session_state[state.STEP] == 4
    by_label(decode.button, "Back").click().run()
    assert decode.session_state[state.STEP] == 3
    timeline = range_data(decode, "decode_timeline")
    assert (timeline["min"], timeline["max"], timeline["value"]) == (0, 4, 3)
    move_range(decode, "decode_timeline", 2)
    assert decode.session_state[state.STEP] == 2 and stat_value(decode, "Entries") == "6"
    by_label(decode.button, "Reset").click().run()
    assert decode.session_state[state.STEP] == 0


def test_the_run_size_picker(decode):
    """Run's size is a choice of 2 to 32 tokens (8 at first, always one chosen); the
    button says and generates that many."""
    picker = choice_data(decode, "decode_run_n")
    assert picker["options"] == ["2", "4", "8", "16", "32"] and picker["value"] == 8
    assert picker["help"] == "Tokens the Run button generates" and not decode.main.number_input
    by_label(decode.button, "Run 8").click().run()
    assert decode.session_state[state.STEP] == 8
    _run_size(decode, 16)
    by_label(decode.button, "Run 16").click().run()
    assert decode.session_state[state.STEP] == 24


def test_the_timeline_shows_from_three_tokens_generated(decode):
    """No timeline while it would only repeat Back and Step (0–1, 0–2): it appears once three tokens
    have been generated, and stays when Back goes below three."""
    keys = lambda: {w.key for w in decode.slider}  # noqa: E731
    for step in (1, 2):
        by_label(decode.button, "Step").click().run()
        assert decode.session_state[state.STEP] == step and "decode_timeline" not in keys()
    by_label(decode.button, "Step").click().run()
    assert range_data(decode, "decode_timeline")["max"] == 3
    by_label(decode.button, "Back").click().run()
    by_label(decode.button, "Back").click().run()
    assert range_data(decode, "decode_timeline")["value"] == 1


def test_the_timeline_scrubs_back_and_forth(decode):
    """The timeline spans the steps reached, says each as "k of n", and moves the step on every
    move, also back to a step seen before."""
    _run_size(decode, 4)
    by_label(decode.button, "Run 4").click().run()
    timeline = range_data(decode, "decode_timeline")
    assert timeline["label"] == "Timeline (tokens generated)" and (timeline["min"], timeline["max"]) == (0, 4)
    assert timeline["format"] == "%d of 4"
    for step in (1, 4, 1):
        move_range(decode, "decode_timeline", step)
        assert decode.session_state[state.STEP] == step == range_data(decode, "decode_timeline")["value"]
        assert decode.query_params.get("step") in (str(step), [str(step)])


def test_growing_heatmap_has_one_row_per_step(decode):
    """The attention heatmap grows by one query row per step, up to the window of the newest rows."""
    _run_size(decode, 2)
    by_label(decode.button, "Run 2").click().run()
    by_label(decode.button, "Step").click().run()
    rows = [row["label"] for row in board(decode, "Attention · head")["groups"][0]["rows"]]
    assert len(rows) == 4 + 3 and rows[-1] == "7 · nice"
    _run_size(decode, 4)
    by_label(decode.button, "Run 4").click().run()
    spec = board(decode, "Attention · head")
    assert "rows 4–11 of 11" in spec["title"]
    assert spec["groups"][0]["rows"][0]["label"] == "4 · so"
    assert spec["columns"][0] == "1 · Today"  # the first key stays in front
    flip(decode, "decode_whole_switch", True)
    assert len(board(decode, "Attention · head")["groups"][0]["rows"]) == 11


def test_work_counts_are_plotted_from_the_engine(decode):
    """Recompute's scores grow with n², the cache's with n."""
    decode.session_state["decode_tab"] = "Work"
    _run_size(decode, 4)
    by_label(decode.button, "Run 4").click().run()
    spec = figure(decode, "Work in each decode step")
    series = {d["name"]: (array(d["x"]), array(d["y"])) for d in spec["data"] if d.get("xaxis", "x") == "x"}
    x, full = series["no cache (recompute)"]
    _, kv = series["KV cache"]
    assert full == [4 * n * n for n in x] and kv == [4 * n for n in x]


def test_mode_picker_changes_the_narration(decode):
    """Choosing 'no cache (recompute)' shows the recompute run and goes into the URL."""
    by_label(decode.button, "Step").click().run()
    assert choice_data(decode, "decode_mode_picker")["options"] == ["recompute", "re-encode", "KV cache"]
    pick(decode, "decode_mode_picker", "recompute")
    assert decode.session_state[state.MODE] == "recompute"
    assert "the whole sequence of 5 tokens is run again" in shown(decode.info[0].value)
    assert decode.query_params.get("mode") in ("recompute", ["recompute"])


def test_figures_for_every_head_count():
    """Every decode figure builds for 1 to 16 heads (subplot grids stay inside plotly's [0, 1])."""
    from viz import Scenario, generate
    from viz.core.engine.model import MODES
    from viz.figures import toy
    for heads in (1, 2, 3, 5, 7, 8, 13, 16):
        scenario = Scenario.from_dict({
            "prompt": "a b c d e f", "heads": [{"name": f"h{i}", "rule": "k.pos <= q.pos"} for i in range(heads)],
            "vocab": [{"token": "x", "weights": [1.0] * heads}, {"token": "y", "weights": [0.5] * heads}]})
        traces = {mode: generate(scenario, 3, mode) for mode in MODES}
        cache = toy.cache_figure(traces["kv"]).data
        assert [t.type for t in cache if t.type == "heatmap"] == ["heatmap"] * 2  # K and V
        # the outline's, the cells' colours (these rules read the query: their keys say q·k, named too)
        assert [t.name for t in cache if t.type != "heatmap"] == ["new entry", "K −1", "K +1",
                                                                  "q·k: worked out when a query reads it", "V: low → high"]
        assert len(toy.work_figure(traces).data) == 2 * len(MODES)
        assert sum(t.type == "heatmap" for t in toy.small_multiples(traces["kv"], 2).data) == heads


def test_text_so_far_has_one_generated_token_per_step(decode):
    """At step k the text shows exactly k generated tokens, then the next one apart."""
    decode.session_state["decode_tab"] = "Text and table"
    for k in (1, 2):
        by_label(decode.button, "Step").click().run()
        text = next(m.value for m in decode.markdown if "→ next:" in m.value)
        assert text.count(":blue-background[") == k


def test_the_generated_table_is_as_tall_as_its_rows(decode, monkeypatch):
    """Text and table's table takes the height of its rows (Streamlit's height="content"), at any step:
    a fixed height drew empty ruled rows under the 4 of step 3 (a student's review)."""
    import streamlit as st
    heights = []
    drawn = st.dataframe

    def spy(*args, **kwargs):
        heights.append(kwargs.get("height", "auto"))
        return drawn(*args, **kwargs)

    monkeypatch.setattr(st, "dataframe", spy)
    decode.session_state["decode_tab"] = "Text and table"
    for _ in range(3):
        by_label(decode.button, "Step").click().run()
    assert len(decode.dataframe[0].value) == 4 and heights and set(heights) == {"content"}


def test_replay_sends_every_step_reached(decode):
    """The replay tab holds one frame per step reached, each the engine's weights for that step."""
    from viz import generate, load_preset
    by_label(decode.button, "Run 8").click().run()
    decode.session_state["decode_tab"] = "Replay in the browser"
    decode.run()
    spec = next(f for f in figures(decode) if f.get("frames"))
    assert [frame["name"] for frame in spec["frames"]] == [str(s) for s in range(9)]
    weights = generate(load_preset("seed"), 4, "kv").steps[3].attention.weights[0, 0]  # head 'even', step 3
    newest = array(spec["frames"][3]["data"][0]["z"])[-1]
    assert newest == pytest.approx(weights.double().tolist(), abs=1e-6)


def _without_turns(spec: dict) -> dict:
    """A board's spec as drawn: without the frames sent ahead, the draw's serial number and the phone's
    step bar (a turn keeps the bar it was sent with)."""
    return {k: v for k, v in spec.items() if k not in ("turns", "draw", "steps")}


@pytest.mark.parametrize("mode, head", [("kv", 0), ("recompute", 0), ("kv", 1)])
def test_the_step_sent_ahead_is_the_step_the_server_shows(decode, mode, head):
    """Every board holds the next step (drawn at the Step click) and the previous one (at Back); after
    the click's rerun the board shows exactly that spec: the browser never shows a number early that
    the server would not have shown. With the stale head 'last' (1) the third board is its cache
    against recomputation at steps 1 and 2, and the next word again at step 0, where nothing is stale."""
    decode.session_state[state.MODE] = mode
    decode.session_state[state.HEAD] = head
    by_label(decode.button, "Step").click().run()
    sent = boards(decode)
    assert sent[2]["title"].startswith("Head 'last': context" if head == 1 else "Next word:")
    assert len(sent) == 3
    ahead = [next(t["spec"] for t in s["turns"] if t["selector"] == ".st-key-decode_step button") for s in sent]
    behind = [next(t["spec"] for t in s["turns"] if t["selector"] == ".st-key-decode_back button") for s in sent]
    assert [t["selector"] for t in sent[0]["turns"]] == [".st-key-decode_step button", ".st-key-decode_back button"]
    by_label(decode.button, "Step").click().run()
    now = boards(decode)
    assert [_without_turns(s) for s in now] == [{**a, "presenter": False} for a in ahead]
    by_label(decode.button, "Back").click().run()
    by_label(decode.button, "Back").click().run()
    back = boards(decode)
    assert decode.session_state[state.STEP] == 0
    assert [_without_turns(s) for s in back] == [{**b, "presenter": False} for b in behind]
    assert back[2]["title"].startswith("Next word:") and ahead[2]["title"] == now[2]["title"]
    assert [t["selector"] for t in back[0]["turns"]] == [".st-key-decode_step button"]  # nothing before step 0


def test_the_run_picker_is_labelled_at_its_left_and_its_help_names_each_way_once(decode):
    """The run picker (recompute / re-encode / KV cache) shows its name beside it, not only to a screen
    reader, and its help names each way once (it read "KV cache: KV cache: …")."""
    from viz.core.lessons import words_decode as words

    assert words.MODE_PICKER in [shown(c.value) for c in decode.caption]
    picker = next(w for w in decode.button_group if w.key == "decode_mode_picker")
    assert picker.label == words.MODE_PICKER
    for name in words.MODE_SHORT.values():
        assert words.MODE_HELP.count(f"**{name}**") == 1
    assert words.MODE_HELP.count("KV cache") == 1


def test_a_windowed_attention_board_carries_the_keys_left_out_in_a_gap_column(decode):
    """After Run 8 on the seed the attention board shows rows 5–12 over keys 1 and 6–12: keys 2–5 stand in
    one dashed gap column holding each row's weight on them (the title says so), and every row's printed
    numbers add up to 1 to the cells' rounding (rows read .17 × 3 = .51 before)."""
    by_label(decode.button, "Run 8").click().run()
    spec = board(decode, "Attention · head")
    assert "rows 5–12 of 12" in spec["title"] and spec["columns"][:3] == ["1 · Today", "2–5 …", "6 · nice"]
    assert "rows 5–12 of 12 · keys 2–5 summed in one column · rows: queries" in spec["title"]
    for row in spec["groups"][0]["rows"]:
        assert row["cells"][1]["gap"] and "keys 2–5 not shown" in row["cells"][1]["tip"]
        printed = sum(float(c["text"]) for c in row["cells"] if c["text"])
        assert printed == pytest.approx(1.0, abs=0.005 * len(row["cells"])), row


@pytest.mark.parametrize("mode", ["recompute", "reencode"])
def test_without_a_cache_the_stale_warning_says_it_is_about_a_kv_cache(decode, mode):
    """Keys on recompute or re-encode: the narration says the whole sequence (or every key) is run again,
    and the yellow box beside it says first that it is about a KV cache, which this run does not use."""
    decode.session_state[state.MODE] = mode
    by_label(decode.button, "Step").click().run()
    assert "cache" not in shown(decode.info[0].value)
    warning = shown(decode.warning[0].value)
    assert warning.startswith("About a KV cache (this run uses none): Head 'last' gets 6 with the KV cache but 7")


def test_the_head_picker_is_labelled_at_its_left_with_one_help_that_says_what_a_head_is(decode):
    """The head picker shows "Head" right at its left, whose (?) defines a head (the glossary's
    sentence); the picker's own label is collapsed for a screen reader and carries no second (?)."""
    from viz.core.lessons.glossary import lookup
    from viz.core.lessons.lesson import HEAD_HELP, HEAD_PICKER

    label = label_beside(decode, "decode_head")
    assert label == {"text": "Head", "help": HEAD_HELP, "label": HEAD_PICKER, "collapsed": True,
                     "picker help": ""}
    assert lookup("head").short[1:] in HEAD_HELP
    mode = label_beside(decode, "decode_mode_picker")  # the run picker too: its label, its one (?)
    assert (mode["text"], mode["collapsed"], mode["picker help"]) == ("Keys", True, "")
