"""Cache memory at scale: how many bytes a real model's KV cache takes, and how many sequences fit.

The toy keeps a few hundred bytes; a real model keeps, for every token, a key and a value per
K/V head in every layer:

    bytes = 2 · layers · kv_heads · head_dim · tokens · batch · bytes per element

MHA gives every query head its own K and V, GQA shares one K/V head between a group of query heads,
MQA shares a single one. MLA (DeepSeek-V2/V3) caches one compressed latent plus a small RoPE key per
token and layer instead, so there is no factor 2: ``(latent + rope) · layers · tokens · …``.
A sliding-window layer keeps only the last ``window`` tokens; models such as Gemma-2 alternate
sliding and full layers, so only some layers stop growing. Which layer does what comes from the
model's config.json as transformers reads it (:mod:`viz.core.scale.model_config`);
:mod:`viz.core.scale.cache_layout` checks this formula against transformers' own cache. A
linear-attention or state-space layer (Qwen3-Next's Gated DeltaNet, Mamba) keeps no K/V but a
fixed-size state per sequence, measured from transformers' cache and counted beside the K/V: a
cache that grows with every token against a state that does not.

On GPUs (:func:`gpu_fit`), memory is what the driver reports (:mod:`viz.core.scale.gpus`). A serving
engine such as vLLM takes ``gpu_memory_utilization`` of it (0.92 by default in current vLLM, 0.9
in earlier releases) and, inside that share, keeps the weights, the activation peak of its
profiling pass and its CUDA graphs; the KV cache gets the rest. Under tensor parallelism each GPU
holds 1/N of the weights but not always 1/N of the cache: K/V heads are split between the GPUs
only while there are at least as many heads as GPUs (beyond that they are copied), and MLA's
single latent is copied to every GPU (:func:`parallel_note` names the remedy, data-parallel
attention). Weights are counted in the format a server loads (see
:func:`viz.core.scale.model_config.served_weights`).

Sizes are binary: 1 KiB = 1024 bytes, 1 GiB = 1024³ bytes (the vLLM paper's "800 KB per token" for
OPT-13B is 819,200 bytes = 800 KiB).

What this module does not do: count the scales a quantised cache also stores (the toy's quantised
cache in ``viz.core.serving.compress`` does count them), model pipeline parallelism or paged-block
rounding, or run anything on a GPU. It is plain arithmetic; the toy's own bytes come from the
engine (:func:`toy_cache_memory`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..engine.model import KVCache
from .gpus import GPUS, Gpu
from .cache_layout import state_bytes
from .model_config import ModelConfig
from ..text import whole_number

DTYPE_BITS = {"fp32": 32, "fp16/bf16": 16, "fp8": 8, "int8": 8, "int4": 4, "int2": 2}
# Weights also come as MXFP4 (OCP microscaling: 4-bit values + one 8-bit scale per 32 = 4.25 bits),
# which gpt-oss publishes for its routed experts only (quantization_config.modules_to_not_convert
# keeps attention, router, embeddings and head in bf16)
WEIGHT_BITS = {**DTYPE_BITS, "mxfp4": 4.25}
EXPERTS_ONLY = ("mxfp4",)
KIB, MIB, GIB = 1024, 1024**2, 1024**3
# vllm-project/vllm, vllm/config/cache.py: CacheConfig.gpu_memory_utilization = 0.92, "the fraction of
# GPU memory to be used for the model executor" (0.9 in earlier releases). Per engine instance.
DEFAULT_UTILIZATION = 0.92
DEFAULT_RESERVE_GIB = 1.0  # activation peak + CUDA graphs per GPU: an assumption; vLLM's start-up log prints its own

MAX_TOKENS = 100_000_000
MAX_BATCH = 1_000_000
MAX_GPUS = 64


class MemoryConfigError(ValueError):
    """A calculator input that makes no sense; ``field`` names it."""

    def __init__(self, field: str, message: str):
        self.field = field
        super().__init__(f"{field}: {message}")


def checked_integer(field: str, value: object, low: int, high: int) -> int:
    try:
        return whole_number(value, low, high)
    except ValueError as err:
        raise MemoryConfigError(field, str(err)) from None


# -- the calculator ----------------------------------------------------------------------------
def nbytes(elements: int, dtype: str) -> int:
    """Bytes for ``elements`` numbers of ``dtype``; sub-byte types pack, rounding up to a byte."""
    return math.ceil(elements * WEIGHT_BITS[dtype] / 8)


def weights_nbytes(dense: int, experts: float, dtype: str) -> int:
    """Bytes of ``dense`` weights and ``experts`` routed-expert weights stored as ``dtype`` (a format
    published for the experts only keeps the rest in 16 bits)."""
    rest = "fp16/bf16" if dtype in EXPERTS_ONLY else dtype
    return nbytes(dense, rest) + nbytes(round(experts), dtype)


def _check_dtype(dtype: str, table: dict = DTYPE_BITS) -> str:
    if dtype not in table:
        raise MemoryConfigError("dtype", f"must be one of {', '.join(table)}")
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
    state_bytes_per_sequence: int = 0  # linear-attention / state-space layers: fixed, whatever the length

    @property
    def sequence_bytes(self) -> int:
        """All one sequence keeps: its K/V and its fixed state."""
        return self.bytes_per_sequence + self.state_bytes_per_sequence

    @property
    def batch_bytes(self) -> int:
        """K/V and fixed state of the whole batch."""
        return self.sequence_bytes * self.batch


def cache_memory(config: ModelConfig, tokens: int, dtype: str = "fp16/bf16", batch: int = 1) -> CacheMemory:
    """The closed formula: per token, per sequence of ``tokens``, and for ``batch`` such sequences; the
    fixed state of linear-attention and state-space layers as transformers allocates it, beside it."""
    _check_dtype(dtype)
    checked_integer("tokens", tokens, 1, MAX_TOKENS)
    checked_integer("batch", batch, 1, MAX_BATCH)
    per_layer = config.elements_per_token_layer
    kept = sum(config.tokens_kept(kind, tokens) for kind in config.layer_kinds)
    caching = sum(config.tokens_kept(kind, 1) for kind in config.layer_kinds)  # layers that keep tokens
    per_sequence = nbytes(per_layer * kept, dtype)
    full, sliding = config.cached_tokens(tokens)
    return CacheMemory(config, dtype, tokens, batch,
                       bytes_per_token=nbytes(per_layer * caching, dtype),
                       bytes_per_sequence=per_sequence, bytes_per_batch=per_sequence * batch,
                       mha_bytes_per_sequence=nbytes(config.mha_elements_per_token_layer * caching * tokens, dtype),
                       full_layer_tokens=full, sliding_layer_tokens=sliding,
                       state_bytes_per_sequence=state_bytes(config, dtype))


@dataclass(frozen=True)
class MemoryCurve:
    """Cache bytes (K/V and fixed state) per batch against context length, at the lengths where the curve bends."""

    tokens: tuple[int, ...]
    bytes: tuple[int, ...]
    state_bytes: int = 0  # the batch's fixed state (linear-attention / state-space layers), in every point


def memory_curve(config: ModelConfig, max_tokens: int, dtype: str = "fp16/bf16", batch: int = 1,
                 points: int = 64) -> MemoryCurve:
    """Evenly spaced lengths up to ``max_tokens``, plus the window (where sliding layers stop)."""
    checked_integer("max tokens", max_tokens, 1, MAX_TOKENS)
    lengths = {max(1, round(max_tokens * i / points)) for i in range(points + 1)}
    if config.window and config.window < max_tokens:
        lengths.add(config.window)
    tokens = tuple(sorted(lengths))
    return MemoryCurve(tokens, tuple(cache_memory(config, t, dtype, batch).batch_bytes for t in tokens),
                       state_bytes(config, dtype) * batch)


def curve_span(memory: CacheMemory) -> int:
    """A context range to plot: twice the chosen length, and at least the trained context."""
    return min(MAX_TOKENS, max(2 * memory.tokens, memory.config.max_context))


@dataclass(frozen=True)
class GpuFit:
    """How the memory of each GPU splits into weights, reserve and cache, and what fits.

    All byte counts are per GPU: with tensor parallelism over ``gpus`` GPUs every GPU holds 1/gpus
    of the weights and its share of every sequence's cache (see the module docstring)."""

    gpu: Gpu
    gpus: int  # tensor-parallel degree
    utilization: float  # the serving engine's share of each GPU (vLLM's gpu_memory_utilization)
    gpu_bytes: int  # what the driver reports
    requested_bytes: int  # utilization · gpu_bytes
    weights_bytes: int  # this GPU's slice of the weights
    reserve_bytes: int  # activation peak + CUDA graphs, taken from the requested share
    cache_budget_bytes: int  # requested − weights − reserve, or 0 if that is negative
    sequence_bytes: int  # this GPU's share of one sequence's cache (K/V and fixed state)
    kv_copies: int  # GPUs holding each K/V head (1: split without copies; MLA: every GPU)
    sequences: int  # whole sequences whose cache fits on every GPU
    pooled_sequences: int  # what one pool of all the GPUs' budgets would wrongly suggest
    tokens: int  # tokens of context whose cache fits: budget / this length's bytes, × the length
    state_bytes: int = 0  # this GPU's share of one sequence's fixed state (in sequence_bytes)
    weights_dtype: str = "fp16/bf16"

    @property
    def weights_fit(self) -> bool:
        return self.weights_bytes + self.reserve_bytes <= self.requested_bytes

    @property
    def outside_bytes(self) -> int:
        """Memory the engine leaves alone: (1 − utilization) · the GPU."""
        return self.gpu_bytes - self.requested_bytes

    @property
    def capacity_bytes(self) -> int:
        """Whole-model cache bytes all the GPUs hold between them (each K/V head counted once)."""
        return self.cache_budget_bytes * self.gpus // self.kv_copies


