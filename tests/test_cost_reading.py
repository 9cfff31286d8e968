"""Tier 1: the Cost page's reading says what limits decode and prefill in a real model, not only in the toy."""

from __future__ import annotations

from viz.figures import cost
from viz.core.engine.cost import Bandwidth, CostMeasurement, DecodePoint, PrefillPoint, summarize_cost
from viz.core.engine.model import WorkCounts
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
    text = " ".join(cost.decode_reading(summarize_cost(_measurement()), "cpu"))
    assert "reading it is the whole story" not in text
    assert "also reads every one of its weights" in text
    assert "the cache dominates only when batch × context grows large" in text
    assert "Batching shares one read of the weights" in text


def test_prefill_reading_explains_reuse_not_only_the_per_step_price():
    """Prefill is fast in a real model because each weight serves all n tokens (compute-bound); decode reads
    every weight again per token (memory-bound)."""
    text = " ".join(cost.prefill_reading(summarize_cost(_measurement())))
    assert "as long as one batched pass at n = 8" in text
    assert "compute-bound" in text and "memory-bound" in text
    assert "multiplies each weight it reads by all n prompt tokens" in text
