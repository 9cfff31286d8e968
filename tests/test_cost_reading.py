"""Tier 1: the Cost page's reading (its words module) follows the data, and says what limits decode and prefill in
a real model, not only in the toy."""

from __future__ import annotations

from viz.core.engine.cost import Bandwidth, CostMeasurement, DecodePoint, PrefillPoint, summarize_cost
from viz.core.engine.model import WorkCounts
from viz.core.lessons import words_cost as words
from viz.core.timing import Timing


def _timing(seconds: float) -> Timing:
    return Timing(seconds, seconds * 0.9, seconds * 1.1, 3)


def _measurement() -> CostMeasurement:
    """A small made-up sweep: the cache wins at n = 40, the batched prefill pass wins at n = 8."""
    decode = []
    for n, speedup in ((10, 2), (40, 30)):
        decode += [DecodePoint(n, "recompute", _timing(0.001 * speedup), WorkCounts(multiply_adds=n * n * 65), 0),
                   DecodePoint(n, "kv", _timing(0.001), WorkCounts(multiply_adds=n * 65), n * 1040),
                   DecodePoint(n, "cat", _timing(0.003), WorkCounts(multiply_adds=n * 65), n * 1040)]
    prefill = (PrefillPoint(8, _timing(0.001), _timing(0.01), WorkCounts(multiply_adds=512),
                            WorkCounts(multiply_adds=300), 0.0),)
    return CostMeasurement("cpu", 1, tuple(decode), prefill, Bandwidth(10**9, _timing(0.1)), 3.0, 1.0, ())


def test_decode_reading_counts_the_weights_too():
    """Decode is not blamed on the cache alone: every step also reads all the weights, which dominate at
    batch 1; the cache dominates only at large batch × context, and batching shares the weights' read."""
    text = " ".join(words.decode_reading(summarize_cost(_measurement()), "cpu"))
    assert "reading it is the whole story" not in text
    assert "also reads every one of its weights" in text
    assert "the cache dominates only when batch × context grows large" in text
    assert "Batching shares one read of the weights" in text


def test_prefill_reading_explains_reuse_not_only_the_per_step_price():
    """Prefill is fast in a real model because each weight serves all n tokens (compute-bound); decode reads
    every weight again per token (memory-bound)."""
    text = " ".join(words.prefill_reading(summarize_cost(_measurement())))
    assert "as long as one batched pass at n = 8" in text
    assert "compute-bound" in text and "memory-bound" in text
    assert "multiplies each weight it reads by all n prompt tokens" in text


def _ratios(speedups: tuple[float, float], cat: float, loop: float) -> CostMeasurement:
    """Decode at n = 10 and 40 (recompute, kv, cat) and prefill at n = 8, with chosen ratios."""
    work = lambda macs: WorkCounts(multiply_adds=macs)  # noqa: E731
    decode = []
    for n, speedup in zip((10, 40), speedups):
        decode += [DecodePoint(n, "recompute", _timing(0.001 * speedup), work(n * n * 65), 0),
                   DecodePoint(n, "kv", _timing(0.001), work(n * 65), n * 1040),
                   DecodePoint(n, "cat", _timing(0.001 * cat), work(n * 65), n * 1040)]
    prefill = (PrefillPoint(8, _timing(0.001), _timing(0.001 * loop), work(512), work(300), 0.0),)
    return CostMeasurement("cpu", 1, tuple(decode), prefill, Bandwidth(10**9, _timing(0.1)), 3.0, 1.0, ())


def test_reading_follows_the_data():
    """The words change with the numbers: a cache that loses at small n, a cat cache that keeps up."""
    text = "\n".join(words.decode_reading(summarize_cost(_ratios((0.5, 30), 3, 10)), "cpu"))
    assert "At n = 40, one decode step took 30× as long without the cache" in text
    assert "**Where it does not.** At n = 10 the cached step was slower." in text
    assert "it took 3× as long as the preallocated cache" in text
    assert "kernel launch" not in text
    text = "\n".join(words.decode_reading(summarize_cost(_ratios((1.5, 30), 1.0, 10)), "cuda"))
    assert "only 1.5× as fast" in text and "kernel launch" in text
    assert "that did not cost more (1× the time" in text
    assert "as long as one batched pass at n = 8" in "\n".join(
        words.prefill_reading(summarize_cost(_ratios((2, 30), 3, 10))))
    assert "the loop was faster at n = 8 (2×)" in "\n".join(
        words.prefill_reading(summarize_cost(_ratios((2, 30), 3, 0.5))))
