"""Smaller KV caches for the toy: eviction (sliding window, attention sinks, by hand) and
quantisation (int8 / int4, per token or KIVI-style), and what they change.

Both keep the :class:`~viz.core.engine.cache.Cache` interface, so the engine's kv decoder uses
them through ``generate(..., make_cache=...)`` unchanged:

1. :class:`EvictingCache` drops keys after each append, following an :class:`EvictionPolicy`. The
   engine's causal mask reads each key's stored position, so an evicted key is simply absent from
   the softmax; the newest key (the query's own) is never evicted.
2. :class:`QuantizedCache` stores integer codes and one absmax per group and dequantises on read.
   A value x is stored as round(x / absmax · q_max) with q_max = 127 (int8) or 7 (int4), so it
   comes back within absmax / (2 · q_max) of itself; int4 codes are packed two to a byte. Two
   schemes: ``per-token`` gives each key row (one head, one token) and each token's value its own
   scale. ``KIVI`` follows Liu et al., "KIVI: a tuning-free asymmetric 2bit quantization for KV
   cache" (2024): keys are quantised **per channel**, one scale per channel for each group of G
   tokens (keys have outlier channels, so a channel shares a scale well), values **per token**, and
   the newest R tokens stay in full precision until enough older tokens form whole groups. The
   scales (float32) and the full-precision window are counted in the bytes. Simplified from KIVI:
   symmetric absmax instead of its asymmetric zero point and scale, float32 scales instead of
   fp16, and "keep at least the newest R, quantise older tokens in whole groups" instead of
   flushing the residual when it fills. Key records (position, token, value, n) stay exact: they
   are what the rules read, not tensors a kernel would quantise.
3. :func:`compare_with_full` feeds the same tokens to a full cache and a compressed one and reports,
   for every prediction, the attention rows, the context, the logits, the word each would choose,
   and the bytes each holds.

The toy's keys are ±1 (or 0 for heads that read the query) and there is one value per token, so
both schemes store its keys exactly (every channel's absmax is 1) and per-token scales store each
value exactly: what quantisation changes here is the bytes, not the answer. A real model's keys
and values are arbitrary numbers, head_dim of them per head and token, and lose precision.
Eviction acts on the cache only: the prompt is read in full during prefill, so the first
prediction is never affected; every decode step after it sees only the kept keys.

What this module does not do: learn which keys matter (H2O, SnapKV), re-encode positions after
eviction (the toy has no RoPE), or quantise the queries, the attention weights or W_vocab.
"""

from __future__ import annotations

from dataclasses import dataclass, field
import torch

from ..engine.cache import KVCache, TokenInfo, _check_truncate
from ..engine.model import Generation, ToyModel, generate
from ..engine.scenario import MAX_DECODE_STEPS, Scenario

QMAX = {"int8": 127, "int4": 7}
SCALE_MODES = ("per-token", "KIVI")
GROUP_SIZES = (2, 4, 8, 16)  # KIVI: tokens per key scale
MAX_RESIDUAL = 64  # KIVI: newest tokens kept in full precision, at most
MAX_PREDICTIONS = 16  # predictions a comparison with the full cache makes on the Memory page, at most


def window_limit(prompt_len: int) -> int:
    """The widest window worth choosing: every token the comparison's cache can hold, the prompt's
    and the most predictions'."""
    return prompt_len + MAX_PREDICTIONS


