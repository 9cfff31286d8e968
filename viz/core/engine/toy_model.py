"""The toy transformer and its three decoders, as torch tensor code.

One attention layer with rule-based heads (docs/design.md gives the exact semantics):

1. **Encode** each token into a query, a key per head and a value. For a rule that only reads the
   key, Q is a row of ones and K is a row of ±1 (+1 where the rule holds), so Q·K / √d_k is ±√d_k
   literally. A rule that also reads the query is scored directly as ±√d_k from the rule.
2. **Prefill**: all prompt positions in one batched pass over heads: raw scores, scaled scores,
   causal mask, softmax weights, contexts. Every stage is kept for the UI.
3. **Decode**: :meth:`Decoder.extend` appends m ≥ 1 tokens and computes their query rows; it is the
   one decode step every decoder, cache, page and benchmark calls (``decode_step`` is extend with
   one token; chunked prefill and speculative verification extend by several). Three decoders
   differ only in what they redo: ``recompute`` (a full forward over the whole sequence, as naive
   generation does), ``reencode`` (the seed's decode code: re-encode every key, query only the new
   tokens) and ``kv`` (encode only the new keys and values, append them to a :class:`~.cache.Cache`).

Every pass counts its own work (queries, keys and values encoded, scores, multiply-adds) from the
shapes of the tensors it actually multiplies, so cost plots use real counts.

The loop that samples a word after each pass (:class:`~viz.core.engine.model.Generation`) is
:mod:`viz.core.engine.model`, which also re-exports every name here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import torch
from torch import nn

from .cache import Cache, KVCache, Side, TokenInfo
from ..device import pick_device
from ..rules.language import compile_rule
from .scenario import Scenario

MODES = ("recompute", "reencode", "kv")
MODE_LABELS = {
    "recompute": "no cache: full forward pass every step",
    "reencode": "no cache: re-encode every key, query only the new token",
    "kv": "KV cache: encode only the new token's key and value",
}


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
    """Every stage of one attention computation for m queries over len keys.

    The scaled and masked scores are derived from the raw ones when asked for, so a long run does
    not hold three copies of the same (heads, m, len) numbers.
    """

    raw_scores: torch.Tensor  # (heads, m, len) Q·K, before scaling
    visible: torch.Tensor  # (m, len) bool: the causal mask, key position <= query position
    matches: torch.Tensor  # (heads, m, len) bool: where the rule holds (before masking)
    weights: torch.Tensor  # (heads, m, len) softmax over visible keys
    contexts: torch.Tensor  # (heads, m) Σ_j weights · v_j
    counts: WorkCounts
    scale: float = 1.0  # √d_k
    undefined: torch.Tensor | None = None  # (heads, m, len) bool: a division by zero made the rule
    # false there (viz.core.rules.language); None when no head's rule can divide by zero

    @property
    def scaled_scores(self) -> torch.Tensor:
        return self.raw_scores / self.scale  # (heads, m, len) Q·K / √d_k

    @property
    def masked_scores(self) -> torch.Tensor:
        return self.scaled_scores.masked_fill(~self.visible, -torch.inf)  # (heads, m, len)

    def rows(self, start: int) -> "Attention":
        """Copies of the stages of queries start… (negative: from the end), on the CPU: small
        tensors that do not keep the whole pass's (heads, m, len) tensors alive."""
        def keep(t: torch.Tensor, dim: int) -> torch.Tensor:
            part = t[start:] if dim == 0 else t[:, start:]
            return part.to("cpu", copy=True) if part.device.type != "meta" else part.clone()
        return Attention(keep(self.raw_scores, 1), keep(self.visible, 0), keep(self.matches, 1),
                         keep(self.weights, 1), keep(self.contexts, 1), self.counts, self.scale,
                         None if self.undefined is None else keep(self.undefined, 1))

    def last_row(self) -> "Attention":
        """The stages of the last query only: (heads, 1, len), copied."""
        return self.rows(-1)

    def with_counts(self, counts: WorkCounts) -> "Attention":
        return replace(self, counts=counts)

    @property
    def no_match(self) -> torch.Tensor:
        """(heads, m) bool: no visible key matches, so softmax spreads the weight evenly."""
        return ~(self.matches & self.visible).any(dim=-1)


@dataclass(frozen=True)
class PrefillResult:
    """The whole prompt in one pass: Q, K, V and every attention stage."""

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

    def cpu(self) -> "PrefillResult":
        return PrefillResult(self.tokens, self.info.to("cpu"), self.q.cpu(), self.k.cpu(), self.v.cpu(),
                             self.attention.rows(0))


