"""Tier 2: the Memory page renders inside the app and every control changes what it should."""

from __future__ import annotations

from dataclasses import replace

import pytest
import pandas as pd
from apptest_helpers import (board, boards, by_label, cells, errors, figure, flip, move_range, on_page, plain_table, range_data, switched,
                             rerun, shown, stat_labels, stat_value)

from viz import load_preset
from viz.core.device import pick_device
from viz.core.serving.compress import CacheSpec, EvictionPolicy, compare_with_full
from viz.core.limits import MAX_TOKENS
from viz.core.scale.memory import format_bytes
from viz.core.serving.paged import decode_together, variants
from viz.core.serving.workload import Sharing
from viz.ui import state
from viz.ui.common import md_escape

EDITED_SEED = replace(load_preset("seed"), title="The seed, retitled")
PAGE = "pages/memory.py"


@pytest.fixture
def at(app):
    """The app, switched to the Memory page."""
    app = on_page(app, PAGE)
    # a visitor's own scenario with the seed's heads: the unedited seed itself opens these pages on
    # the varied preset (tests/test_lessons_vary.py), so the seed's n-reading head is tested edited
    app.session_state[state.SCENARIO] = EDITED_SEED
    app.session_state[state.VERSION] += 1
    return rerun(app)


def open_compress(at):
    """Open the "Eviction and quantisation" tab (tabs build only while open; choosing one reruns)."""
    at.session_state["memory_tab"] = "Eviction and quantisation"
    return rerun(at)


def to_last_iteration(at):
    """Step the pool to its last scheduler iteration (it opens at its first), as a visitor drags the slider."""
    return move_range(at, "memory_snapshot_range", range_data(at, "memory_snapshot_range")["max"])


def frame(at, column: str):
    """The first table with this column: a data grid's frame, or a plain table's text as a frame."""
    grid = next((d.value for d in at.main.dataframe if column in d.value.columns), None)
    return grid if grid is not None else pd.DataFrame(plain_table(at, column))


def test_seed_is_made_cache_safe_and_shares_prefixes(at):
    """The seed's 'last' head reads n: the page says so, uses the cache-safe form, and B and C share A's blocks."""
    assert any("'last' reads n" in shown(i.value) for i in at.info)
    assert switched(at, "memory_cache_safe_switch")
    shares = list(frame(at, "shares")["shares"])
    assert shares == ["—", "3 tokens with A", "4 tokens with A"]
    assert any("identical" in s.value for s in at.success)


def test_the_paged_view_names_its_sharing_system(at):
    """The paged tab says it shows copy on write, as for forks, and where prefix caching is taught."""
    assert md_escape(Sharing.COPY_ON_WRITE.sentence) in [c.value for c in at.caption]


def test_paged_metrics_are_the_engine_numbers(at):
    """The waste metrics equal decode_together's report for the same settings."""
    scenario = load_preset("seed").cache_safe()
    run = decode_together(scenario, variants(scenario, 4), 4, max_new_tokens=32)
    assert stat_value(at, "Contiguous reservation") == format_bytes(run.waste.nbytes(run.waste.contiguous_slots))
    assert stat_value(at, "Paged blocks in use") == format_bytes(run.waste.nbytes(run.waste.paged_slots))
    assert stat_value(at, "Shared, stored once") == f"{run.waste.shared} tokens"


def test_turning_sharing_off_stops_sharing(at):
    """Without prefix sharing no sequence shares and the blocks in use grow."""
    before = stat_value(at, "Paged blocks in use")
    flip(at, "memory_share_switch", False)
    rerun(at)
    assert list(frame(at, "shares")["shares"]) == ["—", "—", "—"]
    assert stat_value(at, "Shared, stored once") == "0 tokens"
    assert stat_value(at, "Paged blocks in use") != before