# -- eviction --------------------------------------------------------------------------------
@dataclass(frozen=True)
class EvictionPolicy:
    """Which cached keys to keep. With no window and nothing dropped, every key stays."""

    window: int | None = None  # keep only the most recent `window` positions (None: no window)
    sinks: int = 0  # with a window, also keep the first `sinks` positions: the attention sinks
    drop: frozenset[int] = field(default_factory=frozenset)  # positions evicted by hand

    def __post_init__(self) -> None:
        if self.window is not None and self.window < 1:
            raise ValueError("the window must keep at least 1 token")
        if self.sinks < 0:
            raise ValueError("the number of sink tokens cannot be negative")
        if any(p < 1 for p in self.drop):
            raise ValueError("positions start at 1")

    def keeps(self, pos: torch.Tensor, newest: int) -> torch.Tensor:
        """(len,) bool for keys at positions ``pos`` once the token at ``newest`` is cached."""
        keep = torch.ones_like(pos, dtype=torch.bool)
        if self.window is not None:
            keep = (pos > newest - self.window) | (pos <= self.sinks)
        if self.drop:
            dropped = torch.tensor(sorted(self.drop), dtype=pos.dtype, device=pos.device)
            keep &= ~torch.isin(pos, dropped)
        return keep | (pos == newest)  # a query always sees its own key

    @property
    def label(self) -> str:
        parts = []
        if self.window is not None:
            parts.append(f"the last {self.window}" + (f" + the first {self.sinks}" if self.sinks else ""))
        if self.drop:
            parts.append("without position" + ("s " if len(self.drop) > 1 else " ")
                         + ", ".join(map(str, sorted(self.drop))))
        return "keep " + "; ".join(parts) if parts else "keep every key"


class EvictingCache(KVCache):
    """A KV cache that drops keys its policy does not keep, right after each append.

    Kept keys are compacted to the front of the preallocated buffers in place, so ``nbytes``
    counts only what is held. ``evicted`` lists the positions dropped so far, in order.
    """

    def __init__(self, num_heads: int, d_k: int, policy: EvictionPolicy, **kwargs):
        super().__init__(num_heads, d_k, **kwargs)
        self.policy = policy
        self.evicted: list[int] = []

    def append(self, keys: torch.Tensor, values: torch.Tensor, info: TokenInfo) -> None:
        super().append(keys, values, info)
        held = self.info().pos
        keep = self.policy.keeps(held, int(info.pos.max()))  # (len,)
        if bool(keep.all()):
            return
        self.evicted.extend(held[~keep].tolist())
        index = keep.nonzero().squeeze(1)  # (kept,)
        kept = index.shape[0]
        self._k[:, :kept] = self._k[:, index]  # (heads, kept, d_k); the index copies first
        for name in ("_v", "_pos", "_token", "_value", "_n"):
            buffer = getattr(self, name)
            buffer[:kept] = buffer[index]
        self.length = kept


# -- quantisation ----------------------------------------------------------------------------
@dataclass(frozen=True)
class Quantized:
    """Integer codes and the absmax of each group they were scaled by."""

    codes: torch.Tensor  # int8, or uint8 with two int4 codes per byte along the last dim
    absmax: torch.Tensor  # broadcastable to the unpacked codes: one per group
    bits: str
    width: int  # length of the last dim before packing

    @property
    def nbytes(self) -> int:
        return self.codes.nbytes + self.absmax.nbytes


def _pack_int4(codes: torch.Tensor) -> torch.Tensor:
    """(..., w) codes in -7…7 -> (..., ceil(w/2)) bytes: low nibble first."""
    if codes.shape[-1] % 2:
        codes = torch.cat([codes, torch.zeros_like(codes[..., :1])], dim=-1)
    nibbles = (codes & 0xF).to(torch.uint8)  # two's-complement nibbles
    return nibbles[..., 0::2] | (nibbles[..., 1::2] << 4)


def _unpack_int4(packed: torch.Tensor, width: int) -> torch.Tensor:
    nibbles = torch.stack([packed & 0xF, packed >> 4], dim=-1).flatten(-2)[..., :width].to(torch.int8)
    return torch.where(nibbles > 7, nibbles - 16, nibbles)  # back to -8…7


def quantize(x: torch.Tensor, bits: str, group_dim: int) -> Quantized:
    """Symmetric quantisation with one absmax per slice along ``group_dim`` (the dim it reduces)."""
    qmax = QMAX[bits]
    absmax = x.abs().amax(dim=group_dim, keepdim=True)  # one per group
    safe = torch.where(absmax > 0, absmax, torch.ones_like(absmax))
    codes = torch.round(x / safe * qmax).clamp(-qmax, qmax).to(torch.int8)
    packed = _pack_int4(codes) if bits == "int4" else codes
    return Quantized(packed, absmax, bits, x.shape[-1])


