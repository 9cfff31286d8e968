"""The Cost page's words: its fixed prose, the sentences built from a sweep's configuration and a
measurement, and the readings of the two plots, paragraph by paragraph (:func:`decode_reading`,
:func:`prefill_reading`), each claim following the measurement's numbers.

Small functions over typed values (no torch work). The one part a visitor may have typed, a scenario's
title, goes through ``esc``, the page's escaping function.
"""

from __future__ import annotations

from collections.abc import Callable

from ..engine.cost import CostMeasurement, CostSummary, LiveConfig, Ratio
from ..engine.scenario import Scenario
from ..timing import format_seconds

PLAIN = ("Press **Measure** to time decoding on this machine. Until then, the plain version: "
         "without a cache every new token redoes the whole n × n attention, O(n²) work per token; "
         "with a cache it computes one new key and reads the n cached ones, O(n).")
QUICK_SPINNER = "Measuring a quick first sweep on this machine…"
STARTING = "Starting…"  # the progress bar's text before the first size is timed
CUT_SHORT = ("The measurement was cut short before it timed both decode modes at one size; "
             "press Measure again.")
PREFILL_HEADING = "Prefill: one pass, or one token at a time"
NO_PREFILL = "The time budget ran out before prefill; press Measure again."
HOW_HEADING = "What Measure times"
BENCHMARK = ("**The full benchmark.** The command line runs larger sizes (decode up to "
             "n = 16,384), compares the cache with Hugging Face transformers' `DynamicCache` and "
             "`StaticCache`, measures this machine's memory bandwidth to show how close cached decode "
             "comes to the fastest possible, and times a page rerun of this app. It prints tables and "
             "writes JSON:")
BENCH_COMMANDS = ("python -m viz bench --out results.json      # a few minutes\n"
                  "python -m viz bench --quick                 # a few seconds")
# how to read a point of the timed panels (the runs' spread is what says whether a timing can be read)
RUNS = "Each timed point is the median of its runs; its bar spans the fastest to the slowest run."
# why a batched prefill beats decoding one token at a time in a real model
REUSE = ("a batched "
         "prefill multiplies each weight it reads by all n prompt tokens at once, so it is "
         "limited by arithmetic (compute-bound), while decoding reads every weight again for "
         "one token per sequence, so it waits for memory (memory-bound). That is why a model "
         "reads your prompt quickly and then writes its answer slowly.")


def measuring(what: str) -> str:
    """The progress bar's text while ``what`` (the sweep's own words for a size) is timed."""
    return f"Measuring {what}"


def only_device(device: str) -> str:
    return f"Device: **{device}** (the only one on this machine)"


def measure_label(measured: bool) -> str:
    """The button's label: Measure, or Measure again once this session has a measurement."""
    return "Measure again" if measured else "Measure"


def how(live: LiveConfig, model: Scenario, esc: Callable[[str], str]) -> str:
    """What Measure times: the sizes, the model and the time budget."""
    return (f"Times one decode step at n = {live.decode_sizes[0]} … {live.decode_sizes[-1]} keys "
            f"(recompute up to {live.recompute_max}) and a whole prompt of {live.prefill_sizes[0]} … "
            f"{live.prefill_sizes[-1]} tokens, with the {len(model.heads)} heads of the "
            f"'{esc(model.title)}' preset (d_k = {model.d_k}). Sizes stop growing once the next "
            f"one would pass {live.budget_s:g} s in all, so one click never ties up the server; the "
            "results stay for this session.")


def quick(config: LiveConfig) -> str:
    """The quick sweep shown on arrival, and how to get the full one."""
    return (f"A quick first measurement (decode up to n = {config.decode_sizes[-1]}, about "
            f"{config.budget_s:g} s). Press **Measure** for the full sweep.")


def failed(reason: str) -> str:
    return f"The measurement failed: {reason}"


