"""The toy transformer: prefill, decode and the KV cache, as torch tensor code.

One attention layer with rule-based heads (see DESIGN.md for the exact semantics):

1. **Encode** each token into a query, a key per head and a value. For a rule that only reads the
   key, Q is a row of ones and K is a row of ±1 (+1 where the rule holds), so Q·K / √d_k is ±√d_k
   literally. A rule that also reads the query is scored directly as ±√d_k from the rule.
2. **Prefill**: all prompt positions in one batched pass over heads: raw scores, scaled scores,
   causal mask, softmax weights, contexts. Every stage is kept for the UI.
3. **Decode**: one new token at a time, in one of three ways with the same API:
   ``recompute`` (full forward over the whole sequence each step, as naive generation does),
   ``reencode`` (the seed's decode code: re-encode every key, but query only the new token), and
   ``kv`` (encode only the new key and value, append them to a :class:`KVCache`, query the new token).
4. **Logits** = context of the last position @ W_vocab; the next word is chosen by
   :func:`viz.core.sampling.sample`.

Every pass counts its own work (queries, keys and values encoded, scores, multiply-adds) from the
shapes of the tensors it actually multiplies, so cost plots use real counts.

What this module does not do: parse rules (viz.core.rules), validate input (viz.core.scenario) or draw.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, NamedTuple

import torch
from torch import nn

from .device import pick_device
from .rules import compile_rule
from .sampling import SampleResult, sample
from .scenario import Scenario

MODES = ("recompute", "reencode", "kv")
MODE_LABELS = {
    "recompute": "no cache: full forward pass every step",
    "reencode": "no cache: re-encode every key, query only the new token",
    "kv": "KV cache: encode only the new token's key and value",
}


class Side(NamedTuple):
    """The query or key side of a rule, shaped to broadcast: (m, 1) for queries, (1, len) for keys."""

    pos: torch.Tensor
    token: torch.Tensor
    value: torch.Tensor


@dataclass(frozen=True)
class TokenInfo:
    """What a rule can read about a run of tokens: the record each key is encoded from."""

    pos: torch.Tensor  # (m,) int64, 1-based position
    token: torch.Tensor  # (m,) int64 token id (see ToyModel.intern)
    value: torch.Tensor  # (m,) float64, the value exactly as the scenario gives it
    n: torch.Tensor  # (m,) int64, sequence length at the moment this key was encoded

    def __len__(self) -> int:
        return self.pos.shape[0]

    def as_queries(self) -> Side:
        return Side(self.pos[:, None], self.token[:, None], self.value[:, None])

    def as_keys(self) -> Side:
        return Side(self.pos[None, :], self.token[None, :], self.value[None, :])


@dataclass
class WorkCounts:
    """Work done by one pass, counted from tensor shapes. Keys are counted per head."""

    queries: int = 0  # query rows computed (per head)
    keys_encoded: int = 0  # key rows computed (per head)
    values_encoded: int = 0  # value entries computed (shared by the heads)
    keys_read: int = 0  # key rows read from the KV cache instead of recomputed (per head)
    scores: int = 0  # query-key scores computed (per head)
    multiply_adds: int = 0  # Q·K, weights·V and context·W_vocab multiply-adds

    def __add__(self, other: "WorkCounts") -> "WorkCounts":
        return WorkCounts(*(a + b for a, b in zip(self.as_tuple(), other.as_tuple())))

    def as_tuple(self) -> tuple[int, ...]:
        return (self.queries, self.keys_encoded, self.values_encoded, self.keys_read, self.scores,
                self.multiply_adds)

    def as_dict(self) -> dict[str, int]:
        return dict(zip(("queries", "keys_encoded", "values_encoded", "keys_read", "scores",
                         "multiply_adds"), self.as_tuple()))


@dataclass(frozen=True)
class Attention:
    """Every stage of one attention computation for m queries over len keys."""

    raw_scores: torch.Tensor  # (heads, m, len) Q·K, before scaling
    scaled_scores: torch.Tensor  # (heads, m, len) Q·K / √d_k
    visible: torch.Tensor  # (m, len) bool: the causal mask, key position <= query position
    masked_scores: torch.Tensor  # (heads, m, len) scaled scores, -inf where not visible
    matches: torch.Tensor  # (heads, m, len) bool: where the rule holds (before masking)
    weights: torch.Tensor  # (heads, m, len) softmax over visible keys
    contexts: torch.Tensor  # (heads, m) Σ_j weights · v_j
    counts: WorkCounts
    undefined: torch.Tensor  # (heads, m, len) bool: a division by zero made the rule false there

    def last_row(self) -> "Attention":
        """The stages of the last query only: (heads, 1, len)."""
        return Attention(self.raw_scores[:, -1:], self.scaled_scores[:, -1:], self.visible[-1:],
                         self.masked_scores[:, -1:], self.matches[:, -1:], self.weights[:, -1:],
                         self.contexts[:, -1:], self.counts, self.undefined[:, -1:])

    @property
    def no_match(self) -> torch.Tensor:
        """(heads, m) bool: no visible key matches, so softmax spreads the weight evenly."""
        return ~(self.matches & self.visible).any(dim=-1)


@dataclass(frozen=True)
class PrefillResult:
    """The whole prompt in one pass: Q, K, V and every attention stage, on the CPU."""

    tokens: list[str]
    info: TokenInfo  # the records the keys were encoded from
    q: torch.Tensor  # (heads, n, d_k) ones for key-only heads, zeros for query-reading heads
    k: torch.Tensor  # (heads, n, d_k) ±1 for key-only heads, zeros for query-reading heads
    v: torch.Tensor  # (n,) one value per token, shared by the heads
    attention: Attention

    @property
    def contexts(self) -> torch.Tensor:
        return self.attention.contexts  # (heads, n)

    @property
    def weights(self) -> torch.Tensor:
        return self.attention.weights  # (heads, n, n)


@dataclass(frozen=True)
class DecodeResult:
    """One decode pass: the new token's attention row and context."""

    attention: Attention  # m = 1 row over every key the new query sees
    cache_length: int  # keys in the KV cache after this step (0 without a cache)
    cache_nbytes: int


