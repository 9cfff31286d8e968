"""Cache memory at scale: how many bytes a real model's KV cache takes, and how many sequences fit.

The toy keeps a few hundred bytes; a real model keeps, for every token, a key and a value per
KV head in every layer:

    bytes = 2 · layers · kv_heads · head_dim · tokens · batch · bytes per element

MHA gives every query head its own K and V, GQA shares one K/V head between a group of query heads,
MQA shares a single one. MLA (DeepSeek-V2/V3) caches one compressed latent plus a small RoPE key per
token and layer instead, so there is no factor 2: ``(latent + rope) · layers · tokens · …``.
A sliding-window layer keeps only the last ``window`` tokens; models such as Gemma-2 alternate
sliding and full layers, so only some layers stop growing.

Presets carry the published configurations (config.json on the Hugging Face Hub, or the paper),
with the source noted next to each. Sizes are binary: 1 KiB = 1024 bytes, 1 GiB = 1024³ bytes
(the vLLM paper's "800 KB per token" for OPT-13B is 819,200 bytes = 800 KiB).

What this module does not do: count activations, the CUDA context or the allocator's slack (a
``usable`` fraction of GPU memory stands in for them), count the scales a quantised cache also
stores (the toy's quantised cache in ``viz.core.compress`` does count them), or run anything on a GPU.
It is plain arithmetic; the toy's own bytes come from the engine (:func:`toy_cache_memory`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .engine import KVCache

DTYPE_BITS = {"fp32": 32, "fp16/bf16": 16, "fp8": 8, "int8": 8, "int4": 4, "int2": 2}
ATTENTION_KINDS = ("MHA", "GQA", "MQA", "MLA")
ATTENTION_LABELS = {
    "MHA": "multi-head: every query head has its own K and V",
    "GQA": "grouped-query: a group of query heads shares one K/V head",
    "MQA": "multi-query: all query heads share a single K/V head",
    "MLA": "multi-head latent: one compressed latent + a RoPE key per token and layer",
}
KIB, MIB, GIB = 1024, 1024**2, 1024**3

# GPU memory as sold. Vendors write "80 GB", but an H100's HBM is 80 GiB (nvidia-smi shows
# 81,559 MiB); we treat every size as GiB, which is within 1% of what the driver reports.
GPUS = {
    "16 GB (T4, V100-16GB)": 16,
    "24 GB (RTX 4090, L4, A10)": 24,
    "40 GB (A100-40GB)": 40,
    "48 GB (L40S, A6000)": 48,
    "80 GB (A100-80GB, H100)": 80,
    "141 GB (H200)": 141,
    "192 GB (B200, MI300X)": 192,
}
DEFAULT_USABLE = 0.9  # vLLM's default gpu_memory_utilization: the rest is left for activations

MAX_LAYERS = 1_000
MAX_HEADS = 1_024
MAX_HEAD_DIM = 8_192
MAX_TOKENS = 100_000_000
MAX_BATCH = 1_000_000
MAX_PARAMS = 1e14
MAX_GPUS = 1_024


class MemoryConfigError(ValueError):
    """A model configuration or a calculator input that makes no sense; ``field`` names it."""

    def __init__(self, field: str, message: str):
        self.field = field
        super().__init__(f"{field}: {message}")


@dataclass(frozen=True)
class ModelConfig:
    """The shape of a model's attention, which is all the cache size depends on."""

    name: str
    attention: str  # one of ATTENTION_KINDS
    layers: int  # transformer blocks; each keeps its own K and V
    query_heads: int  # attention heads that ask (num_attention_heads)
    kv_heads: int  # heads with their own K and V (num_key_value_heads): = query_heads for MHA, 1 for MQA
    head_dim: int  # width of one head's key and value
    params: float  # parameters held in GPU memory (every expert of a mixture of experts)
    max_context: int  # tokens the released model handles (max_position_embeddings or the paper)
    latent_dim: int = 0  # MLA: width of the compressed K/V latent (kv_lora_rank)
    rope_dim: int = 0  # MLA: width of the decoupled RoPE key cached beside it (qk_rope_head_dim)
    window: int = 0  # tokens a sliding-window layer keeps (0: no sliding window)
    sliding_layers: int = 0  # how many of the layers use that window
    source: str = ""  # where the numbers come from

    @property
    def full_layers(self) -> int:
        return self.layers - self.sliding_layers

    @property
    def elements_per_token_layer(self) -> int:
        """Numbers cached per token in one layer: 2·kv_heads·head_dim, or latent + rope for MLA."""
        if self.attention == "MLA":
            return self.latent_dim + self.rope_dim
        return 2 * self.kv_heads * self.head_dim

    @property
    def mha_elements_per_token_layer(self) -> int:
        """What the same layer would cache with one K/V head per query head (plain MHA)."""
        return 2 * self.query_heads * self.head_dim

    def cached_tokens(self, tokens: int) -> tuple[int, int]:
        """(tokens a full layer keeps, tokens a sliding-window layer keeps) at this context length."""
        return tokens, (min(tokens, self.window) if self.window else tokens)


