"""A model's configuration as the cache calculator reads it: published presets and any config.json.

1. **Read** a Hugging Face ``config.json`` a person pasted or uploaded (:func:`read_config`): at most
   64 KiB, parsed with ``json`` (never executed), every size field checked against a cap *before*
   transformers sees it (a config class may build a list per layer), ``auto_map`` dropped (kvlab
   never runs a model's own code); ``quantization_config`` only tells the served weights' format
   (:func:`served_weights`). ``Infinity`` and ``NaN`` are read as transformers reads them. Every
   refusal is a :class:`ConfigError` with one line.
2. **Interpret** it with transformers' own configuration class for its ``model_type``
   (:func:`hf_config`), so defaults and derived fields (Gemma-2's alternating ``layer_types``,
   Qwen2's ``use_sliding_window``) are what transformers uses, and read the closed formula's inputs
   from it (:func:`model_config`): layers and what each keeps (full, sliding or chunked window,
   shared with another layer, a fixed linear-attention or state-space state), query and K/V heads,
   head width, MLA's latent. A layer type, a per-layer field or a state kvlab does not model is
   refused, naming it.
3. **Count** its parameters by building the model on PyTorch's meta device (:func:`meta_model`):
   shapes without storage, so a 671 B-parameter model costs no memory. The count is split into what
   a decode step reads in full, the token-embedding tables (read a row per token) and the routed
   experts (read only when a token is routed to them).

The presets are small shipped ``config.json`` files in ``viz/core/scale/configs/``; :data:`PRESET_FILES`
names the source of each. Their parameter counts built this way equal the published ones.

What this module does not do: download anything, trust remote code, or lay out the cache (that is
:mod:`viz.core.scale.cache_layout`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import torch

from ..text import brief, clip

CONFIG_DIR = Path(__file__).resolve().parent / "configs"
MAX_CONFIG_BYTES = 64 * 1024
MAX_LIST = 4_096  # entries in any list (layer_types and the like)
MAX_INT = 2**40  # any whole number anywhere in the file
# caps on the sizes transformers builds from, checked on the raw file and again after defaults
SIZE_CAPS = {
    "layers": (128, ("num_hidden_layers", "n_layer", "num_layers", "n_layers")),  # Llama-3.1-405B has 126
    "hidden size": (65_536, ("hidden_size", "n_embd", "d_model", "word_embed_proj_dim")),
    "attention heads": (1_024, ("num_attention_heads", "n_head", "num_heads", "num_key_value_heads",
                                "num_kv_heads", "n_head_kv")),
    "head width": (4_096, ("head_dim", "kv_lora_rank", "q_lora_rank", "qk_rope_head_dim",
                           "qk_nope_head_dim", "v_head_dim")),
    "feed-forward width": (1_048_576, ("intermediate_size", "ffn_dim", "n_inner", "moe_intermediate_size",
                                       "shared_expert_intermediate_size")),
    "vocabulary": (4_194_304, ("vocab_size",)),
    "experts": (1_024, ("num_local_experts", "n_routed_experts", "num_experts", "num_experts_per_tok",
                        "n_shared_experts")),
    "positions": (100_000_000, ("max_position_embeddings", "n_positions", "n_ctx", "sliding_window",
                                "attention_chunk_size")),
}
DROPPED = ("auto_map", "_name_or_path", "trust_remote_code")  # never used: kvlab runs no code from a config
ATTENTION_KINDS = ("MHA", "GQA", "MQA", "MLA", "none")
ATTENTION_LABELS = {
    "MHA": "multi-head: every query head has its own K and V",
    "GQA": "grouped-query: a group of query heads shares one K/V head",
    "MQA": "multi-query: all query heads share a single K/V head",
    "MLA": "multi-head latent: one compressed latent + a RoPE key per token and layer",
    "none": "no attention layer: every layer keeps a fixed-size state per sequence, whatever its length",
}
SLIDING_KINDS = ("sliding_attention", "chunked_attention", "hybrid_sliding")
FULL_KINDS = ("full_attention", "hybrid", "indexed_attention")
# transformers' DynamicCache names these (cache_utils.DYNAMIC_LAYER_TYPE_MAPPING): a linear-attention,
# state-space or convolution layer keeps a fixed-size state per sequence, no K/V; a "hybrid" layer keeps
# both (Falcon-H1's parallel attention and Mamba heads, Zamba's shared attention blocks)
STATE_KINDS = ("conv", "linear_attention", "hybrid", "hybrid_sliding")
CACHELESS_KINDS = ("dummy", "mlp", "moe")  # KV shared with an earlier layer, or no attention at all
KNOWN_KINDS = SLIDING_KINDS + FULL_KINDS + STATE_KINDS + CACHELESS_KINDS

# The presets: name -> (file in viz/core/scale/configs/, where it comes from). Each file is the model's
# published config.json on the Hugging Face Hub; the parameter counts built from them are the
# published ones (tests/test_model_config.py checks them).
PRESET_FILES: dict[str, tuple[str, str]] = {
    # openai-community/gpt2: 12 layers x 12 heads, n_embd 768, 1,024 positions; 124,439,808 parameters
    "GPT-2 small": ("gpt2.json", "openai-community/gpt2 config.json"),
    # meta-llama/Llama-2-7b-hf: 32 layers, 32 heads, no GQA; 6,738,415,616 parameters (Llama 2 paper)
    "Llama-2-7B": ("llama-2-7b.json", "meta-llama/Llama-2-7b-hf config.json"),
    # meta-llama/Llama-2-13b-hf: 40 layers, 40 heads, hidden 5,120
    "Llama-2-13B": ("llama-2-13b.json", "meta-llama/Llama-2-13b-hf config.json"),
    # meta-llama/Llama-2-70b-hf: 80 layers, 64 query heads over 8 K/V heads (GQA)
    "Llama-2-70B": ("llama-2-70b.json", "meta-llama/Llama-2-70b-hf config.json"),
    # meta-llama/Meta-Llama-3-8B: 32 layers, 32 query over 8 K/V heads, 8,192 tokens
    "Llama-3-8B": ("llama-3-8b.json", "meta-llama/Meta-Llama-3-8B config.json"),
    # meta-llama/Meta-Llama-3-70B: 80 layers, 64 query over 8 K/V heads
    "Llama-3-70B": ("llama-3-70b.json", "meta-llama/Meta-Llama-3-70B config.json"),
    # mistralai/Mistral-7B-v0.1: sliding_window 4,096 on every layer (the paper's rolling buffer);
    # v0.2 and later dropped the window
    "Mistral-7B (v0.1)": ("mistral-7b-v0.1.json",
                          "mistralai/Mistral-7B-v0.1 config.json; Mistral 7B paper (rolling buffer cache)"),
    # mistralai/Mixtral-8x7B-v0.1: 8 experts, 2 per token, all resident; sliding_window null
    "Mixtral-8x7B": ("mixtral-8x7b-v0.1.json", "mistralai/Mixtral-8x7B-v0.1 config.json"),
    # Qwen/Qwen2.5-7B: 28 query over 4 K/V heads; use_sliding_window false, so no layer slides
    "Qwen2.5-7B": ("qwen2.5-7b.json", "Qwen/Qwen2.5-7B config.json"),
    # google/gemma-2-9b: head_dim 256, sliding_window 4,096 on every other layer (transformers'
    # Gemma2Config alternates layer_types: sliding, full, ...)
    "Gemma-2-9B": ("gemma-2-9b.json", "google/gemma-2-9b config.json; Gemma 2 report (local/global)"),
    # microsoft/Phi-3-mini-4k-instruct: sliding_window 2,047 on every layer, and transformers builds
    # a sliding-window cache layer from it
    "Phi-3-mini (4k)": ("phi-3-mini-4k-instruct.json", "microsoft/Phi-3-mini-4k-instruct config.json"),
    # deepseek-ai/DeepSeek-V2: MLA with kv_lora_rank 512 + qk_rope_head_dim 64; 236 B parameters
    "DeepSeek-V2": ("deepseek-v2.json", "deepseek-ai/DeepSeek-V2 config.json; DeepSeek-V2 paper, Table 1"),
    # deepseek-ai/DeepSeek-V3: MLA as V2, 61 layers, 256 routed experts (8 per token), fp8 weights
    "DeepSeek-V3": ("deepseek-v3.json", "deepseek-ai/DeepSeek-V3 config.json; DeepSeek-V3 report"),
    # facebook/opt-13b: the vLLM (PagedAttention) paper's example of 800 KB of cache per token
    "OPT-13B": ("opt-13b.json", "facebook/opt-13b config.json; vLLM paper, section 3"),
}
DEFAULT_MODEL = "Llama-2-7B"


class ConfigError(ValueError):
    """A config.json kvlab cannot use, with one line a person can act on."""


@dataclass(frozen=True)
class ModelConfig:
    """What the closed formula and the GPU arithmetic need to know about one model."""

    name: str
    attention: str  # one of ATTENTION_KINDS
    layer_kinds: tuple[str, ...]  # per layer, transformers' layer type (full_attention, sliding_attention, ...)
    query_heads: int  # num_attention_heads
    kv_heads: int  # num_key_value_heads: = query_heads for MHA, 1 for MQA (for MLA: query_heads)
    head_dim: int  # width of one head's key and value
    max_context: int  # max_position_embeddings (or n_positions)
    params: int  # every parameter, every expert included (counted on the meta device)
    dense_params: int  # parameters a decode step reads in full (attention, dense MLPs, shared experts, LM head)
    embedding_params: int  # token and position embedding tables: a step reads one row per token
    expert_params: int  # routed experts: read only for the experts some token is routed to
    experts: int = 0  # routed experts per MoE layer (0: a dense model)
    experts_per_token: int = 0  # num_experts_per_tok
    latent_dim: int = 0  # MLA: width of the compressed K/V latent (kv_lora_rank)
    rope_dim: int = 0  # MLA: width of the decoupled RoPE key cached beside it (qk_rope_head_dim)
    qk_dim: int = 0  # MLA: width a query head scores with (qk_nope_head_dim + qk_rope_head_dim)
    v_dim: int = 0  # MLA: width of a value head (v_head_dim)
    window: int = 0  # tokens a sliding (or chunked) layer keeps; 0: none
    weights_dtype: str = "fp16/bf16"  # the format a server loads (see served_weights)
    hidden_size: int = 0
    source: str = ""  # where the configuration comes from
    canonical: str = ""  # the config.json it was read from, as sorted JSON (the key for cached layouts)

    @property
    def layers(self) -> int:
        return len(self.layer_kinds)

    @property
    def sliding_layers(self) -> int:
        return sum(kind in SLIDING_KINDS for kind in self.layer_kinds)

    @property
    def chunked_layers(self) -> int:
        """Layers that attend within fixed chunks (Llama-4); counted among the sliding layers."""
        return sum(kind == "chunked_attention" for kind in self.layer_kinds)

    @property
    def cacheless_layers(self) -> int:
        return sum(kind in CACHELESS_KINDS for kind in self.layer_kinds)

    @property
    def attention_layers(self) -> int:
        """Layers whose K/V grow with the sequence (up to a window for sliding ones)."""
        return sum(kind in FULL_KINDS + SLIDING_KINDS for kind in self.layer_kinds)

    @property
    def full_layers(self) -> int:
        return self.attention_layers - self.sliding_layers

    @property
    def state_layers(self) -> int:
        """Layers that keep a fixed-size state per sequence (linear attention, state space, convolution)."""
        return sum(kind in STATE_KINDS for kind in self.layer_kinds)

    @property
    def group(self) -> int:
        """Query heads per K/V head (1 for MHA and MLA)."""
        return self.query_heads // self.kv_heads if self.attention in ("GQA", "MQA") else 1

    @property
    def elements_per_token_layer(self) -> int:
        """Numbers cached per token in one layer: 2·kv_heads·head_dim, or latent + rope for MLA."""
        if self.attention == "MLA":
            return self.latent_dim + self.rope_dim
        return 2 * self.kv_heads * self.head_dim

    @property
    def mha_elements_per_token_layer(self) -> int:
        """What the same layer would cache with one K/V head per query head (plain MHA)."""
        width = self.qk_dim + self.v_dim if self.attention == "MLA" else 2 * self.head_dim
        return self.query_heads * width

    def tokens_kept(self, kind: str, tokens: int) -> int:
        """Tokens one layer of this kind keeps once ``tokens`` have been seen (0 if it keeps none)."""
        return tokens_kept(kind, tokens, self.window)

    def cached_tokens(self, tokens: int) -> tuple[int, int]:
        """(tokens a full layer keeps, tokens a sliding-window layer keeps) at this context length."""
        return tokens, self.tokens_kept("sliding_attention", tokens)


def tokens_kept(kind: str, tokens: int, window: int) -> int:
    """Tokens a layer of this kind keeps once ``tokens`` have been seen: all of them (full attention),
    at most ``window`` (sliding or chunked attention), or none (a layer that reuses another's cache)."""
    if kind in SLIDING_KINDS:
        return min(tokens, window) if window else tokens
    return tokens if kind in FULL_KINDS else 0  # state-only and cacheless layers keep no K/V


# -- reading a config.json --------------------------------------------------------------------
def read_config(text: str | bytes) -> dict:
    """The parsed, size-checked config.json, with what kvlab ignores removed; ConfigError otherwise."""
    if isinstance(text, bytes):
        if len(text) > MAX_CONFIG_BYTES:
            raise ConfigError(f"the file has {len(text):,} bytes; a config.json here may have at most "
                              f"{MAX_CONFIG_BYTES:,}")
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError:
            raise ConfigError("the file is not UTF-8 text") from None
    size = len(text.encode("utf-8"))
    if size > MAX_CONFIG_BYTES:
        raise ConfigError(f"the text has {size:,} bytes; a config.json here may have at most {MAX_CONFIG_BYTES:,}")
    if not text.strip():
        raise ConfigError("the config is empty; paste a model's config.json")
    try:
        raw = json.loads(text, parse_constant=float, object_hook=_tagged_float)
    except json.JSONDecodeError as err:
        raise ConfigError(f"not valid JSON: {err.msg} at line {err.lineno}, column {err.colno}") from None
    except (ValueError, RecursionError) as err:
        raise ConfigError(f"not valid JSON: {brief(err)}") from None
    if not isinstance(raw, dict):
        raise ConfigError("a config.json is a JSON object ({...}), not a " + type(raw).__name__)
    if not isinstance(raw.get("model_type"), str) or not raw["model_type"]:
        raise ConfigError("the config has no \"model_type\" (such as \"llama\"); it names the architecture")
    _check_sizes(raw, "")
    return {key: value for key, value in raw.items() if key not in DROPPED}


FLOAT_TAG = "__float__"  # transformers 5 writes Infinity and NaN as {"__float__": "Infinity"}


def _tagged_float(node: dict) -> object:
    """Python's json reads bare Infinity/NaN already (as transformers does); this reads the tagged form."""
    if set(node) == {FLOAT_TAG} and str(node[FLOAT_TAG]) in ("Infinity", "-Infinity", "NaN"):
        return float(node[FLOAT_TAG])
    return node


def _check_sizes(node: object, where: str, depth: int = 0) -> None:
    """Walk the parsed JSON: nesting, list lengths, whole numbers and the named size fields."""
    if depth > 8:
        raise ConfigError("the config is nested more than 8 levels deep")
    if isinstance(node, dict):
        for key, value in node.items():
            for label, (cap, keys) in SIZE_CAPS.items():
                if key in keys and value is not None:  # a whole number, or one per layer (Gemma-3n)
                    for item in value if isinstance(value, list) else [value]:
                        _check_size(f"{where}{key}", item, cap, label)
            _check_sizes(value, f"{where}{key}.", depth + 1)
    elif isinstance(node, list):
        if len(node) > MAX_LIST:
            raise ConfigError(f"{where.rstrip('.')} has {len(node):,} entries; at most {MAX_LIST:,}")
        for item in node:
            _check_sizes(item, where, depth + 1)
    elif isinstance(node, int) and not isinstance(node, bool) and abs(node) > MAX_INT:
        raise ConfigError(f"{where.rstrip('.')} is {node:.3g}, far beyond any model")


AT_LEAST_ONE = ("layers", "hidden size", "attention heads")  # a model has some of each (0 would divide by zero)


def _check_size(field: str, value: object, cap: int, label: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"{field} must be a whole number, got {clip(repr(value))}")
    if label in AT_LEAST_ONE and value < 1:
        raise ConfigError(f"{field} is {value:,}; it must be at least 1")
    if not 0 <= value <= cap:
        raise ConfigError(f"{field} is {value:,}; kvlab takes {label} up to {cap:,}")


def hf_config(raw: dict):
    """transformers' configuration object of the text decoder described by ``raw`` (no remote code)."""
    from transformers import CONFIG_MAPPING
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    kind = raw["model_type"]
    if kind not in CONFIG_MAPPING:
        raise ConfigError(f"transformers does not know the model_type '{clip(kind)}' (kvlab runs no "
                          "model code from the Hub)")
    fields = {key: value for key, value in raw.items() if key not in ("model_type", "quantization_config")}
    try:
        config = CONFIG_MAPPING[kind](**fields).get_text_config(decoder=True)
    except Exception as err:  # a config class validates its fields in its own ways
        raise ConfigError(f"transformers refused this {kind} config: {brief(err)}") from None
    if config.model_type not in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES:
        raise ConfigError(f"'{clip(kind)}' is not a decoder language model transformers can build")
    try:
        for label, (cap, keys) in SIZE_CAPS.items():  # again, now with the class's defaults filled in
            for key in keys:
                value = getattr(config, key, None)
                if isinstance(value, int) and not isinstance(value, bool):
                    _check_size(key, value, cap, label)
    except ConfigError:
        raise
    except Exception as err:  # transformers refuses to read a field that differs between layers
        raise _unreadable(err) from None
    return config


def _unreadable(err: Exception) -> ConfigError:
    """A refusal naming the field when transformers says it varies per layer (Gemma-4's head_dim)."""
    if type(err).__name__ == "AmbiguousGlobalPerLayerAttributeError":
        field = str(err).split("'")[1] if str(err).count("'") >= 2 else "a field"
        return ConfigError(f"'{clip(field)}' differs from layer to layer (per_layer_config); kvlab's formula "
                           "takes one value for every layer and does not model this")
    return ConfigError(f"transformers could not read this config: {brief(err)}")


def model_config(raw: dict, name: str = "Your config.json", source: str = "") -> ModelConfig:
    """The closed formula's inputs and the parameter counts for ``raw`` (see the module docstring)."""
    config = hf_config(raw)
    try:
        fields = _formula_fields(config)
    except ConfigError:
        raise
    except Exception as err:  # a config class's own properties can refuse their combination
        raise _unreadable(err) from None
    canonical = json.dumps(raw, sort_keys=True)
    counts = parameter_counts(canonical)
    weights = served_weights(raw)
    return ModelConfig(name=name, params=counts[0], dense_params=counts[1], embedding_params=counts[2],
                       expert_params=counts[3], experts=counts[4], experts_per_token=counts[5],
                       weights_dtype=weights, source=source, canonical=canonical, **fields)


def served_weights(raw: dict) -> str:
    """The format a server loads the weights in: the ``quantization_config``'s when there is one (fp8,
    MXFP4, 4- or 8-bit integers), else 16 bits. vLLM's default ``--dtype auto`` serves a float32
    checkpoint in fp16/bf16 too (vllm/config/model.py, _get_and_verify_dtype)."""
    quantization = raw.get("quantization_config") if isinstance(raw.get("quantization_config"), dict) else {}
    method = str(quantization.get("quant_method", "")).lower()
    bits = quantization.get("bits") or quantization.get("w_bit")
    if "fp8" in method:
        return "fp8"
    if method == "mxfp4":  # gpt-oss: the experts in MXFP4
        return "mxfp4"
    if quantization.get("load_in_4bit") or bits == 4:  # bitsandbytes, AWQ, GPTQ
        return "int4"
    if quantization.get("load_in_8bit") or bits == 8:
        return "int8"
    return "fp16/bf16"


def _formula_fields(config) -> dict:
    """Attention kind, heads, widths, layer kinds and window, read from transformers' config object."""
    kinds = tuple(layer_kinds(config))
    window = getattr(config, "sliding_window", None) or getattr(config, "attention_chunk_size", None) or 0
    if not any(kind in FULL_KINDS + SLIDING_KINDS for kind in kinds):  # Mamba, RWKV-like: a state, no K/V
        return dict(attention="none", layer_kinds=kinds, query_heads=0, kv_heads=0, head_dim=0,
                    max_context=_max_context(config), window=int(window), hidden_size=config.hidden_size)
    if getattr(config, "num_attention_heads", None) is None and getattr(config, "layer_types", None) is None:
        raise ConfigError(f"this {clip(config.model_type)} config has no attention heads (num_attention_heads) "
                          "and no layer_types naming linear-attention or state-space layers: its recurrent "
                          "state lives outside transformers' layer cache, which kvlab does not model")
    heads = _positive(config, "num_attention_heads")
    kv_heads = getattr(config, "num_key_value_heads", None) or getattr(config, "num_kv_heads", None) or heads
    if getattr(config, "multi_query", False) and not getattr(config, "new_decoder_architecture", False):
        kv_heads = 1  # Falcon-7B and GPTBigCode (StarCoder): one K/V head, said with a flag
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // heads
    latent = getattr(config, "kv_lora_rank", None)
    if latent:
        attention, kv_heads = "MLA", heads
    elif kv_heads == heads:
        attention = "MHA"
    elif kv_heads == 1:
        attention = "MQA"
    elif heads % kv_heads == 0:
        attention = "GQA"
    else:
        raise ConfigError(f"{heads} query heads cannot be shared evenly by {kv_heads} K/V heads")
    return dict(attention=attention, layer_kinds=kinds, query_heads=heads,
                kv_heads=kv_heads, head_dim=head_dim, max_context=_max_context(config), latent_dim=latent or 0,
                rope_dim=config.qk_rope_head_dim if latent else 0,
                qk_dim=(config.qk_nope_head_dim + config.qk_rope_head_dim) if latent else 0,
                v_dim=config.v_head_dim if latent else 0, window=int(window), hidden_size=config.hidden_size)


def _positive(config, field: str) -> int:
    value = getattr(config, field, None)
    if not isinstance(value, int) or value < 1:
        raise ConfigError(f"{field} must be 1 or more, got {clip(repr(value))}")
    return value


def layer_kinds(config) -> list[str]:
    """Each layer's type as the config states it: ``layer_types`` if given, else every layer full or
    every layer sliding when ``sliding_window`` is set (or chunked with ``attention_chunk_size``)."""
    layers = _positive(config, "num_hidden_layers")
    kinds = getattr(config, "layer_types", None)
    if kinds is None:
        if getattr(config, "sliding_window", None) is not None:
            kinds = ["sliding_attention"] * layers
        elif getattr(config, "attention_chunk_size", None) is not None:
            kinds = ["chunked_attention"] * layers
        else:
            kinds = ["full_attention"] * layers
    sharing = getattr(config, "kv_sharing_modes", None)  # Gemma-4-style layers reusing another's cache
    if sharing is not None:
        kinds = ["dummy" if mode == "reuse" else kind for kind, mode in zip(kinds, sharing)]
    if len(kinds) != layers or not all(isinstance(kind, str) for kind in kinds):
        raise ConfigError(f"layer_types must name one type for each of the {layers} layers")
    unknown = sorted({kind for kind in kinds if kind not in KNOWN_KINDS})
    if unknown:
        count = sum(kind in unknown for kind in kinds)
        raise ConfigError(f"{count} of the {layers} layers are of type {', '.join(repr(clip(k)) for k in unknown)}, "
                          "an attention whose cache kvlab does not model (it counts full, sliding, chunked and "
                          "shared attention, MLA, and linear-attention or state-space states)")
    if not any(kind in FULL_KINDS + SLIDING_KINDS + STATE_KINDS for kind in kinds):
        raise ConfigError("no layer keeps a cache or a state (every layer type is one of "
                          f"{', '.join(CACHELESS_KINDS)})")
    return list(kinds)


def _max_context(config) -> int:
    for field in ("max_position_embeddings", "n_positions", "max_sequence_length", "seq_length"):
        value = getattr(config, field, None)
        if isinstance(value, int) and value > 0:
            return value
    return 2048


# -- the model on the meta device ---------------------------------------------------------------
@lru_cache(maxsize=4)
def meta_model(canonical: str, dtype: torch.dtype = torch.float32) -> torch.nn.Module:
    """The causal LM for this config built on the meta device (shapes, no storage), in eval mode,
    its weights then cast to ``dtype`` (free on the meta device). Built in float32 on purpose: a
    dtype argument to transformers would change torch's default dtype, which is global to the
    process, while it builds. Shared read-only between callers."""
    from transformers import AutoModelForCausalLM

    config = hf_config(json.loads(canonical))
    try:
        with torch.device("meta"):
            model = AutoModelForCausalLM.from_config(config, dtype=torch.float32, attn_implementation="eager",
                                                     experts_implementation="batched_mm")
    except Exception as err:  # a config that passes its class can still fail to build
        raise ConfigError(f"transformers could not build this model: {brief(err)}") from None
    return model.to(dtype).eval().requires_grad_(False)


@lru_cache(maxsize=64)
def parameter_counts(canonical: str) -> tuple[int, int, int, int, int, int]:
    """(all, read in full per step, embedding tables, routed experts, experts, experts per token)."""
    model = meta_model(canonical)
    raw = json.loads(canonical)
    output = model.get_output_embeddings()
    lm_head = output.weight if output is not None else None
    embedding_ids = {id(m.weight) for m in model.modules() if isinstance(m, torch.nn.Embedding)}
    total = dense = embedding = expert = 0
    for name, p in model.named_parameters(remove_duplicate=True):
        total += p.numel()
        if ".experts." in f".{name}":
            expert += p.numel()
        elif id(p) in embedding_ids and p is not lm_head:  # a tied LM head reads the whole table
            embedding += p.numel()
        else:
            dense += p.numel()
    config = hf_config(raw)
    experts = next((getattr(config, k) for k in ("num_local_experts", "n_routed_experts", "num_experts")
                    if isinstance(getattr(config, k, None), int)), 0) if expert else 0
    per_token = (getattr(config, "num_experts_per_tok", 0) or 0) if expert else 0
    return total, dense, embedding, expert, experts, per_token


# -- presets --------------------------------------------------------------------------------------
def preset_names() -> list[str]:
    return list(PRESET_FILES)


def preset_text(name: str) -> str:
    """The shipped config.json of a preset, as text."""
    return (CONFIG_DIR / PRESET_FILES[name][0]).read_text(encoding="utf-8")


@lru_cache(maxsize=None)
def preset(name: str) -> ModelConfig:
    """A preset's configuration (built on first use, then kept)."""
    if name not in PRESET_FILES:
        raise ConfigError(f"no preset called '{clip(name)}'")
    return model_config(read_config(preset_text(name)), name, PRESET_FILES[name][1])
