"""A real trained transformer and its real KV cache: load, prefill, then decode one token at a time.

1. **Load** one of the two models that ship with kvlab (made by ``python -m viz.tools.train``): a
   GPT-2 (one K/V head per query head) and a Llama (RoPE, RMSNorm, SwiGLU, 8 query heads over 2
   K/V heads), sharing one tokenizer; or any local Hugging Face causal-LM directory. That is
   :mod:`viz.core.real.loading` (its names can still be imported from here).
2. **Prefill**: the whole prompt in one pass into a transformers ``DynamicCache`` built from the
   model's config, as ``generate()`` builds it (a sliding-window model gets sliding-window layers);
   every layer's attention weights and the next-token distribution are kept for the UI.
3. **Decode**: one token per pass. :class:`CachedDecoder` feeds only the new token and lets the
   model append its key and value to the cache; :class:`UncachedDecoder` runs the full sequence
   again, as generation without a cache does. Both return the logits for the next token.
4. **Inspect** the cache (:func:`snapshot`): per layer the K and V shapes
   ``[batch, kv_heads, seq, head_dim]``, the bytes of the **storage** behind them (what is
   allocated, measured, not computed), each cached key's norm per head, and the total against
   ``2 · layers · kv_heads · head_dim · seq · bytes`` (sliding layers: at most their window).
   A sliding-window layer keeps a view over a longer tensor: right after a long prefill its
   storage still holds the whole prompt, after a decode step the window.
5. **Compare** the two decoders in lockstep (:func:`compare_cache`): max |logit difference|,
   whether they chose the same tokens, and each step's measured time both ways.
6. **Step** as a person does (:class:`DecodeSession`): the prefill with attention, then one chosen
   token at a time, with the cache size recorded after every step.

What this module does not do: train (viz.tools.train), match heads to rules (viz.core.real.rules_match),
run the benchmark (viz.tools.real_bench) or draw anything.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

import torch

from ..engine.sampling import SampleResult, sample
from ..timing import timed
from ..engine.scenario import Sampling
# loading lives in .loading; its names are imported from here too, as they were before it moved
from .loading import (LLAMA_DIR, LLAMA_NAME, MAX_PROMPT_CHARS, MAX_SEQ_LEN, SHIPPED_DIR, SHIPPED_MODELS,  # noqa: F401
                      SHIPPED_NAME, VISIBLE, ModelShape, Prompt, RealModel, RealModelError, check_sampling, encode,
                      load_model, piece, training_report, visible)

GREEDY = Sampling()


@dataclass(frozen=True)
class Prediction:
    """The next-token distribution after one pass."""

    logits: torch.Tensor  # (vocab,) float32, on the CPU
    probs: torch.Tensor  # (vocab,) softmax(logits), float64

    def top_k(self, k: int) -> list[tuple[int, float]]:
        """The k most likely next tokens as (id, probability), most likely first."""
        values, ids = torch.topk(self.probs, min(k, self.probs.shape[0]))
        return list(zip(ids.tolist(), values.tolist()))


@dataclass(frozen=True)
class PrefillResult:
    """The whole prompt in one pass: every head's attention and the prediction after it."""

    prompt: Prompt
    attentions: torch.Tensor  # (layers, heads, n, n) softmax weights, causal, on the CPU
    prediction: Prediction


@dataclass(frozen=True)
class LayerCache:
    """One layer's entry in the KV cache."""

    layer: int
    cache_class: str  # DynamicLayer, or DynamicSlidingWindowLayer for a sliding-window layer
    key_shape: tuple[int, ...]  # (batch, kv_heads, seq, head_dim)
    value_shape: tuple[int, ...]  # (batch, kv_heads, seq, head_dim)
    nbytes: int  # keys + values as their shapes say (numel · element size)
    storage_bytes: int  # the storage behind them, what is allocated (a view may show less)
    key_norms: torch.Tensor  # (kv_heads, seq) L2 norm of every cached key, on the CPU


@dataclass(frozen=True)
class CacheSnapshot:
    """The whole KV cache at one moment, measured from its tensors, beside the formula."""

    layers: list[LayerCache]
    seq_len: int  # tokens the model has seen (a sliding layer may keep fewer)
    element_size: int  # bytes per number (4 for float32)
    total_bytes: int  # measured: the storage behind every layer's K and V tensors
    held_bytes: int  # the same tensors' shapes · element size
    formula_bytes: int  # ModelShape.cache_bytes(seq_len, element_size)
    mha_bytes: int  # the formula with one K/V head per query head
    formula: str

    @property
    def matches_formula(self) -> bool:
        return self.total_bytes == self.formula_bytes

    @property
    def bytes_per_token(self) -> float:
        """Measured storage per token seen."""
        return self.total_bytes / self.seq_len

    @property
    def mha_bytes_per_token(self) -> float:
        """The formula's bytes per token with one K/V head per query head."""
        return self.mha_bytes / self.seq_len


