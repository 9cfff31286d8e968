"""A gallery of kvlab's figures and boards, built from small runs, for the tests that hold every figure
to one visual language (tests/test_visual_language.py) and one vocabulary (tests/test_glossary.py).

Each entry is (name, figure or board spec, matrix): ``matrix`` is "query-key" for a matrix whose rows
are queries and columns keys, "matrix" for another matrix (its axes must still say what they are),
None for a chart.
"""

from __future__ import annotations

import functools
from dataclasses import replace

import torch

from viz import generate, load_preset
from viz.core.engine.model import MODES
from viz.core.engine.cost import Bandwidth, CostMeasurement, DecodePoint, PrefillPoint
from viz.core.engine.explain import check_cache
from viz.core.engine.model import WorkCounts
from viz.core.lessons.lesson import decode_frame, prefill_frame
from viz.core.lessons.stale import stale_lesson
from viz.core.lessons.tour import TOUR_SERVER, tour_workload
from viz.core.real.model import CacheComparison, CacheSnapshot, LayerCache
from viz.core.real.rules_match import match_heads
from viz.core.scale.gpus import DEFAULT_GPU, GPU_BY_NAME
from viz.core.scale.memory import cache_memory, gpu_fit, memory_curve
from viz.core.scale.model_config import DEFAULT_MODEL, preset, preset_names
from viz.core.scale.roofline import batch_sweep, decode_step, prefill_step
from viz.core.scale.words import curve_notes
from viz.core.serving.compress import CacheSpec, EvictionPolicy, compare_with_full
from viz.core.serving.flash import flash_attention, traffic_sweep
from viz.core.serving.paged import decode_together, variants
from viz.core.serving.scheduler import serve
from viz.core.serving.speculative import speculate
from viz.core.timing import Timing
from viz.figures import board, cost, lesson, memory, real, roofline, serving, stale, toy
from viz.figures import flash as flash_figs

QK, MATRIX = "query-key", "matrix"


def _toy() -> list[tuple[str, object, str | None]]:
    seed = load_preset("seed")
    runs = {mode: generate(seed, 3, mode) for mode in MODES}
    kv = runs["kv"]
    frame = decode_frame(kv, kv, runs["recompute"], 1, 1)
    heads = list(seed.head_names)
    went_stale = stale_lesson(kv, runs["recompute"], check_cache(kv, runs["recompute"], 2))
    later = generate(seed, 12, "kv")  # step 11: keys 2–8 left out of the window, in the board's gap column
    return [
        ("causal mask", toy.causal_mask_figure(kv), QK),
        *[(f"stage {stage}", toy.stage_figure(kv, 1, stage, 3), QK) for stage in toy.STAGES],
        ("Q and K", toy.qk_figure(kv, 0), MATRIX),
        ("contexts", toy.contexts_figure(kv, 2), MATRIX),
        ("every head", toy.small_multiples(kv, 2), QK),
        ("prediction", toy.prediction_figure(kv, 1), None),
        ("attention as it grew", toy.growing_attention_figure(kv, 1), QK),
        ("toy cache", toy.cache_figure(kv), MATRIX),
        ("work", toy.work_figure(runs), None),
        ("lesson attention", lesson.attention_figure(frame, "last", newest_key=True), QK),
        ("lesson cache", lesson.cache_figure(frame, heads), MATRIX),
        ("attention board", board.attention_board(frame, "last", newest_key=True), QK),
        ("windowed attention board", board.attention_board(decode_frame(later, later, None, 11, 0), "even",
                                                           newest_key=True), QK),
        ("cache board", board.cache_board(frame, heads), MATRIX),
        ("words board", board.words_board(frame), None),
        ("prefill words board", board.words_board(prefill_frame(kv, 4, 0)), None),
        ("contexts board", board.contexts_board(kv, 2), MATRIX),
        ("stale figure", stale.stale_figure(went_stale), MATRIX),
        ("stale board", board.stale_board(went_stale), MATRIX),
    ]