class KVCache:
    """The KV cache: per-head keys and shared values for every token encoded so far.

    Buffers are preallocated and written in place; when they are full they grow by doubling, so
    appending a token costs O(1) amortised and the cache is reallocated only O(log n) times
    (``growth_events``). Alongside K and V it keeps each key's record (position, token, value, the
    sequence length when it was encoded), which rules that compare query and key read.
    """

    def __init__(self, num_heads: int, d_k: int, capacity: int = 16, *,
                 device: torch.device | str = "cpu", dtype: torch.dtype = torch.float32):
        self.num_heads, self.d_k, self.dtype = num_heads, d_k, dtype
        self.device = torch.device(device)
        self.length = 0
        self.growth_events = 0
        self._k = torch.zeros(num_heads, capacity, d_k, device=self.device, dtype=dtype)  # (heads, cap, d_k)
        self._v = torch.zeros(capacity, device=self.device, dtype=dtype)  # (cap,)
        self._pos = torch.zeros(capacity, device=self.device, dtype=torch.int64)
        self._token = torch.zeros(capacity, device=self.device, dtype=torch.int64)
        self._value = torch.zeros(capacity, device=self.device, dtype=torch.float64)
        self._n = torch.zeros(capacity, device=self.device, dtype=torch.int64)

    @property
    def capacity(self) -> int:
        return self._v.shape[0]

    def _grow(self, needed: int) -> None:
        capacity = self.capacity
        while capacity < needed:
            capacity *= 2
        for name in ("_k", "_v", "_pos", "_token", "_value", "_n"):
            old = getattr(self, name)
            new = old.new_zeros(*old.shape[:-2], capacity, old.shape[-1]) if old.dim() == 3 \
                else old.new_zeros(capacity)
            if old.dim() == 3:
                new[:, : self.length] = old[:, : self.length]
            else:
                new[: self.length] = old[: self.length]
            setattr(self, name, new)
        self.growth_events += 1

    def append(self, keys: torch.Tensor, values: torch.Tensor, info: TokenInfo) -> None:
        """Write m new tokens: keys (heads, m, d_k), values (m,), their records."""
        m = values.shape[0]
        assert keys.shape == (self.num_heads, m, self.d_k), keys.shape
        assert len(info) == m
        if self.length + m > self.capacity:
            self._grow(self.length + m)
        end = self.length + m
        self._k[:, self.length:end] = keys
        self._v[self.length:end] = values
        self._pos[self.length:end] = info.pos
        self._token[self.length:end] = info.token
        self._value[self.length:end] = info.value
        self._n[self.length:end] = info.n
        self.length = end

    def keys(self) -> torch.Tensor:
        return self._k[:, : self.length]  # (heads, len, d_k), a view

    def values(self) -> torch.Tensor:
        return self._v[: self.length]  # (len,), a view

    def info(self) -> TokenInfo:
        end = self.length
        return TokenInfo(self._pos[:end], self._token[:end], self._value[:end], self._n[:end])

    def __len__(self) -> int:
        return self.length

    @property
    def element_size(self) -> int:
        return self._k.element_size()

    @property
    def nbytes(self) -> int:
        """Bytes of the K and V held: len · (heads · d_k + 1) · element size."""
        return self.length * (self.num_heads * self.d_k + 1) * self.element_size

    @property
    def allocated_nbytes(self) -> int:
        """Bytes of the K and V buffers reserved, including room not filled yet."""
        return self.capacity * (self.num_heads * self.d_k + 1) * self.element_size