@dataclass(frozen=True)
class CacheComparison:
    """Cached and uncached decoding run side by side from the same prompt and settings."""

    prompt_len: int
    cached_ids: list[int]  # generated tokens, with the cache
    uncached_ids: list[int]  # generated tokens, without it
    max_abs_diff: list[float]  # per prediction while both sequences agree (entry 0: after prefill)
    seq_lens: list[int]  # per decode step: tokens in the sequence the new query attends over
    cached_seconds: list[float]  # per decode step: the cached pass
    uncached_seconds: list[float]  # per decode step: the full pass

    @property
    def same_tokens(self) -> bool:
        return self.cached_ids == self.uncached_ids

    @property
    def overall_max_abs_diff(self) -> float:
        return max(self.max_abs_diff)

    @property
    def cached_tokens_per_s(self) -> float:
        return len(self.cached_seconds) / sum(self.cached_seconds)

    @property
    def uncached_tokens_per_s(self) -> float:
        return len(self.uncached_seconds) / sum(self.uncached_seconds)

    @property
    def speedup(self) -> float:
        """How many times faster decoding is with the cache (tokens per second, with over without)."""
        return self.cached_tokens_per_s / self.uncached_tokens_per_s


def _prediction(logits: torch.Tensor) -> Prediction:
    logits = logits.detach().float().cpu()  # (vocab,)
    return Prediction(logits, torch.softmax(logits.double(), dim=-1))


# -- decoding ---------------------------------------------------------------------------------
class Decoder:
    """Prefill once, then one token per ``decode_step``. Subclasses differ in what they feed in."""

    def __init__(self, real: RealModel):
        self.real = real
        self.ids: list[int] = []

    def _room_for(self, extra: int) -> None:
        limit = self.real.shape.max_positions
        if len(self.ids) + extra > limit:
            raise RealModelError(f"the sequence would exceed {limit} tokens, the longest this "
                                 "model takes here")

    def _start(self) -> dict:
        """Keyword arguments for the prompt pass."""
        return {"use_cache": False}

    @torch.inference_mode()
    def _prompt_pass(self, ids: list[int] | tuple[int, ...], output_attentions: bool):
        self.ids = []
        self._room_for(len(ids))
        self.ids = list(ids)
        x = torch.tensor([self.ids], device=self.real.device)  # (1, n)
        return self.real.model(input_ids=x, output_attentions=output_attentions, **self._start())

    def prefill(self, ids: list[int] | tuple[int, ...]) -> torch.Tensor:
        """Run the whole prompt in one pass; return the logits (vocab,) for the token after it."""
        return self._prompt_pass(ids, False).logits[0, -1]

    def prefill_with_attention(self, ids: list[int] | tuple[int, ...]) -> PrefillResult:
        """The same pass, also keeping every layer's attention weights."""
        out = self._prompt_pass(ids, True)
        attentions = torch.stack([a[0] for a in out.attentions]).float().cpu()  # (layers, heads, n, n)
        prompt = Prompt(tuple(self.ids), tuple(piece(self.real, i) for i in self.ids))
        return PrefillResult(prompt, attentions, _prediction(out.logits[0, -1]))

    def decode_step(self, token_id: int) -> torch.Tensor:
        """Append one token; return the logits (vocab,) for the token after it."""
        raise NotImplementedError

    def rewind(self, tokens: int = 1) -> None:
        """Forget the last ``tokens`` tokens, as if they had never been fed."""
        if not 0 < tokens < len(self.ids):
            raise RealModelError(f"cannot rewind {tokens} of {len(self.ids)} tokens (the first one stays)")
        del self.ids[-tokens:]


