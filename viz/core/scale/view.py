"""Everything the At scale page shows, worked out at once: one call, one typed result.

The page's tabs (cache memory, transformers' own count, on GPUs, what limits a decode step) share
numbers: the cache curve marks what fits on the GPU, the roofline's batch sweep runs to the
sequences that fit. Computed here before any tab is drawn, they can be laid out in any order, and
the page only lays them out. transformers' own count (seconds for a large model) stays outside:
the page asks for it only while its tab is open.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..engine.cache import KVCache
from ..engine.model import CacheAt
from .gpus import Gpu
from .memory import (CacheMemory, GpuFit, MemoryConfigError, MemoryCurve, ParallelNote, ToyCacheMemory,
                     beyond_context, by_dtype, cache_memory, curve_span, fits_by_gpu, gpu_fit, kv_split,
                     latent_note, memory_curve, parallel_note, per_token_ratio, toy_cache_memory)
from .model_config import ATTENTION_LABELS, ModelConfig, preset
from .roofline import (MAX_SWEEP, StepCost, batch_sweep, cache_overtakes, context_overtakes, decode_step,
                       prefill_step)
from . import words
from .words import StatText


@dataclass(frozen=True)
class ScaleInputs:
    """What the visitor chose (the page's widgets)."""

    config: ModelConfig
    tokens: int
    dtype: str
    batch: int
    gpu: Gpu
    gpus: int
    weights_dtype: str
    utilization: float
    reserve_gib: float
    compare: tuple[str, ...] = ()  # other presets' curves beside this model's


@dataclass(frozen=True)
class ScaleView:
    """Every number the At scale page shows (the library's own count aside)."""

    inputs: ScaleInputs
    memory: CacheMemory
    gpus: int  # the GPUs counted: the visitor's, or 1 when the model cannot be split that way
    gpus_refused: str  # why the visitor's GPU count was not used ("" when it was)
    beyond_context: bool  # the context asked for is longer than the model was released for
    fit: GpuFit
    fits: tuple[GpuFit, ...]  # the same fit on every GPU kvlab knows
    parallel: ParallelNote | None  # how tensor parallelism splits the cache (more than one GPU)
    curves: tuple[tuple[str, MemoryCurve], ...]  # this model's cache against context, then the compared
    dtypes: tuple[CacheMemory, ...]  # the cache in every dtype
    toy: ToyCacheMemory
    toy_ratio: float  # this model's bytes per token over the toy's
    decode: StepCost  # one decode step at the visitor's batch
    decode_one: StepCost | None  # the same step at batch 1 (None when the batch is 1)
    sweep: tuple[StepCost, ...]  # decode steps over batch sizes, up to what fits or more
    cache_overtakes: int | None  # the batch from which the cache outweighs the weights read per step
    context_overtakes: int | None  # the context from which one sequence's cache does
    # the sentences built from these numbers (viz.core.scale.words)
    fit_stats: tuple[StatText, ...]  # what fits on the GPUs
    fit_alert: tuple[str, str] | None  # ("error" or "warning", why) when the weights or the batch do not fit
    parallel_text: str  # how tensor parallelism splits the cache ("" on one GPU)
    every_gpu: str  # the heading of every GPU's table
    cache_stats: tuple[StatText, ...]  # the opening figures, each a different number: cache, weights, what fits
    formula: str  # the formula with this model's numbers (plain text)
    model_summary: str  # the model's attention shape in one line, beside its name over the curve
    toy_sentence: str  # the toy's whole cache against one token of this model (plain text)
    toy_caption: str  # what the toy's cache is made of
    checks: tuple[str, ...]  # the formula against published figures, one line each
    roof_stats: tuple[StatText, ...]  # one decode step: bytes, FLOPs, FLOPs per byte, time per token
    curve_notes: words.CurveNotes  # the cache curve's words on its lines

    @property
    def capacity_bytes(self) -> int | None:
        """The cache the GPUs hold for this model (None when the weights do not fit)."""
        return self.fit.capacity_bytes if self.fit.weights_fit else None

    def prefill(self, tokens: int) -> StepCost:
        """One prefill of ``tokens`` prompt tokens on the same GPUs (its own input, in its own tab)."""
        c = self.inputs
        return prefill_step(c.config, c.gpu, tokens, c.weights_dtype, c.dtype, self.gpus)

    def points(self, prefill_tokens: int) -> tuple[tuple[str, StepCost], ...]:
        """The roofline's points: decode at the visitor's batch (and at batch 1), prefill of ``prefill_tokens``."""
        one = ((words.step_point(1), self.decode_one),) if self.decode_one is not None else ()
        return ((words.step_point(self.inputs.batch), self.decode), *one,
                (words.prefill_point(prefill_tokens), self.prefill(prefill_tokens)))

    def roof_reading(self, prefill_tokens: int) -> tuple[str, ...]:
        """The roofline in plain words, one Markdown paragraph each, with a prefill of ``prefill_tokens``."""
        return tuple(words.roof_reading(self.decode, self.prefill(prefill_tokens), self.cache_overtakes,
                                        self.context_overtakes, self.sweep[-1], self.sequences))

    # sentences that quote a config's name or a source: ``esc`` is the page's escaping function
    def beyond_context_text(self, esc: Callable[[str], str]) -> str:
        return words.beyond_context(self.inputs.tokens, self.inputs.config, esc)

    def model_line(self, esc: Callable[[str], str]) -> str:
        return words.model_line(self.inputs.config, self.model_summary, esc)

    def source_caption(self, esc: Callable[[str], str]) -> str:
        config = self.inputs.config
        return words.source_caption(ATTENTION_LABELS[config.attention], config, latent_note(config), esc)

    def gpu_caption(self, esc: Callable[[str], str]) -> str:
        return words.gpu_caption(self.inputs.gpu, esc)

    def roof_sources(self, esc: Callable[[str], str]) -> str:
        return words.roof_sources(self.inputs.gpu, esc)

    @property
    def sequences(self) -> int | None:
        """Sequences whose cache fits beside the weights (None when the weights do not fit)."""
        return self.fit.sequences if self.fit.weights_fit else None


def scale_view(inputs: ScaleInputs, toy_cache: KVCache | CacheAt) -> ScaleView:
    """The At scale page's numbers for ``inputs``; ``toy_cache`` is the toy's cache as Decode's run
    left it (the page gets it within the work budget). Raises MemoryConfigError (or ConfigError) for
    inputs the memory functions refuse."""
    c = inputs
    memory = cache_memory(c.config, c.tokens, c.dtype, c.batch)
    gpus, refused = c.gpus, ""
    try:
        kv_split(c.config, gpus)
    except MemoryConfigError as err:
        gpus, refused = 1, words.gpus_refused(str(err))
    fit = gpu_fit(memory, c.gpu, gpus, c.weights_dtype, c.utilization, c.reserve_gib)
    span = curve_span(memory)
    curves = ((c.config.name, memory_curve(c.config, span, c.dtype, c.batch)),
              *((name, memory_curve(preset(name), span, c.dtype, c.batch)) for name in c.compare))
    toy = toy_cache_memory(toy_cache)
    toy_ratio = per_token_ratio(memory, toy)
    decode = decode_step(c.config, c.gpu, c.batch, c.tokens, c.weights_dtype, c.dtype, gpus)
    parallel = parallel_note(c.config, fit) if gpus > 1 else None
    return ScaleView(
        inputs=c, memory=memory, gpus=gpus, gpus_refused=refused, beyond_context=beyond_context(memory), fit=fit,
        fits=tuple(fits_by_gpu(memory, gpus, c.weights_dtype, c.utilization, c.reserve_gib)),
        parallel=parallel, curves=curves,
        dtypes=tuple(by_dtype(memory)), toy=toy, toy_ratio=toy_ratio,
        decode=decode,
        decode_one=(decode_step(c.config, c.gpu, 1, c.tokens, c.weights_dtype, c.dtype, gpus)
                    if c.batch != 1 else None),
        sweep=tuple(batch_sweep(c.config, c.gpu, c.tokens, c.weights_dtype, c.dtype, gpus,
                                limit=min(MAX_SWEEP, max(1024, c.batch, fit.sequences)))),
        cache_overtakes=cache_overtakes(c.config, c.tokens, c.weights_dtype, c.dtype),
        context_overtakes=context_overtakes(c.config, 1, c.weights_dtype, c.dtype),
        fit_stats=words.fit_stats(c.config, fit, gpus, c.weights_dtype, c.tokens),
        fit_alert=words.fit_alert(fit, gpus, c.batch, c.tokens),
        parallel_text=words.parallel_sentence(parallel, fit, gpus) if parallel is not None else "",
        every_gpu=words.every_gpu(gpus, c.weights_dtype), cache_stats=words.cache_stats(memory, c.config, fit, gpus, c.weights_dtype),
        formula=words.formula_text(memory), model_summary=words.config_summary(memory),
        toy_sentence=words.toy_sentence(toy, memory, toy_ratio),
        toy_caption=words.toy_caption(toy.d_k, toy.heads, toy.allocated_nbytes), checks=words.published_checks(),
        roof_stats=words.roof_stats(decode),
        curve_notes=words.curve_notes(fit.capacity_bytes if fit.weights_fit else None, gpus, c.tokens,
                                      curves[0][1].state_bytes))
