"""Tier 1: config.json files are read safely, interpreted as transformers does, and counted exactly."""

from __future__ import annotations

import json

import pytest

from viz.core.scale.model_config import (CONFIG_DIR, MAX_CONFIG_BYTES, PRESET_FILES, ConfigError, model_config, preset,
                                   preset_names, preset_text, read_config)

# Parameter counts published for these checkpoints (model cards / safetensors metadata): the meta
# build must reproduce them from the shipped config.json files exactly.
PUBLISHED_PARAMS = {
    "GPT-2 small": 124_439_808, "Llama-2-7B": 6_738_415_616, "Llama-2-13B": 13_015_864_320,
    "Llama-2-70B": 68_976_648_192, "Llama-3-8B": 8_030_261_248, "Llama-3-70B": 70_553_706_496,
    "Mistral-7B (v0.1)": 7_241_732_096, "Mixtral-8x7B": 46_702_792_704, "Qwen2.5-7B": 7_615_616_512,
    "Gemma-2-9B": 9_241_705_984, "Phi-3-mini (4k)": 3_821_079_552, "OPT-13B": 12_853_473_280,
}


def test_every_preset_is_a_shipped_config_json_with_a_source():
    """Each preset names a source and a file in viz/core/scale/configs that reads as valid JSON with a model_type."""
    files = {path.name for path in CONFIG_DIR.glob("*.json")}
    assert {file for file, _ in PRESET_FILES.values()} == files
    for name, (file, source) in PRESET_FILES.items():
        assert source and "config.json" in source, name
        assert read_config(preset_text(name))["model_type"], name


@pytest.mark.parametrize("name", sorted(PUBLISHED_PARAMS))
def test_meta_build_counts_the_published_parameters(name):
    """Built on the meta device from its config.json, each model has exactly its published parameter count."""
    assert preset(name).params == PUBLISHED_PARAMS[name]


def test_moe_and_mla_presets_are_read_as_transformers_reads_them():
    """DeepSeek-V3: MLA with a 512 + 64 latent, 256 experts of which 8 per token, fp8 weights, ~671 B parameters;
    Mixtral: 8 experts, 2 per token."""
    v3 = preset("DeepSeek-V3")
    assert (v3.attention, v3.latent_dim, v3.rope_dim, v3.layers) == ("MLA", 512, 64, 61)
    assert (v3.experts, v3.experts_per_token, v3.weights_dtype) == (256, 8, "fp8")
    assert 670e9 < v3.params < 672e9 and v3.params == v3.dense_params + v3.embedding_params + v3.expert_params
    mixtral = preset("Mixtral-8x7B")
    assert (mixtral.experts, mixtral.experts_per_token, mixtral.attention, mixtral.kv_heads) == (8, 2, "GQA", 8)


def test_layer_kinds_follow_the_config_classes():
    """Gemma-2 alternates sliding and full layers; Mistral v0.1 and Phi-3 slide everywhere; Qwen2.5's
    use_sliding_window false means no layer slides."""
    gemma = preset("Gemma-2-9B")
    assert gemma.layer_kinds[:4] == ("sliding_attention", "full_attention") * 2 and gemma.sliding_layers == 21
    assert preset("Mistral-7B (v0.1)").sliding_layers == 32 and preset("Mistral-7B (v0.1)").window == 4096
    phi3 = preset("Phi-3-mini (4k)")
    assert (phi3.sliding_layers, phi3.window, phi3.attention) == (32, 2047, "MHA")
    assert preset("Qwen2.5-7B").sliding_layers == 0


def test_embedding_tables_are_separated_from_what_a_step_reads():
    """Llama-2-7B's 32,000 × 4,096 token table is indexed, not read; GPT-2's is tied to its LM head, so read."""
    llama = preset("Llama-2-7B")
    assert llama.embedding_params == 32_000 * 4_096
    gpt2 = preset("GPT-2 small")
    assert gpt2.embedding_params == 1_024 * 768  # only the position table
    assert gpt2.dense_params == gpt2.params - 1_024 * 768


@pytest.mark.parametrize("raw, expected", [
    ({"model_type": "gpt_bigcode", "n_embd": 256, "n_head": 8, "n_layer": 2, "multi_query": True, "vocab_size": 512},
     ("MQA", 1, 32)),
    ({"model_type": "falcon", "hidden_size": 256, "num_attention_heads": 8, "num_hidden_layers": 2,
      "multi_query": True, "new_decoder_architecture": False, "vocab_size": 512}, ("MQA", 1, 32)),
    ({"model_type": "mistral", "hidden_size": 512, "head_dim": 128, "num_attention_heads": 8, "num_key_value_heads": 2,
      "num_hidden_layers": 2, "intermediate_size": 1024, "vocab_size": 512, "sliding_window": None}, ("GQA", 2, 128)),
])
def test_head_counts_however_the_config_spells_them(raw, expected):
    """multi_query flags, num_kv_heads and an explicit head_dim (Mistral-Nemo style) give the right shape."""
    config = model_config(read_config(json.dumps(raw)))
    assert (config.attention, config.kv_heads, config.head_dim) == expected


