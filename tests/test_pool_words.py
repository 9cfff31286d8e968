"""Tiers 1 and 2: Memory's paged pool in words (viz.core.lessons.pool): what each scheduler iteration
did to the pool and who the sequences A, B, C are, checked by hand against the pool's blocks; the page
shows both, and its legend names the sequences."""

from __future__ import annotations

from dataclasses import replace

import pytest
from apptest_helpers import board, move_range, on_page, rerun

from viz import load_preset
from viz.core.lessons.pool import pool_narration, sequences_key
from viz.core.serving.paged import decode_together, variants
from viz.core.serving.sequence import Request
from viz.ui import state
from viz.ui.common import md_escape

SOUP = load_preset("your soup")  # "this morning my friend said that your soup is so": 10 tokens


def soup_run(block_size: int = 4, share: bool = True, requests: list[Request] | None = None):
    return decode_together(SOUP, requests or variants(SOUP, 4), block_size, share_prefix=share, max_new_tokens=32)


def test_the_sequences_are_named_by_how_their_prompts_begin():
    """A's prompt is quoted (the page may open on another preset than the sidebar's, which "the
    scenario's" named); B (its last word swapped) repeats its first 9 tokens, C (one word added) all 10."""
    assert sequences_key(soup_run()) == (
        "A, B and C are the 3 sequences (requests) decoded together on one pool: A's prompt is 'this "
        "morning my friend said that your soup is so'; B's repeats its first 9 tokens and C's its first 10.")


def test_prefills_say_which_blocks_are_shared_and_which_copied_on_write():
    """Blocks of 4: A's 10 tokens fill blocks 0, 1 and half of 2; B and C share 0 and 1 (ref 2, then 3) and
    each gets a copy of the half-filled block 2 (blocks 3 and 4) before writing its own next token."""
    run = soup_run()
    assert [s.label for s in run.snapshots[:3]] == ["prefill A", "prefill B", "prefill C"]
    assert pool_narration(run, 0) == ("The pool starts empty: A's prompt (10 tokens) is stored in blocks 0, 1 and "
                                      "2 of 4 slots; 2 slots of block 2 wait for the next tokens.")
    assert pool_narration(run, 1) == (
        "B's prompt begins with A's first 9 tokens, so B shares A's blocks 0 and 1 (ref 2 now) instead of "
        "storing them again; A's partly filled block 2 is copied to block 3 before B writes into it (copy on write).")
    assert pool_narration(run, 2).startswith("C's prompt begins with A's first 10 tokens, so C shares A's blocks "
                                             "0 and 1 (ref 3 now)")
    assert "copied to block 4" in pool_narration(run, 2)


def test_decodes_say_where_each_new_token_went():
    """Decode 3: A's and B's last blocks (2 and 3) are full, so they get new blocks 6 and 7; C (11 + 2
    tokens) writes its third new word into block 5, which decode 2 handed it."""
    run = soup_run()
    words = [s.words[2] for s in run.sequences]  # the word each stores at decode 3: its third
    snap = run.snapshots[5]
    assert snap.label == "decode 3" and snap.tables == ((0, 1, 2, 6), (0, 1, 3, 7), (0, 1, 4, 5))
    assert pool_narration(run, 5) == (
        f"Decode 3: A stores '{words[0]}' in block 6, newly handed out; B stores '{words[1]}' in block 7, newly "
        f"handed out; C stores '{words[2]}' in block 5. Blocks 0 and 1 are stored once for A, B and C.")


def test_without_sharing_every_prompt_has_blocks_of_its_own():
    """Sharing off: B's 10 tokens go to blocks 3–5 and C's 11 to 6–8 (one slot of 8 left)."""
    run = soup_run(share=False)
    assert pool_narration(run, 1) == ("B's prompt (10 tokens) is stored in blocks 3, 4 and 5 of 4 slots; "
                                      "2 slots of block 5 wait for the next tokens.")
    assert pool_narration(run, 2).endswith("1 slot of block 8 waits for the next tokens.")
    assert "stored once" not in pool_narration(run, 3)


def test_long_runs_of_blocks_read_as_ranges_and_a_fork_without_full_blocks_still_says_so():
    """Blocks of 1: A's prompt is blocks 0–9. Blocks of 16: B forks A inside A's only, partly filled
    block, so nothing is shared for long: block 0 is copied to block 1 at once."""
    assert pool_narration(soup_run(1), 0) == ("The pool starts empty: A's prompt (10 tokens) is stored in blocks "
                                                "0–9 of 1 slot.")
    assert pool_narration(soup_run(1), 1).startswith("B's prompt begins with A's first 9 tokens, so B shares "
                                                     "A's blocks 0–8 (ref 2 now)")
    assert pool_narration(soup_run(16), 1) == (
        "B's prompt begins with A's first 9 tokens, so B forks A; A's partly filled block 0 is copied to "
        "block 1 before B writes into it (copy on write).")


def test_a_copy_made_by_a_decode_is_named():
    """B's prompt is A's: B shares all three blocks and stores nothing; at decode 1 the first writer (A)
    gets a copy of the shared, half-filled block 2 (block 3)."""
    run = soup_run(requests=[variants(SOUP, 2)[0], Request.of("B", SOUP, 2)])
    assert pool_narration(run, 1).endswith("shares A's blocks 0, 1 and 2 (ref 2 now) instead of storing them "
                                           "again; it stores nothing new.")
    assert f"A stores '{run.sequences[0].words[0]}' in block 3, a copy of shared block 2 (copy on write)" \
        in pool_narration(run, 2)


@pytest.fixture
def at(app):
    """The app on the Memory page, with a visitor's own copy of the seed (so it is not swapped for the
    varied preset): its cache-safe form shares prefixes."""
    app = on_page(app, "pages/memory.py")
    app.session_state[state.SCENARIO] = replace(load_preset("seed"), title="The seed, retitled")
    app.session_state[state.VERSION] += 1
    return rerun(app)


def test_the_memory_page_narrates_the_iteration_shown_and_names_the_sequences(at):
    """The pool's narration follows the stepper (the first prefill first, as the pool opens; the last
    iteration at its end); the caption says who A, B and C are, and the legend says they are sequences."""
    scenario = load_preset("seed").cache_safe()
    run = decode_together(scenario, variants(scenario, 4), 4, max_new_tokens=32)
    infos = [i.value for i in at.info]
    assert md_escape(pool_narration(run, 0)) in infos
    assert md_escape(sequences_key(run)) in [c.value for c in at.caption]
    move_range(at, "memory_snapshot_range", len(run.snapshots) - 1)
    assert md_escape(pool_narration(run, len(run.snapshots) - 1)) in [i.value for i in at.info]
    legend = [item["label"] for item in board(at, "Physical blocks")["legend"]]
    assert legend[:3] == ["sequence A", "sequence B", "sequence C"]
