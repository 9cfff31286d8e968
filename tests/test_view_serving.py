"""Tier 1: the Serving sections' views (viz.core.serving.view): every number and sentence a section
shows, worked out before it is drawn, checked against values worked out by hand. Runs reduced to what
the views read, with numbers chosen by hand, stand in for served runs where the numbers are the point."""

from __future__ import annotations

from types import SimpleNamespace as Run

from viz import load_preset
from viz.core.serving.scheduler import serve
from viz.core.scale.memory import format_bytes
from viz.core.serving import words
from viz.core.serving.explain import FLASH_TRAFFIC_NOTE, narrate_chunking
from viz.core.serving.papers import chunking_lesson, speculation_lesson
from viz.core.serving.view import batching_view, chunking_view, flash_view, speculation_view
from viz.core.serving.workload import PREEMPTION_NOTE, ServingConfig, workload_preset
from viz.ui.common import md_escape
from serving_fixtures import one_thread  # noqa: F401  (autouse: one torch thread)


def served(makespan, throughput, padding, ttft, policy, ticks, recomputed=0, swap_bytes=0):
    """A run's numbers (``ticks``: each iteration's start and end)."""
    means = {"ttft": ttft, "tpot": 2.0}
    return Run(makespan=makespan, throughput=throughput, padding=padding, mean=means.__getitem__,
               config=Run(policy=policy), recomputed=recomputed, swap_bytes=swap_bytes,
               iterations=tuple(Run(start=a, end=b) for a, b in ticks))


def test_the_batching_view_holds_the_stats_deltas_helps_and_stepper_labels():
    """Continuous: 30 ticks, 40 tokens/100 ticks, TTFT 5, 6 tokens recomputed, 3072 B (3 KiB) swapped;
    static: 45, 25, TTFT 12.5, 9 padding rows. Deltas continuous − static: 40 − 25 = +15, 5 − 12.5 = −7.5."""
    continuous = served(30, 40.0, 0, 5.0, "continuous", [(0, 12), (12, 30)], recomputed=6, swap_bytes=3072)
    static = served(45, 25.0, 9, 12.5, "static", [(0, 20), (20, 45)])
    view = batching_view(continuous, static, format_bytes)
    assert (view.throughput, view.throughput_delta, view.ttft, view.ttft_delta) == ("40", "+15", "5 ticks",
                                                                                   "-7.5 ticks")
    assert view.helps == ("Ticks to finish every request. Static batching: 45.",
                          "Tokens per 100 ticks. Static batching: 25.",
                          "Time to first token, in ticks. Static batching: 12.5.",
                          "Rows computed for nothing. Static batching: 9.",
                          "6 tokens to recompute, 3 KiB swapped.")
    assert view.continuous.labels == ("1 · ticks 0–12", "2 · ticks 12–30") and not view.continuous.reserved
    assert view.static.labels == ("1 · ticks 0–20", "2 · ticks 20–45") and view.static.reserved
    assert view.shown("static") is view.static and view.other("static") is view.continuous
    assert view.text == view.comparison.text and view.text.startswith("Continuous batching finishes the workload in 30")
    assert view.preemption_note == PREEMPTION_NOTE
    assert view.continuous.span == view.static.span == 45  # one time axis: the longer run's end


def test_continuous_and_static_timelines_share_one_time_axis():
    """Switching "Step through" between the policies keeps the time axis: both timelines (stepped and
    drawn whole below) run to the longer run's last tick, so their bars compare (static's ran 0-250,
    continuous's 0-200 before)."""
    from viz.figures.serving import timeline_figure

    from viz.core.serving.workload import serving_refusal

    scenario = load_preset("seed")
    scenario = scenario.cache_safe() if serving_refusal(scenario) else scenario
    workload = workload_preset(scenario, "a burst")
    runs = [serve(scenario, workload, ServingConfig(num_blocks=32, policy=policy)) for policy in ("continuous", "static")]
    view = batching_view(*runs, format_bytes)
    ends = [run.iterations[-1].end for run in runs]
    assert ends[0] != ends[1] and view.continuous.span == view.static.span == max(ends)
    ranges = {tuple(timeline_figure(stepped.run, 0, span=stepped.span).layout.xaxis.range)
              for stepped in (view.continuous, view.static)}
    assert len(ranges) == 1 and ranges.pop()[1] >= max(ends)