@dataclass(frozen=True)
class DecodeResult:
    """One pass of :meth:`Decoder.extend`: the new tokens' attention rows and the cache after it."""

    attention: Attention  # m rows, each over every key its query sees (copied to the CPU)
    cache_length: int  # keys in the KV cache after this pass (0 without a cache)
    cache_nbytes: int
    cache_reserved: int = 0  # bytes the cache's buffers hold room for (its allocation)
    cache_growths: int = 0  # times the cache's buffers were reallocated so far


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
        """K for each head: ±1 rows for key-only rules, zeros for rules that read the query.

        Every entry of a key row is the same ±1, so the rows are one sign per (head, key) widened
        to d_k as a view: the values are exactly the d_k-wide rows, without d_k copies in memory
        (a cache that stores them writes them out in full).
        """
        m = len(info)
        signs = torch.zeros(self.num_heads, m, device=self.device, dtype=self.dtype)  # (heads, m)
        key_side = Side(info.pos, info.token, info.value)
        for h, rule in enumerate(self.rules):
            if rule.key_only:
                match = rule.evaluate(None, key_side, info.n, self.intern).expand(m)  # (m,)
                signs[h] = torch.where(match, 1.0, -1.0).to(self.dtype)
        return signs[:, :, None].expand(self.num_heads, m, self.d_k)  # (heads, m, d_k)

    def encode_queries(self, m: int) -> torch.Tensor:
        """Q for each head: a row of ones for key-only rules (every query asks the same question),
        as a widened view like the keys."""
        ones = self.key_only.to(self.dtype)[:, None, None]  # (heads, 1, 1)
        return ones.expand(self.num_heads, m, self.d_k)  # (heads, m, d_k)

    # -- attention --------------------------------------------------------------------------
    def attend(self, queries: TokenInfo, q: torch.Tensor, keys: TokenInfo, k: torch.Tensor,
               v: torch.Tensor) -> Attention:
        """Scores, causal mask, softmax and contexts for m queries over len keys, all heads at once."""
        m, length = len(queries), len(keys)
        raw = q @ k.transpose(1, 2)  # (heads, m, len): Q·K
        matches = raw > 0  # key-only heads: +d_k where the rule holds
        q_side, k_side = queries.as_queries(), keys.as_keys()
        # (heads, m, len): where a rule divided by zero (so it is false there); None if no rule can
        undefined = torch.zeros_like(matches) if any(r.can_be_undefined for r in self.rules) else None
        for h, rule in enumerate(self.rules):
            if not rule.key_only:  # the rule compares query and key: score it directly
                match, undefined_h = rule.evaluate_total(q_side, k_side, keys.n[None, :], self.intern)
                matches[h] = match.expand(m, length)
                raw[h] = torch.where(matches[h], float(self.d_k), -float(self.d_k)).to(self.dtype)
            if undefined is not None and rule.can_be_undefined:  # where it divided by zero, for the page
                undefined[h] = (undefined_h if not rule.key_only else rule.evaluate_total(
                    None, k_side, keys.n[None, :], self.intern)[1]).expand(m, length)
        scale = math.sqrt(self.d_k)
        visible = keys.pos[None, :] <= queries.pos[:, None]  # (m, len) causal mask
        masked = (raw / scale).masked_fill(~visible, -torch.inf)  # (heads, m, len): ±√d_k, -inf
        weights = torch.softmax(masked, dim=-1)  # (heads, m, len)
        del masked
        contexts = (weights * v).sum(dim=-1)  # (heads, m): the same reduction for every row
        h = self.num_heads
        counts = WorkCounts(queries=h * m, scores=h * m * length,
                            multiply_adds=h * m * length * self.d_k + h * m * length)
        return Attention(raw, visible, matches, weights, contexts, counts, scale, undefined)

    def logits(self, context: torch.Tensor) -> torch.Tensor:
        """context (heads,) @ W_vocab (heads, vocab) -> (vocab,), on the model's device (a context
        may come from a CPU copy of a pass's rows: :meth:`Attention.rows`)."""
        return context.to(self.device, self.dtype) @ self.w_vocab

    def forward(self, tokens: list[str], values: list[float]) -> PrefillResult:
        """A full causal pass over a sequence: the prefill, and what `recompute` does every step."""
        n = len(tokens)
        info = self.token_info(tokens, values, 1, n)
        q, k, v = self.encode_queries(n), self.encode_keys(info), self.encode_values(info)
        attention = self.attend(info, q, info, k, v)
        counts = attention.counts + WorkCounts(keys_encoded=self.num_heads * n, values_encoded=n)
        return PrefillResult(list(tokens), info, q, k, v, attention.with_counts(counts))

    prefill = forward


