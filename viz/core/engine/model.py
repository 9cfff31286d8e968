"""The toy transformer: prefill, decode and the KV cache, as torch tensor code.

The model and its decoders (items 1 to 3) are :mod:`viz.core.engine.toy_model`, whose names are
imported here too; this module is the loop (item 4) and the run it records (:class:`Trace`).

Items 1 to 3 (encode, prefill, decode) are described there, with the exact semantics in docs/design.md.

4. **Logits** = context of the last position @ W_vocab; :class:`Generation` is the one loop
   (prefill → logits → sample → append) that ``generate``, the paged and compressed caches and the
   serving scheduler all run.

Every pass counts its own work (queries, keys and values encoded, scores, multiply-adds) from the
shapes of the tensors it actually multiplies, so cost plots use real counts. Per-step results are
copies of the rows kept, never views of the n × n tensors a pass allocates, so those are freed.

What this module does not do: parse rules (viz.core.rules.language), validate input (viz.core.engine.scenario),
decide how much work a request may cost (viz.core.engine.budget) or draw.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import torch

from .cache import Cache, KVCache, Side, TokenInfo, slot_nbytes  # noqa: F401  (Side: imported from here)
from ..rules.language import compile_rule
from .sampling import SampleResult, Sampler
from .scenario import Scenario
# the model and its decoders; imported from here as they were before they moved
from .toy_model import (DECODERS, MODE_LABELS, MODES, Attention, DecodeResult, Decoder, KVDecoder,  # noqa: F401
                        PrefillResult, RecomputeDecoder, ReencodeDecoder, ToyModel, WorkCounts, check_mode,
                        make_decoder)


# -- generation: prefill, then one prediction per step ---------------------------------------
@dataclass(frozen=True)
class Step:
    """Prediction k: the context and distribution used to choose generated token k+1."""

    index: int
    query_token: str  # the token whose query produced this context (last of the sequence)
    seq_len: int  # keys the query saw
    attention: Attention  # the query's row: (heads, 1, seq_len) stages, on the CPU
    context: torch.Tensor  # (heads,)
    logits: torch.Tensor  # (vocab,)
    sample: SampleResult
    token: str  # the chosen word
    value: float  # its vocabulary value, the V it brings when appended
    counts: WorkCounts  # the pass that produced `context`, plus the logits
    cache_length: int  # KV-cache entries after that pass (0 without a cache)
    cache_nbytes: int
    cache_reserved: int = 0  # bytes the cache's buffers had room for
    cache_growths: int = 0  # times the cache had grown by then

    @property
    def probs(self) -> torch.Tensor:
        return self.sample.probs


@dataclass(frozen=True)
class CacheAt:
    """A growing KVCache as it stood after some step: its first ``length`` entries (read lazily)."""

    cache: KVCache
    length: int
    reserved: int  # bytes of the buffers then
    growths: int  # reallocations then

    def keys(self) -> torch.Tensor:
        return self.cache.keys()[:, : self.length]  # (heads, len, d_k)

    def values(self) -> torch.Tensor:
        return self.cache.values()[: self.length]

    def info(self) -> TokenInfo:
        return self.cache.info().slice(0, self.length)

    def __len__(self) -> int:
        return self.length

    @property
    def element_size(self) -> int:
        return self.cache.element_size

    @property
    def num_heads(self) -> int:
        return self.cache.num_heads

    @property
    def d_k(self) -> int:
        return self.cache.d_k

    @property
    def nbytes(self) -> int:
        return self.length * self._slot

    @property
    def allocated_nbytes(self) -> int:
        return self.reserved

    @property
    def capacity(self) -> int:
        return self.reserved // self._slot

    @property
    def _slot(self) -> int:
        return slot_nbytes(self.cache.num_heads, self.cache.d_k, self.element_size)

    @property
    def growth_events(self) -> int:
        return self.growths


@dataclass(frozen=True)
class Trace:
    """A whole run: the prefill and N predictions. Serialised by :func:`viz.core.engine.trace.trace_to_dict`."""

    scenario: Scenario
    mode: str
    device: torch.device
    prefill: PrefillResult
    steps: list[Step]
    cache: Cache | CacheAt | None = field(default=None, repr=False)  # the cache after the last step (kv mode)

    @property
    def tokens(self) -> list[str]:
        """The prompt followed by every generated token."""
        return list(self.scenario.tokens) + [step.token for step in self.steps]

    @property
    def cacheable(self) -> list[bool]:
        return [compile_rule(head.rule).cacheable for head in self.scenario.heads]

    def grown_attention(self, head: int) -> torch.Tensor:
        """One head's attention matrix as it grew: the prefill rows, then one row per decode step.

        (rows, rows) float64, rows = prompt + decode steps fed back; -inf where a query could not
        see the key. Row for step k is the newest query's weights at that step.
        """
        pre = self.prefill.attention
        prompt = pre.weights.shape[1]
        total = prompt + max(len(self.steps) - 1, 0)
        rows = torch.full((total, total), -torch.inf, dtype=torch.float64)
        rows[:prompt, :prompt] = torch.where(pre.visible, pre.weights[head].double(), -torch.inf)
        for step in self.steps[1:]:
            rows[step.seq_len - 1, : step.seq_len] = step.attention.weights[head, 0].double()
        return rows


class Generation:
    """One sequence decoded in one mode: prefill, then one prediction per :meth:`step`.

    This is the loop every toy decoder runs (``generate``, the Decode page, paged and compressed
    caches, the serving scheduler): feed the last chosen word (or a forced one) through
    :meth:`Decoder.extend`, take the newest context, logits = context @ W_vocab, sample. Steps are
    kept on the CPU as small copies; the run can be extended later (a page keeps it across reruns).
    """

    def __init__(self, scenario: Scenario, mode: str = "kv", *, model: ToyModel | None = None,
                 cache: Cache | None = None, device: str | torch.device | None = None,
                 dtype: torch.dtype = torch.float32, seed: int | None = None):
        self.scenario = scenario
        self.model = model if model is not None else ToyModel(scenario, device=device, dtype=dtype)
        self.decoder = make_decoder(check_mode(mode), self.model, cache)
        self.sampler = Sampler(scenario.sampling, scenario.sampling.seed if seed is None else seed)
        self.prefill_result: PrefillResult | None = None
        self.steps: list[Step] = []
        self._logit_work = WorkCounts(multiply_adds=self.model.num_heads * len(scenario.vocab))

    @property
    def mode(self) -> str:
        return self.decoder.mode

    def prefill(self, tokens: list[str] | None = None, values: list[float] | None = None, *,
                predict: bool = True, done: PrefillResult | None = None) -> PrefillResult:
        """Run the prompt (the scenario's unless given); with ``predict`` make prediction 0.
        ``done``: the same prompt's prefill from another run on the same model, reused."""
        tokens = list(self.scenario.tokens if tokens is None else tokens)
        values = list(self.scenario.values if values is None else values)
        self.prefill_result = self.decoder.prefill(tokens, values, done)
        if predict:
            cache = self.decoder.cache
            self._predict(DecodeResult(
                self.prefill_result.attention.last_row(), len(cache) if cache is not None else 0,
                cache.nbytes if cache is not None else 0,
                getattr(cache, "allocated_nbytes", 0) if cache is not None else 0,
                getattr(cache, "growth_events", 0) if cache is not None else 0))
        return self.prefill_result

    def step(self, forced: tuple[str, float] | None = None) -> Step:
        """Feed the last chosen word (or ``forced``: a (token, value) to feed instead) and predict."""
        if self.prefill_result is None or not self.steps:
            raise RuntimeError("prefill with predict=True first")
        token, value = forced if forced is not None else (self.steps[-1].token, self.steps[-1].value)
        return self._predict(self.decoder.decode_step(token, value))

    def feed(self, tokens: list[str], values: list[float], *, predict: bool) -> tuple[WorkCounts, Step | None]:
        """Extend the sequence by ``tokens`` (a prompt, a chunk of one, or the last chosen word) in one
        pass; with ``predict``, the newest query's context gives the next prediction, as :meth:`step`
        does. Returns the pass's work (with the logits when predicting) and the step, if any."""
        result = self.decoder.extend(tokens, values)
        if not predict:
            return result.attention.counts, None
        step = self._predict(result)
        return step.counts, step

    def _predict(self, result: DecodeResult) -> Step:
        context = result.attention.contexts[:, -1]  # (heads,)
        logits = self.model.logits(context.to(self.model.device))
        choice = self.sampler(logits)
        word = self.scenario.vocab[choice.index]
        step = Step(
            index=len(self.steps), query_token=self.decoder.tokens[-1], seq_len=len(self.decoder.tokens),
            attention=result.attention, context=context.cpu(), logits=logits.cpu(), sample=choice,
            token=word.token, value=word.value, counts=result.attention.counts + self._logit_work,
            cache_length=result.cache_length, cache_nbytes=result.cache_nbytes,
            cache_reserved=result.cache_reserved, cache_growths=result.cache_growths)
        self.steps.append(step)
        return step

    def trace(self, predictions: int | None = None, *, pinned: bool = False) -> Trace:
        """The run as a :class:`Trace` of its first ``predictions`` steps (default: all so far).

        The cache is the live one when every step is included, else the growing cache as it stood;
        ``pinned``: always as it stood (a run shared by sessions may grow while one draws its trace).
        """
        if self.prefill_result is None:
            raise RuntimeError("nothing to trace before the prefill")
        count = len(self.steps) if predictions is None else predictions
        if not 0 <= count <= len(self.steps):
            raise ValueError(f"this run has {len(self.steps)} predictions, not {count}")
        cache = self.decoder.cache
        if cache is not None and count and (pinned or count < len(self.steps)) and isinstance(cache, KVCache):
            last = self.steps[count - 1]
            cache = CacheAt(cache, last.cache_length, last.cache_reserved, last.cache_growths)
        return Trace(self.scenario, self.mode, self.model.device, self._prefill_cpu(), self.steps[:count], cache)

    def _prefill_cpu(self) -> PrefillResult:
        if self.prefill_result.q.device.type != "cpu":
            self.prefill_result = self.prefill_result.cpu()
        return self.prefill_result


def generate(scenario: Scenario, steps: int, mode: str = "kv",
             device: str | torch.device | None = None, dtype: torch.dtype = torch.float32,
             make_cache: Callable[[ToyModel], Cache] | None = None) -> Trace:
    """Prefill the prompt, then make ``steps`` predictions (the last one is not fed back).

    ``make_cache(model)`` builds the cache for kv mode (a paged, evicting or quantised one, say).
    """
    check_mode(mode)
    if steps < 0:
        raise ValueError("steps must be 0 or more")
    model = ToyModel(scenario, device=device, dtype=dtype)
    run = Generation(scenario, mode, model=model, cache=make_cache(model) if make_cache else None)
    run.prefill(predict=steps > 0)
    for _ in range(steps - 1):
        run.step()
    return run.trace()