def measured(m: CostMeasurement) -> str:
    """Where and how long the measurement ran, what the budget left out, and how to read a timed point."""
    left_out = ", ".join(m.left_out)
    return (f"Measured on {m.device} ({m.threads} CPU thread"
            f"{'s' if m.threads > 1 else ''}) in {m.seconds:.1f} s."
            + (f" Left out to stay within {m.budget_s:g} s: {left_out}." if left_out else "")
            + " " + RUNS)


def _times(ratio: float) -> str:
    return f"{ratio:,.0f}×" if ratio >= 100 else f"{ratio:.2g}×"


def decode_reading(summary: CostSummary, device_type: str) -> list[str]:
    """The decode plot in plain words, one paragraph per point, with this measurement's numbers.

    The lesson's claim is the engine's exact work count; the live timing only ever says what its runs
    can: a ratio where every run of one side beat every run of the other, "too noisy to read" where
    they overlap (:class:`Ratio`), and where the measurement departs from the usual story (a cache
    that does not win at tiny n, a torch.cat cache that keeps up), the text says so.
    """
    s = summary
    lines = [
        f"**Where the cache wins.** At n = {s.large_n} the engine counts {_times(s.work_ratio_large)} "
        "the multiply-adds for one decode step without the cache as with it: recomputing runs the "
        "whole n × n attention again for one new row, while the cache encodes one key and reads "
        "the others. The gap widens with n, because one side grows like n² and the other like n. "
        + _timed_win(s.speedup_large),
    ]
    lines.append(_small_steps(s, device_type))
    if s.kv_size_growth > 1:
        grew = (f"its time {_times(s.kv_time_growth.median)}" if s.kv_time_growth.reading == "longer"
                else "its time by no more than the runs' spread")
        lines.append(
            f"**The cached step grows slowly.** From the smallest n to n = {s.kv_n} the sequence grew "
            f"{s.kv_size_growth:,.0f}× and {grew}: the step's cost is the fixed price plus a part that "
            "grows with n, reading every cached key once.")
    lines.append(_memory_bound(s))
    if s.cat_over_kv is not None:
        lines.append(_growing(s))
    return lines


NOISY = "too noisy to read on this machine just now"


def _spread(r: Ratio) -> str:
    """What the runs allow, when they cannot say which side was faster."""
    if r.runs < 2:
        return "one run each, too few to judge the noise"
    return f"its runs allow anything from {_times(r.low)} to {_times(r.high)}"


def _timed_win(r: Ratio) -> str:
    """The live timing of the largest size both ways, as far as its runs can say (never against the count)."""
    if r.reading == "longer":
        return (f"Timed here, the step took {_times(r.median)} as long without the cache (medians; every "
                "run without it was slower than every run with it).")
    if r.reading == "unclear":
        return (f"Timed here, the difference is within the timing's spread ({_spread(r)}): {NOISY}, "
                "so the timing neither confirms nor contradicts the count. Measure again when the "
                "machine is quieter.")
    return (f"Timed here, the cached step was the slower one ({_times(1 / r.median)}): at this size the "
            "fixed price of a step (below) outweighed the work saved, or the machine's load changed "
            "during the runs. The count is what the cache saves; the time is what this machine did once.")


def _small_steps(s: CostSummary, device_type: str) -> str:
    """Where the cache wins less, or not at all: the fixed price of a step."""
    r = s.speedup_small
    if s.small_n == s.large_n:
        small = "**Where it wins less.** "
    elif r.reading == "shorter":
        small = f"**Where it does not.** At n = {s.small_n} the cached step was slower. "
    elif r.reading == "unclear":
        small = (f"**Where it wins less.** At n = {s.small_n} the timing could not tell the two apart "
                 f"({_spread(r)}). ")
    else:
        small = (f"**Where it wins less.** At n = {s.small_n} the cache was only {_times(r.median)} "
                 "as fast. ")
    small += ("Every step pays a fixed price, with or without a cache: Python, building small "
              "tensors, starting dozens of tensor operations. With little data that price is most of "
              "the step, so skipping work saves little.")
    if device_type == "cuda":
        small += (" On a GPU each operation is a kernel launch costing microseconds however small "
                  "it is, so short steps are launch-bound and the GPU sits mostly idle.")
    return small