def test_without_the_cache_safe_form_sharing_is_refused(at):
    """Keeping the n-reading head turns sharing off (the engine refuses it) and says nothing is identical."""
    flip(at, "memory_cache_safe_switch", False)
    rerun(at)
    assert list(frame(at, "shares")["shares"]) == ["—", "—", "—"]
    assert not at.success


def test_block_size_and_reserve_change_the_picture(at):
    """Block size 1 leaves no empty slots; a larger reservation wastes more contiguous memory."""
    at.select_slider(key="memory_block_size").set_value(1)
    rerun(at)
    to_last_iteration(at)
    table = frame(at, "logical 0")
    assert "logical 6" in table.columns  # one block per token: 7 tokens in A
    before = stat_value(at, "Never filled")
    at.slider(key="memory_reserve").set_value(200)
    rerun(at)
    assert stat_value(at, "Never filled") != before


def test_editing_a_variant_prompt_changes_what_is_shared(at):
    """A prompt B that shares only 'Today' with A shares one token; an empty one shows an error."""
    box = by_label(at.text_input, "Prompt B")
    box.input("Today is cold")
    rerun(at)
    assert list(frame(at, "shares")["shares"])[1] == "1 tokens with A"
    box = by_label(at.text_input, "Prompt B")
    box.input("   ")
    rerun(at)
    assert any("Prompt B" in e for e in errors(at))
    assert list(frame(at, "shares")["shares"])[1] == "3 tokens with A"


def test_iteration_stepper_walks_the_snapshots(at):
    """The pool opens at its first scheduler iteration (A's prefill), like Serving and Decode, so the
    forward button (→ for a presenter) moves to the second (B's prefill) and on to the decode iterations."""
    assert range_data(at, "memory_snapshot_range")["value"] == 0
    table = frame(at, "tokens")
    assert table["sequence"].tolist() == ["A"] and table["tokens"].tolist() == ["4"]
    at.button(key="memory_snapshot_forward").click()
    rerun(at)
    assert range_data(at, "memory_snapshot_range")["value"] == 1
    assert frame(at, "tokens")["sequence"].tolist() == ["A", "B"]
    to_last_iteration(at)
    assert frame(at, "tokens")["sequence"].tolist() == ["A", "B", "C"]
    assert at.button(key="memory_snapshot_forward").disabled


def test_a_new_run_keeps_the_moment_shown_else_opens_at_its_first_frame(at):
    """Changed settings make a new run: the pool stays at the iteration of the same name where the new
    run has one (sharing flipped at "decode 1" shows "decode 1" without sharing), else goes back to its
    first iteration; the eviction stepper likewise keeps its prediction; a look at the other tab is no
    new run."""
    def moment(key: str) -> str:
        data = range_data(at, key)
        return data["labels"][data["value"] - data["min"]]

    labels = range_data(at, "memory_snapshot_range")["labels"]
    move_range(at, "memory_snapshot_range", labels.index("decode 1"))
    flip(at, "memory_share_switch", False)
    assert moment("memory_snapshot_range") == "decode 1"
    to_last_iteration(at)
    last = moment("memory_snapshot_range")
    by_label(at.slider, "Predictions per sequence").set_value(2)  # fewer decodes: that iteration is gone
    rerun(at)
    assert last not in range_data(at, "memory_snapshot_range")["labels"]
    assert range_data(at, "memory_snapshot_range")["value"] == 0
    open_compress(at)
    at.button(key="memory_prediction_forward").click()
    rerun(at)
    step = range_data(at, "memory_prediction_range")["value"]
    at.session_state["memory_tab"] = "Paged blocks"
    rerun(at)
    open_compress(at)
    assert range_data(at, "memory_prediction_range")["value"] == step
    by_label(at.slider, "Window (recent tokens kept)").set_value(4)
    rerun(at)
    assert range_data(at, "memory_prediction_range")["value"] == step


