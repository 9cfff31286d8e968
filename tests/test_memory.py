"""Tier 1: the cache-memory calculator agrees with the published figures and its own formula."""

from __future__ import annotations


import pytest

from viz import generate, load_preset
from viz.core.memory import (DTYPE_BITS, GIB, GPUS, KIB, PRESETS, MemoryConfigError, ModelConfig, beyond_context,
                        by_dtype, cache_memory, curve_span, custom_config, fits_by_gpu, format_bytes, gpu_fit,
                        memory_curve, toy_cache_memory, validate)


def test_llama2_7b_fp16_4096_tokens_is_2_gib():
    """Llama-2-7B in fp16 at 4096 tokens keeps exactly 2 GiB per sequence (the articles' example)."""
    memory = cache_memory(PRESETS["Llama-2-7B"], 4096, "fp16/bf16")
    assert memory.bytes_per_sequence == 2 * GIB
    assert memory.bytes_per_token == 512 * KIB


def test_llama3_8b_bf16_8192_tokens_is_1_gib():
    """Llama-3-8B in bf16 at 8192 tokens keeps exactly 1 GiB per sequence (GQA: 8 K/V heads)."""
    assert cache_memory(PRESETS["Llama-3-8B"], 8192, "fp16/bf16").bytes_per_sequence == GIB


def test_opt_13b_is_800_kib_per_token():
    """OPT-13B keeps 800 KiB (819,200 bytes) per token in fp16, as the vLLM paper states."""
    memory = cache_memory(PRESETS["OPT-13B"], 2048)
    assert memory.bytes_per_token == 819_200 == 800 * KIB


@pytest.mark.parametrize("name", [n for n, c in PRESETS.items() if c.attention != "MLA" and not c.window])
def test_formula_for_every_full_attention_preset(name):
    """bytes = 2 · layers · kv_heads · head_dim · tokens · batch · bytes per element."""
    c = PRESETS[name]
    for dtype, bits in DTYPE_BITS.items():
        memory = cache_memory(c, 1000, dtype, batch=3)
        expected = 2 * c.layers * c.kv_heads * c.head_dim * 1000 * 3 * bits // 8
        assert memory.bytes_per_batch == expected, (name, dtype)


def test_dtypes_scale_the_bytes():
    """fp32 doubles fp16; fp8 and int8 halve it; int4 quarters it; int2 is an eighth."""
    c = PRESETS["Llama-2-13B"]
    base = cache_memory(c, 4096).bytes_per_sequence
    ratios = {d: cache_memory(c, 4096, d).bytes_per_sequence / base for d in DTYPE_BITS}
    assert ratios == {"fp32": 2, "fp16/bf16": 1, "fp8": 0.5, "int8": 0.5, "int4": 0.25, "int2": 0.125}


def test_mla_caches_latent_plus_rope_without_factor_two():
    """DeepSeek-V2 caches (512 + 64) numbers per token and layer: 69,120 bytes per token in bf16."""
    memory = cache_memory(PRESETS["DeepSeek-V2"], 1)
    assert memory.bytes_per_token == (512 + 64) * 60 * 2 == 69_120
    v3 = cache_memory(PRESETS["DeepSeek-V3"], 1)
    assert v3.bytes_per_token == (512 + 64) * 61 * 2
    assert memory.mha_bytes_per_sequence == 2 * 128 * 128 * 60 * 2  # what MHA would need


def test_gqa_and_mqa_divide_the_mha_cache():
    """GQA with 8 of 32 K/V heads keeps a quarter of MHA; MQA keeps 1/heads of it."""
    llama3 = cache_memory(PRESETS["Llama-3-8B"], 4096)
    assert llama3.bytes_per_sequence * 4 == llama3.mha_bytes_per_sequence
    mqa = cache_memory(custom_config("MQA", 32, 32, 99, 128, 7e9, 4096), 4096)
    assert mqa.bytes_per_sequence * 32 == mqa.mha_bytes_per_sequence


def test_sliding_window_stops_growing_at_the_window():
    """Mistral-7B's cache grows up to 4096 tokens and then stays the same size."""
    c = PRESETS["Mistral-7B (v0.1)"]
    assert cache_memory(c, 2048).bytes_per_sequence * 2 == cache_memory(c, 4096).bytes_per_sequence
    assert cache_memory(c, 32768).bytes_per_sequence == cache_memory(c, 4096).bytes_per_sequence
    assert cache_memory(c, 32768).sliding_layer_tokens == 4096


def test_gemma2_alternates_sliding_and_full_layers():
    """Gemma-2-9B at 8192 tokens: 21 full layers hold 8192 tokens, 21 sliding layers hold 4096."""
    c = PRESETS["Gemma-2-9B"]
    assert (c.layers, c.sliding_layers, c.head_dim, c.window) == (42, 21, 256, 4096)
    per_layer = 2 * 8 * 256 * 2
    assert cache_memory(c, 8192).bytes_per_sequence == per_layer * (21 * 8192 + 21 * 4096)
    assert cache_memory(c, 4096).bytes_per_sequence == per_layer * 42 * 4096


def test_batch_multiplies_the_sequence():
    """A batch of b sequences keeps b times one sequence."""
    memory = cache_memory(PRESETS["Qwen2.5-7B"], 32768, "fp8", batch=7)
    assert memory.bytes_per_batch == 7 * memory.bytes_per_sequence