class ToyModel(nn.Module):
    """One attention layer whose heads follow the scenario's rules, then W_vocab."""

    def __init__(self, scenario: Scenario, device: str | torch.device | None = None,
                 dtype: torch.dtype = torch.float32):
        super().__init__()
        self.scenario = scenario
        self.rules = [compile_rule(head.rule) for head in scenario.heads]
        self.num_heads = len(self.rules)
        self.d_k = scenario.d_k
        self.dtype = dtype
        self.device = pick_device(device)
        w_vocab = torch.tensor([word.weights for word in scenario.vocab], dtype=dtype).T  # (heads, vocab)
        self.register_buffer("w_vocab", w_vocab.to(self.device))
        # which heads get literal ±1 keys (the rule reads only the key): (heads,) bool
        self.register_buffer("key_only", torch.tensor([r.key_only for r in self.rules], device=self.device))
        self._ids: dict[str, int] = {}

    # -- encoding ---------------------------------------------------------------------------
    def intern(self, token: str) -> int:
        """A stable id per distinct string, so rules can compare tokens as integers."""
        return self._ids.setdefault(token, len(self._ids))

    def token_info(self, tokens: list[str], values: list[float], start_pos: int, n: int) -> TokenInfo:
        """Records for tokens at positions start_pos, start_pos+1, …, encoded at length n."""
        m = len(tokens)
        dev = self.device
        return TokenInfo(
            pos=torch.arange(start_pos, start_pos + m, device=dev, dtype=torch.int64),
            token=torch.tensor([self.intern(t) for t in tokens], device=dev, dtype=torch.int64),
            value=torch.tensor(values, device=dev, dtype=torch.float64),
            n=torch.full((m,), n, device=dev, dtype=torch.int64),
        )

    def encode_values(self, info: TokenInfo) -> torch.Tensor:
        return info.value.to(self.dtype)  # (m,)

    def encode_keys(self, info: TokenInfo) -> torch.Tensor:
        """K for each head: ±1 rows for key-only rules, zeros for rules that read the query."""
        m = len(info)
        keys = torch.zeros(self.num_heads, m, self.d_k, device=self.device, dtype=self.dtype)
        key_side = Side(info.pos, info.token, info.value)
        for h, rule in enumerate(self.rules):
            if rule.key_only:
                match = rule.evaluate(None, key_side, info.n, self.intern).expand(m)  # (m,)
                keys[h] = torch.where(match, 1.0, -1.0).to(self.dtype)[:, None].expand(m, self.d_k)
        return keys  # (heads, m, d_k)

    def encode_queries(self, m: int) -> torch.Tensor:
        """Q for each head: a row of ones for key-only rules (every query asks the same question)."""
        q = torch.ones(self.num_heads, m, self.d_k, device=self.device, dtype=self.dtype)
        return q * self.key_only[:, None, None]  # (heads, m, d_k)

    # -- attention --------------------------------------------------------------------------
    def attend(self, queries: TokenInfo, q: torch.Tensor, keys: TokenInfo, k: torch.Tensor,
               v: torch.Tensor) -> Attention:
        """Scores, causal mask, softmax and contexts for m queries over len keys, all heads at once."""
        m, length = len(queries), len(keys)
        raw = q @ k.transpose(1, 2)  # (heads, m, len): Q·K
        matches = raw > 0  # key-only heads: +d_k where the rule holds
        q_side, k_side = queries.as_queries(), keys.as_keys()
        undefined = torch.zeros_like(matches)  # (heads, m, len): divided by zero, so the rule is false
        for h, rule in enumerate(self.rules):
            if not rule.key_only:  # the rule compares query and key: score it directly
                match, undefined_h = rule.evaluate_total(q_side, k_side, keys.n[None, :], self.intern)
                matches[h], undefined[h] = match.expand(m, length), undefined_h.expand(m, length)
                raw[h] = torch.where(matches[h], float(self.d_k), -float(self.d_k)).to(self.dtype)
            elif rule.can_be_undefined:  # its K rows hold -1 there; find where, so a page can say so
                undefined[h] = rule.evaluate_total(None, k_side, keys.n[None, :], self.intern)[1].expand(m, length)
        scaled = raw / math.sqrt(self.d_k)  # (heads, m, len): ±√d_k
        visible = keys.pos[None, :] <= queries.pos[:, None]  # (m, len) causal mask
        masked = scaled.masked_fill(~visible, -torch.inf)
        weights = torch.softmax(masked, dim=-1)  # (heads, m, len)
        contexts = (weights * v).sum(dim=-1)  # (heads, m): the same reduction for every row
        h = self.num_heads
        counts = WorkCounts(queries=h * m, scores=h * m * length,
                            multiply_adds=h * m * length * self.d_k + h * m * length)
        return Attention(raw, scaled, visible, masked, matches, weights, contexts, counts, undefined)

    def logits(self, context: torch.Tensor) -> torch.Tensor:
        """context (heads,) @ W_vocab (heads, vocab) -> (vocab,)."""
        return context.to(self.dtype) @ self.w_vocab

    def forward(self, tokens: list[str], values: list[float]) -> PrefillResult:
        """A full causal pass over a sequence: the prefill, and what `recompute` does every step."""
        n = len(tokens)
        info = self.token_info(tokens, values, 1, n)
        q, k, v = self.encode_queries(n), self.encode_keys(info), self.encode_values(info)
        attention = self.attend(info, q, info, k, v)
        counts = attention.counts + WorkCounts(keys_encoded=self.num_heads * n, values_encoded=n)
        attention = _with_counts(attention, counts)
        return PrefillResult(list(tokens), info, q, k, v, attention)

    prefill = forward