def test_eviction_window_changes_the_comparison(at):
    """The sliding window's numbers equal compare_with_full; a window covering everything changes nothing."""
    open_compress(at)
    scenario = load_preset("seed")  # as it is: the Paged tab's cache-safe rewrite stays on that tab
    expected = compare_with_full(scenario, 6, CacheSpec(EvictionPolicy(window=3)))
    assert stat_value(at, "Largest context error") == f"{expected.max_context_error:.3g}"
    shown_errors = [float(x.replace(",", "")) for x in frame(at, "logit error")["logit error"]]  # the table's text
    assert shown_errors == pytest.approx([s.logit_error for s in expected.steps], rel=0.01, abs=0.01)
    window = by_label(at.slider, "Window (recent tokens kept)")
    window.set_value(len(scenario.tokens) + 6)
    rerun(at)
    assert stat_value(at, "Largest context error") == "0"
    assert stat_value(at, "First changed word") == "none"


def test_sinks_can_change_the_chosen_word(at):
    """Sinks + window (last 2, first 1) changes the second word, as the engine finds."""
    open_compress(at)
    at.segmented_control(key="memory_method").set_value("Sinks + window")
    rerun(at)
    by_label(at.slider, "Window (recent tokens kept)").set_value(2)
    rerun(at)
    assert stat_value(at, "First changed word") == "prediction 1"
    assert "warm" in " ".join(m.value for m in at.markdown)


def test_drop_by_hand_evicts_the_chosen_positions(at):
    """Dropping positions by hand: the table shows one key fewer per dropped position."""
    open_compress(at)
    at.segmented_control(key="memory_method").set_value("Drop by hand")
    rerun(at)
    drop = by_label(at.multiselect, "Evict prompt positions")
    drop.select(1).select(3)
    rerun(at)
    table = frame(at, "kept")
    assert table["kept"].tolist()[1] == "2 of 5"


def test_quantise_controls(at):
    """int8 per-token leaves the words unchanged and saves bytes; KIVI's group and window set the bytes held,
    which count the codes, the scales and the full-precision window."""
    open_compress(at)
    at.segmented_control(key="memory_method").set_value("Quantise")
    rerun(at)
    assert stat_value(at, "First changed word") == "none"
    int8 = compare_with_full(load_preset("seed"), 6, CacheSpec(bits="int8"))  # on the device the app picks
    assert stat_value(at, "Largest context error") == f"{int8.max_context_error:.3g}"
    if pick_device().type == "cpu":  # exact there; a GPU's division may differ in the last bit (about 1e-6)
        assert int8.max_context_error == 0
    at.segmented_control(key="memory_bits").set_value("int4")
    at.segmented_control(key="memory_scales").set_value("KIVI")
    rerun(at)
    at.select_slider(key="memory_group").set_value(8)
    at.slider(key="memory_residual").set_value(2)
    rerun(at)
    expected = compare_with_full(load_preset("seed"), 6, CacheSpec(bits="int4", scales="KIVI", group=8, residual=2))
    assert stat_value(at, "Bytes held") == format_bytes(expected.steps[-1].nbytes_compressed)
    assert stat_value(at, "Largest context error") == f"{expected.max_context_error:.3g}"
    if pick_device().type == "cpu":
        assert expected.max_context_error == 0
    assert any("KIVI" in c.value and "scales" in c.value for c in at.caption)


def test_prediction_stepper_selects_the_inspected_step(at):
    """Each prediction is narrated under the attention: prediction 1 (the first eviction can change)
    by the keys the smaller cache holds and the word chosen; prediction 0 says the prefill reads the
    whole prompt."""
    open_compress(at)
    said = [i.value.replace("\\", "") for i in at.info]
    assert any(s.startswith("Prediction 1, after ") and "the smaller cache holds" in s for s in said), said
    move_range(at, "memory_prediction_range", 0)
    assert any("prefill pass" in i.value for i in at.info)


