"""What limits a decode step: the bytes it must read against the arithmetic it must do.

A step of a transformer moves bytes from GPU memory and does floating-point work on them. With a
peak bandwidth B (bytes/s) and a peak rate P (FLOP/s), a step that reads ``bytes`` and does
``flops`` takes at least

    max(bytes / B, flops / P)

and which term wins is decided by its **arithmetic intensity** ``flops / bytes`` against the GPU's
**ridge point** ``P / B`` (the roofline model). Counted here, per step:

- **weights read**: every parameter a step uses, once: attention, dense MLPs, shared experts and
  the LM head. Token-embedding tables are only indexed (a row per token, not counted). A mixture
  of experts reads only the experts some token in the step is routed to: with B tokens each picking
  k of E experts, E · (1 − (1 − k/E)^B) of them on average (uniform routing assumed).
- **KV cache read** (decode) or **written** (prefill): the closed formula of :mod:`viz.core.scale.memory`,
  and the fixed state of linear-attention and state-space layers, read and rewritten once per step.
- **FLOPs**: 2 per weight used per token (a multiply and an add), plus attention: a new token scores
  every key it can see and sums as many values, 2 · heads · (key width + value width) FLOPs per key
  and layer. MLA is counted the way serving engines decode it, in the latent (scores over
  latent + RoPE, values in the latent), and prefill in the expanded per-head form. A sliding layer's
  query sees at most the window; a chunked layer's (Llama-4) only the keys of its own chunk, so
  the query at position i sees (i − 1) mod C + 1 of them.

**Decode** makes one token per sequence and reuses each weight once per sequence in the batch, so
its intensity is about the batch size: far below any GPU's ridge point, hence memory-bound; batching
raises it until compute runs out, unless the cache, read once per sequence, grows to dominate the
bytes first. **Prefill** reuses each weight for every prompt token, so its intensity is about the
prompt length: compute-bound beyond a few hundred tokens.

Under tensor parallelism over N GPUs each GPU reads 1/N of the weights and its share of the cache
(K/V heads copied when N exceeds them, MLA's latent on every GPU) and does 1/N of the FLOPs; the
two all-reduces per layer in the forward pass (after attention and after the MLP, Megatron-LM's
split) are not counted. Times are lower bounds: real kernels reach roughly 70-90%
of peak bandwidth and 60-80% of peak FLOP/s, and a small step also pays kernel-launch overhead.

What this module does not do: measure a GPU, model caches (L2), kernels, communication, or
speculative and chunked-prefill scheduling.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .gpus import Gpu, compute_dtype
from .memory import (MAX_BATCH, MAX_TOKENS, WEIGHT_BITS, MemoryConfigError, cache_memory, kv_split, per_gpu_bytes,
                     weights_nbytes)
from .model_config import ModelConfig

MAX_SWEEP = 4_096  # largest batch a sweep draws


def format_seconds(seconds: float) -> str:
    """'12.3 ms', '45.6 µs', '1.23 s'."""
    for unit, size in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if seconds >= size:
            return f"{seconds / size:.3g} {unit}"
    return f"{seconds * 1e9:.3g} ns"


def format_flops(flops: float) -> str:
    for unit, size in (("PFLOP", 1e15), ("TFLOP", 1e12), ("GFLOP", 1e9), ("MFLOP", 1e6)):
        if flops >= size:
            return f"{flops / size:.3g} {unit}"
    return f"{flops:.3g} FLOP"


@dataclass(frozen=True)
class StepCost:
    """One forward step on one GPU: bytes read, FLOPs done, and the time each allows."""

    phase: str  # "decode" or "prefill"
    batch: int  # sequences in the step
    context: int  # decode: tokens each sequence has cached; prefill: prompt tokens
    new_tokens: int  # tokens the step produces (decode: one per sequence) or reads in (prefill)
    weight_bytes: int  # per GPU
    cache_bytes: int  # per GPU: KV cache read (decode) or written (prefill)
    matmul_flops: float  # per GPU
    attention_flops: float  # per GPU
    gpu: Gpu
    compute: str  # tensor-core format the products run in (fp16/bf16, fp8, tf32)
    gpus: int = 1

    @property
    def bytes(self) -> int:
        return self.weight_bytes + self.cache_bytes

    @property
    def flops(self) -> float:
        return self.matmul_flops + self.attention_flops

    @property
    def intensity(self) -> float:
        """FLOPs per byte moved."""
        return self.flops / self.bytes

    @property
    def peak_flops(self) -> float:
        return self.gpu.peak_flops(self.compute)

    @property
    def ridge(self) -> float:
        return self.peak_flops / self.gpu.bandwidth

    @property
    def memory_seconds(self) -> float:
        """The time to read the bytes at peak bandwidth."""
        return self.bytes / self.gpu.bandwidth

    @property
    def compute_seconds(self) -> float:
        """The time to do the FLOPs at peak rate."""
        return self.flops / self.peak_flops

    @property
    def seconds(self) -> float:
        return max(self.memory_seconds, self.compute_seconds)

    @property
    def bound(self) -> str:
        return "memory" if self.memory_seconds >= self.compute_seconds else "compute"

    @property
    def tokens_per_second(self) -> float:
        return self.new_tokens / self.seconds

    @property
    def seconds_per_token(self) -> float:
        """Decode: the whole step (each sequence gets one token); prefill: the pass over its tokens."""
        return self.seconds if self.phase == "decode" else self.seconds / self.new_tokens

    @property
    def memory_tokens_per_second(self) -> float:
        """Tokens per second if only the bytes counted."""
        return self.new_tokens / self.memory_seconds

    @property
    def compute_tokens_per_second(self) -> float:
        """Tokens per second if only the FLOPs counted."""
        return self.new_tokens / self.compute_seconds

    @property
    def attainable_flops(self) -> float:
        """The roofline at this intensity: min(peak, bandwidth · intensity)."""
        return min(self.peak_flops, self.gpu.bandwidth * self.intensity)


def experts_touched(config: ModelConfig, tokens: int) -> float:
    """Expected routed experts per MoE layer that ``tokens`` tokens use between them (uniform routing)."""
    if not config.experts:
        return 0.0
    share = config.experts_per_token / config.experts
    return config.experts * (1 - (1 - share) ** tokens)


def weight_bytes(config: ModelConfig, tokens: int, dtype: str) -> int:
    """Bytes of weights a step over ``tokens`` tokens reads (whole model, all GPUs together)."""
    experts = 0.0
    if config.experts:
        experts = config.expert_params * experts_touched(config, tokens) / config.experts
    return weights_nbytes(config.dense_params, experts, dtype)


def matmul_flops_per_token(config: ModelConfig) -> float:
    """2 FLOPs per weight a token uses: every dense weight and its k experts' weights."""
    active = config.dense_params
    if config.experts:
        active += config.expert_params * config.experts_per_token / config.experts
    return 2.0 * active


