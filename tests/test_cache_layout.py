"""Tier 1: transformers' own cache, laid out on the meta device, agrees with the closed formula."""

from __future__ import annotations

import json

import pytest

from viz.core.scale.cache_layout import MAX_LAYOUT_TOKENS, layout_dtype, library_layout
from viz.core.scale.memory import GIB, MIB, cache_memory
from viz.core.scale.model_config import ConfigError, model_config, preset, preset_names, read_config


def own(raw: dict):
    """A ModelConfig from a config dict, as a pasted config.json would give."""
    return model_config(read_config(json.dumps(raw)))


@pytest.mark.parametrize("name", preset_names())
def test_formula_equals_transformers_for_every_preset(name):
    """At 5,000 tokens (past every preset's sliding window) the storage transformers holds is the formula's
    count byte for byte, layer by layer, with nothing unexplained."""
    config = preset(name)
    layout = library_layout(config, 5000)
    assert layout.storage_bytes == layout.formula_bytes == cache_memory(config, 5000).bytes_per_sequence
    assert all(layer.storage_bytes == layer.formula_bytes for layer in layout.layers)
    assert layout.unexplained_bytes == 0 and not layout.differences
    assert len(layout.layers) == config.layers


def test_phi3_keeps_its_window_not_every_token():
    """Phi-3-mini at 4,096 tokens: every layer is a sliding-window layer holding 2,046 tokens in its shape
    (about 767 MiB), 2,047 in storage; not the 1.5 GiB of a cache that keeps every token."""
    config = preset("Phi-3-mini (4k)")
    layout = library_layout(config, 4096)
    assert layout.classes == {"DynamicSlidingWindowLayer": 32}
    assert all(layer.key_shape == (1, 32, 2046, 96) for layer in layout.layers)
    per_token = 32 * 2 * 32 * 96 * 2  # layers · K and V · heads · dims · bytes
    assert layout.held_bytes == per_token * 2046 and 767 * MIB < layout.held_bytes < 768 * MIB
    assert layout.storage_bytes == per_token * 2047 == cache_memory(config, 4096).bytes_per_sequence
    assert cache_memory(config, 4096).bytes_per_sequence < 1.5 * GIB == cache_memory(config, 4096).mha_bytes_per_sequence


def test_sliding_storage_holds_one_token_more_than_the_shapes():
    """Past the window a sliding layer's shape shows window − 1 tokens; its storage the whole window."""
    layout = library_layout(preset("Mistral-7B (v0.1)"), 10_000)
    assert layout.view_bytes == 32 * 2 * 8 * 128 * 2  # one token in each of the 32 layers
    assert all(layer.key_shape[2] == 4095 for layer in layout.layers)


def test_within_the_window_every_layer_keeps_every_token():
    """Gemma-2 at 100 tokens: sliding and full layers alike hold all 100; shapes equal storage."""
    layout = library_layout(preset("Gemma-2-9B"), 100)
    assert {layer.key_shape for layer in layout.layers} == {(1, 8, 100, 256)}
    assert layout.view_bytes == 0 and layout.matches_formula
    assert layout.classes == {"DynamicSlidingWindowLayer": 21, "DynamicLayer": 21}


def test_mla_caches_the_latent_and_the_rope_key():
    """transformers 5 caches DeepSeek's compressed latent (512) and shared RoPE key (64) as one head each."""
    layout = library_layout(preset("DeepSeek-V3"), 300)
    assert {(layer.key_shape, layer.value_shape) for layer in layout.layers} == {((1, 1, 300, 512), (1, 1, 300, 64))}
    assert layout.storage_bytes == 61 * 300 * (512 + 64) * 2


def test_fp32_doubles_and_other_dtypes_are_laid_out_in_bf16():
    """An fp32 cache takes twice the bytes; int8 and friends are laid out in fp16/bf16 (transformers'
    DynamicCache holds what the model computes)."""
    config = preset("Llama-3-8B")
    assert library_layout(config, 64, "fp32").storage_bytes == 2 * library_layout(config, 64).storage_bytes
    assert layout_dtype("int8") == "fp16/bf16" and library_layout(config, 64, "int4").dtype == "fp16/bf16"


