"""The cost of decoding, measured live: what the Cost page runs, and the benchmark's core.

One decode step at total length n is timed in each mode (recompute, our KVCache, the naive
``torch.cat`` cache) with the engine's own decoders, so only the cache differs; prefill is timed as
one batched pass against one token at a time. :func:`live_cost` is the Cost page's sweep, small
enough for one click on a shared server: one sweep at a time per process, cut short by a time
budget, cheap series first, recompute timed in the same rounds as the caches. :func:`summarize_cost`
reads the ratios the page puts into words, each timed one a :class:`Ratio` that says whether the
runs' spread lets it be read at all (the engine's work counts are exact; a shared machine's timing
is not).
Timings come from :mod:`viz.core.timing`; ``python -m viz bench`` (viz.tools.bench) runs larger
sweeps of the same measurements.

What this module does not do: check any speed (numbers are reported, never asserted) or draw.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Literal

import torch

from .cache import CatCache
from ..device import DEVICE_KINDS, describe_device, pick_device
from .model import Decoder, ToyModel, WorkCounts, make_decoder
from .presets import load_preset, sequence
from .scenario import Scenario
from ..timing import Timing, TimingPlan, time_calls, time_in_turn

DECODE_MODES = ("recompute", "kv", "cat")  # no cache, our KVCache, the naive torch.cat cache
CACHED = ("kv", "cat")  # the modes with a cache

Progress = Callable[[float, str], None]


def bench_scenario() -> Scenario:
    """The model every sweep runs: the seed's four heads made cache-safe, d_k = 64."""
    return load_preset("cache-safe")


def model_for(device: torch.device) -> ToyModel:
    return ToyModel(bench_scenario(), device=device)


def make_cost_decoder(model: ToyModel, mode: str) -> Decoder:
    """A decoder for one of :data:`DECODE_MODES`: ``cat`` is the KV decoder on a :class:`CatCache`."""
    if mode == "cat":
        return make_decoder("kv", model, CatCache(model.num_heads, model.d_k, device=model.device,
                                                  dtype=model.dtype))
    return make_decoder(mode, model)


@dataclass(frozen=True)
class DecodePoint:
    """One decode step at total length n, in one mode: its time and the engine's own work counts."""

    n: int  # keys the new token's query attends to (the first timed step)
    mode: str  # one of DECODE_MODES
    per_token: Timing
    work: WorkCounts  # what the engine counted for the step at length n
    cache_bytes: int  # K and V held after that step (0 without a cache)


def measure_decode(model: ToyModel, mode: str, n: int, plan: TimingPlan, device: torch.device,
                   deadline: float | None = None) -> DecodePoint:
    """Fill a decoder with a prompt of n - warmup - 1 tokens, then time single decode steps."""
    return measure_decodes(model, (mode,), n, plan, device, deadline)[0]


def measure_decodes(model: ToyModel, modes: tuple[str, ...], n: int, plan: TimingPlan,
                    device: torch.device, deadline: float | None = None) -> tuple[DecodePoint, ...]:
    """One decoder per mode, each filled with the same prompt, timed in turn step by step."""
    prompt = n - plan.warmup - 1  # so the first timed step's query sees exactly n keys
    if prompt < 1:
        raise ValueError(f"n = {n} is too small for {plan.warmup} warm-up steps")
    tokens, values = sequence(model.scenario, n + plan.max_repeats)

    def stepper(mode: str) -> Callable[[], tuple[WorkCounts, int]]:
        decoder = make_cost_decoder(model, mode)
        decoder.fill(tokens[:prompt], values[:prompt])
        feed = zip(tokens[prompt:], values[prompt:])

        def step() -> tuple[WorkCounts, int]:
            result = decoder.decode_step(*next(feed))
            return result.attention.counts, result.cache_nbytes  # small: big tensors are freed at once
        return step

    timings = time_in_turn({mode: stepper(mode) for mode in modes}, plan, device, deadline)
    return tuple(DecodePoint(n, mode, timings[mode][0], *timings[mode][1]) for mode in modes)


@dataclass(frozen=True)
class PrefillPoint:
    """A prompt of n tokens: one batched pass vs one token at a time through the KV decoder."""

    n: int
    batched: Timing
    one_by_one: Timing
    batched_work: WorkCounts  # the full n × n pass (masked half included)
    one_by_one_work: WorkCounts  # n single-query steps over a growing cache
    max_abs_diff: float  # largest difference between the two ways' contexts (they must agree)


