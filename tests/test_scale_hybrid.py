"""Tier 1: hybrid, state-space and newer architectures at scale: counted (K/V and fixed state) or refused in words.

Expected values are worked out by hand from the published config.json fields, and checked against
transformers' own cache laid out on the meta device (viz.core.scale.cache_layout).
"""

from __future__ import annotations

import json

import pytest

from viz.core.scale.cache_layout import library_layout
from viz.core.scale.count import read_model, sequence_count
from viz.core.scale.gpus import GPU_BY_NAME
from viz.core.scale.memory import MIB, cache_memory, gpu_fit, memory_curve
from viz.core.scale.model_config import ConfigError
from viz.core.scale.roofline import cache_overtakes, decode_step, prefill_step, weight_bytes
from viz.core.scale.words import config_summary, formula_text, layout_sentences

H100 = GPU_BY_NAME["H100 SXM"]

# Qwen/Qwen3-Next-80B-A3B-Instruct config.json (the fields the cache depends on): 48 layers, every
# fourth full attention (12), the rest Gated DeltaNet; 2 K/V heads of 256; 32 value heads and 16 key
# heads of 128 in the linear layers, a 4-wide convolution
QWEN3_NEXT = {"model_type": "qwen3_next", "num_hidden_layers": 48, "hidden_size": 2048, "num_attention_heads": 16,
              "num_key_value_heads": 2, "head_dim": 256, "full_attention_interval": 4, "linear_conv_kernel_dim": 4,
              "linear_key_head_dim": 128, "linear_num_key_heads": 16, "linear_num_value_heads": 32,
              "linear_value_head_dim": 128, "intermediate_size": 5120, "moe_intermediate_size": 512,
              "shared_expert_intermediate_size": 512, "num_experts": 512, "num_experts_per_tok": 10,
              "vocab_size": 151936, "max_position_embeddings": 262144, "torch_dtype": "bfloat16"}
# Per Gated DeltaNet layer: recurrent state 32 heads × 128 × 128 in float32 (transformers keeps it in
# fp32), convolution state (2 · 16 · 128 + 32 · 128) channels × 4 taps in bf16
QWEN3_NEXT_STATE = 36 * (32 * 128 * 128 * 4 + (2 * 16 * 128 + 32 * 128) * 4 * 2)
# google/gemma-3-4b-it text config: 34 layers, 4 K/V heads of 256, window 1,024, one global layer in six
GEMMA3_4B = {"model_type": "gemma3_text", "num_hidden_layers": 34, "hidden_size": 2560, "num_attention_heads": 8,
             "num_key_value_heads": 4, "head_dim": 256, "sliding_window": 1024, "intermediate_size": 10240,
             "vocab_size": 262208, "max_position_embeddings": 131072}


def own(raw: dict):
    return read_model(json.dumps(raw))


@pytest.fixture(scope="module")
def qwen3_next():
    return own(QWEN3_NEXT)


def test_qwen3_next_counts_its_fixed_state_beside_twelve_attention_layers(qwen3_next):
    """Qwen3-Next keeps K/V in 12 of its 48 layers (192 MiB at 8K in bf16) and a fixed 77.9 MB state in the
    36 linear-attention layers; the formula line names 12 layers, not 48."""
    assert (qwen3_next.layers, qwen3_next.attention_layers, qwen3_next.state_layers) == (48, 12, 36)
    memory = cache_memory(qwen3_next, 8192)
    assert memory.bytes_per_sequence == 12 * 2 * 2 * 256 * 2 * 8192 == 192 * MIB
    assert memory.state_bytes_per_sequence == QWEN3_NEXT_STATE == 77_856_768
    assert memory.sequence_bytes == 192 * MIB + QWEN3_NEXT_STATE
    assert "2 · 12 layers" in formula_text(memory) and "48 layers" not in formula_text(memory)
    assert "fixed state in 36" in config_summary(memory)
    assert cache_memory(qwen3_next, 100).state_bytes_per_sequence == QWEN3_NEXT_STATE  # it does not grow


def test_the_memory_curve_carries_the_batchs_fixed_state(qwen3_next):
    """The curve's flat line is the batch's state, made in the core (the page multiplies nothing): it sits
    under every point of the curve, which holds K/V and state together."""
    curve = memory_curve(qwen3_next, 8192, batch=4)
    assert curve.state_bytes == 4 * QWEN3_NEXT_STATE
    assert all(total > curve.state_bytes for total in curve.bytes)
    assert curve.bytes[-1] == 4 * (192 * MIB + QWEN3_NEXT_STATE)


