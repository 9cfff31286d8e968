"""Tier 1: the numbers pages used to work out themselves (deltas, ratios, indices) are fields of the
core's results, checked here against values worked out by hand."""

from __future__ import annotations

from dataclasses import replace

import pytest

from viz import generate, load_preset
from viz.core.lessons.lesson import replay, transcript
from viz.core.real.model import CacheComparison, CacheSnapshot, ModelShape
from viz.core.real.speculative import RealSpecRun
from viz.core.serving.compress import window_limit
from viz.core.serving.explain import compare_policies, compare_prefix
from viz.core.serving.flash import Traffic, flash_attention
from viz.core.serving.paged import WasteReport
from viz.core.serving.speculative import DraftSpec, speculate


class Run:
    """A serving run reduced to what the comparisons read, with numbers chosen by hand."""

    def __init__(self, makespan=0, throughput=0.0, padding=0, ttft=0.0, tpot=0.0, hits=0, keys=0, values=0,
                 scores=0):
        self.makespan, self.throughput, self.padding, self.prefix_hits = makespan, throughput, padding, hits
        self._means = {"ttft": ttft, "tpot": tpot}
        self.work = type("Work", (), dict(keys_encoded=keys, values_encoded=values, scores=scores))

    def mean(self, metric: str) -> float:
        return self._means[metric]


def test_the_policy_comparison_holds_every_delta_continuous_minus_static():
    """Continuous 30 ticks, 40 tokens/100 ticks, TTFT 5, no padding against static 45, 25, 12.5, 9 padding rows."""
    continuous = Run(makespan=30, throughput=40.0, ttft=5.0, tpot=2.0)
    static = Run(makespan=45, throughput=25.0, padding=9, ttft=12.5, tpot=2.0)
    comparison = compare_policies(continuous, static)
    assert (comparison.makespan_delta, comparison.throughput_delta) == (-15, 15.0)
    assert (comparison.ttft_delta, comparison.padding_delta) == (-7.5, -9)
    assert "in 30 ticks" in comparison.text and "(1.5× as long)" in comparison.text


def test_the_prefix_comparison_counts_the_keys_not_encoded_again():
    """Off encodes 96 keys, on 64 after 8 tokens hit at 4 heads: 32 keys saved; TTFT 6 with, 10 without: −4."""
    off = Run(ttft=10.0, keys=96, values=24, scores=400)
    on = Run(ttft=6.0, hits=8, keys=64, values=16, scores=300)
    saving = compare_prefix(off, on, 4)
    assert (saving.hits, saving.keys_saved, saving.ttft, saving.ttft_delta) == (8, 32, (6.0, 10.0), -4.0)
    assert saving.text.startswith("8 prompt tokens") and "32 fewer keys" in saving.text


def test_speculation_says_how_many_target_passes_and_seconds_it_saved():
    """A draft equal to the target keeps all 4 guesses: 25 words in 1 + 5 passes, 19 fewer than plain decoding."""
    scenario = load_preset("cache-safe")
    run = speculate(scenario, 25, 4, DraftSpec("fewer heads", heads=len(scenario.heads)))
    assert (run.target_passes, run.plain_passes, run.extra_passes) == (6, 25, -19)
    measured = RealSpecRun(draft="prompt lookup", k=4, prompt=(), rounds=(), ids=(), words=(), plain_ids=(),
                           plain_words=("a", "b"), max_logit_diff=0.0, seconds=0.25, plain_seconds=0.5,
                           greedy=True)
    assert measured.extra_seconds == -0.25 and measured.extra_passes == 1 - 2


def test_flash_says_the_bytes_it_saved():
    """Naive 300 read + 200 written, tiled 100 + 50: 350 bytes saved; the other way round, −350."""
    run = flash_attention(load_preset("seed"), 2, 2)
    naive, tiled = Traffic((("S", 300, 200),)), Traffic((("K", 100, 50),))
    assert replace(run, naive=naive, flash=tiled).bytes_saved == 350
    assert replace(run, naive=tiled, flash=naive).bytes_saved == -350


def test_a_paged_pool_counts_its_blocks_and_a_window_its_limit():
    """12 slots in use of blocks of 4 are 3 blocks; a 5-token prompt allows a window of 5 + 16 predictions."""
    waste = WasteReport(block_size=4, slot_nbytes=8, tokens=10, contiguous_slots=40, unshared_slots=16,
                        paged_slots=12, stored_slots=10)
    assert waste.paged_blocks == 3
    assert window_limit(5) == 21