def dequantize(q: Quantized) -> torch.Tensor:
    codes = _unpack_int4(q.codes, q.width) if q.bits == "int4" else q.codes
    # (code · absmax) / q_max: a code of ±q_max gives back ±absmax exactly
    return codes.to(q.absmax.dtype) * q.absmax / QMAX[q.bits]


class QuantizedCache:
    """A KV cache that stores keys and values as int8 or int4 codes plus their scales.

    ``scales="per-token"``: each key row (one head, one token) and each token's value has its own
    absmax. ``"KIVI"``: keys per channel, one absmax per (head, channel) for every ``group`` tokens;
    values per token; the newest ``residual`` tokens (and keys not yet in a whole group) stay in full
    precision. ``nbytes`` counts codes, scales and the full-precision window as stored.
    """

    def __init__(self, num_heads: int, d_k: int, bits: str = "int8", scales: str = "per-token", *,
                 group: int = 4, residual: int = 4, device: torch.device | str = "cpu",
                 dtype: torch.dtype = torch.float32):
        if bits not in QMAX:
            raise ValueError(f"bits must be one of {', '.join(QMAX)}")
        if scales not in SCALE_MODES:
            raise ValueError(f"scales must be one of {', '.join(SCALE_MODES)}")
        if group not in GROUP_SIZES or not 0 <= residual <= MAX_RESIDUAL:
            raise ValueError(f"the group must be one of {GROUP_SIZES} tokens and the full-precision window "
                             f"0 to {MAX_RESIDUAL} tokens")
        self.num_heads, self.d_k, self.bits, self.scales = num_heads, d_k, bits, scales
        self.group, self.residual = (group, residual) if scales == "KIVI" else (1, 0)
        self.device, self.dtype = torch.device(device), dtype
        self._keys: list[Quantized] = []  # (heads, m, d_k) codes: per append, or per group of `group` tokens
        self._values: list[Quantized] = []  # (m, 1) codes, one scale per token
        self._key_window = torch.zeros(num_heads, 0, d_k, device=self.device, dtype=dtype)  # (heads, r, d_k)
        self._value_window = torch.zeros(0, device=self.device, dtype=dtype)  # (r,)
        self._info: list[TokenInfo] = []
        self.length = 0

    def append(self, keys: torch.Tensor, values: torch.Tensor, info: TokenInfo) -> None:
        """Add m new tokens: keys (heads, m, d_k), values (m,); quantise what leaves the window."""
        self._info.append(info)
        self.length += values.shape[0]
        if self.scales == "per-token":
            self._keys.append(quantize(keys, self.bits, group_dim=-1))  # one scale per (head, token)
            self._values.append(quantize(values[:, None], self.bits, group_dim=-1))  # (m, 1)
            return
        self._key_window = torch.cat([self._key_window, keys], dim=1)  # (heads, r + m, d_k)
        self._value_window = torch.cat([self._value_window, values])  # (r + m,)
        while self._key_window.shape[1] - self.residual >= self.group:  # a whole group is old enough
            oldest, self._key_window = self._key_window[:, :self.group], self._key_window[:, self.group:]
            self._keys.append(quantize(oldest, self.bits, group_dim=-2))  # one scale per (head, channel)
        old = max(0, self._value_window.shape[0] - self.residual)
        if old:
            self._values.append(quantize(self._value_window[:old, None], self.bits, group_dim=-1))
            self._value_window = self._value_window[old:]

    def keys(self) -> torch.Tensor:
        parts = [dequantize(q) for q in self._keys] + [self._key_window]
        return torch.cat(parts, dim=1)  # (heads, len, d_k), oldest first

    def values(self) -> torch.Tensor:
        parts = [dequantize(q)[:, 0] for q in self._values] + [self._value_window]
        return torch.cat(parts)  # (len,)

    def info(self) -> TokenInfo:
        return TokenInfo.cat(self._info) if self._info else TokenInfo.empty(self.device)

    def truncate(self, length: int) -> None:
        """Forget the tokens after the first ``length`` by replaying the kept appends from their
        dequantised numbers: whole appends fall into the same groups and get the same codes again
        (a group's largest number comes back exactly); an append cut in the middle is quantised
        again from its kept part (its scales may shrink)."""
        _check_truncate(length, self.length)
        keys, values, info = self.keys(), self.values(), self.info()
        lengths = [len(i) for i in self._info]
        self._keys, self._values, self._info, self.length = [], [], [], 0
        self._key_window, self._value_window = keys[:, :0], values[:0]
        start = 0
        for m in lengths:
            end = min(start + m, length)
            if end > start:
                self.append(keys[:, start:end], values[start:end], info.slice(start, end))
            start += m

    def __len__(self) -> int:
        return self.length

    @property
    def full_precision_tokens(self) -> tuple[int, int]:
        """(keys, values) still held in full precision."""
        return self._key_window.shape[1], self._value_window.shape[0]

    @property
    def nbytes(self) -> int:
        """Codes, scales and the full-precision window, as stored (records excluded, as KVCache excludes them)."""
        quantised = sum(q.nbytes for q in self._keys) + sum(q.nbytes for q in self._values)
        return quantised + self._key_window.nbytes + self._value_window.nbytes

    def value_error_bound(self) -> torch.Tensor:
        """(len,) the most each dequantised value can differ from the original: absmax / (2 · q_max)."""
        bounds = [(q.absmax / (2 * QMAX[self.bits]))[:, 0] for q in self._values]
        return torch.cat(bounds + [torch.zeros_like(self._value_window)])