def _with_counts(attention: Attention, counts: WorkCounts) -> Attention:
    return Attention(**{**attention.__dict__, "counts": counts})


def _to_cpu(attention: Attention) -> Attention:
    fields = {name: (value.cpu() if isinstance(value, torch.Tensor) else value)
              for name, value in attention.__dict__.items()}
    return Attention(**fields)


class Decoder:
    """Prefill once, then decode one token at a time. Subclasses differ only in what they redo."""

    mode = ""

    def __init__(self, model: ToyModel):
        self.model = model
        self.tokens: list[str] = []
        self.values: list[float] = []

    def prefill(self, tokens: list[str], values: list[float]) -> PrefillResult:
        self.tokens, self.values = list(tokens), list(values)
        return self.model.prefill(self.tokens, self.values)

    def fill(self, tokens: list[str], values: list[float]) -> None:
        """Take a prompt without computing its attention: the state prefill leaves behind, at O(n)
        cost, for long prompts (benchmarks) whose n × n weights nobody looks at."""
        self.tokens, self.values = list(tokens), list(values)

    def decode_step(self, token: str, value: float) -> DecodeResult:
        """Append one token and compute its attention row and context."""
        raise NotImplementedError

    @property
    def cache(self) -> KVCache | None:
        return None


class RecomputeDecoder(Decoder):
    """No cache: every step runs the full causal pass over the whole sequence again."""

    mode = "recompute"

    def decode_step(self, token: str, value: float) -> DecodeResult:
        self.tokens.append(token)
        self.values.append(value)
        full = self.model.forward(self.tokens, self.values).attention
        return DecodeResult(full.last_row(), cache_length=0, cache_nbytes=0)