def _memory_bound(s: CostSummary) -> str:
    """Why decode ends up waiting for memory, with this measurement's bytes and copy speed."""
    verdict = ("so at this size the fixed price still outweighs reading the cache"
               if s.kv_time > 3 * s.floor_s else "so reading the cache is most of the step")
    bandwidth = s.bandwidth_bytes_per_s / 1e9
    floor, step = format_seconds(s.floor_s), format_seconds(s.kv_time)
    return (
        "**Why decode ends up memory-bound.** A cached step does one multiply-add per number it "
        f"reads from the cache ({s.bytes_per_multiply_add:.1f} bytes per multiply-add): far too "
        "little arithmetic to keep a processor busy while the bytes arrive, so once the cache is "
        f"large the step waits for memory. At n = {s.kv_n} the cache holds {s.kv_cache_bytes:,} "
        f"bytes; at the measured copy speed of {bandwidth:.1f} GB/s reading them would take {floor}, "
        f"and the step took {step}, {verdict}. The toy has no weights to speak of; a real model's "
        "decode step also reads every one of its weights, once per step, to make one token per "
        "sequence. At batch 1 the weights are most of the bytes (a 7-billion-parameter model reads "
        "about 13 GB of fp16 weights each step, far more than its cache at a few thousand tokens); "
        "the cache dominates only when batch × context grows large. Batching shares one read of "
        "the weights among all the sequences, which is why it raises throughput; shrinking the "
        "cache (fewer K/V heads, 8-bit numbers) matters once the cache is the larger part. The At "
        "scale page weighs both for real models, against a GPU's bandwidth and compute.")


def _growing(s: CostSummary) -> str:
    """The torch.cat cache against the preallocated one."""
    r = s.cat_over_kv
    if r.reading == "longer" and r.median >= 1.2:
        outcome = (f"at n = {s.kv_n} it took {_times(r.median)} as long as the preallocated "
                   "cache, which writes one row in place")
    else:
        within = ", within the runs' spread" if r.reading == "unclear" else ""
        outcome = (f"at n = {s.kv_n} that did not cost measurably more ({_times(r.median)} the time "
                   f"of the preallocated cache{within}): copying a cache this small is cheap next to "
                   "the fixed price of a step. The full benchmark shows the gap at n = 16,384")
    return ("**Growing the cache.** The torch.cat cache does the same arithmetic but copies the whole "
            f"cache into a new tensor on every step; {outcome}.")


def prefill_reading(summary: CostSummary) -> list[str]:
    """The prefill plot in plain words (nothing if the sweep measured no prefill)."""
    if summary.prefill_large is None:
        return []
    (n_small, small), (n_large, large) = summary.prefill_small, summary.prefill_large
    lines = ["Both ways give the same contexts (the table's last column). The batched pass scores "
             "every (query, key) pair, the masked half too, so it does about twice the multiply-adds "
             "of the loop, which only scores the keys each query can see."]
    if large.reading == "longer":
        also = (f" ({_times(small.median)} at n = {n_small})"
                if n_small != n_large and small.reading == "longer" else "")
        lines.append(
            f"Still, one token at a time took {_times(large.median)} as long as one batched pass at "
            f"n = {n_large}{also}. In the toy that is the fixed price of a step (Python, small "
            "tensor operations) paid n times. In a real model the reason is reuse: " + REUSE)
    elif large.reading == "unclear":
        lines.append(
            f"Timed here, the two ways could not be told apart at n = {n_large} ({_spread(large)}): "
            f"{NOISY}. In a real model the batched pass wins by far, and the reason is reuse: " + REUSE)
    else:
        lines.append(
            f"Here the loop was faster at n = {n_large} ({_times(1 / large.median)}): the batched pass "
            "builds several n × n tensors, and moving them through memory cost more than the loop's "
            "per-step price. Real models avoid that with fused attention kernels (FlashAttention) "
            "that never write the n × n scores out.")
    return lines