def _keys_seen(config: ModelConfig, kind: str, length: int) -> float:
    """Keys a query at position ``length`` sees in a layer of this kind."""
    if kind == "chunked_attention" and config.window:  # its own chunk only
        return (length - 1) % config.window + 1
    return config.tokens_kept(kind, length)


def _keys_seen_prefill(config: ModelConfig, kind: str, n: int) -> float:
    """Keys all n prompt queries see together in one layer: Σ_{i=1..n} keys_seen(i)."""
    if kind == "chunked_attention" and config.window:  # whole chunks of C, then the rest
        chunks, rest = divmod(n, config.window)
        return chunks * config.window * (config.window + 1) / 2 + rest * (rest + 1) / 2
    kept = config.tokens_kept(kind, n)
    if kept == n:  # every earlier key stays (full layer, or n within the window)
        return n * (n + 1) / 2
    if kept == 0:
        return 0.0
    window = kept
    return window * (window + 1) / 2 + (n - window) * window


def attention_flops_per_key(config: ModelConfig, phase: str) -> int:
    """FLOPs one query spends on one key in one layer: scores plus weighted values."""
    if config.attention == "MLA":
        if phase == "decode":  # absorbed: score over latent + rope, sum values in the latent
            return 2 * config.query_heads * (2 * config.latent_dim + config.rope_dim)
        return 2 * config.query_heads * (config.qk_dim + config.v_dim)
    return 4 * config.query_heads * config.head_dim


def _cache_bytes(config: ModelConfig, tokens: int, cache_dtype: str, batch: int, gpus: int) -> int:
    """One GPU's K/V of ``batch`` sequences of ``tokens`` and their fixed state (split over the GPUs)."""
    kv_split(config, gpus)  # validates the GPU count
    memory = cache_memory(config, max(1, tokens), cache_dtype, batch)
    kv = per_gpu_bytes(config, gpus, memory.bytes_per_batch) if tokens else 0
    return kv + math.ceil(memory.state_bytes_per_sequence * batch / gpus)


def _check_weights(weights_dtype: str) -> None:
    if weights_dtype not in WEIGHT_BITS:
        raise MemoryConfigError("dtype", f"must be one of {', '.join(WEIGHT_BITS)}")


