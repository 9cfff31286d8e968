"""Cost measurements made by hand, with chosen ratios, for the Cost page's figure and reading tests."""

from __future__ import annotations

from viz.core.engine.cost import Bandwidth, CostMeasurement, DecodePoint, PrefillPoint
from viz.core.engine.model import WorkCounts
from viz.core.timing import Timing


def timing(seconds: float) -> Timing:
    return Timing(seconds, seconds * 0.9, seconds * 1.2, 3)


def measurement(speedups: tuple[float, float] = (2, 30), cat: float = 3, loop: float = 10) -> CostMeasurement:
    """Decode at n = 10 and 40 (recompute ``speedups`` × as long as kv, cat ``cat`` ×) and prefill at n = 8
    (one token at a time ``loop`` × as long as the batched pass); by default the cache wins at n = 40 and
    the batched pass at n = 8."""
    work = lambda macs: WorkCounts(multiply_adds=macs)  # noqa: E731
    decode = []
    for n, speedup in zip((10, 40), speedups):
        decode += [DecodePoint(n, "recompute", timing(0.001 * speedup), work(n * n * 65), 0),
                   DecodePoint(n, "kv", timing(0.001), work(n * 65), n * 1040),
                   DecodePoint(n, "cat", timing(0.001 * cat), work(n * 65), n * 1040)]
    prefill = (PrefillPoint(8, timing(0.001), timing(0.001 * loop), work(512), work(300), 0.0),)
    return CostMeasurement("cpu", 1, tuple(decode), prefill, Bandwidth(10**9, timing(0.1)), 3.0, 1.0, ())
