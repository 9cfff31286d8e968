"""Tier 1: what limits a decode step, checked against calculations done by hand."""

from __future__ import annotations

import pytest

from viz.core.scale.gpus import GPU_BY_NAME, compute_dtype
from viz.core.scale.memory import GIB, MemoryConfigError
from viz.core.scale.model_config import preset
from viz.core.scale.roofline import (attention_flops_per_key, batch_sweep, cache_overtakes, context_overtakes,
                               decode_step, experts_touched, prefill_step, sweep_batches, weight_bytes)

H100, H200, A100 = GPU_BY_NAME["H100 SXM"], GPU_BY_NAME["H200 SXM"], GPU_BY_NAME["A100 80GB"]
LLAMA2_READ = 6_738_415_616 - 32_000 * 4_096  # every weight but the token table, which is only indexed


def test_llama2_7b_decode_at_batch_1_by_hand():
    """Llama-2-7B, fp16, batch 1, 4,096 tokens cached, on an H100: 13.2 GB of weights + 2 GiB of cache read,
    2 FLOPs per weight + 4 · 32 heads · 128 · 32 layers · 4,097 keys of attention: about 1 FLOP per byte,
    memory-bound at 4.59 ms per token."""
    step = decode_step(preset("Llama-2-7B"), H100, 1, 4096)
    assert step.weight_bytes == 2 * LLAMA2_READ == 13_214_687_232
    assert step.cache_bytes == 2 * GIB
    assert step.matmul_flops == 2 * LLAMA2_READ
    assert step.attention_flops == 4 * 32 * 128 * 32 * 4097
    assert step.memory_seconds == pytest.approx((13_214_687_232 + 2 * GIB) / 3.35e12)
    assert step.compute_seconds == pytest.approx((2 * LLAMA2_READ + 4 * 32 * 128 * 32 * 4097) / 989.4e12)
    assert step.intensity == pytest.approx(1.0, abs=1e-3)
    assert step.bound == "memory" and step.seconds == step.memory_seconds
    assert step.seconds == pytest.approx(4.586e-3, rel=1e-3) and step.tokens_per_second == pytest.approx(218.1, rel=1e-3)
    assert step.weight_bytes > 6 * step.cache_bytes  # at batch 1 the weights, not the cache, dominate


def test_ridge_points_are_peak_over_bandwidth():
    """H100 SXM: 989.4 TFLOP/s over 3.35 TB/s is 295 FLOPs per byte; fp8 doubles it; the A100 has no fp8 units."""
    assert H100.ridge("fp16/bf16") == pytest.approx(989.4e12 / 3.35e12)
    assert H100.ridge("fp8") == pytest.approx(2 * H100.ridge("fp16/bf16"), rel=1e-3)
    assert compute_dtype(A100, "fp8") == "fp16/bf16" and compute_dtype(H100, "int4") == "fp16/bf16"
    assert H200.ridge("fp16/bf16") < H100.ridge("fp16/bf16")  # same compute, more bandwidth


