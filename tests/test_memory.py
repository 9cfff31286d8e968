"""Tier 1: the cache-memory calculator agrees with the published figures and its own formula."""

from __future__ import annotations


import pytest

from viz import generate, load_preset
from viz.core.scale.gpus import GPU_BY_NAME, GPUS
from viz.core.scale.memory import (DEFAULT_UTILIZATION, DTYPE_BITS, GIB, KIB, MIB, MemoryConfigError, beyond_context,
                             by_dtype, cache_memory, curve_span, fits_by_gpu, format_bytes, gpu_fit, kv_split,
                             memory_curve, toy_cache_memory)
from viz.core.scale.model_config import preset, preset_names

H100, H200, T4 = GPU_BY_NAME["H100 SXM"], GPU_BY_NAME["H200 SXM"], GPU_BY_NAME["T4"]


def test_llama2_7b_fp16_4096_tokens_is_2_gib():
    """Llama-2-7B in fp16 at 4096 tokens keeps exactly 2 GiB per sequence (the articles' example)."""
    memory = cache_memory(preset("Llama-2-7B"), 4096, "fp16/bf16")
    assert memory.bytes_per_sequence == 2 * GIB
    assert memory.bytes_per_token == 512 * KIB


def test_llama3_8b_bf16_8192_tokens_is_1_gib():
    """Llama-3-8B in bf16 at 8192 tokens keeps exactly 1 GiB per sequence (GQA: 8 K/V heads)."""
    assert cache_memory(preset("Llama-3-8B"), 8192, "fp16/bf16").bytes_per_sequence == GIB


def test_opt_13b_is_800_kib_per_token():
    """OPT-13B keeps 800 KiB (819,200 bytes) per token in fp16, as the vLLM paper states."""
    memory = cache_memory(preset("OPT-13B"), 2048)
    assert memory.bytes_per_token == 819_200 == 800 * KIB


@pytest.mark.parametrize("name", [n for n in preset_names() if preset(n).attention != "MLA" and not preset(n).window])
def test_formula_for_every_full_attention_preset(name):
    """bytes = 2 · layers · kv_heads · head_dim · tokens · batch · bytes per element."""
    c = preset(name)
    for dtype, bits in DTYPE_BITS.items():
        memory = cache_memory(c, 1000, dtype, batch=3)
        expected = 2 * c.layers * c.kv_heads * c.head_dim * 1000 * 3 * bits // 8
        assert memory.bytes_per_batch == expected, (name, dtype)


def test_dtypes_scale_the_bytes():
    """fp32 doubles fp16; fp8 and int8 halve it; int4 quarters it; int2 is an eighth."""
    c = preset("Llama-2-13B")
    base = cache_memory(c, 4096).bytes_per_sequence
    ratios = {d: cache_memory(c, 4096, d).bytes_per_sequence / base for d in DTYPE_BITS}
    assert ratios == {"fp32": 2, "fp16/bf16": 1, "fp8": 0.5, "int8": 0.5, "int4": 0.25, "int2": 0.125}


def test_mla_caches_latent_plus_rope_without_factor_two():
    """DeepSeek-V2 caches (512 + 64) numbers per token and layer: 69,120 bytes per token in bf16."""
    memory = cache_memory(preset("DeepSeek-V2"), 1)
    assert memory.bytes_per_token == (512 + 64) * 60 * 2 == 69_120
    v3 = cache_memory(preset("DeepSeek-V3"), 1)
    assert v3.bytes_per_token == (512 + 64) * 61 * 2
    assert memory.mha_bytes_per_sequence == 128 * (192 + 128) * 60 * 2  # K of 128 + 64, V of 128 per head


def test_gqa_divides_the_mha_cache():
    """GQA with 8 of 32 K/V heads keeps a quarter of MHA."""
    llama3 = cache_memory(preset("Llama-3-8B"), 4096)
    assert llama3.bytes_per_sequence * 4 == llama3.mha_bytes_per_sequence


def test_sliding_window_stops_growing_at_the_window():
    """Mistral-7B's cache grows up to 4096 tokens and then stays the same size."""
    c = preset("Mistral-7B (v0.1)")
    assert cache_memory(c, 2048).bytes_per_sequence * 2 == cache_memory(c, 4096).bytes_per_sequence
    assert cache_memory(c, 32768).bytes_per_sequence == cache_memory(c, 4096).bytes_per_sequence
    assert cache_memory(c, 32768).sliding_layer_tokens == 4096