@pytest.mark.parametrize("raw", [
    {"model_type": "gemma3_text", "hidden_size": 256, "head_dim": 64, "num_attention_heads": 4, "num_key_value_heads": 1,
     "num_hidden_layers": 7, "intermediate_size": 512, "vocab_size": 1024, "sliding_window": 64},
    {"model_type": "gpt_oss", "hidden_size": 256, "head_dim": 64, "num_attention_heads": 8, "num_key_value_heads": 2,
     "num_hidden_layers": 4, "intermediate_size": 256, "num_local_experts": 4, "num_experts_per_tok": 2,
     "sliding_window": 32, "vocab_size": 1024},
    {"model_type": "deepseek_v2", "hidden_size": 256, "num_attention_heads": 4, "num_key_value_heads": 4,
     "num_hidden_layers": 3, "q_lora_rank": None, "kv_lora_rank": 64, "qk_rope_head_dim": 16, "qk_nope_head_dim": 32,
     "v_head_dim": 32, "n_routed_experts": 8, "num_experts_per_tok": 2, "moe_intermediate_size": 64,
     "first_k_dense_replace": 1, "intermediate_size": 512, "n_shared_experts": 1, "vocab_size": 1024},
    {"model_type": "llama4_text", "hidden_size": 256, "head_dim": 64, "num_attention_heads": 4, "num_key_value_heads": 2,
     "num_hidden_layers": 4, "intermediate_size": 256, "intermediate_size_mlp": 512, "num_local_experts": 4,
     "num_experts_per_tok": 1, "attention_chunk_size": 48, "vocab_size": 1024},
    {"model_type": "gpt_bigcode", "n_embd": 256, "n_head": 8, "n_layer": 2, "multi_query": True, "vocab_size": 512},
])
def test_architectures_beyond_the_presets_agree_too(raw):
    """Hybrid sliding layers (Gemma-3, gpt-oss), MLA without a query latent, chunked attention (Llama-4) and MQA
    by flag: at lengths below and past the window the formula is transformers' storage exactly."""
    config = own(raw)
    for tokens in (20, 200):
        layout = library_layout(config, tokens)
        assert layout.storage_bytes == layout.formula_bytes and layout.unexplained_bytes == 0, (raw["model_type"], tokens)


def test_linear_attention_states_are_named_not_hidden():
    """Qwen3-Next's linear-attention layers keep fixed-size states beside the K/V the formula counts: the difference
    is named as that state, which kvlab counts per sequence (issue 31), and nothing is left unexplained."""
    config = own({"model_type": "qwen3_next", "num_hidden_layers": 4, "hidden_size": 256, "num_attention_heads": 4,
                  "num_key_value_heads": 2, "head_dim": 64, "vocab_size": 1024, "intermediate_size": 256,
                  "moe_intermediate_size": 64, "shared_expert_intermediate_size": 64, "num_experts": 4,
                  "num_experts_per_tok": 2,
                  "linear_num_value_heads": 4, "linear_num_key_heads": 2, "linear_key_head_dim": 32,
                  "linear_value_head_dim": 32})
    layout = library_layout(config, 40)
    assert layout.storage_bytes > layout.formula_bytes
    assert [d.reason for d in layout.differences] == ["the fixed-size state of 3 'linear_attention' layers, the same "
                                                      "at any length: kvlab counts it per sequence beside the K/V"]
    assert layout.unexplained_bytes == 0
    assert layout.differences[0].bytes == layout.state_bytes == cache_memory(config, 40).state_bytes_per_sequence > 0


def test_a_huge_layout_allocates_nothing():
    """GPT-2 with 100 million tokens would hold 3.4 TiB; on the meta device the layout just counts it."""
    layout = library_layout(preset("GPT-2 small"), MAX_LAYOUT_TOKENS)
    assert layout.storage_bytes == 12 * 2 * 12 * 64 * MAX_LAYOUT_TOKENS * 2 > 3 * 1024**4


@pytest.mark.parametrize("tokens", [1, 0, True, MAX_LAYOUT_TOKENS + 1])
def test_bad_lengths_are_refused(tokens):
    """A layout needs a prompt and one decode step: at least 2 tokens, at most the cap."""
    with pytest.raises(ConfigError, match="tokens"):
        library_layout(preset("GPT-2 small"), tokens)
