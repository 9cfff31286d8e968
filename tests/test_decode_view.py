"""Tier 1: the Decode page's view (viz.core.lessons.decode) holds every number and sentence the page
shows, checked on the article's seed scenario against values worked out by hand.

The seed: prompt 'Today weather is so' (4 tokens), 4 heads ('even', 'last', 'first', 'all'), d_k = 64,
3 words in the vocabulary, greedy. One cache entry holds 4 × 64 key numbers and 1 value of 4 bytes:
257 × 4 = 1,028 bytes; the buffers start with room for 16 entries (16 × 1,028 = 16,448 bytes).
"""

from __future__ import annotations

from viz import generate, load_preset
from viz.core.engine.budget import Grant
from viz.core.engine.model import WorkCounts
from viz.core.lessons.decode import decode_modes, decode_view

SEED = load_preset("seed")


def runs(predictions: int, modes=("recompute", "kv")) -> dict:
    """Each mode's run with ``predictions`` predictions: steps 0 … predictions − 1."""
    return {m: generate(SEED, predictions, m) for m in modes}


def test_right_after_prefill_the_view_counts_the_prompts_cache_and_says_nothing_can_be_stale():
    """4 entries × 1,028 = 4,112 bytes, no delta yet; prefill scored 4 heads × 4 × 4 = 64 pairs; the 'last'
    head reads n but no key can be stale yet, so no warning, no turn back, and nothing sent ahead without
    the following step."""
    view = decode_view(runs(1), {}, None, 0, "kv", 0)
    cache = view.cache
    assert (cache.entries, cache.entries_delta, cache.nbytes, cache.reserved, cache.grew) == (4, None, 4112, 16448, 0)
    assert cache.per_entry == "Per entry: 4 heads × d_k = 64 key numbers plus 1 value, 4 bytes each."
    assert not view.work_plotted
    assert view.work_caption == "Step forward to see decode work; prefill did 64 scores for all 4 prompt tokens."
    assert view.cache_info.startswith("A head reads n, but right after prefill") and view.agreed == ""
    assert (view.warnings, view.head_texts, view.stale, view.after, view.before) == ((), (), None, None, None)
    assert view.narration.startswith("Prefill read all 4 prompt tokens in one pass")
    assert view.frame.caption == "After prefill · next word 'nice' (p = 0.75)" and view.newest_key


def test_after_one_step_the_view_holds_the_stale_head_its_sentences_and_both_turns():
    """Step 1, head 'last' (1) shown: 5 entries (+1), 5 × 1,028 = 5,140 bytes; the cached key of 'so' went
    stale, so 'last' gets 6 with the cache and 7 recomputed: a gap of 1, said beside the narration. The
    Work tab at length 5: keys 4 heads × 5 = 20 against 4 × 1 = 4, scores 4 × 5² = 100 against 4 × 5 = 20,
    multiply-adds 100 × 64 + 100 + 4 × 3 = 6,512 against 20 × 64 + 20 + 12 = 1,312."""
    view = decode_view(runs(2), {}, runs(3), 1, "kv", 1)
    assert (view.shown_step, view.compared, view.compared_note) == (1, 1, "")
    assert (view.cache.entries, view.cache.entries_delta, view.cache.nbytes) == (5, 1, 5140)
    assert view.gap == "1" and view.stale.name == "last" and view.stale.stale == (3,) and view.stale_shown
    assert view.warnings == (view.stale.why,) and "(6 with the cache against 7 recomputed)" in view.stale.why
    # n said in words, and that no real model's keys go stale (the page's example is a toy's rule)
    assert view.stale.why.startswith("Head 'last' reads n, the length so far, as no real model's key does: ")
    assert len(view.head_texts) == 1 and view.head_texts[0].startswith("Head 'last' (k.pos == n) reads n")
    assert (view.cache_info, view.agreed) == ("", "")
    assert view.narration.startswith("Step 1: 'nice' joins at position 5")
    assert view.work_plotted and view.work_caption == (
        "At length 5, over the 4 heads: keys encoded 20 without a cache vs 4 with it (each head encodes all 5 keys "
        "again at every step, so n² over a generation, against the 1 new key, n in all); query-key scores 100 for a "
        "full recompute vs 20; multiply-adds 6,512 vs 1,312.")
    assert view.repeat.startswith("Why 'nice' again?")
    assert (view.frame.step, view.after.step, view.before.step) == (1, 2, 0)
    assert view.after.caption == "Step 2 · newest query 'nice' (position 6) · next word 'nice' (p = 0.72)"
    assert view.transcript.generated == ("nice",) and view.heads == ("even", "last", "first", "all")


