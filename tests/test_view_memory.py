"""Tier 1: the Memory page's views (viz.core.lessons.memory): every number and sentence each tab shows,
worked out before the tab is drawn, checked against values worked out by hand."""

from __future__ import annotations

from viz import load_preset
from viz.core.engine.explain import fmt
from viz.core.lessons import words_memory as words
from viz.core.lessons.memory import compress_view, paged_view
from viz.core.scale.memory import format_bytes
from viz.core.serving.compress import CacheSpec, EvictionPolicy
from viz.core.serving.paged import variants
from viz.ui.common import md_escape

SOUP = load_preset("your soup")  # "this morning my friend said that your soup is so": 10 tokens, 3 heads


def test_the_paged_view_holds_the_pools_stats_narrations_and_the_sharing_check():
    """A, B (10 tokens) and C (11) make 4 predictions each in blocks of 4, 32 new tokens reserved; a slot
    (one token's keys and values) is 196 bytes. Contiguous: 31 prompt tokens + 3 × 32 = 127 slots, 127 × 196
    = 24,892 B = 24.3 KiB; the tokens stored are 31 + 3 × 3 = 40 (the last prediction is not stored), so
    127 − 40 = 87 are never filled (17,052 B = 16.7 KiB). Paged: 8 blocks = 32 slots (6,272 B = 6.12 KiB),
    24 of them written, so 8 empty and 40 − 24 = 16 tokens shared (3,136 B = 3.06 KiB). Without sharing
    each sequence's 13, 13 and 14 tokens take 4 blocks: 48 slots."""
    view = paged_view(SOUP, variants(SOUP, 4), 4, 4, 32, True, format_bytes)
    assert view.run.waste.slot_nbytes == 196 and view.reserve == 32 and view.grant_note == ""
    assert view.names == ("A", "B", "C")
    assert view.labels == ("prefill A", "prefill B", "prefill C", "decode 1", "decode 2", "decode 3")
    assert len(view.narrations) == 6
    assert view.narrations[0] == ("The pool starts empty: A's prompt (10 tokens) is stored in blocks 0, 1 and "
                                  "2 of 4 slots; 2 slots of block 2 wait for the next tokens.")
    assert view.opening == 0  # the pool opens on A's prompt in its blocks, as that iteration says
    assert view.key.startswith("A, B and C are the 3 sequences (requests) decoded together on one pool")
    assert (view.contiguous, view.never_filled, view.paged, view.shared) == ("24.3 KiB", "16.7 KiB", "6.12 KiB",
                                                                             "16 tokens")
    assert view.helps == ("127 slots: each prompt + 32 new tokens.", "87 reserved slots the answers did not need.",
                          "32 slots in 8 blocks; 8 of them empty at the ends of blocks.",
                          "3.06 KiB that prefix sharing did not store twice.")
    assert view.check == ("Every word, context and logit with shared blocks is identical to decoding each "
                          "sequence alone (48 slots without sharing, 32 with).")
    assert view.lesson.title == "Why it matters: what the PagedAttention paper measured"


def test_without_sharing_the_paged_view_runs_no_check():
    """Sharing off: nothing to check against, so no second run and no sentence; nothing is shared."""
    view = paged_view(SOUP, variants(SOUP, 4), 4, 4, 32, False, format_bytes)
    assert view.check == "" and view.shared == "0 tokens"


def test_the_eviction_view_holds_the_bytes_saved_the_outputs_and_the_steppers_labels():
    """Window 3 + 1 sink over 6 predictions: the full cache holds 10 + 5 = 15 tokens after the last one
    (15 × 196 = 2,940 B = 2.87 KiB), the smaller 4 (784 B): 2,156 B = 2.11 KiB saved. Prediction k comes
    after the prompt's last word ("so") then the k-th generated word."""
    spec = CacheSpec(EvictionPolicy(window=3, sinks=1))
    view = compress_view(SOUP, 6, spec, False, format_bytes, md_escape)
    comparison = view.comparison
    assert (view.held, view.held_delta, view.held_help) == ("784 B", "-2.11 KiB vs full",
                                                            "Full cache: 2.87 KiB after the last prediction.")
    assert view.context_error == f"{comparison.max_context_error:.3g}"
    assert view.logit_error == f"{comparison.max_logit_error:.3g}"
    generated = comparison.tokens[10:]
    assert len(generated) == 6 and view.first_change == "none" and comparison.free_tokens[10:] == generated
    assert view.outputs == (f"**Full cache** generates: {' '.join(generated)}  \n"
                            f"**keep the last 3 \\+ the first 1** generates: {' '.join(generated)}")
    assert view.labels == ("0 · after so", *(f"{k} · after {w}" for k, w in enumerate(generated[:5], start=1)))
    assert view.lesson is not None and view.note == "" and not view.quantise


def test_the_quantise_view_has_the_note_and_no_eviction_lesson():
    """Two predictions, numbered 0 (the prefill's) and 1; quantising has no eviction lesson."""
    view = compress_view(SOUP, 2, CacheSpec(bits="int8", scales="per-token"), True, format_bytes, md_escape)
    assert view.lesson is None and view.note == words.QUANTISE_NOTE and view.quantise
    assert view.labels == ("0 · after so", f"1 · after {view.comparison.tokens[10]}") and view.grant_note == ""


def test_a_bytes_delta_says_which_way():
    assert words.bytes_delta(2048, format_bytes) == "-2 KiB vs full"
    assert words.bytes_delta(-512, format_bytes) == "+512 B vs full"
    assert words.bytes_delta(0, format_bytes) is None


def test_each_prediction_is_narrated_under_the_attention():
    """A window of 3 without sinks: from prediction 1 on the smaller cache holds 3 of the 10 + k keys and
    head 'first' (its one key, position 1, evicted) moves most; the narration says so, with its two
    contexts and whether the word changed. Prediction 0 is the prefill's; quantising holds every key."""
    view = compress_view(SOUP, 6, CacheSpec(EvictionPolicy(window=3, sinks=0)), False, format_bytes, md_escape)
    comparison = view.comparison
    assert view.narrations[0] == words.PREDICTION_ZERO and len(view.narrations) == len(comparison.steps) == 6
    assert view.opening == 1  # the stepper opens on the first prediction eviction acts on
    for k, (step, said) in enumerate(zip(comparison.steps[1:], view.narrations[1:]), start=1):
        first = SOUP.head_names.index("first")
        assert said.startswith(f"Prediction {k}, after '{comparison.tokens[9 + k]}': the smaller cache holds "
                               f"3 of the {10 + k} keys; head 'first' moves most, its context from "
                               f"{fmt(float(step.context_full[first]))} to {fmt(float(step.context_compressed[first]))}")
        changed = step.token_full != step.token_compressed
        assert said.endswith(f"the smaller one '{step.token_compressed}': the word changed." if changed
                             else f"both caches choose '{step.token_full}'.")
    quantised = compress_view(SOUP, 2, CacheSpec(bits="int8", scales="per-token"), True, format_bytes, md_escape)
    single = compress_view(SOUP, 1, CacheSpec(bits="int8", scales="per-token"), True, format_bytes, md_escape)
    assert quantised.opening == 1 and single.opening == 0  # one prediction: the prefill's is all there is
    assert quantised.narrations[0].startswith("Prediction 0, after 'so': the smaller cache holds all 10 keys, "
                                              "in fewer bits; no head's context moves; both caches choose")