class ReencodeDecoder(Decoder):
    """No cache, but only the new token's query: every key and value is encoded again."""

    mode = "reencode"

    def decode_step(self, token: str, value: float) -> DecodeResult:
        self.tokens.append(token)
        self.values.append(value)
        model, n = self.model, len(self.tokens)
        info = model.token_info(self.tokens, self.values, 1, n)
        k, v = model.encode_keys(info), model.encode_values(info)
        query = _last(info)
        attention = model.attend(query, model.encode_queries(1), info, k, v)
        counts = attention.counts + WorkCounts(keys_encoded=model.num_heads * n, values_encoded=n)
        return DecodeResult(_with_counts(attention, counts), cache_length=0, cache_nbytes=0)


class KVDecoder(Decoder):
    """The KV cache: each key and value is encoded once, when its token arrives, and then reused."""

    mode = "kv"

    def __init__(self, model: ToyModel, cache: KVCache | None = None):
        super().__init__(model)
        # any object with KVCache's append / keys / values / info / __len__ / nbytes can stand in
        self._cache = cache if cache is not None else KVCache(
            model.num_heads, model.d_k, device=model.device, dtype=model.dtype)

    @property
    def cache(self) -> KVCache:
        return self._cache

    def prefill(self, tokens: list[str], values: list[float]) -> PrefillResult:
        result = super().prefill(tokens, values)
        self._cache.append(result.k, result.v, result.info)  # prefill warms up the cache
        return result

    def fill(self, tokens: list[str], values: list[float]) -> None:
        super().fill(tokens, values)
        model = self.model
        info = model.token_info(self.tokens, self.values, 1, len(self.tokens))  # encoded as prefill does
        self._cache.append(model.encode_keys(info), model.encode_values(info), info)

    def decode_step(self, token: str, value: float) -> DecodeResult:
        self.tokens.append(token)
        self.values.append(value)
        model, cache, n = self.model, self._cache, len(self.tokens)
        info = model.token_info([token], [value], n, n)  # only the new token is encoded
        read = len(cache)
        cache.append(model.encode_keys(info), model.encode_values(info), info)
        attention = model.attend(info, model.encode_queries(1), cache.info(), cache.keys(), cache.values())
        counts = attention.counts + WorkCounts(keys_encoded=model.num_heads, values_encoded=1,
                                               keys_read=model.num_heads * read)
        return DecodeResult(_with_counts(attention, counts), cache_length=len(cache),
                            cache_nbytes=cache.nbytes)


def _last(info: TokenInfo) -> TokenInfo:
    return TokenInfo(info.pos[-1:], info.token[-1:], info.value[-1:], info.n[-1:])


DECODERS = {cls.mode: cls for cls in (RecomputeDecoder, ReencodeDecoder, KVDecoder)}