def kv_split(config: ModelConfig, gpus: int) -> tuple[int, int]:
    """(K/V heads each GPU holds, GPUs holding each K/V head) under tensor parallelism over ``gpus``.

    vLLM gives every GPU num_attention_heads / gpus query heads and max(1, kv_heads / gpus) K/V
    heads; MLA's latent is a single "head" that every GPU keeps whole. A model without attention
    layers has no K/V heads: (0, 1)."""
    checked_integer("GPUs", gpus, 1, MAX_GPUS)
    if config.attention == "none":
        return 0, 1
    if config.query_heads % gpus:
        raise MemoryConfigError("GPUs", f"tensor parallelism splits the {config.query_heads} query heads "
                                        f"evenly; {gpus} GPUs do not divide them")
    if config.attention == "MLA":
        return 1, gpus
    kv = config.kv_heads
    if kv % gpus and gpus % kv:
        raise MemoryConfigError("GPUs", f"{gpus} GPUs neither divide the {kv} K/V heads nor are a multiple of them")
    return max(1, kv // gpus), max(1, gpus // kv)


def gpu_fit(memory: CacheMemory, gpu: Gpu, gpus: int = 1, weights_dtype: str = "fp16/bf16",
            utilization: float = DEFAULT_UTILIZATION, reserve_gib: float = DEFAULT_RESERVE_GIB) -> GpuFit:
    """Sequences of ``memory.tokens`` tokens whose cache fits beside the weights, split over ``gpus``."""
    _check_dtype(weights_dtype, WEIGHT_BITS)
    if not (isinstance(utilization, (int, float)) and 0 < utilization <= 1):
        raise MemoryConfigError("utilization", "must be above 0 and at most 1")
    if not (isinstance(reserve_gib, (int, float)) and 0 <= reserve_gib <= 1024):
        raise MemoryConfigError("reserve", "must be between 0 and 1,024 GiB")
    config = memory.config
    _, copies = kv_split(config, gpus)
    state = math.ceil(memory.state_bytes_per_sequence / gpus)
    sequence = per_gpu_bytes(config, gpus, memory.bytes_per_sequence) + state
    requested = int(gpu.memory_bytes * utilization)
    weights = math.ceil(weights_nbytes(config.params - config.expert_params, config.expert_params,
                                       weights_dtype) / gpus)
    reserve = round(reserve_gib * GIB)
    budget = max(0, requested - weights - reserve)
    return GpuFit(gpu, gpus, utilization, gpu.memory_bytes, requested, weights, reserve, budget, sequence,
                  copies, budget // sequence, budget * gpus // memory.sequence_bytes,
                  budget * memory.tokens // sequence, state, weights_dtype)


def per_gpu_bytes(config: ModelConfig, gpus: int, kv_bytes: int) -> int:
    """One GPU's share of ``kv_bytes`` of K/V under tensor parallelism (K/V heads split, or copied once
    there are more GPUs than heads; MLA's latent whole on every GPU)."""
    heads, _ = kv_split(config, gpus)
    share = 1 if config.attention == "MLA" else config.kv_heads
    return math.ceil(kv_bytes * heads / share) if share else 0


def by_dtype(memory: CacheMemory) -> list[CacheMemory]:
    """The same model, length and batch in every cache dtype, widest first."""
    return [cache_memory(memory.config, memory.tokens, dtype, memory.batch) for dtype in DTYPE_BITS]


def fits_by_gpu(memory: CacheMemory, gpus: int = 1, weights_dtype: str = "fp16/bf16",
                utilization: float = DEFAULT_UTILIZATION,
                reserve_gib: float = DEFAULT_RESERVE_GIB) -> list[GpuFit]:
    """:func:`gpu_fit` for every GPU in :data:`viz.core.scale.gpus.GPUS`."""
    return [gpu_fit(memory, gpu, gpus, weights_dtype, utilization, reserve_gib) for gpu in GPUS]


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


@dataclass(frozen=True)
class ParallelNote:
    """What tensor parallelism does to one model's cache, in words (sources: vLLM's and SGLang's docs)."""

    split: str  # how each GPU holds the K/V
    remedy: str  # data-parallel attention, when the cache is copied rather than split ("" otherwise)


def parallel_note(config: ModelConfig, fit: GpuFit) -> ParallelNote:
    """Tensor parallelism splits K/V heads between GPUs; a cache with fewer heads than GPUs (MLA's single
    latent, or MQA) is copied instead, and data-parallel attention is the remedy serving engines use."""
    gpus = fit.gpus
    heads, copies = kv_split(config, gpus)
    if config.attention == "MLA":
        split = ("MLA's latent is one vector per token and layer, not one per head, so tensor parallelism "
                 f"cannot split it: every GPU keeps all of it, {gpus} copies of every sequence's latent")
    elif config.attention == "none":
        split = "with no K/V, each GPU keeps its share of every sequence's fixed state"
    else:
        split = (f"each GPU keeps {heads} of the {config.kv_heads} K/V heads"
                 + (f", and each head is copied on {copies} GPUs" if copies > 1 else ""))
    remedy = ""
    if copies > 1:
        remedy = (f"The remedy is data-parallel attention (SGLang's --enable-dp-attention; vLLM's data parallelism "
                  "with expert parallelism for DeepSeek models): each GPU runs attention for its own share of the "
                  "sequences and keeps only their cache, while the MoE or MLP layers stay split across all of "
                  f"them. The {gpus} GPUs then hold distinct sequences, up to about {fit.pooled_sequences:,} "
                  f"instead of {fit.sequences:,} (less the attention weights each GPU then keeps whole).")
    return ParallelNote(split, remedy)


def latent_note(config: ModelConfig) -> str:
    """For MLA: the latent is what serving engines and transformers 5 cache, and what an older transformers
    cached instead (the expanded per-head K and V). "" for other models."""
    if config.attention != "MLA":
        return ""
    expanded = config.mha_elements_per_token_layer / config.elements_per_token_layer
    return (f"The cache holds MLA's latent ({config.latent_dim} + {config.rope_dim} numbers per token and layer), "
            "as vLLM, SGLang and transformers 5 keep it (transformers' DeepseekV3Attention caches the latent since "
            f"PR #47761); transformers 4.x cached the expanded per-head K and V, {expanded:,.0f}× more. kvlab "
            "requires the transformers releases whose behaviour it teaches (pyproject.toml).")