def test_a_prompt_at_the_length_limit_offers_prompts_within_it(at):
    """A 512-token prompt (the limit): prompt C ends with the last word instead of growing past the
    limit, so the page shows no refusal the visitor did not cause, and C shares 511 tokens with A."""
    long = load_preset("cache-safe").with_tokens([f"w{i}" for i in range(MAX_TOKENS)], [1.0] * MAX_TOKENS)
    at.session_state[state.SCENARIO] = long
    at.session_state[state.VERSION] += 1
    rerun(at)
    assert not errors(at)
    assert list(frame(at, "shares")["shares"])[1:] == [f"{MAX_TOKENS - 1} tokens with A"] * 2


def test_a_long_prompt_renders_with_a_bounded_picture(at):
    """A 120-token prompt renders both tabs; the pool picture draws at most 48 blocks."""
    long = load_preset("cache-safe").with_tokens([f"w{i}" for i in range(120)], [float(i % 7) for i in range(120)])
    at.session_state[state.SCENARIO] = long
    at.session_state[state.VERSION] += 1
    at.select_slider(key="memory_block_size").set_value(2)
    rerun(at)
    pool = board(at, "Physical blocks")
    assert len(pool["groups"][0]["rows"]) == 48 and "not drawn" in pool["title"]
    assert list(frame(at, "shares")["shares"])[1] == "119 tokens with A"
    open_compress(at)
    at.segmented_control(key="memory_method").set_value("Drop by hand")
    rerun(at)
    expected = compare_with_full(long, 6, CacheSpec(EvictionPolicy(drop=frozenset({2}))))
    assert stat_value(at, "Largest context error") == f"{expected.max_context_error:.3g}"


def test_only_the_open_tab_is_built(at):
    """A first view builds and sends the paged tab alone; choosing the other tab builds that one instead."""
    assert "Contiguous reservation" in stat_labels(at) and "Bytes held" not in stat_labels(at)
    open_compress(at)
    assert "Bytes held" in stat_labels(at) and "Contiguous reservation" not in stat_labels(at)


def test_the_pool_and_its_waste_are_boards_with_the_engines_numbers(at):
    """The pool picture is a board: one row per physical block, A's prompt in its first block; the
    waste bars give each layout's slots and bytes as decode_together counts them. Blocks wider than
    cell text (32 slots) go to Plotly, with the same title."""
    scenario = load_preset("seed").cache_safe()
    run = decode_together(scenario, variants(scenario, 4), 4, max_new_tokens=32)
    pool = board(at, "Physical blocks")
    assert cells(pool)[0] == list(run.snapshots[-1].slots[0])
    waste = board(at, "Memory for the same sequences")
    contiguous = run.waste.nbytes(run.waste.contiguous_slots)
    assert waste["bars"][0]["text"] == (f"{run.waste.tokens} + {run.waste.contiguous_waste} slots · "
                                        f"{format_bytes(contiguous)}")
    assert [round(sum(s["share"] for s in bar["segments"]), 6) for bar in waste["bars"]][0] == 1.0
    at.select_slider(key="memory_block_size").set_value(32)
    rerun(at)
    assert "Physical blocks" in figure(at, "Physical blocks")["layout"]["title"]["text"]
    assert not any("Physical blocks" in spec["title"] for spec in boards(at))


def test_settings_survive_a_look_at_the_other_tab(at):
    """Only the open tab is built, yet what the visitor set on each tab is still set when they come
    back: the paged tab's block size and iteration, the other tab's method and window."""
    at.select_slider(key="memory_block_size").set_value(2)
    rerun(at)
    move_range(at, "memory_snapshot_range", 1)
    open_compress(at)
    at.segmented_control(key="memory_method").set_value("Sinks + window")
    rerun(at)
    at.session_state["memory_tab"] = "Paged blocks"
    rerun(at)
    assert at.select_slider(key="memory_block_size").value == 2
    assert range_data(at, "memory_snapshot_range")["value"] == 1
    open_compress(at)
    assert at.segmented_control(key="memory_method").value == "Sinks + window"