def test_a_replay_holds_the_newest_steps_and_a_transcript_the_words_so_far():
    """The seed run picks "nice" at every step: 5 steps reached, the newest 3 are steps 3 to 5."""
    run = generate(load_preset("seed"), 6, mode="kv")
    newest = replay(run, 0, newest=3)
    assert (newest.first, newest.last, [f.step for f in newest.frames]) == (3, 5, [3, 4, 5])
    assert replay(run, 0).first == 0 and len(replay(run, 0).frames) == 6
    text = transcript(run, 2)
    assert text.prompt == ("Today", "weather", "is", "so")
    assert (text.generated, text.next_token) == (("nice", "nice"), "nice")
    assert transcript(run, 0).generated == ()


@pytest.mark.parametrize("cached, uncached, speedup", [([0.1, 0.1], [0.5, 0.5], 5.0), ([0.2], [0.2], 1.0)])
def test_the_real_cache_comparison_says_how_many_times_faster(cached, uncached, speedup):
    """Two steps of 0.1 s (20 tok/s) against two of 0.5 s (4 tok/s) are 5× faster."""
    result = CacheComparison(prompt_len=3, cached_ids=[1], uncached_ids=[1], max_abs_diff=[0.0], seq_lens=[4],
                             cached_seconds=cached, uncached_seconds=uncached)
    assert result.speedup == pytest.approx(speedup)


def test_the_real_cache_per_token_and_the_room_after_a_prompt():
    """1,024 bytes of the one-K/V-head-per-query-head formula over 4 tokens are 256 a token; 512 − 12 = 500 left."""
    snap = CacheSnapshot(layers=[], seq_len=4, element_size=4, total_bytes=512, held_bytes=512, formula_bytes=512,
                         mha_bytes=1024, formula="")
    assert (snap.bytes_per_token, snap.mha_bytes_per_token) == (128.0, 256.0)
    shape = ModelShape(layers=2, heads=4, kv_heads=2, head_dim=8, vocab=100, max_positions=512, parameters=1)
    assert shape.room(12) == 500 and shape.room(512) == 0


def test_the_at_scale_view_holds_every_tabs_numbers_at_once():
    """scale_view works out what the four tabs show before any is drawn: the fit on the GPUs (the cache
    curve marks it, the roofline's sweep runs to it), every GPU's fit, the curves, the toy's cache and
    the roofline's steps; a GPU count the model's heads cannot be split over is refused as one GPU."""
    from viz.core.scale.gpus import GPU_BY_NAME
    from viz.core.scale.memory import MemoryConfigError, cache_memory, gpu_fit, kv_split, toy_cache_memory
    from viz.core.scale.model_config import preset
    from viz.core.scale.roofline import MAX_SWEEP, batch_sweep, decode_step, prefill_step
    from viz.core.scale.view import ScaleInputs, scale_view

    llama, h100 = preset("Llama-2-7B"), GPU_BY_NAME["H100 SXM"]
    toy = generate(load_preset("seed"), 1, "kv").cache
    view = scale_view(ScaleInputs(llama, 4096, "fp16/bf16", 8, h100, 3, "fp16/bf16", 0.5, 3.0, ("OPT-13B",)), toy)
    with pytest.raises(MemoryConfigError):
        kv_split(llama, 3)
    assert view.gpus == 1 and "counting one GPU" in view.gpus_refused and view.parallel is None
    fit = gpu_fit(cache_memory(llama, 4096, "fp16/bf16", 8), h100, 1, "fp16/bf16", 0.5, 3.0)
    assert view.fit == fit and view.sequences == fit.sequences and view.capacity_bytes == fit.capacity_bytes
    assert view.fits[[f.gpu.name for f in view.fits].index(h100.name)] == fit
    assert [name for name, _ in view.curves] == ["Llama-2-7B", "OPT-13B"]
    assert view.memory.bytes_per_token == 2 * 32 * 4096 * 2  # K and V, 32 layers of 4,096 numbers in 2 bytes
    assert view.toy == toy_cache_memory(toy) and view.toy.nbytes == 4 * (4 * 64 + 1) * 4  # 4 entries of 1,028 B
    assert view.decode == decode_step(llama, h100, 8, 4096, "fp16/bf16", "fp16/bf16", 1)
    assert view.decode_one == decode_step(llama, h100, 1, 4096, "fp16/bf16", "fp16/bf16", 1)
    assert view.prefill(512) == prefill_step(llama, h100, 512, "fp16/bf16", "fp16/bf16", 1)
    limit = min(MAX_SWEEP, max(1024, 8, fit.sequences))  # the sweep runs at least to what fits
    assert view.sweep == tuple(batch_sweep(llama, h100, 4096, "fp16/bf16", "fp16/bf16", 1, limit=limit))
    two = scale_view(ScaleInputs(llama, 4096, "fp16/bf16", 1, h100, 2, "fp16/bf16", 0.9, 1.0), toy)
    assert two.gpus == 2 and two.gpus_refused == "" and two.parallel is not None and two.decode_one is None