def test_another_head_shown_gets_the_short_warning_and_a_cache_safe_scenario_agrees():
    """Head 'even' shown at step 1: the warning is the stale head's summary, not why (the button shows it);
    the cache-safe scenario's heads all agree, so the tab says so and nothing warns."""
    view = decode_view(runs(2), {}, None, 1, "kv", 0)
    assert not view.stale_shown and view.warnings == (view.check.differing[0].summary,)
    assert view.warnings[0] == ("Head 'last' gets 6 with the KV cache but 7 when every key is encoded again, "
                                "because the cached key of 'so' (position 4) went stale.")
    safe = SEED.cache_safe()
    agreed = decode_view({m: generate(safe, 2, m) for m in ("recompute", "kv")}, {}, None, 1, "kv", 1)
    assert agreed.agreed.startswith("Every head is cacheable") and agreed.gap == "0"
    assert (agreed.warnings, agreed.cache_info, agreed.stale) == ((), "", None)


def test_a_run_cut_by_the_budget_is_said_once_and_compared_where_both_runs_reached():
    """Step 3 asked for; the recomputed run was let reach step 2 only: the view compares at step 2, says so,
    sends no frame back (the cache at step 2 is not what Back shows) and says the cut once."""
    traces = {"kv": generate(SEED, 4, "kv"), "recompute": generate(SEED, 3, "recompute")}
    cut = Grant("recompute", 4, 3, WorkCounts())
    view = decode_view(traces, {"recompute": cut, "kv": Grant("kv", 4, 4, WorkCounts())}, None, 3, "kv", 1)
    assert (view.shown_step, view.compared) == (3, 2)
    assert view.compared_note == "Compared at step 2, the latest step the recomputed run reached."
    assert view.budget_notes == (cut.note,) and "stops at step 2 of the 3 asked for" in cut.note
    assert view.before is None and view.after is None
    recomputed = decode_view(traces, {}, None, 2, "recompute", 1)
    assert not recomputed.newest_key and not recomputed.frame.cache.cached and recomputed.before.step == 1
    assert view.work_caption.startswith("At length 6,")  # the length both runs reached: 4 + 2


def test_the_runs_asked_for_are_the_shown_one_the_compared_two_and_re_encode_for_the_work_tab():
    assert decode_modes("kv", False) == ("recompute", "kv")
    assert decode_modes("reencode", False) == decode_modes("kv", True) == ("recompute", "reencode", "kv")


def test_the_stale_cache_warning_says_it_is_about_a_kv_cache_when_the_run_shown_uses_none():
    """With Keys on recompute or re-encode the narration says every key is encoded again, so the warning
    ("11 of its keys went stale… with the cache") is about what a KV cache would give: it says so first;
    on the KV cache's run it stays as it was."""
    traces = runs(12, ("recompute", "reencode", "kv"))
    for head in (0, 1):  # the stale head's summary, and its longer sentence while it is shown
        kv = decode_view(traces, {}, None, 11, "kv", head)
        assert len(kv.warnings) == 1 and "uses none" not in kv.warnings[0]
        for mode in ("recompute", "reencode"):
            view = decode_view(traces, {}, None, 11, mode, head)
            assert view.warnings == ("About a KV cache (this run uses none):", *kv.warnings)
            assert " again" in view.narration and "cache" not in view.narration
    safe = SEED.cache_safe()  # nothing differs: no warning to say it of
    assert decode_view({m: generate(safe, 2, m) for m in ("recompute", "kv")}, {}, None, 1, "recompute", 1).warnings == ()


def test_a_context_reads_the_same_in_the_warning_and_the_stale_boards_and_figures_titles():
    """At step 11 head 'last' gets 6.8333… with the cache: the warning said 6.833 (fmt) and the board's
    title 6.83; every number in the titles of the stale-cache board and figure is written as the
    warning writes it, at every step."""
    import re

    from viz.figures.board import stale_board
    from viz.figures.stale import stale_figure

    traces = runs(12)
    for step in range(1, 12):
        view = decode_view({m: t for m, t in traces.items()}, {}, None, step, "kv", 1)
        warning = " ".join(view.warnings)
        for title in (stale_board(view.stale)["title"], stale_figure(view.stale).layout.title.text):
            said = re.search(r"context (\S+) (?:cached, |vs )(\S+)", title).groups()
            assert all(f" {n.rstrip(',')} " in warning or f"({n.rstrip(',')} " in warning for n in said), (title, warning)


def test_the_work_caption_names_a_lone_head_in_the_singular():
    """A one-head scenario's caption says "over its one head", not "over the 1 heads"."""
    from viz.core.engine.model import WorkCounts
    from viz.core.lessons.words_decode import work_compared

    caption = work_compared(3, 1, WorkCounts(keys_encoded=3, scores=9), WorkCounts(keys_encoded=1, scores=3))
    assert caption.startswith("At length 3, over its one head: keys encoded 3 without a cache vs 1 with it")