def make_decoder(mode: str, model: ToyModel, cache: KVCache | None = None) -> Decoder:
    """A decoder for ``mode``; ``cache`` replaces the default KVCache in kv mode."""
    if mode not in DECODERS:
        raise ValueError(f"unknown mode '{mode}' (use one of {', '.join(MODES)})")
    if mode == "kv":
        return KVDecoder(model, cache)
    if cache is not None:
        raise ValueError(f"mode '{mode}' does not use a cache")
    return DECODERS[mode](model)


# -- generation: prefill, then N predictions -------------------------------------------------
@dataclass(frozen=True)
class Step:
    """Prediction k: the context and distribution used to choose generated token k+1."""

    index: int
    query_token: str  # the token whose query produced this context (last of the sequence)
    seq_len: int  # keys the query saw
    attention: Attention  # the query's row: (heads, 1, seq_len) stages
    context: torch.Tensor  # (heads,)
    logits: torch.Tensor  # (vocab,)
    sample: SampleResult
    token: str  # the chosen word
    value: float  # its vocabulary value, the V it brings when appended
    counts: WorkCounts  # the pass that produced `context`, plus the logits
    cache_length: int  # KV-cache entries after that pass (0 without a cache)
    cache_nbytes: int

    @property
    def probs(self) -> torch.Tensor:
        return self.sample.probs


@dataclass(frozen=True)
class Trace:
    """A whole run: the prefill and N predictions. Serialised by :func:`viz.core.trace.trace_to_dict`."""

    scenario: Scenario
    mode: str
    device: torch.device
    prefill: PrefillResult
    steps: list[Step]
    cache: KVCache | None = field(default=None, repr=False)  # final cache (kv mode), on the device

    @property
    def tokens(self) -> list[str]:
        """The prompt followed by every generated token."""
        return list(self.scenario.tokens) + [step.token for step in self.steps]

    @property
    def cacheable(self) -> list[bool]:
        return [compile_rule(head.rule).cacheable for head in self.scenario.heads]


def generate(scenario: Scenario, steps: int, mode: str = "kv",
             device: str | torch.device | None = None, dtype: torch.dtype = torch.float32,
             make_cache: Callable[[ToyModel], KVCache] | None = None) -> Trace:
    """Prefill the prompt, then make ``steps`` predictions (the last one is not fed back).

    ``make_cache(model)`` builds the cache for kv mode (a paged, evicting or quantised one, say).
    """
    if mode not in MODES:
        raise ValueError(f"unknown mode '{mode}' (use one of {', '.join(MODES)})")
    if steps < 0:
        raise ValueError("steps must be 0 or more")
    model = ToyModel(scenario, device=device, dtype=dtype)
    decoder = make_decoder(mode, model, make_cache(model) if make_cache else None)
    prefill = decoder.prefill(list(scenario.tokens), list(scenario.values))
    generator = torch.Generator().manual_seed(scenario.sampling.seed)
    vocab = scenario.vocab
    logit_work = WorkCounts(multiply_adds=model.num_heads * len(vocab))
    cache = decoder.cache
    result = DecodeResult(prefill.attention.last_row(), len(cache) if cache else 0,
                          cache.nbytes if cache else 0)
    out: list[Step] = []
    for k in range(steps):
        if k > 0:
            result = decoder.decode_step(out[-1].token, out[-1].value)
        context = result.attention.contexts[:, 0]  # (heads,)
        logits = model.logits(context)
        choice = sample(logits, scenario.sampling, generator)
        word = vocab[choice.index]
        out.append(Step(
            index=k, query_token=decoder.tokens[-1], seq_len=len(decoder.tokens),
            attention=_to_cpu(result.attention), context=context.cpu(), logits=logits.cpu(),
            sample=choice, token=word.token, value=word.value,
            counts=result.attention.counts + logit_work,
            cache_length=result.cache_length, cache_nbytes=result.cache_nbytes,
        ))
    prefill_cpu = PrefillResult(prefill.tokens, TokenInfo(*(t.cpu() for t in prefill.info.__dict__.values())),
                                prefill.q.cpu(), prefill.k.cpu(), prefill.v.cpu(), _to_cpu(prefill.attention))
    return Trace(scenario, mode, model.device, prefill_cpu, out, cache)