def measure_prefill(model: ToyModel, n: int, plan: TimingPlan, device: torch.device,
                    deadline: float | None = None) -> PrefillPoint:
    """Time both ways of reading a prompt and check that they give the same contexts."""
    tokens, values = sequence(model.scenario, n)

    def batched() -> tuple[torch.Tensor, WorkCounts]:
        result = model.prefill(tokens, values)
        return result.contexts, result.attention.counts  # (heads, n)

    def one_by_one() -> tuple[torch.Tensor, WorkCounts]:
        decoder = make_decoder("kv", model)
        first = decoder.prefill(tokens[:1], values[:1]).attention
        contexts, work = [first.contexts[:, 0].cpu()], first.counts  # each step's rows are CPU copies
        for token, value in zip(tokens[1:], values[1:]):
            attention = decoder.decode_step(token, value).attention
            contexts.append(attention.contexts[:, 0])  # (heads,)
            work = work + attention.counts
        return torch.stack(contexts, dim=1), work  # (heads, n)

    batched_time, (batched_ctx, batched_work) = time_calls(batched, plan, device, deadline)
    loop_time, (loop_ctx, loop_work) = time_calls(one_by_one, plan, device, deadline)
    diff = float((batched_ctx.cpu() - loop_ctx).abs().max())
    return PrefillPoint(n, batched_time, loop_time, batched_work, loop_work, diff)


# -- the floor: how fast memory can be read -------------------------------------------------
@dataclass(frozen=True)
class Bandwidth:
    """Memory bandwidth from copying one large tensor: bytes read + bytes written per second."""

    bytes_moved: int
    copy: Timing

    @property
    def bytes_per_s(self) -> float:
        return self.bytes_moved / self.copy.median_s


@dataclass(frozen=True)
class FloorPoint:
    """Cached decode at length n against the time just reading its K and V would take."""

    n: int
    bytes_per_token: int  # K and V a decode step must read: the whole cache
    bandwidth_bytes_per_s: float
    floor_s: float  # bytes_per_token / bandwidth
    per_token: Timing  # measured cached decode step
    achieved: float  # floor_s / measured: 1.0 would be reading memory and nothing else


