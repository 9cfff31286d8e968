"""Tier 1 on an accelerator: the engine gives the CPU's numbers on CUDA (or MPS) when one is present.

Every other engine test pins ``device="cpu"`` so that CI (no GPU) checks exact arithmetic; this module
runs the same work on each accelerator the machine has and compares it with the CPU, so the code path
the app takes on a GPU (``pick_device`` prefers CUDA) is tested where one exists. Skipped on a machine
without one; docs/performance.md records the run on a GPU.
"""

from __future__ import annotations

import pytest
import torch

from viz import generate, load_preset, preset_names
from viz.core.device import pick_device
from viz.core.engine.toy_model import ToyModel
from viz.core.serving.block_manager import BlockManager, PagedKVCache
from viz.core.serving.compress import CacheSpec, EvictionPolicy, compare_with_full
from viz.core.serving.paged import decode_together, variants
from viz.core.serving.scheduler import serve
from viz.core.serving.speculative import speculate
from viz.core.serving.workload import WORKLOADS, ServingConfig, workload_preset


def _accelerators() -> list[str]:
    found = []
    for kind in ("cuda", "mps"):
        try:
            pick_device(kind)
        except ValueError:
            continue
        found.append(kind)
    return found


ACCELERATORS = _accelerators()
needs_accelerator = pytest.mark.skipif(not ACCELERATORS, reason="no CUDA or MPS device on this machine")
DEVICES = ACCELERATORS or ["cuda"]  # one (skipped) case where there is none, so the module reports why


def close(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Equal up to float32 rounding: the GPU's kernels sum in another order than the CPU's."""
    return torch.allclose(a.detach().cpu().double(), b.detach().cpu().double(), rtol=1e-5, atol=1e-6,
                          equal_nan=True)


@needs_accelerator
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", preset_names())
def test_prefill_on_the_accelerator_gives_the_cpu_contexts(device, name):
    """One prefill pass on the accelerator: the same contexts and attention weights as on the CPU."""
    scenario = load_preset(name)
    on_cpu = ToyModel(scenario, device="cpu").prefill(list(scenario.tokens), list(scenario.values))
    on_dev = ToyModel(scenario, device=device).prefill(list(scenario.tokens), list(scenario.values))
    assert on_dev.q.device.type == device
    assert close(on_cpu.contexts, on_dev.contexts)
    assert close(on_cpu.weights, on_dev.weights)


@needs_accelerator
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", preset_names())
def test_decode_on_the_accelerator_predicts_the_cpu_tokens(device, name):
    """Cached and recomputed decoding on the accelerator each predict the CPU's words with its numbers
    (the two modes differ from each other where a head's rule makes the cache stale, as on the CPU)."""
    scenario = load_preset(name)
    for mode in ("kv", "recompute"):
        reference = generate(scenario, 8, mode, device="cpu")
        run = generate(scenario, 8, mode, device=device)
        assert run.device.type == device
        assert run.tokens == reference.tokens, mode
        for a, b in zip(reference.steps, run.steps):
            assert close(a.context, b.context) and close(a.logits, b.logits), mode


@needs_accelerator
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("block_size", [1, 4, 16])
def test_paged_cache_on_the_accelerator_equals_the_contiguous_one(device, block_size):
    """A block pool on the accelerator holds exactly what the contiguous cache there holds."""
    scenario = load_preset("cache-safe")
    plain = generate(scenario, 7, "kv", device=device)
    pooled = generate(scenario, 7, "kv", device=device, make_cache=lambda model: PagedKVCache(
        BlockManager(64, block_size, model.num_heads, model.d_k, device=model.device, dtype=model.dtype)))
    assert pooled.tokens == plain.tokens
    assert torch.equal(pooled.cache.keys(), plain.cache.keys())
    assert torch.equal(pooled.cache.values(), plain.cache.values())


@needs_accelerator
@pytest.mark.parametrize("device", DEVICES)
def test_memory_pool_on_the_accelerator_serves_the_cpu_words(device):
    """Memory's shared pool on the accelerator: every sequence says what it says on the CPU."""
    scenario = load_preset("cache-safe")
    requests = variants(scenario, 5)
    on_cpu = decode_together(scenario, requests, 4, device="cpu")
    on_dev = decode_together(scenario, requests, 4, device=device)
    assert [s.words for s in on_dev.sequences] == [s.words for s in on_cpu.sequences]
    for a, b in zip(on_cpu.sequences, on_dev.sequences):
        assert close(a.contexts, b.contexts) and close(a.logits, b.logits)
    assert on_dev.waste == on_cpu.waste


@needs_accelerator
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("spec", [CacheSpec(policy=EvictionPolicy(window=3, sinks=1)), CacheSpec(bits="int8"),
                                  CacheSpec(bits="int4", scales="KIVI")], ids=["window", "int8", "kivi-int4"])
def test_compressed_caches_on_the_accelerator_change_what_they_change_on_the_cpu(device, spec):
    """Eviction and quantisation on the accelerator: the same words, and the same first changed word."""
    scenario = load_preset("seed")
    on_cpu = compare_with_full(scenario, 8, spec, device="cpu")
    on_dev = compare_with_full(scenario, 8, spec, device=device)
    assert on_dev.tokens == on_cpu.tokens and on_dev.free_tokens == on_cpu.free_tokens
    assert on_dev.first_change == on_cpu.first_change and on_dev.evicted == on_cpu.evicted


@needs_accelerator
def test_speculative_decoding_on_the_accelerator_says_what_plain_decoding_says():
    """Speculation picks the best device (the accelerator here): under greedy decoding its words are
    the target's own, whatever the draft guessed."""
    run = speculate(load_preset("cache-safe"), 10, 3)
    assert run.greedy and run.words == run.plain_words
    assert close(run.logits, run.plain_logits)


@needs_accelerator
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("workload", WORKLOADS)
def test_serving_on_the_accelerator_schedules_and_says_what_the_cpu_does(device, workload):
    """The serving engine on the accelerator: the same words per request and the same schedule."""
    scenario = load_preset("cache-safe")
    work = workload_preset(scenario, workload)
    on_cpu = serve(scenario, work, ServingConfig(), device="cpu")
    on_dev = serve(scenario, work, ServingConfig(), device=device)
    assert [o.words for o in on_dev.outcomes] == [o.words for o in on_cpu.outcomes]
    assert [o.token_times for o in on_dev.outcomes] == [o.token_times for o in on_cpu.outcomes]


@needs_accelerator
@pytest.mark.parametrize("device", DEVICES)
def test_real_model_on_the_accelerator_generates_the_cpu_tokens(device):
    """The shipped model on the accelerator: cached and uncached decoding give the CPU's greedy tokens."""
    from viz.core.real.loading import encode, load_model
    from viz.core.real.model import compare_cache, generate as real_generate

    cpu, dev = load_model(device="cpu"), load_model(device=device)
    ids = encode(cpu, "The cache keeps the keys and values of every token").ids
    reference = real_generate(cpu, ids, 12)
    assert real_generate(dev, ids, 12) == reference
    assert real_generate(dev, ids, 12, cached=False) == reference
    comparison = compare_cache(dev, ids, 6)
    assert comparison.same_tokens and comparison.overall_max_abs_diff < 1e-3