def test_phi3_mini_slides_over_2047_tokens():
    """Phi-3-mini's config sets sliding_window 2047: at 4096 tokens it keeps 2047 per layer, half of full."""
    memory = cache_memory(preset("Phi-3-mini (4k)"), 4096)
    assert memory.bytes_per_sequence == 32 * 2 * 32 * 96 * 2047 * 2
    assert memory.bytes_per_sequence < memory.mha_bytes_per_sequence == 32 * 2 * 32 * 96 * 4096 * 2


def test_gemma2_alternates_sliding_and_full_layers():
    """Gemma-2-9B at 8192 tokens: 21 full layers hold 8192 tokens, 21 sliding layers hold 4096."""
    c = preset("Gemma-2-9B")
    assert (c.layers, c.sliding_layers, c.head_dim, c.window) == (42, 21, 256, 4096)
    per_layer = 2 * 8 * 256 * 2
    assert cache_memory(c, 8192).bytes_per_sequence == per_layer * (21 * 8192 + 21 * 4096)
    assert cache_memory(c, 4096).bytes_per_sequence == per_layer * 42 * 4096


def test_batch_multiplies_the_sequence():
    """A batch of b sequences keeps b times one sequence."""
    memory = cache_memory(preset("Qwen2.5-7B"), 32768, "fp8", batch=7)
    assert memory.bytes_per_batch == 7 * memory.bytes_per_sequence


def test_gpus_are_sized_as_the_driver_reports_them():
    """Every GPU names its sources and shows less than its marketing size; a T4 has 15,360 MiB, an H100 81,559 MiB."""
    assert T4.memory_bytes == 15_360 * MIB and H100.memory_mib == 81_559
    assert GPU_BY_NAME["B200"].memory_mib == 183_359 and GPU_BY_NAME["L4"].memory_mib == 23_034
    for gpu in GPUS:
        assert gpu.source and gpu.bandwidth > 0 and gpu.fp16 > 0
        assert gpu.memory_bytes < float(gpu.marketed.split()[0]) * 1e9 * 1.1, gpu.name


def test_the_budget_is_utilization_times_memory_minus_weights_and_reserve():
    """Llama-2-7B on an H100 at vLLM's 0.92: 0.92 · 81,559 MiB − 13.5 GB of weights − 1 GiB reserve, in whole
    2 GiB sequences."""
    memory = cache_memory(preset("Llama-2-7B"), 4096)
    fit = gpu_fit(memory, H100)
    weights = 6_738_415_616 * 2
    assert fit.utilization == DEFAULT_UTILIZATION == 0.92
    assert fit.requested_bytes == int(81_559 * MIB * 0.92)
    assert fit.cache_budget_bytes == int(81_559 * MIB * 0.92) - weights - GIB
    assert fit.sequences == fit.cache_budget_bytes // (2 * GIB) == 29
    assert fit.tokens == fit.cache_budget_bytes // (512 * KIB)
    assert fit.outside_bytes == fit.gpu_bytes - fit.requested_bytes
    bigger = gpu_fit(memory, H100, reserve_gib=5)
    assert bigger.cache_budget_bytes == fit.cache_budget_bytes - 4 * GIB


def test_gpu_fit_when_the_weights_do_not_fit():
    """Llama-2-70B in fp16 (138 GB) does not fit one H100; on two it does, and in fp8 on one."""
    memory = cache_memory(preset("Llama-2-70B"), 4096)
    one = gpu_fit(memory, H100)
    assert not one.weights_fit and one.sequences == 0 and one.cache_budget_bytes == 0
    assert gpu_fit(memory, H100, gpus=2).weights_fit
    assert gpu_fit(memory, H100, weights_dtype="fp8").sequences > 0