def measure_bandwidth(nbytes: int, plan: TimingPlan, device: torch.device) -> Bandwidth:
    """Copy a float32 tensor of ``nbytes`` (far larger than any cache) into another one."""
    source = torch.ones(nbytes // 4, device=device)  # written once, so its pages are real
    target = torch.empty_like(source)
    timing, _ = time_calls(lambda: target.copy_(source), plan, device)
    return Bandwidth(2 * source.nbytes, timing)


# -- the live sweep for the Cost page -------------------------------------------------------
@dataclass(frozen=True)
class LiveConfig:
    """A sweep small enough for one click in a shared app, cut short by a time budget."""

    decode_sizes: tuple[int, ...]
    recompute_max: int
    prefill_sizes: tuple[int, ...]
    plan: TimingPlan
    copy_bytes: int  # tensor copied to measure bandwidth
    budget_s: float  # the whole sweep, decode and prefill together
    decode_share: float  # part of the budget for decode; prefill gets the rest


LIVE = LiveConfig(decode_sizes=(32, 64, 128, 256, 512, 1024, 2048, 4096), recompute_max=2048,
                  prefill_sizes=(16, 32, 64, 128, 256, 512),
                  plan=TimingPlan(warmup=1, min_repeats=3, max_repeats=7, target_s=0.02),
                  copy_bytes=64 * 2**20, budget_s=3.0, decode_share=0.6)
# What the Cost page shows on arrival, before anyone presses Measure: the same sweep, smaller.
QUICK = LiveConfig(decode_sizes=(32, 64, 128, 256, 512), recompute_max=512, prefill_sizes=(16, 32, 64, 128),
                   plan=TimingPlan(warmup=1, min_repeats=3, max_repeats=5, target_s=0.005),
                   copy_bytes=8 * 2**20, budget_s=1.0, decode_share=0.6)


@dataclass(frozen=True)
class CostMeasurement:
    """What the Cost page measured: decode per token and prefill, on one device."""

    device: str
    threads: int  # CPU threads torch used
    decode: tuple[DecodePoint, ...]
    prefill: tuple[PrefillPoint, ...]
    bandwidth: Bandwidth
    budget_s: float
    seconds: float  # wall time of the sweep
    left_out: tuple[str, ...]  # series the budget cut short, in words


# Sizes every series gets whatever the budget predicts: the theory panel's curves need a few points
# to show their shape (a busy machine once left recompute's O(n²) work as one dot at n = 32)
MIN_SIZES = 3


class _Budget:
    """Runs measurements from small n to large while the predicted cost fits the time left.

    A series (a mode, or prefill) always gets its first :data:`MIN_SIZES` sizes, then stops at the
    first size whose predicted cost, the last cost scaled by (n / last n) ** growth, would pass the
    budget. A measurement that still runs long (a busy machine) stops repeating at the deadline.
    """

    def __init__(self, seconds: float):
        self.seconds, self.spent = seconds, 0.0
        self.deadline = time.perf_counter() + seconds
        self.last: dict[str, tuple[int, float]] = {}
        self.sizes: dict[str, int] = {}  # sizes run per series
        self.stopped: dict[str, int] = {}

    def note(self, series: str, n: int, cost: float) -> None:
        """Take ``cost`` seconds (already spent, in another series' run) as ``series``' cost at size n."""
        self.last[series] = (n, cost)
        self.sizes[series] = self.sizes.get(series, 0) + 1

    def run(self, series: str, n: int, growth: int, measure: Callable[[float], Any]) -> Any:
        """``measure(deadline)`` for size n of ``series``, or None if it would not fit."""
        if series in self.stopped:
            return None
        if self.sizes.get(series, 0) >= MIN_SIZES:
            last_n, last_cost = self.last[series]
            if self.spent + last_cost * (n / last_n) ** growth > self.seconds:
                self.stopped[series] = n
                return None
        start = time.perf_counter()
        result = measure(self.deadline)
        cost = time.perf_counter() - start
        self.spent += cost
        self.last[series] = (n, cost)
        self.sizes[series] = self.sizes.get(series, 0) + 1
        return result


class MeasurementBusy(RuntimeError):
    """Another live sweep is running in this process; one at a time keeps a shared server free."""


LIVE_LOCK = threading.Lock()  # held while a live sweep runs, for every session of the process


def available_devices() -> list[str]:
    """The device kinds this machine can measure on, best first."""
    def available(kind: str) -> bool:
        try:
            pick_device(kind)
        except ValueError:
            return False
        return True
    return [kind for kind in DEVICE_KINDS if available(kind)]


def live_cost(device: str | torch.device | None = None, progress: Progress | None = None,
              config: LiveConfig = LIVE) -> CostMeasurement:
    """The Cost page's measurement: decode for every mode, then prefill, within the budget.

    It uses the process's torch threads as they are (the app sets one per script run). Raises
    :class:`MeasurementBusy` at once if another sweep is running in this process.
    """
    if not LIVE_LOCK.acquire(blocking=False):
        raise MeasurementBusy("another measurement is running on this server; try again in a few seconds")
    try:
        return _live_cost(pick_device(device), progress, config)
    finally:
        LIVE_LOCK.release()


def _live_cost(device: torch.device, progress: Progress | None, config: LiveConfig) -> CostMeasurement:
    model = model_for(device)
    total = len(config.decode_sizes) + len(config.prefill_sizes)
    report = progress or (lambda fraction, text: None)
    start = time.perf_counter()
    report(0.0, "memory bandwidth")
    bandwidth = measure_bandwidth(config.copy_bytes, config.plan, device)
    decode_budget = _Budget(config.budget_s * config.decode_share - (time.perf_counter() - start))
    decode = []
    for done, n in enumerate(config.decode_sizes):
        report(done / total, f"decode, n = {n}")
        decode += _decode_size(decode_budget, model, n, config, device)
    prefill_budget = _Budget(config.budget_s - (time.perf_counter() - start))
    prefill = []
    for done, n in enumerate(config.prefill_sizes, start=len(config.decode_sizes)):
        report(done / total, f"prefill, n = {n}")
        point = prefill_budget.run(
            "prefill", n, 2, lambda deadline: measure_prefill(model, n, config.plan, device, deadline))
        if point:
            prefill.append(point)
    report(1.0, "done")
    left_out = tuple(f"{series} from n = {n}" for budget in (decode_budget, prefill_budget)
                     for series, n in budget.stopped.items())
    return CostMeasurement(describe_device(device), torch.get_num_threads(), tuple(decode), tuple(prefill),
                           bandwidth, config.budget_s, time.perf_counter() - start, left_out)


def _decode_size(budget: _Budget, model: ToyModel, n: int, config: LiveConfig,
                 device: torch.device) -> tuple[DecodePoint, ...]:
    """The decode modes at size n: recompute in the same rounds as the two caches while the budget
    lets it grow (a step costs O(n²) without a cache), so a change in the machine's load hits all three
    alike and their ratio holds; past that, the caches alone (O(n))."""
    def modes(which: tuple[str, ...]) -> Callable[[float], tuple[DecodePoint, ...]]:
        return lambda deadline: measure_decodes(model, which, n, config.plan, device, deadline)

    if n <= config.recompute_max:
        points = budget.run("recompute", n, 2, modes(CACHED + ("recompute",)))
        if points is not None:  # the caches' own share of the rounds predicts their next size
            budget.note("kv and cat", n, sum(p.per_token.median_s * p.per_token.repeats
                                             for p in points if p.mode in CACHED))
            return points
    return budget.run("kv and cat", n, 1, modes(CACHED)) or ()


Reading = Literal["longer", "shorter", "unclear"]


@dataclass(frozen=True)
class Ratio:
    """How many times as long one timing took as another, and whether the runs can say so.

    ``median`` is the medians' ratio; ``low`` and ``high`` the least and the most the runs allow (the
    first's fastest run over the second's slowest, and the other way round). A range holding 1 means
    the runs overlap: the difference is within the timing's spread, too noisy to read; so is a timing
    of one run, which has no spread to judge."""

    median: float
    low: float
    high: float
    runs: int  # the fewer timed runs of the two

    @classmethod
    def of(cls, first: Timing, second: Timing) -> "Ratio":
        return cls(first.median_s / second.median_s, first.min_s / second.max_s,
                   first.max_s / second.min_s, min(first.repeats, second.repeats))

    @property
    def reading(self) -> Reading:
        """'longer': every run of the first took longer than every run of the second; 'shorter': the
        other way round; 'unclear': the runs overlap, or there were too few to tell."""
        if self.runs < 2 or self.low <= 1 <= self.high:
            return "unclear"
        return "longer" if self.low > 1 else "shorter"


@dataclass(frozen=True)
class CostSummary:
    """The numbers the Cost page puts into words (None where the sweep did not reach them)."""

    device: str
    small_n: int  # smallest n with both recompute and kv
    large_n: int  # largest n with both recompute and kv
    speedup_small: Ratio  # recompute / kv time per token at small_n
    speedup_large: Ratio  # … at large_n
    work_ratio_large: float  # recompute / kv multiply-adds at large_n: exact, the lesson's claim
    kv_n: int  # largest n measured for kv (and cat)
    cat_over_kv: Ratio | None  # cat / kv per token at kv_n
    kv_time_growth: Ratio  # kv time per token at kv_n / at the smallest n
    kv_size_growth: float  # kv_n / the smallest n
    kv_time: float  # kv seconds per token at kv_n
    kv_cache_bytes: int  # K and V held at kv_n
    bytes_per_multiply_add: float  # kv at kv_n: cache bytes read per multiply-add
    floor_s: float  # kv at kv_n: cache bytes / measured bandwidth
    bandwidth_bytes_per_s: float
    prefill_small: tuple[int, Ratio] | None  # (n, one-by-one / batched time) at the smallest prompt
    prefill_large: tuple[int, Ratio] | None  # … at the largest prompt


def summarize_cost(measurement: CostMeasurement) -> CostSummary | None:
    """Ratios read off a live measurement; None if it holds no size with both recompute and kv."""
    by = {(p.n, p.mode): p for p in measurement.decode}
    both = sorted(n for (n, mode) in by if mode == "recompute" and (n, "kv") in by)
    kv_sizes = sorted(n for (n, mode) in by if mode == "kv")
    if not both:
        return None

    def speedup(n: int) -> Ratio:
        return Ratio.of(by[(n, "recompute")].per_token, by[(n, "kv")].per_token)

    small, large, top = both[0], both[-1], kv_sizes[-1]
    kv_top, kv_first = by[(top, "kv")], by[(kv_sizes[0], "kv")]
    cat = by.get((top, "cat"))
    ratios = [(p.n, Ratio.of(p.one_by_one, p.batched)) for p in measurement.prefill]
    return CostSummary(
        device=measurement.device, small_n=small, large_n=large, speedup_small=speedup(small),
        speedup_large=speedup(large),
        work_ratio_large=by[(large, "recompute")].work.multiply_adds / by[(large, "kv")].work.multiply_adds,
        kv_n=top, cat_over_kv=Ratio.of(cat.per_token, kv_top.per_token) if cat else None,
        kv_time_growth=Ratio.of(kv_top.per_token, kv_first.per_token),
        kv_size_growth=top / kv_sizes[0], kv_time=kv_top.per_token.median_s,
        kv_cache_bytes=kv_top.cache_bytes,
        bytes_per_multiply_add=kv_top.cache_bytes / kv_top.work.multiply_adds,
        floor_s=kv_top.cache_bytes / measurement.bandwidth.bytes_per_s,
        bandwidth_bytes_per_s=measurement.bandwidth.bytes_per_s,
        prefill_small=ratios[0] if ratios else None, prefill_large=ratios[-1] if ratios else None)