@pytest.mark.parametrize("text, message", [
    ("", "empty"),
    ("{", "not valid JSON"),
    ('{"model_type": "llama",}', "line 1, column"),
    ("[1, 2]", "JSON object"),
    ('{"hidden_size": 8}', "model_type"),
    ('{"model_type": "no-such-thing"}', "does not know"),
    ('{"model_type": "vit"}', "decoder language model"),
    ('{"model_type": "llama", "num_hidden_layers": 1000000000}', "layers up to 128"),
    ('{"model_type": "llama", "num_hidden_layers": "32"}', "whole number"),
    ('{"model_type": "llama", "hidden_size": NaN}', "hidden_size must be a whole number, got nan"),
    ('{"model_type": "llama", "vocab_size": 99999999999999}', "vocabulary"),
    ('{"model_type": "llama", "x": ' + "[" * 20 + "]" * 20 + "}", "nested"),
    ('{"model_type": "llama", "x": [' + ",".join(["1"] * 5000) + "]}", "entries"),
    ('{"model_type": "llama", "num_attention_heads": 32, "num_key_value_heads": 5}', "K/V heads"),
    ('{"model_type": "gemma2", "hidden_size": 100, "num_attention_heads": 3}', "refused"),
    ('{"model_type": "llama", "hidden_size": 4097, "num_attention_heads": 32, "num_key_value_heads": 7}',
     r"refused this llama config: The hidden size \(4097\) is not a multiple of the number of attention heads \(32\)\.$"),
    ('{"model_type": "llama", "num_attention_heads": 0}', "num_attention_heads is 0; it must be at least 1"),
    ('{"model_type": "llama", "num_key_value_heads": 0}', "num_key_value_heads is 0; it must be at least 1"),
    ('{"model_type": "llama", "num_hidden_layers": 0}', "num_hidden_layers is 0; it must be at least 1"),
    ('{"model_type": "gpt2", "n_embd": 0}', "n_embd is 0; it must be at least 1"),
])
def test_bad_configs_are_refused_in_one_line(text, message):
    """Every kind of bad config.json raises ConfigError with one line naming the problem."""
    with pytest.raises(ConfigError, match=message) as err:
        model_config(read_config(text))
    assert "\n" not in str(err.value)


def test_size_limits_come_before_transformers_builds_anything():
    """A 65 KiB text, or bytes that are not UTF-8, are refused before parsing."""
    with pytest.raises(ConfigError, match="at most"):
        read_config('{"model_type": "llama", "pad": "' + "x" * MAX_CONFIG_BYTES + '"}')
    with pytest.raises(ConfigError, match="UTF-8"):
        read_config(b'{"model_type": "llama", "name": "\xff"}')
    with pytest.raises(ConfigError, match="at most"):
        read_config(b" " * (MAX_CONFIG_BYTES + 1))


def test_remote_code_keys_are_dropped_and_never_used():
    """auto_map (which would point transformers at code in the repository) is removed on reading."""
    raw = json.loads(preset_text("Phi-3-mini (4k)"))
    raw["auto_map"] = {"AutoModelForCausalLM": "evil.EvilModel"}
    raw["trust_remote_code"] = True
    read = read_config(json.dumps(raw))
    assert "auto_map" not in read and "trust_remote_code" not in read
    assert model_config(read).params == PUBLISHED_PARAMS["Phi-3-mini (4k)"]


def test_a_multimodal_config_uses_its_text_decoder():
    """A Gemma-3 config with text and vision parts is counted by its text decoder's layers."""
    raw = {"model_type": "gemma3", "text_config": {"hidden_size": 256, "head_dim": 64, "num_attention_heads": 4,
                                                   "num_key_value_heads": 2, "num_hidden_layers": 6,
                                                   "intermediate_size": 512, "sliding_window": 128},
           "vision_config": {"num_hidden_layers": 1, "hidden_size": 64, "intermediate_size": 128,
                             "num_attention_heads": 2}}
    config = model_config(read_config(json.dumps(raw)))
    assert config.layers == 6 and config.sliding_layers == 5 and config.window == 128


def test_presets_are_listed_in_order():
    """The preset list starts with GPT-2 and contains every named file."""
    assert preset_names()[0] == "GPT-2 small" and len(preset_names()) == len(PRESET_FILES)


def test_the_transformers_dependency_is_bounded_to_the_releases_taught():
    """MLA's latent, the cache layer types and the fixed states are what transformers 5 keeps; 4.x cached DeepSeek's
    expanded K/V, 71× more, so pyproject.toml allows only the 5.x releases from the one the tests check."""
    import tomllib

    from viz.core.scale.model_config import CONFIG_DIR

    project = tomllib.loads((CONFIG_DIR.parents[3] / "pyproject.toml").read_text(encoding="utf-8"))
    assert "transformers>=5.24,<6" in project["project"]["dependencies"]
