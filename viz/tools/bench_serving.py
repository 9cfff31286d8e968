"""The benchmark's serving section: the scheduler's policies, speculative decoding and FlashAttention,
with the engine's work counts and measured times (``python -m viz bench``).

* **Scheduling**: every workload preset under continuous batching, static batching, chunked prefill
  and prefix caching, and a tight pool under both preemptions: ticks to finish, mean time to first
  token and per output token (the page's clock), multiply-adds and keys the engine computed, and
  the measured wall time of the whole run on this machine.
* **Speculative decoding**: the toy with both drafts and the shipped GPT-2 with prompt lookup, an
  early exit and the shipped Llama drafting: guesses kept, target passes against plain decoding,
  and both timed back to back.
* **FlashAttention**: bytes each pass moves between slow and fast memory at growing lengths, and the
  tiled pass timed against the engine's one-pass prefill (on a CPU the tiles are ordinary torch calls,
  so they are slower: the saving is the traffic a GPU kernel avoids, not this machine's time).

What this module does not do: assert any speed, or draw.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from ..core.engine.model import ToyModel
from ..core.serving.flash import MAX_FLASH_TOKENS, flash_attention, flash_traffic, naive_traffic
from ..core.engine.presets import load_preset, sequence
from ..core.real.model import LLAMA_DIR, encode, load_model
from ..core.real.speculative import speculate_real
from ..core.serving.scheduler import serve
from ..core.serving.speculative import DraftSpec, speculate
from ..core.timing import Timing, format_seconds, time_in_turn
from ..core.serving.workload import WORKLOADS, ServingConfig, workload_preset
from .bench_report import BenchConfig, Finding, SectionResult, Table

POLICIES = {"continuous": ServingConfig(num_blocks=40), "static": ServingConfig(num_blocks=40, policy="static"),
            "chunked 8": ServingConfig(num_blocks=40, chunk_size=8),
            "prefix caching": ServingConfig(num_blocks=40, prefix_caching=True),
            "tight, recompute": ServingConfig(num_blocks=12, block_size=2, max_batch=8),
            "tight, swap": ServingConfig(num_blocks=12, block_size=2, max_batch=8, preemption="swap")}
REAL_PROMPT = 'The "return" statement leaves the current function call with the expression list'


@dataclass(frozen=True)
class ServingPoint:
    """One workload under one policy."""

    workload: str
    policy: str
    makespan_ticks: int
    ttft_ticks: float
    tpot_ticks: float
    preemptions: int
    recomputed: int
    prefix_hits: int
    swap_bytes: int
    multiply_adds: int  # counted by the engine over every pass
    keys_encoded: int
    run: Timing  # wall time of the whole run (scheduling and engine)


@dataclass(frozen=True)
class SpecPoint:
    """Speculative against plain decoding of the same prompt, greedy."""

    model: str
    draft: str
    k: int
    words: int
    acceptance: float
    target_passes: int
    plain_passes: int
    same_output: bool
    speculative: Timing
    plain: Timing


@dataclass(frozen=True)
class FlashPoint:
    """One prompt length: bytes each pass moves, and both passes timed on this machine."""

    n: int
    tile: int
    naive_bytes: int
    flash_bytes: int
    max_abs_diff: float
    tiled: Timing | None  # None beyond the lengths the tile walk keeps
    naive: Timing | None


def _scenario():
    return load_preset("cache-safe")


def measure_scheduling(config: BenchConfig, device: torch.device) -> list[ServingPoint]:
    scenario = _scenario()
    points = []
    for name in WORKLOADS[:2] if config.quick else WORKLOADS:
        workload = workload_preset(scenario, name)
        for policy, serving in POLICIES.items():
            if any(r.blocks_needed(serving.block_size) > serving.num_blocks for r in workload.requests):
                continue  # a request of this workload needs more than the tight pool holds
            timing, run = time_in_turn({policy: lambda: serve(scenario, workload, serving, device, math.inf)},
                                       config.slow_plan, device)[policy]
            work = run.work
            points.append(ServingPoint(name, policy, run.makespan, run.mean("ttft"), run.mean("tpot"),
                                       run.preemptions, run.recomputed, run.prefix_hits, run.swap_bytes,
                                       work.multiply_adds, work.keys_encoded, timing))
    return points


def _in_turn(call, repeats: int):
    """Call a speculative run ``repeats`` times; each call times speculative and plain decoding back to
    back. Returns the first run and both timings."""
    runs = [call() for _ in range(repeats)]
    return runs[0], Timing.of([r.seconds for r in runs]), Timing.of([r.plain_seconds for r in runs])


def measure_speculation(config: BenchConfig, device: torch.device) -> list[SpecPoint]:
    scenario = _scenario()
    repeats = config.slow_plan.min_repeats
    words = 24 if config.quick else 48
    points = []
    for draft in (DraftSpec("fewer heads", heads=2), DraftSpec("prompt lookup", ngram=1)):
        for k in (2, 4):
            run, spec, plain = _in_turn(lambda: speculate(scenario, words, k, draft), repeats)
            points.append(SpecPoint("toy", draft.kind, k, words, run.acceptance, run.target_passes, run.plain_passes,
                                    run.same_words, spec, plain))
    real, llama = load_model(None, device), load_model(LLAMA_DIR, device)
    ids = list(encode(real, REAL_PROMPT).ids)
    tokens = 32 if config.quick else 64
    for draft in ("prompt lookup", "early exit", "another model"):
        run, spec, plain = _in_turn(lambda: speculate_real(real, ids, tokens, 4, draft, layers=2, draft_model=llama),
                                    repeats)
        points.append(SpecPoint(real.name, run.draft, 4, tokens, run.acceptance, run.target_passes, run.plain_passes,
                                run.same_words, spec, plain))
    return points


def measure_flash(config: BenchConfig, device: torch.device) -> list[FlashPoint]:
    scenario = _scenario()
    heads, d_k, size = len(scenario.heads), scenario.d_k, 4
    points = []
    for n in ((32, 128) if config.quick else (32, 128, 512, 2048, 4096)):
        for tile in (16, 64):
            timed = None
            if n <= MAX_FLASH_TOKENS:
                tokens, values = sequence(scenario, n)
                model = ToyModel(scenario, device=device)
                timed = time_in_turn({"tiled": lambda: flash_attention(scenario, tile, tile, tokens=tokens, values=values),
                                      "naive": lambda: model.prefill(tokens, values)}, config.slow_plan, device)
            naive, flash = naive_traffic(n, heads, d_k, size), flash_traffic(n, heads, d_k, size, tile, tile)
            points.append(FlashPoint(n, tile, naive.total, flash.total,
                                     timed["tiled"][1].max_abs_diff if timed else float("nan"),
                                     timed["tiled"][0] if timed else None, timed["naive"][0] if timed else None))
    return points


def bench_serving(config: BenchConfig, device: torch.device) -> SectionResult:
    """7. Serving: scheduling policies, speculative decoding and FlashAttention (this module)."""
    scheduling = measure_scheduling(config, device)
    speculation = measure_speculation(config, device)
    flash = measure_flash(config, device)
    tables = [
        Table(("workload", "policy", "ticks", "TTFT", "TPOT", "preempt", "recomputed", "prefix hits", "swapped",
               "multiply-adds", "keys", "run"),
              tuple((p.workload, p.policy, str(p.makespan_ticks), f"{p.ttft_ticks:.1f}", f"{p.tpot_ticks:.1f}",
                     str(p.preemptions), str(p.recomputed), str(p.prefix_hits), f"{p.swap_bytes:,}",
                     f"{p.multiply_adds:,}", f"{p.keys_encoded:,}", format_seconds(p.run.median_s))
                    for p in scheduling)),
        Table(("model", "draft", "k", "words", "kept", "passes", "plain passes", "same", "speculative", "plain"),
              tuple((p.model, p.draft, str(p.k), str(p.words), f"{p.acceptance:.0%}", str(p.target_passes),
                     str(p.plain_passes), "yes" if p.same_output else "NO", format_seconds(p.speculative.median_s),
                     format_seconds(p.plain.median_s)) for p in speculation)),
        Table(("n", "tile", "naive bytes", "tiled bytes", "tiled/naive", "tiled time", "naive prefill", "max diff"),
              tuple((str(p.n), f"{p.tile}×{p.tile}", f"{p.naive_bytes:,}", f"{p.flash_bytes:,}",
                     f"{p.flash_bytes / p.naive_bytes:.2f}", format_seconds(p.tiled.median_s) if p.tiled else "—",
                     format_seconds(p.naive.median_s) if p.naive else "—",
                     f"{p.max_abs_diff:.2g}" if p.tiled else "—") for p in flash)),
    ]
    burst = {p.policy: p for p in scheduling if p.workload == WORKLOADS[0]}
    lookup = next(p for p in speculation if p.model != "toy" and p.draft.startswith("prompt lookup"))
    largest = max((p for p in flash if p.tile == 64), key=lambda p: p.n)
    findings = (
        Finding("static_over_continuous_ticks_burst", "a burst: static / continuous batching, ticks to finish",
                burst["static"].makespan_ticks / burst["continuous"].makespan_ticks),
        Finding("real_lookup_speedup", "GPT-2, prompt lookup k = 4: plain / speculative time",
                lookup.plain.median_s / lookup.speculative.median_s),
        Finding(f"flash_bytes_ratio_at_{largest.n}", f"tiled / naive bytes at n = {largest.n}, 64 × 64 tiles",
                largest.flash_bytes / largest.naive_bytes),
    )
    if not config.quick:
        shared = {p.policy: p for p in scheduling if p.workload == "a shared system prompt"}
        findings += (Finding("prefix_ttft_ratio_shared", "a shared system prompt: TTFT with / without prefix caching",
                             shared["prefix caching"].ttft_ticks / shared["continuous"].ttft_ticks),)
    notes = ("Ticks are the Serving page's clock: one per token an iteration computes plus 8 per iteration. "
             "'run' is the measured wall time of a whole scheduler run on this machine.",
             "Speculative and plain decoding are timed back to back inside each call; every output is "
             "checked against the target decoding alone ('same').",
             "The tiled pass runs each tile as ordinary torch calls, so on a CPU it is slower than one "
             "batched prefill; the bytes are what a GPU kernel would move between HBM and SRAM.")
    text = "\n\n".join(table.render() for table in tables)
    return SectionResult(tuple(scheduling) + tuple(speculation) + tuple(flash), None, findings, notes,
                         text=text)