def test_the_state_takes_room_in_the_fit(qwen3_next):
    """Sequences that fit are counted with the state: at 2K the state is 1.5× the K/V, so the fit is 2.5× smaller
    than a K/V-only count would say."""
    memory = cache_memory(qwen3_next, 2048)
    fit = gpu_fit(memory, H100, 8, weights_dtype="fp16/bf16")
    kv_per_gpu = memory.bytes_per_sequence // 2  # 2 K/V heads over 8 GPUs: each GPU keeps 1, copied 4×
    assert fit.state_bytes == -(-QWEN3_NEXT_STATE // 8)
    assert fit.sequence_bytes == kv_per_gpu + fit.state_bytes
    assert fit.sequences == fit.cache_budget_bytes // (kv_per_gpu + fit.state_bytes)
    assert fit.sequences < fit.cache_budget_bytes // kv_per_gpu


def test_state_is_what_transformers_allocates(qwen3_next):
    """The state kvlab counts is the storage of transformers' conv and recurrent states, layer by layer."""
    small = own({**QWEN3_NEXT, "num_hidden_layers": 8, "num_experts": 4, "num_experts_per_tok": 2, "vocab_size": 1024})
    layout = library_layout(small, 50)
    assert layout.state_bytes == cache_memory(small, 50).state_bytes_per_sequence == 6 * QWEN3_NEXT_STATE // 36
    assert layout.storage_bytes == layout.formula_bytes + layout.state_bytes and layout.unexplained_bytes == 0
    # the state is no sliding window: shapes and storage agree, and the words say state, not window (wrong 4)
    words = " ".join(layout_sentences(layout))
    assert layout.view_bytes == 0 and "sliding" not in words and "not explained" not in words
    assert "fixed-size state of 6 'linear_attention' layers" in words


def test_a_model_without_attention_is_counted_not_divided_by_zero():
    """Mamba keeps no K/V: its per-sequence bytes are its state alone; fitting, decoding and prefilling all work."""
    config = own({"model_type": "mamba", "num_hidden_layers": 4, "hidden_size": 256, "state_size": 16,
                  "expand": 2, "conv_kernel": 4, "vocab_size": 1024})
    assert (config.attention, config.attention_layers, config.state_layers) == ("none", 0, 4)
    count = sequence_count(config, 4096)
    # per layer: conv (512 channels × 4 taps) in bf16 and the SSM state (512 × 16) in float32, as transformers keeps it
    assert (count.kv_bytes, count.state_bytes) == (0, 4 * (512 * 4 * 2 + 512 * 16 * 4))
    assert count.prefill_peak_bytes == count.per_sequence_bytes == count.state_bytes
    fit = gpu_fit(cache_memory(config, 4096), H100, 2)
    assert fit.sequences == fit.cache_budget_bytes // fit.sequence_bytes > 0
    assert decode_step(config, H100, 8, 4096).cache_bytes == 8 * count.state_bytes
    assert prefill_step(config, H100, 4096).attention_flops == 0
    # the state is read every step: it outweighs the weights from a batch of weights / state, at any length
    assert cache_overtakes(config, 4096) == cache_overtakes(config, 10) == -(-weight_bytes(config, 1, "fp16/bf16")
                                                                             // count.state_bytes)


def test_prefill_peak_is_the_whole_prompt_in_every_layer():
    """Gemma-3-4B at 128K: right after prefill every layer holds the whole prompt (18.25 GB); after one step the 29
    sliding layers are cut to their window (2.81 GB). Both equal transformers' storage on a smaller copy."""
    config = own(GEMMA3_4B)
    count = sequence_count(config, 131072)
    per_token_layer = 2 * 4 * 256 * 2
    assert count.prefill_peak_bytes == 34 * 131072 * per_token_layer == 18_253_611_008
    assert count.kv_bytes == (5 * 131073 + 29 * 1024) * per_token_layer == 2_806_009_856
    small = own({**GEMMA3_4B, "num_hidden_layers": 7, "sliding_window": 32, "vocab_size": 1024})
    for prompt in (20, 100):
        layout = library_layout(small, prompt + 1)  # prefill of `prompt`, then one decode step
        counted = sequence_count(small, prompt)
        assert (layout.prefill_bytes, layout.storage_bytes) == (counted.prefill_peak_bytes, counted.kv_bytes)


@pytest.mark.parametrize("text", [
    '{"model_type": "mamba2", "num_hidden_layers": 2, "hidden_size": 256, "num_heads": 8, "head_dim": 64, '
    '"state_size": 16, "n_groups": 1, "vocab_size": 1024, "time_step_limit": [0.0, Infinity]}',
    '{"model_type": "mamba2", "num_hidden_layers": 2, "hidden_size": 256, "num_heads": 8, "head_dim": 64, '
    '"state_size": 16, "n_groups": 1, "vocab_size": 1024, "time_step_limit": [0.0, {"__float__": "Infinity"}]}',
    '{"model_type": "gemma3n_text", "num_hidden_layers": 4, "hidden_size": 256, "num_attention_heads": 4, '
    '"num_key_value_heads": 2, "head_dim": 64, "intermediate_size": [512, 512, 512, 512], "vocab_size": 1024, '
    '"vocab_size_per_layer_input": 1024, "hidden_size_per_layer_input": 16, "num_kv_shared_layers": 0, '
    '"laurel_rank": 8, "altup_num_inputs": 2, "activation_sparsity_pattern": [0.0, 0.0, 0.0, 0.0], '
    '"layer_types": ["sliding_attention", "sliding_attention", "sliding_attention", "full_attention"]}',
])
def test_configs_transformers_loads_are_accepted(text):
    """A non-finite float (bare, or transformers 5's tagged form) and a per-layer list are what transformers loads;
    kvlab counts them rather than refusing with a wrong reason."""
    config = read_model(text)
    assert sequence_count(config, 1000).per_sequence_bytes > 0


@pytest.mark.parametrize("raw, named", [
    ({"model_type": "rwkv", "num_hidden_layers": 2, "hidden_size": 64, "vocab_size": 100}, "num_attention_heads"),
    ({"model_type": "llama", "num_hidden_layers": 2, "layer_types": ["full_attention", "compressed_sparse_attention"]},
     "1 of the 2 layers are of type 'compressed_sparse_attention'"),
])
def test_what_kvlab_does_not_model_is_refused_naming_it(raw, named):
    """An unknown layer type, a recurrent state outside transformers' layer cache, or layers that keep nothing are
    refused in one line that names the layer type or the field."""
    with pytest.raises(ConfigError) as err:
        own(raw)
    assert named in str(err.value) and "\n" not in str(err.value)


def test_a_field_that_varies_per_layer_is_named():
    """Gemma-4 gives its global layers another head width: transformers will not read one head_dim, and kvlab
    says which field varies instead of failing."""
    from transformers import CONFIG_MAPPING

    with pytest.raises(ConfigError, match="'head_dim' differs from layer to layer"):
        read_model(CONFIG_MAPPING["gemma4_text"]().to_json_string())


@pytest.mark.slow
def test_every_causal_lm_default_config_is_counted_or_refused_in_words():
    """The default config of every model type in transformers' MODEL_FOR_CAUSAL_LM_MAPPING_NAMES goes through the
    page's core functions: counted (K/V ≥ 0, something kept per sequence) or refused with one line; no other
    exception. The hybrids among them are counted with a fixed state."""
    from transformers import CONFIG_MAPPING
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    counted, refused = {}, {}
    for kind in sorted(MODEL_FOR_CAUSAL_LM_MAPPING_NAMES):
        try:
            text = CONFIG_MAPPING[kind]().to_json_string()
        except Exception:  # noqa: BLE001 - transformers' own default does not validate: nothing to feed
            continue
        try:
            config = read_model(text, kind)
        except ConfigError as err:
            refused[kind] = str(err)
            continue
        count = sequence_count(config, 4096)
        assert count.kv_bytes >= 0 and count.per_sequence_bytes > 0, kind
        assert (count.state_bytes > 0) == (config.state_layers > 0), kind
        counted[kind] = count
    assert all(message and "\n" not in message for message in refused.values())
    hybrids = {"qwen3_next", "jamba", "falcon_h1", "zamba2", "mamba", "mamba2", "falcon_mamba", "nemotron_h",
               "lfm2", "kimi_linear", "qwen3_5_moe"}
    assert {kind for kind in hybrids if kind in counted and counted[kind].state_bytes > 0} >= hybrids - {"lfm2"}
    assert len(counted) > 2 * len(refused)


@pytest.mark.parametrize("raw, words", [
    ({"model_type": "inkling_text", "hidden_size": 256, "num_hidden_layers": 6, "num_attention_heads": 4,
      "num_key_value_heads": 2, "head_dim": 64, "swa_num_attention_heads": 4, "swa_num_key_value_heads": 4,
      "swa_head_dim": 64, "sliding_window_size": 32, "vocab_size": 1000, "intermediate_size": 512},
     "5 of the 6 layers keep K/V shapes kvlab does not model"),
    ({"model_type": "inkling2_loop_text", "hidden_size": 256, "num_hidden_layers": 12, "num_attention_heads": 4,
      "num_key_value_heads": 2, "head_dim": 64, "swa_num_attention_heads": 4, "swa_num_key_value_heads": 2,
      "swa_head_dim": 64, "sliding_window_size": 32, "vocab_size": 1000, "intermediate_size": 512,
      "loop_layer_index_start": 6, "loop_layer_index_end": 12, "loop_num_passes": 2},
     "transformers built 18 cache layers for 12 layers"),
])
def test_what_the_formula_would_miscount_is_refused(raw, words):
    """Sliding layers with their own K/V head count (under swa_* names), or a model that runs some layers twice, would
    be miscounted by the per-layer formula: transformers' own cache, laid out at a few tokens, says so and the config
    is refused in words instead of counted wrong."""
    with pytest.raises(ConfigError, match=words):
        own(raw)