def test_tensor_parallel_copies_mla_latent_on_every_gpu():
    """DeepSeek-V3 in fp8 on 8 H200s at 128K tokens: each GPU keeps the whole latent of every sequence, so 5
    sequences fit, not the ~45 that one pool of memory would suggest."""
    memory = cache_memory(preset("DeepSeek-V3"), 131072)
    fit = gpu_fit(memory, H200, 8, "fp8")
    assert fit.weights_bytes == -(-671_026_404_352 // 8)
    assert fit.sequence_bytes == memory.bytes_per_sequence and fit.kv_copies == 8
    assert fit.sequences == fit.cache_budget_bytes // memory.bytes_per_sequence == 5
    assert fit.pooled_sequences == 8 * fit.cache_budget_bytes // memory.bytes_per_sequence >= 40


def test_tensor_parallel_splits_kv_heads_then_copies_them():
    """Llama-3-70B has 8 K/V heads: on 8 GPUs each keeps one (an eighth of each sequence); on 16 each head is
    kept twice, so 16 GPUs hold no more sequences per GPU than 8."""
    memory = cache_memory(preset("Llama-3-70B"), 8192)
    assert kv_split(preset("Llama-3-70B"), 8) == (1, 1) and kv_split(preset("Llama-3-70B"), 16) == (1, 2)
    eight, sixteen = gpu_fit(memory, H100, 8), gpu_fit(memory, H100, 16)
    assert eight.sequence_bytes == sixteen.sequence_bytes == memory.bytes_per_sequence // 8
    assert sixteen.pooled_sequences > sixteen.sequences and eight.pooled_sequences == eight.sequences


@pytest.mark.parametrize("name, gpus", [("Llama-2-7B", 3), ("Llama-3-70B", 12), ("Qwen2.5-7B", 8)])
def test_tensor_parallel_degrees_that_do_not_divide_the_heads_are_refused(name, gpus):
    """vLLM splits the query heads evenly and the K/V heads evenly or by copying: other GPU counts are refused."""
    with pytest.raises(MemoryConfigError) as err:
        gpu_fit(cache_memory(preset(name), 1024), H100, gpus)
    assert err.value.field == "GPUs"


def test_curve_bends_at_the_window_and_never_falls():
    """The curve includes the window length and is non-decreasing in context length."""
    curve = memory_curve(preset("Gemma-2-9B"), 8192)
    assert 4096 in curve.tokens and curve.tokens[-1] == 8192
    assert all(a <= b for a, b in zip(curve.bytes, curve.bytes[1:]))
    slope_before = curve.bytes[curve.tokens.index(4096)] / 4096
    assert (curve.bytes[-1] - curve.bytes[curve.tokens.index(4096)]) / 4096 == pytest.approx(slope_before / 2)


@pytest.mark.parametrize("build, field", [
    (lambda: cache_memory(preset("Llama-2-7B"), 0), "tokens"),
    (lambda: cache_memory(preset("Llama-2-7B"), 10, "fp64"), "dtype"),
    (lambda: cache_memory(preset("Llama-2-7B"), 10, batch=0), "batch"),
    (lambda: gpu_fit(cache_memory(preset("Llama-2-7B"), 10), H100, utilization=0), "utilization"),
    (lambda: gpu_fit(cache_memory(preset("Llama-2-7B"), 10), H100, reserve_gib=-1), "reserve"),
    (lambda: gpu_fit(cache_memory(preset("Llama-2-7B"), 10), H100, gpus=0), "GPUs"),
])
def test_bad_inputs_are_refused_with_the_field(build, field):
    """Impossible inputs raise MemoryConfigError naming the field."""
    with pytest.raises(MemoryConfigError) as err:
        build()
    assert err.value.field == field


def test_beyond_context_flags_lengths_the_model_was_not_built_for():
    """GPT-2 handles 1024 tokens: 1024 is fine, 1025 is beyond its context."""
    c = preset("GPT-2 small")
    assert not beyond_context(cache_memory(c, 1024)) and beyond_context(cache_memory(c, 1025))


def test_toy_cache_memory_comes_from_the_engine():
    """The toy's bytes are read off the engine's cache: (heads · d_k + 1) · 4 bytes per token."""
    trace = generate(load_preset("seed"), 3, "kv")
    toy = toy_cache_memory(trace.cache)
    assert toy.tokens == len(trace.cache) == 6
    assert toy.bytes_per_token == (4 * 64 + 1) * 4
    assert toy.nbytes == trace.cache.nbytes == 6 * 1028
    assert toy.allocated_nbytes >= toy.nbytes


@pytest.mark.parametrize("n, text", [(512, "512 B"), (800 * KIB, "800 KiB"), (2 * GIB, "2 GiB"),
                                     (1.5 * GIB, "1.5 GiB"), (1008 * 1024**2, "1008 MiB"), (1234 * GIB, "1.21 TiB")])
def test_format_bytes(n, text):
    """Sizes print in binary units with three significant figures."""
    assert format_bytes(n) == text


def test_by_dtype_and_fits_by_gpu_cover_every_choice():
    """The dtype table has one row per dtype; the GPU table one per GPU, more memory fitting more sequences."""
    memory = cache_memory(preset("Llama-3-8B"), 8192, batch=4)
    rows = by_dtype(memory)
    assert [m.dtype for m in rows] == list(DTYPE_BITS)
    assert [m.bytes_per_batch for m in rows] == [4 * GIB * b // 16 for b in DTYPE_BITS.values()]
    fits = fits_by_gpu(memory)
    assert [f.gpu for f in fits] == list(GPUS)
    by_memory = sorted(fits, key=lambda f: f.gpu.memory_mib)
    assert [f.sequences for f in by_memory] == sorted(f.sequences for f in by_memory)
    assert fits[0].sequences == gpu_fit(memory, T4).sequences


def test_curve_span_covers_the_chosen_length_and_the_trained_context():
    """The plotted range is twice the chosen length, never shorter than the trained context."""
    assert curve_span(cache_memory(preset("Llama-2-7B"), 4096)) == 8192
    assert curve_span(cache_memory(preset("Qwen2.5-7B"), 1000)) == 131072


GPT_OSS_20B = {  # openai/gpt-oss-20b config.json: 24 layers alternating a 128-token window and full attention
    "model_type": "gpt_oss", "num_hidden_layers": 24, "hidden_size": 2880, "head_dim": 64, "num_attention_heads": 64,
    "num_key_value_heads": 8, "sliding_window": 128, "intermediate_size": 2880, "num_local_experts": 32,
    "num_experts_per_tok": 4, "vocab_size": 201088, "max_position_embeddings": 131072, "torch_dtype": "bfloat16",
    "quantization_config": {"quant_method": "mxfp4",
                            "modules_to_not_convert": ["model.layers.*.self_attn", "model.layers.*.mlp.router",
                                                       "model.embed_tokens", "lm_head"]}}


def _own(raw: dict):
    import json

    from viz.core.scale.model_config import model_config, read_config

    return model_config(read_config(json.dumps(raw)))


def test_tokens_of_cache_count_sliding_layers_as_they_hold():
    """gpt-oss-20b at 8K: half its layers stop at 128 tokens, so the tokens whose cache fits are the budget over
    one sequence's bytes times 8,192, about twice what counting every layer as growing gives (issue 31,
    misleading 5)."""
    config = _own(GPT_OSS_20B)
    memory = cache_memory(config, 8192)
    per_sequence = (12 * 8192 + 12 * 128) * 2 * 8 * 64 * 2
    assert memory.bytes_per_sequence == per_sequence
    fit = gpu_fit(memory, H100, weights_dtype=config.weights_dtype)
    assert fit.tokens == fit.cache_budget_bytes * 8192 // per_sequence
    assert fit.tokens > 1.9 * (fit.cache_budget_bytes // memory.bytes_per_token)
    assert fit.sequences * 8192 <= fit.tokens < (fit.sequences + 1) * 8192


def test_weights_are_counted_as_a_server_loads_them():
    """A float32 checkpoint is served in 16 bits (vLLM's --dtype auto); gpt-oss's MXFP4 covers its experts only
    (4.25 bits with the scales), the rest stays bf16; AWQ and bitsandbytes name their bits (issue 31, misleading 3)."""
    assert preset("Gemma-2-9B").weights_dtype == "fp16/bf16"
    assert preset("DeepSeek-V3").weights_dtype == "fp8"
    config = _own(GPT_OSS_20B)
    assert config.weights_dtype == "mxfp4"
    fit = gpu_fit(cache_memory(config, 8192), H100, weights_dtype="mxfp4")
    dense = config.params - config.expert_params
    assert fit.weights_bytes == dense * 2 + -(-config.expert_params * 17 // 32)
    assert 12e9 < fit.weights_bytes < 14e9 < gpu_fit(cache_memory(config, 8192), H100).weights_bytes
    awq = _own({"model_type": "llama", "num_hidden_layers": 2, "quantization_config": {"quant_method": "awq", "bits": 4}})
    bnb = _own({"model_type": "llama", "num_hidden_layers": 2,
                "quantization_config": {"quant_method": "bitsandbytes", "load_in_8bit": True}})
    assert (awq.weights_dtype, bnb.weights_dtype) == ("int4", "int8")