# -- compressed vs full ----------------------------------------------------------------------
@dataclass(frozen=True)
class CacheSpec:
    """A compressed cache to try: eviction, quantisation, or both off (the full cache)."""

    policy: EvictionPolicy | None = None
    bits: str | None = None  # "int8", "int4" or None
    scales: str = "per-token"  # or "KIVI"
    group: int = 4  # KIVI: tokens per key scale
    residual: int = 4  # KIVI: newest tokens kept in full precision

    def __post_init__(self) -> None:
        if self.policy is not None and self.bits is not None:
            raise ValueError("choose eviction or quantisation, not both at once")
        if self.bits is not None and self.bits not in QMAX:
            raise ValueError(f"bits must be one of {', '.join(QMAX)}")
        if self.scales not in SCALE_MODES:
            raise ValueError(f"scales must be one of {', '.join(SCALE_MODES)}")
        if self.group not in GROUP_SIZES or not 0 <= self.residual <= MAX_RESIDUAL:
            raise ValueError(f"the group must be one of {GROUP_SIZES} tokens and the full-precision window "
                             f"0 to {MAX_RESIDUAL} tokens")

    def make_cache(self, model: ToyModel) -> KVCache | QuantizedCache:
        kwargs = {"device": model.device, "dtype": model.dtype}
        if self.policy is not None:
            return EvictingCache(model.num_heads, model.d_k, self.policy, **kwargs)
        if self.bits is not None:
            return QuantizedCache(model.num_heads, model.d_k, self.bits, self.scales, group=self.group,
                                  residual=self.residual, **kwargs)
        return KVCache(model.num_heads, model.d_k, **kwargs)

    @property
    def label(self) -> str:
        if self.policy is not None:
            return self.policy.label
        if self.bits is not None and self.scales == "KIVI":
            return (f"{self.bits}, KIVI: keys per channel in groups of {self.group}, values per token, "
                    f"newest {self.residual} in full precision")
        if self.bits is not None:
            return f"{self.bits}, per-token scales"
        return "full cache"