class Decoder:
    """Prefill once, then extend by new tokens. Subclasses differ only in what they redo."""

    mode = ""

    def __init__(self, model: ToyModel):
        self.model = model
        self.tokens: list[str] = []
        self.values: list[float] = []

    @property
    def cache(self) -> Cache | None:
        return None

    def prefill(self, tokens: list[str], values: list[float], done: PrefillResult | None = None) -> PrefillResult:
        """The whole prompt in one batched pass, every stage kept. ``done``: the same pass already
        computed by another decoder of the same model (the passes are identical in every mode; the
        model must be the same object, since token ids come from its ``intern``)."""
        self.tokens, self.values = list(tokens), list(values)
        return done if done is not None else self.model.prefill(self.tokens, self.values)

    def fill(self, tokens: list[str], values: list[float]) -> None:
        """Take a prompt without computing its attention: the state prefill leaves behind, at O(n)
        cost, for long prompts (benchmarks) whose n × n weights nobody looks at."""
        self.tokens, self.values = list(tokens), list(values)

    def resume(self, tokens: list[str], values: list[float]) -> None:
        """Carry on from ``tokens``, which the cache already holds without this decoder having fed
        them: blocks taken from a prefix cache, or none once the cache was emptied (a server that
        preempts by recomputation). The next :meth:`extend` continues after them."""
        cache = self.cache
        if cache is not None and len(cache) != len(tokens):
            raise ValueError(f"the cache holds {len(cache)} tokens, not the {len(tokens)} to resume from")
        self.tokens, self.values = list(tokens), list(values)

    def extend(self, tokens: list[str], values: list[float]) -> DecodeResult:
        """Append m ≥ 1 tokens and compute their query rows over every key so far."""
        if not tokens or len(tokens) != len(values):
            raise ValueError("extend needs one value per token, and at least one token")
        self.tokens += tokens
        self.values += values
        attention = self._attend_new(len(tokens))
        cache = self.cache
        if cache is None:
            return DecodeResult(attention, 0, 0)
        return DecodeResult(attention, len(cache), cache.nbytes, getattr(cache, "allocated_nbytes", cache.nbytes),
                            getattr(cache, "growth_events", 0))

    def decode_step(self, token: str, value: float) -> DecodeResult:
        """Append one token and compute its attention row and context: extend by one."""
        return self.extend([token], [value])

    def _attend_new(self, m: int) -> Attention:
        """The last m tokens' rows (copied), with the work this mode does for them."""
        raise NotImplementedError


class RecomputeDecoder(Decoder):
    """No cache: every step runs the full causal pass over the whole sequence again."""

    mode = "recompute"

    def _attend_new(self, m: int) -> Attention:
        full = self.model.forward(self.tokens, self.values).attention
        return full.rows(-m)  # copies: the n × n stages are freed on return


class ReencodeDecoder(Decoder):
    """No cache, but only the new tokens' queries: every key and value is encoded again."""

    mode = "reencode"

    def _attend_new(self, m: int) -> Attention:
        model, n = self.model, len(self.tokens)
        info = model.token_info(self.tokens, self.values, 1, n)
        k, v = model.encode_keys(info), model.encode_values(info)
        attention = model.attend(info.slice(-m), model.encode_queries(m), info, k, v)
        counts = attention.counts + WorkCounts(keys_encoded=model.num_heads * n, values_encoded=n)
        return attention.with_counts(counts).rows(0)


class KVDecoder(Decoder):
    """The KV cache: each key and value is encoded once, when its token arrives, and then reused."""

    mode = "kv"

    def __init__(self, model: ToyModel, cache: Cache | None = None):
        super().__init__(model)
        self._cache: Cache = cache if cache is not None else KVCache(
            model.num_heads, model.d_k, device=model.device, dtype=model.dtype)

    @property
    def cache(self) -> Cache:
        return self._cache

    def prefill(self, tokens: list[str], values: list[float], done: PrefillResult | None = None) -> PrefillResult:
        result = super().prefill(tokens, values, done)
        device = self.model.device
        self._cache.append(result.k.to(device), result.v.to(device), result.info.to(device))  # prefill warms up the cache
        return result

    def fill(self, tokens: list[str], values: list[float]) -> None:
        super().fill(tokens, values)
        model = self.model
        info = model.token_info(self.tokens, self.values, 1, len(self.tokens))  # encoded as prefill does
        self._cache.append(model.encode_keys(info), model.encode_values(info), info)

    def _attend_new(self, m: int) -> Attention:
        model, cache, n = self.model, self._cache, len(self.tokens)
        # only the new tokens are encoded, at the length they make the sequence
        info = model.token_info(self.tokens[-m:], self.values[-m:], n - m + 1, n)
        read = len(cache)
        cache.append(model.encode_keys(info), model.encode_values(info), info)
        attention = model.attend(info, model.encode_queries(m), cache.info(), cache.keys(), cache.values())
        counts = attention.counts + WorkCounts(keys_encoded=model.num_heads * m, values_encoded=m,
                                               keys_read=model.num_heads * read)
        return attention.with_counts(counts).rows(0)


DECODERS = {cls.mode: cls for cls in (RecomputeDecoder, ReencodeDecoder, KVDecoder)}


def check_mode(mode: str) -> str:
    if mode not in DECODERS:
        raise ValueError(f"unknown mode '{mode}' (use one of {', '.join(MODES)})")
    return mode


def make_decoder(mode: str, model: ToyModel, cache: Cache | None = None) -> Decoder:
    """A decoder for ``mode``; ``cache`` replaces the default KVCache in kv mode."""
    check_mode(mode)
    if mode == "kv":
        return KVDecoder(model, cache)
    if cache is not None:
        raise ValueError(f"mode '{mode}' does not use a cache")
    return DECODERS[mode](model)