def test_the_chunking_view_follows_the_longest_prompt():
    """'one long prompt, four short': the fourth request (index 3) has the long prompt."""
    scenario = load_preset("cache-safe")
    workload = workload_preset(scenario, "one long prompt, four short")
    whole = serve(scenario, workload, ServingConfig(num_blocks=32))
    chunked = serve(scenario, workload, ServingConfig(num_blocks=32, chunk_size=8))
    view = chunking_view(whole, chunked)
    assert view.longest == 3 and view.narration == narrate_chunking(whole, chunked, 3)
    assert view.series == ("whole prompts", "chunks of 8") and view.heading == "Chunks of 8, iteration by iteration"
    assert view.chunked.name == "chunked" and len(view.chunked.labels) == len(chunked.iterations)
    assert view.chunked.title == "Chunks of 8, iteration by iteration (time in ticks)"  # over its timeline
    assert view.why == chunking_lesson(8)  # the "Why it matters" fold, for this chunk


def spec_run(greedy=True, same_words=True, words_made=("a", "b"), **numbers):
    base = dict(acceptance=0.75, accepted=6, drafted=8, seconds=0.0123, extra_seconds=-0.0045, plain_seconds=0.0168,
                max_logit_diff=1.234e-6, plain_passes=12, rounds=(), prompt=("The", " cat"), draft="prompt lookup")
    return Run(greedy=greedy, same_words=same_words, words=words_made, **{**base, **numbers})


CARD = dict(k=4, most=8, gpu="H100 SXM", ridge=295.0)  # the guesses per round and the GPU the fold speaks of


def test_the_speculation_view_writes_the_times_and_the_outputs():
    """6 of 8 guesses kept: 75 %; 12.3 ms against 16.8 ms plain, 4.5 ms saved; the "Why it matters"
    fold is the papers' lesson for the run, k and the card."""
    run = spec_run()
    view = speculation_view(run, md_escape, **CARD)
    assert view.why == speculation_lesson(run, 4, 8, gpu="H100 SXM", ridge=295.0)
    assert (view.acceptance, view.acceptance_help) == ("75%", "6 of 8.")
    assert (view.time, view.time_delta) == ("12.3 ms", "-4.5 ms")
    assert view.time_help == "Plain decoding: 16.8 ms (one measurement on this busy machine)."
    assert (view.logit_diff, view.plain_passes) == ("1.2e-06", "Plain decoding: 12, one per word.")
    assert view.output == "**Output** (identical to the target alone): a b" and not view.same_word
    assert speculation_view(spec_run(words_made=("x", "x")), md_escape, **CARD).same_word
    assert speculation_view(spec_run(same_words=False), md_escape, **CARD).same == "NOT the target's words"
    sampled = speculation_view(spec_run(greedy=False, words_made=("sat", " down")), md_escape, model="GPT-2", **CARD)
    assert sampled.output == ("**GPT\\-2, draft: prompt lookup** (sampled: the target's distribution, not its exact "
                              "words): The cat → **sat down**")


def test_the_flash_view_says_which_way_the_bytes_went():
    """Tiles move 3 KiB against the naive 5 KiB: 2 KiB saved; one visit needs 512 B against 4 KiB."""
    run = Run(flash=Run(total=3072), naive=Run(total=5120), bytes_saved=2048, flash_fast_bytes=512,
              naive_fast_bytes=4096, max_abs_diff=2.5e-7, tolerance=1e-5)
    view = flash_view(run, format_bytes)
    assert (view.moved, view.moved_delta, view.moved_help) == ("3 KiB", "-2 KiB vs naive",
                                                                "The naive pass moves 5 KiB.")
    assert (view.fast, view.fast_help) == ("512 B", "The naive pass needs each head's n × n scores at once: 4 KiB.")
    assert (view.diff, view.diff_help) == ("2.5e-07", "Within the bound 1e-05: the same sums in another order, "
                                                      "one rescale per tile.")
    assert words.bytes_delta(-1024, format_bytes) == "+1 KiB vs naive"
    assert view.traffic_note == FLASH_TRAFFIC_NOTE


def test_the_limits_and_the_identical_check_read_as_before():
    assert words.limits({"requests": 1000, "block size": 16}) == "Limits per click: 1,000 requests, 16 block size."
    assert words.identical(["continuous", "static"]) == ("Every request's words, contexts and logits are identical, "
                                                         "bit for bit, to decoding it alone (continuous batching, "
                                                         "static batching).")


def test_a_refused_edit_says_what_is_shown_instead():
    assert words.refused_edit("R1: *no* prompt", md_escape) == ("R1\\: \\*no\\* prompt — showing the last workload "
                                                                "that worked.")


def test_every_workload_presets_name_is_whole_in_its_picker():
    """Serving's workload picker stands in the narrow controls' column: each preset's name fits it at
    1440 × 900 ('one long prompt among short ones' was cut to 'one long prompt among short o')."""
    from viz.core.serving.workload import WORKLOADS
    from viz.core.text import PICKER_CHARS

    assert WORKLOADS and all(len(name) <= PICKER_CHARS for name in WORKLOADS), WORKLOADS