@dataclass(frozen=True)
class StepComparison:
    """One prediction made from the same tokens with the full and with the compressed cache."""

    index: int  # prediction k (0 = right after prefill)
    positions: torch.Tensor  # (len,) every position the full cache holds
    kept: torch.Tensor  # (len,) bool: still in the compressed cache
    weights_full: torch.Tensor  # (heads, len)
    weights_compressed: torch.Tensor  # (heads, len), 0 where evicted
    context_full: torch.Tensor  # (heads,)
    context_compressed: torch.Tensor  # (heads,)
    logits_full: torch.Tensor  # (vocab,)
    logits_compressed: torch.Tensor  # (vocab,)
    token_full: str
    token_compressed: str
    nbytes_full: int
    nbytes_compressed: int

    @property
    def context_error(self) -> float:
        return float((self.context_compressed - self.context_full).abs().max())

    @property
    def logit_error(self) -> float:
        return float((self.logits_compressed - self.logits_full).abs().max())

    @property
    def token_changed(self) -> bool:
        return self.token_full != self.token_compressed


@dataclass(frozen=True)
class CacheComparison:
    """A whole run: the full cache's tokens fed to both caches, prediction by prediction."""

    spec: CacheSpec
    tokens: list[str]  # the full cache's run: the prompt, then the word chosen at each prediction
    steps: list[StepComparison]
    free_tokens: list[str]  # the same with the compressed cache choosing its own words throughout
    evicted: list[int]  # positions the compressed cache dropped (eviction only)

    @property
    def first_change(self) -> int | None:
        """The first prediction whose chosen word differs, or None."""
        return next((s.index for s in self.steps if s.token_changed), None)

    @property
    def max_context_error(self) -> float:
        return max((s.context_error for s in self.steps), default=0.0)

    @property
    def max_logit_error(self) -> float:
        return max((s.logit_error for s in self.steps), default=0.0)

    @property
    def bytes_saved(self) -> int:
        """Full minus compressed bytes after the last prediction."""
        last = self.steps[-1] if self.steps else None
        return last.nbytes_full - last.nbytes_compressed if last else 0


def compare_with_full(scenario: Scenario, steps: int, spec: CacheSpec,
                      device: str | torch.device | None = None) -> CacheComparison:
    """Run the full cache, then feed its tokens to the compressed cache and compare each prediction.

    Both caches see the same sequence (the full run's words), so every difference at step k comes
    from the cache alone; the sampler's generator is seeded alike, so a changed word means the
    logits changed enough to change it. ``free_tokens`` is the compressed cache left to itself.
    """
    if not 1 <= steps <= MAX_DECODE_STEPS:
        raise ValueError(f"steps must be between 1 and {MAX_DECODE_STEPS}")
    full = generate(scenario, steps, "kv", device=device)
    model = ToyModel(scenario, device=device)
    run = Generation(scenario, "kv", model=model, cache=spec.make_cache(model))
    run.prefill()
    out: list[StepComparison] = []
    for k, step in enumerate(full.steps):
        if k > 0:
            previous = full.steps[k - 1]
            run.step(forced=(previous.token, previous.value))  # the full run's word, not its own
        mine = run.steps[k]
        positions = torch.arange(1, step.seq_len + 1)  # (len,) what the full cache holds
        held = run.decoder.cache.info().pos.cpu() if k > 0 else positions  # prefill reads the whole prompt
        kept = torch.isin(positions, held)
        weights = torch.zeros(model.num_heads, step.seq_len, dtype=step.attention.weights.dtype)
        weights[:, kept] = mine.attention.weights[:, -1].to(weights.dtype)  # (heads, kept) spread out
        out.append(StepComparison(
            index=k, positions=positions, kept=kept, weights_full=step.attention.weights[:, -1],
            weights_compressed=weights, context_full=step.context, context_compressed=mine.context,
            logits_full=step.logits, logits_compressed=mine.logits, token_full=step.token,
            token_compressed=mine.token, nbytes_full=step.cache_nbytes, nbytes_compressed=mine.cache_nbytes))
    free = generate(scenario, steps, "kv", device=device, make_cache=spec.make_cache)
    evicted = list(getattr(run.decoder.cache, "evicted", []))
    return CacheComparison(spec, full.tokens, out, free.tokens, evicted)

