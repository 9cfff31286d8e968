"""The benchmark's report types: a run's sizes (FULL, QUICK), a section's typed result, its table and
findings. Kept apart from :mod:`viz.tools.bench` so sections in their own modules can return them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..core.timing import TimingPlan


@dataclass(frozen=True)
class BenchConfig:
    """Sizes and repeats for one run. FULL is the whole sweep; QUICK takes a few seconds."""

    name: str
    prefill_sizes: tuple[int, ...]  # prompt lengths, batched vs one by one
    decode_sizes: tuple[int, ...]  # total lengths n for decode, peers and the floor
    recompute_max: int  # recompute is measured up to here: its n × n pass outgrows memory
    copy_bytes: int  # tensor copied to measure bandwidth
    latency: tuple[tuple[str, int], ...]  # (scenario in LATENCY_SCENARIOS, Decode step)
    latency_repeats: int  # clicks per page and scenario
    plan: TimingPlan  # for fast calls (a decode step)
    slow_plan: TimingPlan  # for calls of a second or more (recompute, a whole prefill)

    @property
    def quick(self) -> bool:
        return self.name == "quick"


FULL = BenchConfig(
    name="full", prefill_sizes=(64, 256, 1024, 4096), decode_sizes=(256, 1024, 4096, 16384),
    recompute_max=4096, copy_bytes=256 * 2**20, latency=(("seed", 1), ("64 tokens, 8 heads", 32)),
    latency_repeats=11,
    plan=TimingPlan(warmup=3, min_repeats=7, max_repeats=25, target_s=0.5),
    slow_plan=TimingPlan(warmup=1, min_repeats=5, max_repeats=9, target_s=2.0),
)
QUICK = BenchConfig(
    name="quick", prefill_sizes=(16, 64), decode_sizes=(64, 256), recompute_max=256,
    copy_bytes=16 * 2**20, latency=(("seed", 1),), latency_repeats=3,
    plan=TimingPlan(warmup=1, min_repeats=2, max_repeats=5, target_s=0.01),
    slow_plan=TimingPlan(warmup=1, min_repeats=2, max_repeats=2, target_s=0.0),
)


@dataclass(frozen=True)
class Table:
    """Rows of text under column headings, for the terminal."""

    columns: tuple[str, ...]
    cells: tuple[tuple[str, ...], ...]

    def render(self) -> str:
        widths = [max([len(c)] + [len(row[i]) for row in self.cells]) for i, c in enumerate(self.columns)]
        lines = ["  ".join(c.rjust(w) for c, w in zip(self.columns, widths)),
                 "  ".join("-" * w for w in widths)]
        lines += ["  ".join(c.rjust(w) for c, w in zip(row, widths)) for row in self.cells]
        return "\n".join(lines)


@dataclass(frozen=True)
class Finding:
    """One derived number worth a line of its own, e.g. a speed-up at the largest n."""

    key: str  # stable name in the JSON
    text: str  # what it is, in words
    value: float


@dataclass(frozen=True)
class SectionResult:
    """What one section measured: typed rows for the JSON, a table for the terminal."""

    rows: tuple[Any, ...] = ()  # typed measurements (dataclasses)
    table: Table | None = None
    findings: tuple[Finding, ...] = ()
    notes: tuple[str, ...] = ()
    skipped: str | None = None  # why the section did not run, if it did not
    extra: dict[str, Any] = field(default_factory=dict)  # more for the JSON: an outside section's dict
    text: str | None = None  # an outside section's own rendering, printed as it is
    error: str | None = None  # the section raised this: what it measured is lost, the rest is kept
    key: str = ""  # its name in the JSON, and its title: set by run_bench from its Section
    title: str = ""