def _integer(field: str, value: object, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise MemoryConfigError(field, f"must be a whole number, got {value!r}")
    if not low <= value <= high:
        raise MemoryConfigError(field, f"must be between {low:,} and {high:,}, got {value:,}")
    return value


def validate(config: ModelConfig) -> ModelConfig:
    """Check a configuration (a custom one, say); raises :class:`MemoryConfigError`."""
    if config.attention not in ATTENTION_KINDS:
        raise MemoryConfigError("attention", f"must be one of {', '.join(ATTENTION_KINDS)}")
    _integer("layers", config.layers, 1, MAX_LAYERS)
    _integer("query heads", config.query_heads, 1, MAX_HEADS)
    _integer("KV heads", config.kv_heads, 1, MAX_HEADS)
    _integer("head dim", config.head_dim, 1, MAX_HEAD_DIM)
    _integer("max context", config.max_context, 1, MAX_TOKENS)
    _integer("window", config.window, 0, MAX_TOKENS)
    _integer("sliding layers", config.sliding_layers, 0, config.layers)
    if not (isinstance(config.params, (int, float)) and 0 < config.params <= MAX_PARAMS):
        raise MemoryConfigError("parameters", f"must be above 0 and at most {MAX_PARAMS:.0e}")
    kind, q, kv = config.attention, config.query_heads, config.kv_heads
    if kind == "MHA" and kv != q:
        raise MemoryConfigError("KV heads", f"MHA has one K/V head per query head ({q}), got {kv}")
    if kind == "MQA" and kv != 1:
        raise MemoryConfigError("KV heads", f"MQA has a single K/V head, got {kv}")
    if kind == "GQA" and not (1 < kv < q and q % kv == 0):
        raise MemoryConfigError("KV heads", f"GQA needs more than 1 and fewer than {q} K/V heads, "
                                            f"dividing the {q} query heads evenly; got {kv}")
    if kind == "MLA":
        _integer("latent dim", config.latent_dim, 1, MAX_HEAD_DIM)
        _integer("RoPE dim", config.rope_dim, 0, MAX_HEAD_DIM)
    elif config.latent_dim or config.rope_dim:
        raise MemoryConfigError("latent dim", "only MLA caches a latent; set it to 0")
    if config.sliding_layers and not config.window:
        raise MemoryConfigError("window", "sliding layers need a window of 1 token or more")
    return config


# -- presets: the published configurations -----------------------------------------------------
PRESETS: dict[str, ModelConfig] = {cfg.name: validate(cfg) for cfg in (
    # openai-community/gpt2 config.json: n_layer 12, n_head 12, n_embd 768 (head 64), n_positions
    # 1024; 124,439,808 parameters
    ModelConfig("GPT-2 small", "MHA", 12, 12, 12, 64, 124_439_808, 1024,
                source="openai-community/gpt2 config.json"),
    # meta-llama/Llama-2-7b-hf: 32 layers, 32 heads, no GQA, hidden 4096 (head 128), 4096 tokens
    ModelConfig("Llama-2-7B", "MHA", 32, 32, 32, 128, 6_738_415_616, 4096,
                source="meta-llama/Llama-2-7b-hf config.json; Llama 2 paper"),
    # meta-llama/Llama-2-13b-hf: 40 layers, 40 heads, hidden 5120 (head 128), 4096 tokens
    ModelConfig("Llama-2-13B", "MHA", 40, 40, 40, 128, 13_015_864_320, 4096,
                source="meta-llama/Llama-2-13b-hf config.json"),
    # meta-llama/Llama-2-70b-hf: 80 layers, 64 heads, 8 KV heads (GQA), hidden 8192, 4096 tokens
    ModelConfig("Llama-2-70B", "GQA", 80, 64, 8, 128, 68_976_648_192, 4096,
                source="meta-llama/Llama-2-70b-hf config.json"),
    # meta-llama/Meta-Llama-3-8B: 32 layers, 32 heads, 8 KV heads, hidden 4096, 8192 tokens
    ModelConfig("Llama-3-8B", "GQA", 32, 32, 8, 128, 8_030_261_248, 8192,
                source="meta-llama/Meta-Llama-3-8B config.json"),
    # meta-llama/Meta-Llama-3-70B: 80 layers, 64 heads, 8 KV heads, hidden 8192, 8192 tokens
    ModelConfig("Llama-3-70B", "GQA", 80, 64, 8, 128, 70_553_706_496, 8192,
                source="meta-llama/Meta-Llama-3-70B config.json"),
    # mistralai/Mistral-7B-v0.1: 32 layers, 32 heads, 8 KV heads, sliding_window 4096 on every
    # layer (the paper's rolling buffer cache), max_position_embeddings 32768. v0.2+ dropped the window.
    ModelConfig("Mistral-7B (v0.1)", "GQA", 32, 32, 8, 128, 7_241_732_096, 32768,
                window=4096, sliding_layers=32,
                source="mistralai/Mistral-7B-v0.1 config.json; Mistral 7B paper (rolling buffer)"),
    # mistralai/Mixtral-8x7B-v0.1: attention as Mistral-7B, sliding_window null, 32768 tokens;
    # 46.7 B parameters, all eight experts resident although two run per token
    ModelConfig("Mixtral-8x7B", "GQA", 32, 32, 8, 128, 46_702_792_704, 32768,
                source="mistralai/Mixtral-8x7B-v0.1 config.json"),
    # Qwen/Qwen2.5-7B: 28 layers, 28 heads, 4 KV heads, hidden 3584 (head 128),
    # max_position_embeddings 131072, use_sliding_window false
    ModelConfig("Qwen2.5-7B", "GQA", 28, 28, 4, 128, 7_615_616_512, 131072,
                source="Qwen/Qwen2.5-7B config.json"),
    # google/gemma-2-9b: 42 layers, 16 heads, 8 KV heads, head_dim 256, sliding_window 4096 on
    # every other layer (layer_types alternate sliding / full), 8192 tokens
    ModelConfig("Gemma-2-9B", "GQA", 42, 16, 8, 256, 9_241_705_984, 8192,
                window=4096, sliding_layers=21,
                source="google/gemma-2-9b config.json; Gemma 2 report (local/global alternation)"),
    # microsoft/Phi-3-mini-4k-instruct: 32 layers, 32 heads, 32 KV heads, hidden 3072 (head 96),
    # 4096 tokens. Its config.json says sliding_window 2047, but the released cache keeps every
    # token, so it is counted as full attention here.
    ModelConfig("Phi-3-mini (4k)", "MHA", 32, 32, 32, 96, 3_821_079_552, 4096,
                source="microsoft/Phi-3-mini-4k-instruct config.json; Phi-3 report"),
    # deepseek-ai/DeepSeek-V2: 60 layers, 128 heads, kv_lora_rank 512, qk_rope_head_dim 64,
    # v_head_dim 128, 128K tokens; 236 B parameters (21 B active)
    ModelConfig("DeepSeek-V2", "MLA", 60, 128, 128, 128, 236e9, 131072, latent_dim=512, rope_dim=64,
                source="deepseek-ai/DeepSeek-V2 config.json; DeepSeek-V2 paper, Table 1"),
    # deepseek-ai/DeepSeek-V3: 61 layers, 128 heads, kv_lora_rank 512, qk_rope_head_dim 64,
    # 128K tokens; 671 B parameters (37 B active), released in fp8
    ModelConfig("DeepSeek-V3", "MLA", 61, 128, 128, 128, 671e9, 131072, latent_dim=512, rope_dim=64,
                source="deepseek-ai/DeepSeek-V3 config.json; DeepSeek-V3 report"),
    # facebook/opt-13b: 40 layers, 40 heads, hidden 5120 (head 128), 2048 tokens; the vLLM
    # (PagedAttention) paper's example of 800 KB of cache per token
    ModelConfig("OPT-13B", "MHA", 40, 40, 40, 128, 12_853_473_280, 2048,
                source="facebook/opt-13b config.json; vLLM paper, section 3"),
)}
DEFAULT_MODEL = "Llama-2-7B"


def custom_config(attention: str, layers: int, query_heads: int, kv_heads: int, head_dim: int,
                  params: float, max_context: int, *, latent_dim: int = 0, rope_dim: int = 0,
                  window: int = 0, sliding_layers: int = 0) -> ModelConfig:
    """A person's own model; MHA and MQA fix the K/V heads, so ``kv_heads`` is ignored for them."""
    if attention in ("MHA", "MLA"):  # MLA's latent is shared by every head
        kv_heads = query_heads
    elif attention == "MQA":
        kv_heads = 1
    if attention != "MLA":
        latent_dim = rope_dim = 0
    return validate(ModelConfig("Custom", attention, layers, query_heads, kv_heads, head_dim, params,
                                max_context, latent_dim=latent_dim, rope_dim=rope_dim, window=window,
                                sliding_layers=sliding_layers if window else 0))


# -- the calculator ----------------------------------------------------------------------------
def _bytes(elements: int, dtype: str) -> int:
    """Bytes for ``elements`` numbers of ``dtype``; sub-byte types pack, rounding up to a byte."""
    return math.ceil(elements * DTYPE_BITS[dtype] / 8)


def _check_dtype(dtype: str) -> str:
    if dtype not in DTYPE_BITS:
        raise MemoryConfigError("dtype", f"must be one of {', '.join(DTYPE_BITS)}")
    return dtype


@dataclass(frozen=True)
class CacheMemory:
    """The KV cache of one model at one context length, in bytes."""

    config: ModelConfig
    dtype: str
    tokens: int  # context length of each sequence
    batch: int  # sequences held at once
    bytes_per_token: int  # one more token of context, while every layer still grows
    bytes_per_sequence: int
    bytes_per_batch: int
    mha_bytes_per_sequence: int  # the same model with one K/V head per query head, no window
    full_layer_tokens: int  # tokens each full-attention layer holds
    sliding_layer_tokens: int  # tokens each sliding-window layer holds


def cache_memory(config: ModelConfig, tokens: int, dtype: str = "fp16/bf16", batch: int = 1) -> CacheMemory:
    """The calculator: per token, per sequence of ``tokens``, and for ``batch`` such sequences."""
    _check_dtype(dtype)
    _integer("tokens", tokens, 1, MAX_TOKENS)
    _integer("batch", batch, 1, MAX_BATCH)
    per_layer = config.elements_per_token_layer
    full, sliding = config.cached_tokens(tokens)
    elements = per_layer * (config.full_layers * full + config.sliding_layers * sliding)
    per_sequence = _bytes(elements, dtype)
    mha = _bytes(config.mha_elements_per_token_layer * config.layers * tokens, dtype)
    return CacheMemory(config, dtype, tokens, batch,
                       bytes_per_token=_bytes(per_layer * config.layers, dtype),
                       bytes_per_sequence=per_sequence, bytes_per_batch=per_sequence * batch,
                       mha_bytes_per_sequence=mha, full_layer_tokens=full, sliding_layer_tokens=sliding)


@dataclass(frozen=True)
class MemoryCurve:
    """Cache bytes per batch against context length, at the lengths where the curve bends."""

    tokens: tuple[int, ...]
    bytes: tuple[int, ...]


def memory_curve(config: ModelConfig, max_tokens: int, dtype: str = "fp16/bf16", batch: int = 1,
                 points: int = 64) -> MemoryCurve:
    """Evenly spaced lengths up to ``max_tokens``, plus the window (where sliding layers stop)."""
    _integer("max tokens", max_tokens, 1, MAX_TOKENS)
    lengths = {max(1, round(max_tokens * i / points)) for i in range(points + 1)}
    if config.window and config.window < max_tokens:
        lengths.add(config.window)
    tokens = tuple(sorted(lengths))
    return MemoryCurve(tokens, tuple(cache_memory(config, t, dtype, batch).bytes_per_batch for t in tokens))


def curve_span(memory: CacheMemory) -> int:
    """A context range to plot: twice the chosen length, and at least the trained context."""
    return min(MAX_TOKENS, max(2 * memory.tokens, memory.config.max_context))


@dataclass(frozen=True)
class GpuFit:
    """How the memory of one or more GPUs splits into weights and cache, and what fits."""

    gpu_bytes: int  # memory of all the GPUs together
    usable_bytes: int  # the part the serving engine may use
    weights_bytes: int
    cache_budget_bytes: int  # usable memory left after the weights (0 if they do not fit)
    sequence_bytes: int  # cache of one sequence at the chosen length
    sequences: int  # whole sequences whose cache fits in the budget
    tokens: int  # tokens of cache that fit, counted at full-attention growth (bytes_per_token)

    @property
    def weights_fit(self) -> bool:
        return self.weights_bytes <= self.usable_bytes


def gpu_fit(memory: CacheMemory, gpu_gib: float, gpus: int = 1, weights_dtype: str = "fp16/bf16",
            usable: float = DEFAULT_USABLE) -> GpuFit:
    """Sequences of ``memory.tokens`` tokens whose cache fits beside the weights on the GPUs."""
    _check_dtype(weights_dtype)
    _integer("GPUs", gpus, 1, MAX_GPUS)
    if not (isinstance(gpu_gib, (int, float)) and 0 < gpu_gib <= 100_000):
        raise MemoryConfigError("GPU memory", "must be above 0 GiB and at most 100,000 GiB")
    if not 0 < usable <= 1:
        raise MemoryConfigError("usable fraction", "must be above 0 and at most 1")
    total = round(gpu_gib * GIB) * gpus
    usable_bytes = int(total * usable)
    weights = _bytes(round(memory.config.params), weights_dtype)
    budget = max(0, usable_bytes - weights)
    return GpuFit(total, usable_bytes, weights, budget, memory.bytes_per_sequence,
                  budget // memory.bytes_per_sequence, budget // memory.bytes_per_token)


def by_dtype(memory: CacheMemory) -> list[CacheMemory]:
    """The same model, length and batch in every cache dtype, widest first."""
    return [cache_memory(memory.config, memory.tokens, dtype, memory.batch) for dtype in DTYPE_BITS]


def fits_by_gpu(memory: CacheMemory, gpus: int = 1, weights_dtype: str = "fp16/bf16",
                usable: float = DEFAULT_USABLE) -> list[tuple[str, GpuFit]]:
    """:func:`gpu_fit` for every GPU size in :data:`GPUS`."""
    return [(name, gpu_fit(memory, size, gpus, weights_dtype, usable)) for name, size in GPUS.items()]


def beyond_context(memory: CacheMemory) -> bool:
    """The chosen length is longer than the released model handles."""
    return memory.tokens > memory.config.max_context


# -- the toy, measured from the engine ---------------------------------------------------------
@dataclass(frozen=True)
class ToyCacheMemory:
    """The toy's own KV cache as the engine holds it: one layer, a key per head, one shared value."""

    tokens: int
    heads: int
    d_k: int
    element_size: int  # bytes per number (4: float32)
    bytes_per_token: int  # heads · d_k key numbers + 1 value, times the element size
    nbytes: int  # KVCache.nbytes after the run
    allocated_nbytes: int  # the buffers reserved, including room not filled yet


def toy_cache_memory(cache: KVCache) -> ToyCacheMemory:
    """Read the bytes off a finished run's cache (``generate(...).cache``)."""
    tokens = len(cache)
    return ToyCacheMemory(tokens, cache.num_heads, cache.d_k, cache.element_size,
                          cache.nbytes // tokens if tokens else 0, cache.nbytes, cache.allocated_nbytes)


def per_token_ratio(memory: CacheMemory, toy: ToyCacheMemory) -> float:
    """How many times the toy's whole cache one token of the real model takes."""
    return memory.bytes_per_token / toy.nbytes if toy.nbytes else float("inf")


def format_bytes(n: float) -> str:
    """Binary units, three significant figures: '512 B', '800 KiB', '2 GiB', '1008 MiB', '1.21 TiB'."""
    for unit, size in (("TiB", 1024**4), ("GiB", GIB), ("MiB", MIB), ("KiB", KIB)):
        if abs(n) >= size:
            value = n / size
            return f"{value:.3g} {unit}" if value < 1000 else f"{value:.0f} {unit}"
    return f"{int(n)} B"