def _memory() -> list[tuple[str, object, str | None]]:
    safe = load_preset("cache-safe")
    run = decode_together(safe, variants(safe, 2), 2, max_new_tokens=4)
    snapshot, names = run.snapshots[-1], [s.name for s in run.sequences]
    comparison = compare_with_full(safe, 4, CacheSpec(policy=EvictionPolicy(window=2)))
    step = comparison.steps[-1]
    return [
        ("pool", memory.pool_figure(run, snapshot, names), MATRIX),
        ("pool board", memory.pool_board(run, snapshot, names), MATRIX),
        ("waste board", memory.waste_board(run.waste, 4), None),
        ("attention compared", memory.attention_compare_figure(step, comparison.tokens, safe.head_names), MATRIX),
        ("attention compared board", memory.attention_compare_board(step, comparison.tokens, safe.head_names), MATRIX),
        ("contexts compared", memory.context_compare_figure(step, safe.head_names), None),
        ("logits compared", memory.logits_compare_figure(step, safe.vocab_tokens), None),
        ("bytes", memory.bytes_figure(comparison), None),
    ]


def _serving() -> list[tuple[str, object, str | None]]:
    served = load_preset("seed").cache_safe()
    workload = tour_workload(served)
    continuous = serve(served, workload, TOUR_SERVER)
    static = serve(served, workload, replace(TOUR_SERVER, policy="static"))
    runs = [("continuous", continuous), ("static", static)]
    shared = next(it.index for it in continuous.iterations if any(len(b.owners) > 1 for b in it.blocks))
    spec = speculate(served, 6, 3)
    flash = flash_attention(served, 2, 2)
    return [
        ("timeline", serving.timeline_figure(continuous, 1), None),
        ("serving pool", serving.pool_figure(continuous, shared), None),  # blocks laid out in rows: no axes
        ("serving pool, cached", serving.pool_figure(continuous, len(continuous.iterations) - 1), None),  # no holder
        ("reservation", serving.reservation_figure(static, 1), None),
        ("metrics", serving.metrics_figure(runs), None),
        ("utilisation", serving.utilisation_figure(runs), None),
        ("token times", serving.token_times_figure(runs, 0), None),
        ("prefix", serving.prefix_figure(continuous, continuous), None),
        ("rounds", serving.rounds_figure(spec, 0), MATRIX),
        ("cache length", serving.cache_length_figure(spec), None),
        ("tiles", flash_figs.flash_tiles_figure(flash, 1, 0, "even"), QK),
        ("traffic", flash_figs.traffic_figure(traffic_sweep(served, 2, 2), 2, 2), None),
    ]


def _real() -> list[tuple[str, object, str | None]]:
    generator = torch.Generator().manual_seed(0)
    attentions = torch.rand(2, 2, 5, 5, generator=generator).tril().softmax(-1)  # (layers, heads, n, n)
    pieces = ["The", " sky", " is", " very", " blue"]
    comparison = CacheComparison(prompt_len=3, cached_ids=[1, 2], uncached_ids=[1, 2], max_abs_diff=[0.0, 1e-6, 2e-6],
                                 seq_lens=[4, 5], cached_seconds=[0.01, 0.011], uncached_seconds=[0.02, 0.03])
    norms = torch.rand(2, 5, generator=generator)  # (kv_heads, seq)
    layer = LayerCache(0, "DynamicLayer", (1, 2, 5, 4), (1, 2, 5, 4), 160, 160, norms)
    snap = CacheSnapshot([layer], 5, 4, 160, 160, 160, 160, "formula")
    matches = match_heads(attentions, pieces)
    return [
        ("real attention grid", real.attention_grid(attentions, [0, 1], (0, 1)), QK),
        ("key norms", real.key_norms_figure(snap, 0, pieces), MATRIX),
        ("heads against rules", real.scores_figure(matches, matches.heads[0].label), MATRIX),
        ("head against its rule", real.head_vs_rule_figure(attentions, matches, 0, 1, pieces), QK),
        ("real attention detail", real.attention_detail(attentions, pieces, 1, 0), QK),
        ("top k", real.top_k_figure([(" blue", 0.5), (" clear", 0.3), (" dark", 0.2)], " is", 0), None),
        ("GQA", real.gqa_figure(8, 2), None),
        ("cache growth", real.cache_growth_figure([(3, 100, 100), (4, 130, 128)]), None),
        ("speed", real.speed_figure(comparison), None),
        ("logit difference", real.diff_figure(comparison), None),
    ]


