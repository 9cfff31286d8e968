"""Tier 1: the Cost page's reading (its words module) follows the data, and says what limits decode and prefill in
a real model, not only in the toy."""

from __future__ import annotations

import dataclasses

import pytest

from cost_fixtures import measurement
from viz.core.engine.cost import CostMeasurement, Ratio, summarize_cost
from viz.core.lessons import words_cost as words
from viz.core.timing import Timing


def test_decode_reading_counts_the_weights_too():
    """Decode is not blamed on the cache alone: every step also reads all the weights, which dominate at
    batch 1; the cache dominates only at large batch × context, and batching shares the weights' read."""
    text = " ".join(words.decode_reading(summarize_cost(measurement()), "cpu"))
    assert "reading it is the whole story" not in text
    assert "also reads every one of its weights" in text
    assert "the cache dominates only when batch × context grows large" in text
    assert "Batching shares one read of the weights" in text


def test_prefill_reading_explains_reuse_not_only_the_per_step_price():
    """Prefill is fast in a real model because each weight serves all n tokens (compute-bound); decode reads
    every weight again per token (memory-bound)."""
    text = " ".join(words.prefill_reading(summarize_cost(measurement())))
    assert "as long as one batched pass at n = 8" in text
    assert "compute-bound" in text and "memory-bound" in text
    assert "multiplies each weight it reads by all n prompt tokens" in text


def test_reading_follows_the_data():
    """The words change with the numbers: a cache that loses at small n, a cat cache that keeps up."""
    text = "\n".join(words.decode_reading(summarize_cost(measurement((0.5, 30), 3, 10)), "cpu"))
    assert "At n = 40 the engine counts 40× the multiply-adds" in text
    assert "Timed here, the step took 30× as long without the cache" in text
    assert "**Where it does not.** At n = 10 the cached step was slower." in text
    assert "it took 3× as long as the preallocated cache" in text
    assert "kernel launch" not in text
    text = "\n".join(words.decode_reading(summarize_cost(measurement((1.5, 30), 1.0, 10)), "cuda"))
    assert "only 1.5× as fast" in text and "kernel launch" in text
    assert "that did not cost measurably more (1× the time of the preallocated cache, within the runs' spread)" in text
    assert "as long as one batched pass at n = 8" in "\n".join(
        words.prefill_reading(summarize_cost(measurement((2, 30), 3, 10))))
    assert "the loop was faster at n = 8 (2×)" in "\n".join(
        words.prefill_reading(summarize_cost(measurement((2, 30), 3, 0.5))))


def _spread(m: CostMeasurement, spread: float) -> CostMeasurement:
    """``m`` with every timing's runs spread from median / spread to median × spread (a busy machine)."""
    wide = lambda t: Timing(t.median_s, t.median_s / spread, t.median_s * spread, t.repeats)  # noqa: E731
    return dataclasses.replace(
        m, decode=tuple(dataclasses.replace(p, per_token=wide(p.per_token)) for p in m.decode),
        prefill=tuple(dataclasses.replace(p, batched=wide(p.batched), one_by_one=wide(p.one_by_one))
                      for p in m.prefill))


@pytest.mark.parametrize("first, second, reading", [
    (Timing(3, 2.5, 3.5, 3), Timing(1, 0.9, 1.2, 3), "longer"),  # every run of the first beat by the second's
    (Timing(1, 0.9, 1.2, 3), Timing(3, 2.5, 3.5, 3), "shorter"),
    (Timing(2, 0.5, 4, 3), Timing(1, 0.9, 1.2, 3), "unclear"),  # the runs overlap: 2× by the medians, yet noise
    (Timing(3, 3, 3, 1), Timing(1, 1, 1, 1), "unclear")])  # one run each: no spread to judge by
def test_a_timed_ratio_reads_only_what_its_runs_allow(first, second, reading):
    r = Ratio.of(first, second)
    assert r.reading == reading
    assert r.low <= r.median <= r.high and r.median == pytest.approx(first.median_s / second.median_s)


def test_a_noisy_timing_never_contradicts_the_count():
    """On a busy machine (each timing's runs spread 6× around its median) the medians still say 30× at n = 40
    and the counts 40×, but the runs overlap: the reading keeps the count as its claim, says the timing is too
    noisy to read with the range its runs allow, and claims no timed ratio, for decode or prefill."""
    summary = summarize_cost(_spread(measurement(), 6))
    assert summary.speedup_large.reading == "unclear" and summary.speedup_large.median == pytest.approx(30)
    text = "\n".join(words.decode_reading(summary, "cpu"))
    assert "the engine counts 40× the multiply-adds" in text
    assert "within the timing's spread (its runs allow anything from 0.83× to 1,080×): too noisy" in text
    assert "neither confirms nor contradicts the count" in text
    assert "took 30× as long" not in text and "only 2× as fast" not in text
    assert "At n = 10 the timing could not tell the two apart" in text
    prefill = "\n".join(words.prefill_reading(summary))
    assert "could not be told apart at n = 8" in prefill and "took 10× as long" not in prefill
    assert "compute-bound" in prefill  # the lesson still says why a real model's batched pass wins


def test_a_cache_timed_slower_at_the_largest_size_is_said_without_denying_the_count():
    """A clear but contrary timing (the cached step slower at n = 40) is reported as this machine's, beside the
    count, and the cat cache's and the prefill's contrary timings are said as measured."""
    text = "\n".join(words.decode_reading(summarize_cost(measurement((0.5, 0.5), 0.5, 0.5)), "cpu"))
    assert "the engine counts 40× the multiply-adds" in text
    assert "Timed here, the cached step was the slower one (2×)" in text and "The count is what the cache saves" in text
    assert "that did not cost measurably more (0.5× the time of the preallocated cache)" in text
    assert "the loop was faster at n = 8 (2×)" in "\n".join(
        words.prefill_reading(summarize_cost(measurement((0.5, 0.5), 0.5, 0.5))))


def test_a_busy_machine_still_gives_every_series_its_first_sizes():
    """However slow the first sizes run, a series gets its first MIN_SIZES (the theory panel's curve
    has a shape: a busy machine once left recompute's O(n²) work as one dot), and only then does the
    budget's prediction stop it, saying from which n."""
    from viz.core.engine.cost import MIN_SIZES, _Budget

    budget = _Budget(0.001)  # any measured cost predicts past this budget
    ran = [n for n in (32, 64, 128, 256, 512) if budget.run("recompute", n, 2, lambda deadline, n=n: time_a_bit(n))]
    assert ran == [32, 64, 128][:MIN_SIZES] and budget.stopped == {"recompute": (32, 64, 128, 256)[MIN_SIZES]}


def time_a_bit(n: int) -> int:
    import time

    time.sleep(0.002)  # longer than the whole budget
    return n