def decode_step(config: ModelConfig, gpu: Gpu, batch: int, context: int, weights_dtype: str = "fp16/bf16",
                cache_dtype: str = "fp16/bf16", gpus: int = 1) -> StepCost:
    """One decode step: ``batch`` sequences with ``context`` cached tokens each make one token."""
    _check_weights(weights_dtype)
    if isinstance(batch, bool) or not isinstance(batch, int) or not 1 <= batch <= MAX_BATCH:
        raise MemoryConfigError("batch", f"must be between 1 and {MAX_BATCH:,}")
    if isinstance(context, bool) or not isinstance(context, int) or not 0 <= context <= MAX_TOKENS:
        raise MemoryConfigError("tokens", f"must be between 0 and {MAX_TOKENS:,}")
    keys = sum(_keys_seen(config, kind, context + 1) for kind in config.layer_kinds)
    return StepCost("decode", batch, context, batch,
                    weight_bytes=math.ceil(weight_bytes(config, batch, weights_dtype) / gpus),
                    cache_bytes=_cache_bytes(config, context, cache_dtype, batch, gpus),
                    matmul_flops=matmul_flops_per_token(config) * batch / gpus,
                    attention_flops=attention_flops_per_key(config, "decode") * keys * batch / gpus,
                    gpu=gpu, compute=compute_dtype(gpu, weights_dtype), gpus=gpus)


def prefill_step(config: ModelConfig, gpu: Gpu, tokens: int, weights_dtype: str = "fp16/bf16",
                 cache_dtype: str = "fp16/bf16", gpus: int = 1) -> StepCost:
    """One prefill pass over a prompt of ``tokens`` tokens (one sequence) that fills its cache."""
    _check_weights(weights_dtype)
    if isinstance(tokens, bool) or not isinstance(tokens, int) or not 1 <= tokens <= MAX_TOKENS:
        raise MemoryConfigError("tokens", f"must be between 1 and {MAX_TOKENS:,}")
    keys = sum(_keys_seen_prefill(config, kind, tokens) for kind in config.layer_kinds)
    return StepCost("prefill", 1, tokens, tokens,
                    weight_bytes=math.ceil(weight_bytes(config, tokens, weights_dtype) / gpus),
                    cache_bytes=_cache_bytes(config, tokens, cache_dtype, 1, gpus),
                    matmul_flops=matmul_flops_per_token(config) * tokens / gpus,
                    attention_flops=attention_flops_per_key(config, "prefill") * keys / gpus,
                    gpu=gpu, compute=compute_dtype(gpu, weights_dtype), gpus=gpus)


def sweep_batches(limit: int) -> tuple[int, ...]:
    """Batch sizes to draw: powers of two up to ``limit`` (at most MAX_SWEEP), and ``limit`` itself."""
    limit = max(1, min(limit, MAX_SWEEP))
    sizes = {2**i for i in range(13) if 2**i <= limit} | {limit}
    return tuple(sorted(sizes))


def batch_sweep(config: ModelConfig, gpu: Gpu, context: int, weights_dtype: str = "fp16/bf16",
                cache_dtype: str = "fp16/bf16", gpus: int = 1, limit: int = MAX_SWEEP) -> tuple[StepCost, ...]:
    """Decode steps at growing batch sizes, all at ``context`` tokens per sequence."""
    return tuple(decode_step(config, gpu, b, context, weights_dtype, cache_dtype, gpus)
                 for b in sweep_batches(limit))


def cache_overtakes(config: ModelConfig, context: int, weights_dtype: str = "fp16/bf16",
                    cache_dtype: str = "fp16/bf16") -> int | None:
    """The smallest batch whose decode step reads more cache (K/V and fixed state) than weights at
    ``context`` tokens each, or None if no batch up to MAX_BATCH does (or nothing is cached)."""
    if context < 1:
        return None
    per_sequence = cache_memory(config, context, cache_dtype).sequence_bytes
    low, high = 1, MAX_BATCH
    if per_sequence * high < weight_bytes(config, high, weights_dtype):
        return None
    while low < high:  # cache grows linearly in the batch, weights at most as fast: bisect
        mid = (low + high) // 2
        if per_sequence * mid >= weight_bytes(config, mid, weights_dtype):
            high = mid
        else:
            low = mid + 1
    return low


def context_overtakes(config: ModelConfig, batch: int, weights_dtype: str = "fp16/bf16",
                      cache_dtype: str = "fp16/bf16") -> int | None:
    """The shortest context at which ``batch`` sequences' cache (K/V and fixed state) outweighs the
    weights, or None (a model whose sliding layers stop growing may never get there)."""
    weights = weight_bytes(config, batch, weights_dtype)
    if cache_memory(config, MAX_TOKENS - 1, cache_dtype, batch).batch_bytes < weights:
        return None
    low, high = 1, MAX_TOKENS - 1
    while low < high:
        mid = (low + high) // 2
        if cache_memory(config, mid, cache_dtype, batch).batch_bytes >= weights:
            high = mid
        else:
            low = mid + 1
    return low