def _scale() -> list[tuple[str, object, str | None]]:
    """At scale's figures: two models' curves, one GPU's split, and what limits a decode step (the
    roofline with decode and prefill on it, the bytes and the throughput of a batch sweep)."""
    configs = [preset(DEFAULT_MODEL), preset(next(n for n in preset_names() if n != DEFAULT_MODEL))]
    gpu = GPU_BY_NAME[DEFAULT_GPU]
    fit = gpu_fit(cache_memory(configs[0], 4096), gpu)
    sweep = list(batch_sweep(configs[0], gpu, 4096, limit=1024))
    steps = [("decode, batch 1", decode_step(configs[0], gpu, 1, 4096)), ("prefill", prefill_step(configs[0], gpu, 4096))]
    return [("memory curve", memory.memory_curve_figure([(c.name, memory_curve(c, 8192)) for c in configs], 4096,
                                                        curve_notes(fit.capacity_bytes, 1, 4096),
                                                        fit.capacity_bytes, configs[0].max_context), None),
            ("GPU split", memory.gpu_split_figure(fit, 10_000), None),
            ("roofline", roofline.roofline_figure(steps), None),
            ("decode bytes", roofline.bytes_figure(sweep, 7), None),
            ("throughput", roofline.throughput_figure(sweep, 29), None)]


def _cost() -> list[tuple[str, object, str | None]]:
    """The Cost page's two figures from a small made-up sweep (as tests/test_cost_reading.py makes)."""
    def timing(seconds: float) -> Timing:
        return Timing(seconds, seconds * 0.9, seconds * 1.1, 3)
    decode = [DecodePoint(n, mode, timing(0.001 * n), WorkCounts(multiply_adds=n * 65), n * 1040)
              for n in (10, 40) for mode in ("recompute", "kv", "cat")]
    prefill = (PrefillPoint(8, timing(0.001), timing(0.01), WorkCounts(multiply_adds=512), WorkCounts(multiply_adds=300),
                            0.0),)
    measurement = CostMeasurement("cpu", 1, tuple(decode), prefill, Bandwidth(10**9, timing(0.1)), 3.0, 1.0, ())
    return [("cost decode", cost.decode_figure(measurement), None), ("cost prefill", cost.prefill_figure(measurement), None)]


@functools.cache
def tables() -> tuple[tuple[str, object], ...]:
    """The figure modules' tables whose column names the pages show, by name."""
    seed = load_preset("seed")
    runs = {mode: generate(seed, 3, mode) for mode in MODES}
    served = seed.cache_safe()
    continuous = serve(served, tour_workload(served), TOUR_SERVER)
    spec = speculate(served, 6, 3)
    flash = flash_attention(served, 2, 2)
    safe = load_preset("cache-safe")
    comparison = compare_with_full(safe, 4, CacheSpec(policy=EvictionPolicy(window=2)))
    return (("generated", toy.generated_table(runs["kv"])), ("requests", serving.requests_table(continuous)),
            ("iteration", serving.iteration_table(continuous, 1)), ("speculative", serving.spec_table(spec)),
            ("running", flash_figs.running_table(flash, 1, 0)), ("traffic", flash_figs.traffic_table(flash)),
            ("eviction", memory.comparison_table(comparison)))


@functools.cache
def gallery() -> tuple[tuple[str, object, str | None], ...]:
    """Every figure and board above, built once per test session."""
    return tuple(_toy() + _memory() + _serving() + _real() + _scale() + _cost())
