"""The Cost page's words: its fixed prose, and the sentences built from a sweep's configuration and a
measurement. (The readings of the two plots, paragraph by paragraph, are
:func:`viz.figures.cost.decode_reading` and :func:`viz.figures.cost.prefill_reading`.)

Small functions over typed values (no torch work). The one part a visitor may have typed, a scenario's
title, goes through ``esc``, the page's escaping function.
"""

from __future__ import annotations

from collections.abc import Callable

from ..engine.cost import CostMeasurement, LiveConfig
from ..engine.scenario import Scenario

PLAIN = ("Press **Measure** to time decoding on this machine. Until then, the plain version: "
         "without a cache every new token redoes the whole n × n attention, O(n²) work per token; "
         "with a cache it computes one new key and reads the n cached ones, O(n).")
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
    """Where and how long the measurement ran, and what the budget left out."""
    left_out = ", ".join(m.left_out)
    return (f"Measured on {m.device} ({m.threads} CPU thread"
            f"{'s' if m.threads > 1 else ''}) in {m.seconds:.1f} s."
            + (f" Left out to stay within {m.budget_s:g} s: {left_out}." if left_out else ""))
