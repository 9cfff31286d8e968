"""Everything each Serving section shows, worked out at once: one call per section, one typed result
(the prose is in :mod:`words`, the narrations in :mod:`explain`).

The page shows one section at a time and keeps each run in the visitor's session (a click that only
steps through a run does not serve it again), so each section's view takes the runs the page kept
and works out every number and sentence the section shows before anything of it is drawn. A
stepped run's narration is a method: only the step shown is narrated. Byte counts are written by
``size``, the page's byte formatter (serving does not import scale, which owns it).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from . import words
from .explain import FLASH_TRAFFIC_NOTE, Comparison, PrefixComparison, compare_policies, compare_prefix, \
    narrate_chunking, narrate_iteration, narrate_round, narrate_visit
from .flash import FlashRun
from .papers import Lesson, chunking_lesson, speculation_lesson
from .workload import PREEMPTION_NOTE, ServingRun

Size = Callable[[float], str]


@dataclass(frozen=True)
class Stepped:
    """A served run stepped through iteration by iteration."""

    run: ServingRun
    name: str  # the stepper's and the figures' key ("continuous", "chunked"…)
    labels: tuple[str, ...]  # each iteration's name, for the stepper (iteration 1 first)
    reserved: bool  # static batching: its memory is a reservation, not a pool
    title: str | None = None  # the timeline's title (None: the policy's, "Continuous batching by iteration …")
    span: int | None = None  # the time axis's end (ticks) when compared with another run: the longer one's

    def narration(self, index: int) -> str:
        """What iteration ``index`` (0-based) did."""
        return narrate_iteration(self.run, index)


def stepped(run: ServingRun, name: str, heading: str | None = None) -> Stepped:
    """``run`` stepped through; ``heading`` names it over its timeline (with the clock's unit)."""
    return Stepped(run, name, tuple(words.iteration_label(i, it.start, it.end)
                                    for i, it in enumerate(run.iterations, start=1)), run.config.policy == "static",
                   words.timeline_title(heading) if heading else None)


@dataclass(frozen=True)
class BatchingView:
    """Continuous batching against static batching of the same workload."""

    continuous: Stepped
    static: Stepped
    comparison: Comparison
    makespan: str  # continuous batching's ticks to finish every request, with its unit: "201 ticks"
    makespan_delta: str  # against static batching, signed: "-61 ticks"
    throughput: str  # continuous batching's tokens per 100 ticks
    throughput_delta: str
    ttft: str  # its mean time to first token, with its unit: "5 ticks"
    ttft_delta: str
    helps: tuple[str, str, str, str, str]  # finished, throughput, TTFT, padding, preemptions
    text: str  # the comparison in words
    preemption_note: str

    def shown(self, policy: str) -> Stepped:
        """The run stepped through (``policy``), the other drawn whole below it."""
        return self.continuous if policy == "continuous" else self.static

    def other(self, policy: str) -> Stepped:
        return self.static if policy == "continuous" else self.continuous


def batching_view(continuous: ServingRun, static: ServingRun, size: Size) -> BatchingView:
    c = compare_policies(continuous, static)
    span = max(run.iterations[-1].end for run in (continuous, static))  # one time axis for both timelines
    return BatchingView(
        continuous=replace(stepped(continuous, "continuous"), span=span),
        static=replace(stepped(static, "static"), span=span), comparison=c,
        makespan=words.ticks(continuous.makespan), makespan_delta=words.ticks(c.makespan_delta, signed=True),
        throughput=f"{continuous.throughput:.3g}", throughput_delta=f"{c.throughput_delta:+.3g}",
        ttft=words.ticks(continuous.mean("ttft")), ttft_delta=words.ticks(c.ttft_delta, signed=True),
        helps=(words.static_help("Ticks to finish every request.", static.makespan),
               words.static_help("Tokens per 100 ticks.", f"{static.throughput:.3g}"),
               words.static_help("Time to first token, in ticks.", f"{static.mean('ttft'):.3g}"),
               words.static_help("Rows computed for nothing.", static.padding),
               f"{continuous.recomputed} tokens to recompute, {size(continuous.swap_bytes)} swapped."),
        text=c.text, preemption_note=PREEMPTION_NOTE)


@dataclass(frozen=True)
class ChunkingView:
    """Chunked prefill against whole prompts, for the workload's longest prompt."""

    whole: ServingRun
    chunked: Stepped
    longest: int  # the request with the longest prompt
    narration: str  # what chunking changed for it and for the others
    series: tuple[str, str]  # the two runs' names in the token-times figure
    heading: str  # names the chunked run stepped through (its timeline's title, with the clock)
    why: Lesson  # vLLM V1's token budget and Sarathi-Serve's reason, for this chunk


def chunking_view(whole: ServingRun, chunked: ServingRun) -> ChunkingView:
    requests = whole.workload.requests
    longest = max(range(len(requests)), key=lambda i: len(requests[i].tokens))
    size = chunked.config.chunk_size
    return ChunkingView(whole=whole, chunked=stepped(chunked, "chunked", words.chunks_heading(size)),
                        longest=longest, narration=narrate_chunking(whole, chunked, longest),
                        series=("whole prompts", words.chunks(size)), heading=words.chunks_heading(size),
                        why=chunking_lesson(size))


@dataclass(frozen=True)
class PrefixView:
    """Prefix caching on against off for the same workload."""

    off: ServingRun
    on: Stepped
    saving: PrefixComparison
    text: str  # what it saved
    system: str  # the sharing system it shows
    ttft: str  # mean time to first token with the cache
    ttft_delta: str


def prefix_view(off: ServingRun, on: ServingRun, num_heads: int) -> PrefixView:
    saving = compare_prefix(off, on, num_heads)
    return PrefixView(off=off, on=stepped(on, "prefix", words.PREFIX_HEADING), saving=saving, text=saving.text,
                      system=on.sharing.sentence if on.sharing else "", ttft=words.ticks(saving.ttft[0]),
                      ttft_delta=words.ticks(saving.ttft_delta, signed=True))


@dataclass(frozen=True)
class SpeculationView:
    """Speculative decoding against plain decoding: the toy's run or the real model's (the same fields)."""

    run: Any  # a SpecRun, or the real model's RealSpecRun (serving does not import the real model)
    same: str  # how its words compare with the target's alone
    output: str  # the words it made (after the prompt, for the real model)
    same_word: bool  # every word the same: any draft guesses right
    acceptance: str
    acceptance_help: str
    time: str
    time_delta: str
    time_help: str
    logit_diff: str
    plain_passes: str  # the help under the target's passes
    why: Lesson  # the papers' speed-up model for the measured acceptance rate, and the GPU's ridge

    def narration(self, index: int) -> str:
        """What round ``index`` (0-based) did."""
        return narrate_round(self.run.rounds[index], self.run.greedy)


def speculation_view(run: Any, esc: words.Escape, model: str = "", *, k: int, most: int, gpu: str,
                     ridge: float) -> SpeculationView:
    """``run``'s numbers and words; ``model`` names the real model (empty for the toy). ``k`` guesses
    per round of at most ``most``; ``gpu`` and its 16-bit ``ridge`` point (FLOPs per byte) are the card
    the "Why it matters" fold speaks of (the page passes them in: serving never imports scale)."""
    same = words.same_as_target(run.greedy, run.same_words if run.greedy else False)
    output = (words.real_output(model, run.draft, same, run.prompt, run.words, esc) if model
              else words.toy_output(same, run.words, esc))
    return SpeculationView(
        run=run, same=same, output=output,
        same_word=len(set(run.words)) == 1,
        acceptance=f"{run.acceptance:.0%}", acceptance_help=f"{run.accepted} of {run.drafted}.",
        time=words.milliseconds(run.seconds), time_delta=words.signed_milliseconds(run.extra_seconds),
        time_help=f"Plain decoding: {words.milliseconds(run.plain_seconds)} (one measurement on this busy machine).",
        logit_diff=f"{run.max_logit_diff:.2g}", plain_passes=f"Plain decoding: {run.plain_passes}, one per word.",
        why=speculation_lesson(run, k, most, gpu=gpu, ridge=ridge))


@dataclass(frozen=True)
class FlashView:
    """FlashAttention's tiles against the naive pass."""

    run: FlashRun
    moved: str  # bytes the tiles move
    moved_delta: str
    moved_help: str
    fast: str  # fast memory one tile visit needs
    fast_help: str
    diff: str  # the largest |tiled − naive|
    diff_help: str
    traffic_note: str  # what the traffic sweep teaches

    def narration(self, index: int, head: int) -> str:
        """What tile visit ``index`` (0-based) did for ``head``."""
        return narrate_visit(self.run, index, head)


def flash_view(run: FlashRun, size: Size) -> FlashView:
    return FlashView(
        run=run, moved=size(run.flash.total), moved_delta=words.bytes_delta(run.bytes_saved, size),
        moved_help=f"The naive pass moves {size(run.naive.total)}.", fast=size(run.flash_fast_bytes),
        fast_help=f"The naive pass needs each head's n × n scores at once: {size(run.naive_fast_bytes)}.",
        diff=f"{run.max_abs_diff:.2g}",
        diff_help=f"Within the bound {run.tolerance:.2g}: the same sums in another order, one rescale per tile.",
        traffic_note=FLASH_TRAFFIC_NOTE)
