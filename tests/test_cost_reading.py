"""Tier 1: the Cost page's reading (its words module) follows the data, and says what limits decode and prefill in
a real model, not only in the toy."""

from __future__ import annotations

from cost_fixtures import measurement
from viz.core.engine.cost import summarize_cost
from viz.core.lessons import words_cost as words


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
    assert "At n = 40, one decode step took 30× as long without the cache" in text
    assert "**Where it does not.** At n = 10 the cached step was slower." in text
    assert "it took 3× as long as the preallocated cache" in text
    assert "kernel launch" not in text
    text = "\n".join(words.decode_reading(summarize_cost(measurement((1.5, 30), 1.0, 10)), "cuda"))
    assert "only 1.5× as fast" in text and "kernel launch" in text
    assert "that did not cost more (1× the time" in text
    assert "as long as one batched pass at n = 8" in "\n".join(
        words.prefill_reading(summarize_cost(measurement((2, 30), 3, 10))))
    assert "the loop was faster at n = 8 (2×)" in "\n".join(
        words.prefill_reading(summarize_cost(measurement((2, 30), 3, 0.5))))