class CachedDecoder(Decoder):
    """The KV cache: each token's keys and values are computed once and appended to a DynamicCache,
    built from the model's config as generate() builds it (sliding-window layers where it says so)."""

    def __init__(self, real: RealModel):
        super().__init__(real)
        self.cache = self._new_cache()

    def _new_cache(self):
        from transformers import DynamicCache

        return DynamicCache(config=self.real.model.config)

    def _start(self) -> dict:
        self.cache = self._new_cache()  # a new prompt starts an empty cache; the model fills it in place
        return {"use_cache": True, "past_key_values": self.cache}

    @torch.inference_mode()
    def decode_step(self, token_id: int) -> torch.Tensor:
        self._room_for(1)
        self.ids.append(token_id)
        x = torch.tensor([[token_id]], device=self.real.device)  # (1, 1): only the new token
        out = self.real.model(input_ids=x, past_key_values=self.cache, use_cache=True)
        return out.logits[0, -1]  # (vocab,); every layer of self.cache is now one position longer

    def rewind(self, tokens: int = 1) -> None:
        super().rewind(tokens)
        try:
            self.cache.crop(-tokens)  # every layer drops its last `tokens` keys and values
        except RuntimeError:  # a sliding layer past its window no longer holds the keys to go back to
            self._refill()

    @torch.inference_mode()
    def _refill(self) -> None:
        """Rebuild the cache from the tokens kept, in one pass."""
        self.cache = self._new_cache()
        x = torch.tensor([self.ids], device=self.real.device)  # (1, seq)
        self.real.model(input_ids=x, past_key_values=self.cache, use_cache=True)


class UncachedDecoder(Decoder):
    """No cache: every step runs the full sequence through the model again."""

    @torch.inference_mode()
    def decode_step(self, token_id: int) -> torch.Tensor:
        self._room_for(1)
        self.ids.append(token_id)
        x = torch.tensor([self.ids], device=self.real.device)  # (1, seq): every token again
        return self.real.model(input_ids=x, use_cache=False).logits[0, -1]  # (vocab,)


def snapshot(decoder: CachedDecoder) -> CacheSnapshot:
    """Measure the decoder's cache now: shapes, storage and key norms per layer, and the formula."""
    if not decoder.ids:
        raise RealModelError("the cache is empty; run the prefill first")
    layers = []
    for index, layer in enumerate(decoder.cache.layers):
        keys, values = getattr(layer, "keys", None), getattr(layer, "values", None)
        if not isinstance(keys, torch.Tensor) or not isinstance(values, torch.Tensor):
            raise RealModelError("this model's cache does not hold key and value tensors per layer")
        norms = keys[0].float().norm(dim=-1).cpu()  # (kv_heads, kept)
        layers.append(LayerCache(index, type(layer).__name__, tuple(keys.shape), tuple(values.shape),
                                 keys.numel() * keys.element_size() + values.numel() * values.element_size(),
                                 keys.untyped_storage().nbytes() + values.untyped_storage().nbytes(), norms))
    seq = len(decoder.ids)
    element_size = decoder.cache.layers[0].keys.element_size()
    shape = decoder.real.shape
    return CacheSnapshot(layers, seq, element_size, sum(layer.storage_bytes for layer in layers),
                         sum(layer.nbytes for layer in layers), shape.cache_bytes(seq, element_size),
                         shape.mha_bytes(seq, element_size), shape.formula(seq, element_size))


def measure_cache(real: RealModel, ids: list[int] | tuple[int, ...]) -> CacheSnapshot:
    """Prefill ``ids`` into a fresh cache and measure it."""
    decoder = CachedDecoder(real)
    decoder.prefill(ids)
    return snapshot(decoder)


PREFIXES = 5  # the prompt's shorter prefixes measured when a session starts (the growth line's first points)


