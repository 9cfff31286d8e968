"""One timing harness for everything kvlab measures: the toy's caches, transformers' caches, the
real model and the Cost page's live sweep.

Calls are warmed up, then timed in **rounds**: one call of each contender per round, so a change in
the machine's load hits them alike, and the device is synchronised around every timed region so a
timer sees the work and not its launch. A timing is the median of the rounds, with its spread.
(``torch.utils.benchmark.Timer`` handles warm-up and synchronisation too, but times one statement
at a time; interleaving contenders is what keeps ratios honest on a shared, noisy machine.)

What this module does not do: decide what to measure or check any speed.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from typing import Any, Callable

import torch


@dataclass(frozen=True)
class TimingPlan:
    """How one thing is timed: warm-up calls, then repeats until enough time has been measured."""

    warmup: int  # untimed calls first: allocation, lazy imports, caches warming up
    min_repeats: int  # timed calls at least
    max_repeats: int  # timed calls at most
    target_s: float  # past min_repeats, stop once this much time has been measured

    @property
    def max_calls(self) -> int:
        return self.warmup + self.max_repeats


@dataclass(frozen=True)
class Timing:
    """Seconds per call: the median of the timed repeats, and their spread."""

    median_s: float
    min_s: float
    max_s: float
    repeats: int

    @classmethod
    def of(cls, samples: list[float]) -> "Timing":
        return cls(statistics.median(samples), min(samples), max(samples), len(samples))


def synchronize(device: torch.device) -> None:
    """Wait for the device to finish queued work, so a timer sees the work and not its launch."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    elif device.type == "mps":
        torch.mps.synchronize()


def timed(fn: Callable[[], Any], device: torch.device) -> tuple[float, Any]:
    """One synchronised call: (seconds, what it returned)."""
    synchronize(device)
    start = time.perf_counter()
    value = fn()
    synchronize(device)
    return time.perf_counter() - start, value


def time_in_turn(fns: dict[str, Callable[[], Any]], plan: TimingPlan, device: torch.device,
                 deadline: float | None = None) -> dict[str, tuple[Timing, Any]]:
    """Time several calls in rounds, one call of each per round. For each: its timing and what its
    first timed call returned.

    ``plan`` counts rounds (its target_s is time summed over every call); past ``deadline`` (a
    ``time.perf_counter()`` value) it stops after the first round.
    """
    def late() -> bool:
        return deadline is not None and time.perf_counter() > deadline

    for _ in range(plan.warmup):
        if late():
            break
        for fn in fns.values():
            fn()
    samples: dict[str, list[float]] = {name: [] for name in fns}
    first: dict[str, Any] = {}
    rounds, spent = 0, 0.0
    while rounds == 0 or (not late() and (rounds < plan.min_repeats or (
            rounds < plan.max_repeats and spent < plan.target_s))):
        for name, fn in fns.items():
            elapsed, value = timed(fn, device)
            samples[name].append(elapsed)
            spent += elapsed
            first.setdefault(name, value)
        rounds += 1
    return {name: (Timing.of(samples[name]), first[name]) for name in fns}


def time_calls(fn: Callable[[], Any], plan: TimingPlan, device: torch.device,
               deadline: float | None = None) -> tuple[Timing, Any]:
    """Time one call as ``plan`` says; returns the timing and what the first timed call returned."""
    return time_in_turn({"": fn}, plan, device, deadline)[""]


def format_seconds(seconds: float) -> str:
    """12.3 µs, 4.56 ms, 1.23 s."""
    if seconds < 1e-3:
        return f"{seconds * 1e6:.1f} µs"
    if seconds < 1:
        return f"{seconds * 1e3:.3g} ms"
    return f"{seconds:.3g} s"