def test_prefill_is_compute_bound():
    """A 4,096-token prefill of Llama-2-7B reuses each weight 4,096 times: ~3,800 FLOPs per byte, far past the
    ridge, so compute-bound; its attention covers the 4,096 · 4,097 / 2 visible pairs."""
    step = prefill_step(preset("Llama-2-7B"), H100, 4096)
    assert step.matmul_flops == 2 * LLAMA2_READ * 4096
    assert step.attention_flops == 4 * 32 * 128 * 32 * (4096 * 4097 // 2)
    assert step.cache_bytes == 2 * GIB and step.weight_bytes == 2 * LLAMA2_READ
    assert step.bound == "compute" and step.intensity > 10 * step.ridge
    assert step.seconds_per_token < decode_step(preset("Llama-2-7B"), H100, 1, 4096).seconds / 50


def test_batching_raises_throughput_until_compute_or_cache_limits_it():
    """Llama-3-8B at 128 tokens: throughput grows with the batch while the step is memory-bound, then stays flat
    once compute-bound; a long MHA context (Llama-2-7B at 32K) levels off memory-bound on the cache."""
    short = batch_sweep(preset("Llama-3-8B"), H100, 128, limit=4096)
    memory_bound = [s.tokens_per_second for s in short if s.bound == "memory"]
    assert len(memory_bound) >= 5 and all(a < b for a, b in zip(memory_bound, memory_bound[1:]))
    assert short[0].bound == "memory" and short[-1].bound == "compute"
    assert short[-1].tokens_per_second == pytest.approx(short[-2].tokens_per_second, rel=1e-3)
    long = batch_sweep(preset("Llama-2-7B"), H100, 32768, limit=512)
    assert all(s.bound == "memory" for s in long)
    assert long[-1].tokens_per_second / long[-2].tokens_per_second < 1.05  # the cache's own read sets the ceiling
    assert long[-1].cache_bytes > 10 * long[-1].weight_bytes


def test_where_the_cache_overtakes_the_weights():
    """Llama-2-7B at 4,096 tokens: 2 GiB per sequence outweighs 13.2 GB of weights from a batch of 7; one
    sequence needs 25,206 tokens (13,214,687,232 / 524,288 rounded up)."""
    config = preset("Llama-2-7B")
    assert cache_overtakes(config, 4096) == 7
    assert context_overtakes(config, 1) == -(-13_214_687_232 // (512 * 1024)) == 25_206
    steps = {b: decode_step(config, H100, b, 4096) for b in (6, 7)}
    assert steps[6].cache_bytes < steps[6].weight_bytes <= steps[7].cache_bytes
    assert context_overtakes(preset("Mistral-7B (v0.1)"), 1) is None  # its window caps the cache


def test_experts_are_read_only_when_a_token_uses_them():
    """Mixtral: one token reads 2 of 8 experts per layer; two tokens 8 · (1 − (6/8)²) = 3.5 on average; a big
    batch reads nearly all of them. FLOPs count 2 experts per token whatever the batch."""
    config = preset("Mixtral-8x7B")
    assert experts_touched(config, 1) == pytest.approx(2) and experts_touched(config, 2) == pytest.approx(3.5)
    assert weight_bytes(config, 1, "fp16/bf16") == 2 * config.dense_params + 2 * round(config.expert_params * 2 / 8)
    assert weight_bytes(config, 1024, "fp16/bf16") == pytest.approx(2 * (config.dense_params + config.expert_params))
    step = decode_step(config, H100, 3, 512, gpus=2)
    assert step.matmul_flops == pytest.approx(2 * (config.dense_params + config.expert_params / 4) * 3 / 2)


def test_mla_decodes_in_the_latent():
    """DeepSeek-V3's absorbed decode scores a key over 512 + 64 numbers and sums values in the 512-wide latent, per
    query head: 2 · 128 · (2 · 512 + 64) FLOPs per key and layer; prefill uses the expanded heads."""
    config = preset("DeepSeek-V3")
    assert attention_flops_per_key(config, "decode") == 2 * 128 * (2 * 512 + 64)
    assert attention_flops_per_key(config, "prefill") == 2 * 128 * (192 + 128)
    step = decode_step(config, H200, 64, 8192, "fp8", gpus=8)
    assert step.cache_bytes == 64 * 61 * 8192 * 576 * 2  # the whole latent on every GPU
    assert step.compute == "fp8" and step.bound == "memory"


def test_tensor_parallel_splits_weights_and_flops():
    """On 8 GPUs Llama-3-70B reads an eighth of the weights and cache per GPU and does an eighth of the FLOPs."""
    config = preset("Llama-3-70B")
    one, eight = decode_step(config, H100, 16, 4096), decode_step(config, H100, 16, 4096, gpus=8)
    assert eight.weight_bytes == -(-one.weight_bytes // 8) and eight.cache_bytes == one.cache_bytes // 8
    assert eight.flops == pytest.approx(one.flops / 8)


def test_sliding_layers_attend_over_their_window_only():
    """Mistral-7B v0.1 at 10,000 tokens: each layer's new query sees 4,096 keys, in decode and in prefill."""
    config = preset("Mistral-7B (v0.1)")
    assert decode_step(config, H100, 1, 10_000).attention_flops == 4 * 32 * 128 * 32 * 4096
    pairs = 4096 * 4097 // 2 + (10_000 - 4096) * 4096
    assert prefill_step(config, H100, 10_000).attention_flops == 4 * 32 * 128 * 32 * pairs


def test_sweep_batches_are_powers_of_two_and_the_limit():
    """Batch sizes double up to the limit, which is included."""
    assert sweep_batches(100) == (1, 2, 4, 8, 16, 32, 64, 100)
    assert sweep_batches(1) == (1,)


@pytest.mark.parametrize("build, field", [
    (lambda: decode_step(preset("Llama-2-7B"), H100, 0, 10), "batch"),
    (lambda: decode_step(preset("Llama-2-7B"), H100, 1, -1), "tokens"),
    (lambda: decode_step(preset("Llama-2-7B"), H100, 1, 10, gpus=3), "GPUs"),
    (lambda: prefill_step(preset("Llama-2-7B"), H100, 0), "tokens"),
    (lambda: decode_step(preset("Llama-2-7B"), H100, 1, 10, "fp64"), "dtype"),
])
def test_bad_inputs_are_refused(build, field):
    """Impossible steps raise MemoryConfigError naming the field."""
    with pytest.raises(MemoryConfigError) as err:
        build()
    assert err.value.field == field


def test_tf32_is_priced_at_the_tf32_peak():
    """Float32 weights run on TF32 tensor cores: H100 SXM 494.7 TFLOP/s dense, a ridge of 148 FLOPs per byte (not the
    bf16 295), so a compute-bound prefill takes twice as long as in bf16 (issue 31, wrong 1)."""
    gemma = preset("Gemma-2-9B")
    tf32, bf16 = prefill_step(gemma, H100, 8192, "fp32"), prefill_step(gemma, H100, 8192, "fp16/bf16")
    assert tf32.compute == "tf32" and tf32.peak_flops == 494.7e12
    assert tf32.ridge == pytest.approx(494.7e12 / 3.35e12) and round(tf32.ridge) == 148
    assert tf32.bound == bf16.bound == "compute"
    assert tf32.seconds == pytest.approx(2 * bf16.seconds, rel=1e-3)
    assert H100.ridge("tf32") == pytest.approx(H100.ridge("fp16/bf16") / 2, rel=1e-3)


def test_one_sequence_overtakes_the_weights_far_later_than_a_batch():
    """Llama-3-70B: one sequence's cache (327,680 bytes per token) outweighs the 139 GB of weights a step reads only
    from 424,213 tokens; a batch of 64 from 6,629 each (issue 31, wrong 2: the page now asks for batch 1)."""
    llama = preset("Llama-3-70B")
    per_token = 2 * 80 * 8 * 128 * 2
    read = weight_bytes(llama, 1, "fp16/bf16")
    assert context_overtakes(llama, 1) == -(-read // per_token) == 424_213
    assert context_overtakes(llama, 64) == 6_629


def test_chunked_layers_attend_within_their_chunk():
    """Llama-4's chunked layers (chunk 48 here): a query sees the keys of its own chunk only, (i − 1) mod 48 + 1 of
    them, while the full layers see every key; prefill sums whole chunks of 48 · 49 / 2 (issue 31, misleading 6)."""
    import json

    from viz.core.scale.model_config import model_config, read_config

    config = model_config(read_config(json.dumps({
        "model_type": "llama4_text", "hidden_size": 256, "head_dim": 64, "num_attention_heads": 4,
        "num_key_value_heads": 2, "num_hidden_layers": 4, "intermediate_size": 256, "intermediate_size_mlp": 512,
        "num_local_experts": 4, "num_experts_per_tok": 1, "attention_chunk_size": 48, "vocab_size": 1024})))
    chunked, full = config.chunked_layers, config.layers - config.chunked_layers
    assert chunked == 3 and full == 1  # every fourth layer is global
    per_key = attention_flops_per_key(config, "decode")
    assert decode_step(config, H100, 1, 100).attention_flops == per_key * (chunked * 5 + full * 101)  # position 101
    n = 100  # two whole chunks and 4 tokens
    keys = chunked * (2 * 48 * 49 / 2 + 4 * 5 / 2) + full * n * (n + 1) / 2
    assert prefill_step(config, H100, n).attention_flops == attention_flops_per_key(config, "prefill") * keys