def prefix_growth(real: RealModel, ids: list[int] | tuple[int, ...],
                  points: int = PREFIXES) -> list[tuple[int, int, int]]:
    """The cache measured after prefilling the prompt's first tokens, for up to ``points`` lengths
    short of the whole prompt, evenly spread: (tokens, bytes measured, formula bytes) per length."""
    lengths = sorted({max(1, len(ids) * i // (points + 1)) for i in range(1, points + 1)} - {len(ids)})
    growth = []
    for length in lengths:
        snap = measure_cache(real, ids[:length])
        growth.append((snap.seq_len, snap.total_bytes, snap.formula_bytes))
    return growth


class DecodeSession:
    """Step-by-step decoding as a person drives it: the prefill (with attention), the cached decoder,
    the tokens chosen so far, the prediction for the next one and the cache size after each step."""

    def __init__(self, real: RealModel, prompt: Prompt, seed: int = 0):
        self.real, self.prompt = real, prompt
        self.decoder = CachedDecoder(real)
        self.prefill = self.decoder.prefill_with_attention(prompt.ids)
        self.prediction = self.prefill.prediction  # for the token after the last one so far
        self.generated: list[int] = []
        self.generator = torch.Generator().manual_seed(seed)
        snap = snapshot(self.decoder)
        self.history = [(snap.seq_len, snap.total_bytes, snap.formula_bytes)]  # (tokens, bytes, formula)
        self.prefixes = tuple(prefix_growth(real, prompt.ids))  # the same, after shorter prompts

    @property
    def room(self) -> int:
        """Tokens that can still be appended before the context is full."""
        return self.real.shape.room(len(self.decoder.ids))

    @property
    def pieces(self) -> list[str]:
        return [piece(self.real, i) for i in self.decoder.ids]

    @property
    def text(self) -> tuple[str, str]:
        """(the prompt, what was generated after it) as plain text."""
        decode = self.real.tokenizer.decode
        return decode(list(self.prompt.ids)), decode(self.generated)

    @property
    def transcript(self) -> str:
        """The prompt and what was generated after it, as one text."""
        return "".join(self.text)

    def step(self, settings: Sampling = GREEDY) -> SampleResult:
        """Choose the next token from the current prediction, append it to the cache, predict again."""
        if self.room < 1:
            raise RealModelError(f"the context is full ({self.real.shape.max_positions} tokens); "
                                 "reset to start over")
        choice = sample(self.prediction.logits, check_sampling(settings), self.generator)
        self.generated.append(choice.index)
        self.prediction = _prediction(self.decoder.decode_step(choice.index))
        snap = snapshot(self.decoder)
        self.history.append((snap.seq_len, snap.total_bytes, snap.formula_bytes))
        return choice

    def back(self) -> None:
        """Undo the last step: the cache is cropped and the prediction before it computed again."""
        if not self.generated:
            raise RealModelError("nothing to undo: no token has been generated")
        self.generated.pop()
        self.history.pop()
        if not self.generated:
            self.decoder.rewind(1)
            self.prediction = self.prefill.prediction
            return
        self.decoder.rewind(2)  # then feed the new last token again to get its prediction back
        self.prediction = _prediction(self.decoder.decode_step(self.generated[-1]))

    def snapshot(self) -> CacheSnapshot:
        return snapshot(self.decoder)


def generate(real: RealModel, ids: list[int] | tuple[int, ...], steps: int,
             settings: Sampling = GREEDY, cached: bool = True) -> list[int]:
    """Prefill, then ``steps`` new tokens chosen by ``settings``; returns the new token ids."""
    check_sampling(settings)
    decoder = CachedDecoder(real) if cached else UncachedDecoder(real)
    generator = torch.Generator().manual_seed(settings.seed)
    logits = decoder.prefill(ids)
    new: list[int] = []
    for step in range(steps):
        new.append(sample(logits, settings, generator).index)
        if step + 1 < steps:
            logits = decoder.decode_step(new[-1])
    return new


def compare_cache(real: RealModel, ids: list[int] | tuple[int, ...], steps: int,
                  settings: Sampling = GREEDY, repeats: int = 1) -> CacheComparison:
    """Generate ``steps`` tokens with and without the cache in lockstep, each with its own seeded
    generator; logits are compared while the two sequences agree. Every decode pass is timed
    ``repeats`` times (rewinding one token in between) and the median kept."""
    check_sampling(settings)
    if steps < 2 or repeats < 1:
        raise RealModelError("compare at least 2 generated tokens, timing each step at least once")
    decoders = CachedDecoder(real), UncachedDecoder(real)
    generators = [torch.Generator().manual_seed(settings.seed) for _ in decoders]
    logits = [d.prefill(ids) for d in decoders]
    chosen: tuple[list[int], list[int]] = ([], [])
    diffs: list[float] = []
    seconds: tuple[list[float], list[float]] = ([], [])
    seq_lens: list[int] = []
    for step in range(steps):
        if chosen[0] == chosen[1]:  # the same prefix so far: the logits must agree
            diffs.append(float((logits[0].float() - logits[1].float()).abs().max()))
        for i, decoder in enumerate(decoders):
            chosen[i].append(sample(logits[i], settings, generators[i]).index)
        if step + 1 == steps:
            break
        seq_lens.append(len(decoders[0].ids) + 1)
        for i, decoder in enumerate(decoders):
            times = []
            for repeat in range(repeats):
                if repeat:
                    decoder.rewind(1)
                elapsed, logits[i] = timed(lambda: decoder.decode_step(chosen[i][-1]), real.device)
                times.append(elapsed)
            seconds[i].append(statistics.median(times))
    return CacheComparison(len(ids), chosen[0], chosen[1], diffs, seq_lens, seconds[0], seconds[1])