def test_gpu_fit_counts_whole_sequences_after_the_weights():
    """Llama-2-7B on one 80 GiB GPU at 90%: (72 GiB - 13.5 GB of weights) / 2 GiB = 29 sequences."""
    memory = cache_memory(PRESETS["Llama-2-7B"], 4096)
    fit = gpu_fit(memory, 80)
    weights = 6_738_415_616 * 2
    assert fit.weights_bytes == weights
    assert fit.cache_budget_bytes == int(80 * GIB * 0.9) - weights
    assert fit.sequences == fit.cache_budget_bytes // (2 * GIB) == 29
    assert fit.tokens == fit.cache_budget_bytes // (512 * KIB)


def test_gpu_fit_when_the_weights_do_not_fit():
    """Llama-2-70B in fp16 (138 GB) does not fit one 80 GiB GPU; on two it does, in fp8 on one."""
    memory = cache_memory(PRESETS["Llama-2-70B"], 4096)
    one = gpu_fit(memory, 80)
    assert not one.weights_fit and one.sequences == 0 and one.cache_budget_bytes == 0
    assert gpu_fit(memory, 80, gpus=2).weights_fit
    assert gpu_fit(memory, 80, weights_dtype="fp8").sequences > 0


def test_curve_bends_at_the_window_and_never_falls():
    """The curve includes the window length and is non-decreasing in context length."""
    curve = memory_curve(PRESETS["Gemma-2-9B"], 8192)
    assert 4096 in curve.tokens and curve.tokens[-1] == 8192
    assert all(a <= b for a, b in zip(curve.bytes, curve.bytes[1:]))
    slope_before = curve.bytes[curve.tokens.index(4096)] / 4096
    assert (curve.bytes[-1] - curve.bytes[curve.tokens.index(4096)]) / 4096 == pytest.approx(slope_before / 2)


def test_every_preset_is_consistent_and_sourced():
    """Each preset validates, names a source, and its K/V heads match its attention kind."""
    for name, c in PRESETS.items():
        assert validate(c) is c and c.source, name
        if c.attention == "MHA":
            assert c.kv_heads == c.query_heads, name
        if c.attention == "GQA":
            assert 1 < c.kv_heads < c.query_heads and c.query_heads % c.kv_heads == 0, name
    assert {c.attention for c in PRESETS.values()} == {"MHA", "GQA", "MLA"}


@pytest.mark.parametrize("build, field", [
    (lambda: custom_config("GQA", 32, 32, 5, 128, 7e9, 4096), "KV heads"),
    (lambda: custom_config("GQA", 32, 32, 32, 128, 7e9, 4096), "KV heads"),
    (lambda: custom_config("MHA", 0, 32, 32, 128, 7e9, 4096), "layers"),
    (lambda: custom_config("MLA", 60, 128, 1, 128, 7e9, 4096, latent_dim=0), "latent dim"),
    (lambda: custom_config("MHA", 32, 32, 32, 128, 0, 4096), "parameters"),
    (lambda: validate(ModelConfig("x", "MHA", 4, 4, 4, 64, 1e9, 1024, sliding_layers=2)), "window"),
    (lambda: validate(ModelConfig("x", "XYZ", 4, 4, 4, 64, 1e9, 1024)), "attention"),
    (lambda: cache_memory(PRESETS["Llama-2-7B"], 0), "tokens"),
    (lambda: cache_memory(PRESETS["Llama-2-7B"], 10, "fp64"), "dtype"),
    (lambda: gpu_fit(cache_memory(PRESETS["Llama-2-7B"], 10), -1), "GPU memory"),
])
def test_bad_configurations_are_refused_with_the_field(build, field):
    """Impossible inputs raise MemoryConfigError naming the field."""
    with pytest.raises(MemoryConfigError) as err:
        build()
    assert err.value.field == field


def test_custom_config_fixes_what_the_attention_kind_implies():
    """Custom MHA takes one K/V head per query head, MQA one; no window means no sliding layers."""
    mha = custom_config("MHA", 32, 32, 7, 128, 7e9, 4096, window=0, sliding_layers=3)
    assert (mha.kv_heads, mha.sliding_layers) == (32, 0)
    assert custom_config("MQA", 32, 32, 7, 128, 7e9, 4096).kv_heads == 1
    assert custom_config("GQA", 32, 32, 8, 128, 7e9, 4096, latent_dim=512).latent_dim == 0


def test_beyond_context_flags_lengths_the_model_was_not_built_for():
    """GPT-2 handles 1024 tokens: 1024 is fine, 1025 is beyond its context."""
    c = PRESETS["GPT-2 small"]
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
    """The dtype table has one row per dtype; the GPU table one per GPU size, growing with memory."""
    memory = cache_memory(PRESETS["Llama-3-8B"], 8192, batch=4)
    rows = by_dtype(memory)
    assert [m.dtype for m in rows] == list(DTYPE_BITS)
    assert [m.bytes_per_batch for m in rows] == [4 * GIB * b // 16 for b in DTYPE_BITS.values()]
    fits = fits_by_gpu(memory)
    assert len(fits) == len(GPUS)
    assert [f.sequences for _, f in fits] == sorted(f.sequences for _, f in fits)
    assert fits[0][1].sequences == gpu_fit(memory, 16).sequences


def test_curve_span_covers_the_chosen_length_and_the_trained_context():
    """The plotted range is twice the chosen length, never shorter than the trained context."""
    assert curve_span(cache_memory(PRESETS["Llama-2-7B"], 4096)) == 8192
    assert curve_span(cache_memory(PRESETS["Qwen2.5-7B"], 1000)) == 131072
