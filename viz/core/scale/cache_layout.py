"""The KV cache as transformers lays it out for N tokens, beside the closed formula.

The model is built on the meta device (:func:`viz.core.scale.model_config.meta_model`) in the cache's
dtype, handed a ``DynamicCache(config=...)`` (which picks a full or a sliding-window layer class per
layer from the config, as ``generate()`` does) and run over N − 1 tokens of prefill and then one
decode step. Meta tensors carry shapes, dtypes and storage sizes but no data, so this costs the
same for 100 tokens as for 100 million and allocates nothing. Read off every cache layer:

- **held**: the K and V tensors' shapes × the element size;
- **storage**: the bytes of the storage behind them, what stays allocated. A sliding-window layer
  keeps a *view* of its last ``window − 1`` tokens (the next token completes the window) over the
  ``window``-token tensor its last ``torch.cat`` made, so its storage holds one token more than its
  shape shows. Right after a long prefill it even holds the whole prompt until the first decode
  step: the **prefill peak**, read off too, is what runs out of memory first.
- **state**: a linear-attention, state-space or convolution layer (Qwen3-Next's Gated DeltaNet,
  Mamba) keeps fixed-size ``conv_states`` and ``recurrent_states`` per sequence instead of K/V;
  :func:`state_bytes` reads their storage, the same for 10 tokens as for a million.

:func:`library_layout` compares the K/V storage with the closed formula of
:meth:`viz.core.scale.model_config.ModelConfig.tokens_kept` layer by layer and names the fixed
states as their own part; any other difference is reported as unexplained, never hidden.

What this module does not do: run a real model, allocate memory, or model serving engines' block
allocators (vLLM rounds every sequence up to whole blocks, 16 tokens by default).
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from functools import lru_cache

import torch

from .model_config import STATE_KINDS, ConfigError, ModelConfig, meta_model
from ..text import brief

LIBRARY_DTYPES = {"fp32": torch.float32, "fp16/bf16": torch.bfloat16}  # what a DynamicCache stores as-is
MAX_LAYOUT_TOKENS = 100_000_000


@dataclass(frozen=True)
class LayerLayout:
    """One layer of the library's cache next to the formula's count for it."""

    layer: int
    kind: str  # the config's layer type (full_attention, sliding_attention, ...)
    cache_class: str  # the transformers class DynamicCache chose for it
    key_shape: tuple[int, ...]  # (batch, K/V heads, tokens, width); MLA: the latent as one head
    value_shape: tuple[int, ...]  # MLA: the RoPE key as one head
    held_bytes: int  # numel × element size of K and V (and of the state)
    storage_bytes: int  # bytes of the storage behind K and V, and the layer's fixed state
    formula_bytes: int  # the closed formula's K/V
    state_bytes: int = 0  # the fixed state (conv + recurrent) this layer keeps per sequence
    prefill_bytes: int = 0  # storage right after the prefill, before the decode step


@dataclass(frozen=True)
class Difference:
    """A named reason why the library's storage and the formula differ, in bytes (library − formula)."""

    reason: str
    bytes: int


@dataclass(frozen=True)
class LibraryLayout:
    """The whole cache of one sequence of ``tokens`` tokens, as transformers holds it."""

    tokens: int
    dtype: str  # the cache dtype the model ran in (fp32 or fp16/bf16)
    layers: tuple[LayerLayout, ...]
    held_bytes: int
    storage_bytes: int
    formula_bytes: int
    differences: tuple[Difference, ...]  # storage − formula for reasons kvlab can name
    unexplained_bytes: int  # storage − formula − the named differences (0 when all is understood)
    prefill_bytes: int = 0  # storage right after the prefill of tokens − 1, before the decode step

    @property
    def state_bytes(self) -> int:
        return sum(layer.state_bytes for layer in self.layers)

    @property
    def matches_formula(self) -> bool:
        return self.storage_bytes == self.formula_bytes

    @property
    def view_bytes(self) -> int:
        """Storage the tensors' shapes do not show: one token per sliding layer past its window."""
        return self.storage_bytes - self.held_bytes

    @property
    def classes(self) -> dict[str, int]:
        """Layers per transformers cache class."""
        counts: dict[str, int] = {}
        for layer in self.layers:
            counts[layer.cache_class] = counts.get(layer.cache_class, 0) + 1
        return counts


def layout_dtype(dtype: str) -> str:
    """The dtype transformers' DynamicCache holds for a calculator dtype: fp32 stays fp32, anything
    else is laid out in fp16/bf16 (quantised caches need optional backends kvlab does not install)."""
    return dtype if dtype in LIBRARY_DTYPES else "fp16/bf16"


def library_layout(config: ModelConfig, tokens: int, dtype: str = "fp16/bf16") -> LibraryLayout:
    """Lay out ``tokens`` tokens of one sequence with transformers and compare with the formula."""
    if not config.canonical:
        raise ConfigError("this configuration has no config.json to build from")
    if isinstance(tokens, bool) or not isinstance(tokens, int) or not 2 <= tokens <= MAX_LAYOUT_TOKENS:
        raise ConfigError(f"tokens must be between 2 and {MAX_LAYOUT_TOKENS:,}")
    return _layout(config, tokens, layout_dtype(dtype))


@lru_cache(maxsize=32)
def _layout(config: ModelConfig, tokens: int, dtype: str) -> LibraryLayout:
    found = _run(config.canonical, tokens, dtype)
    if len(found) != config.layers:
        raise ConfigError(f"transformers built {len(found)} cache layers for {config.layers} layers (a layer run more "
                          "than once keeps a cache per pass), which kvlab's per-layer formula does not model")
    size = torch.empty(0, dtype=LIBRARY_DTYPES[dtype]).element_size()
    per_token_layer = config.elements_per_token_layer * size
    layers = tuple(LayerLayout(index, kind, run.cache_class, run.key_shape, run.value_shape,
                               (_numel(run.key_shape) + _numel(run.value_shape)) * size + run.state_bytes,
                               run.kv_bytes + run.state_bytes, per_token_layer * config.tokens_kept(kind, tokens),
                               run.state_bytes, run.prefill_bytes)
                   for index, (kind, run) in enumerate(zip(config.layer_kinds, found)))
    storage = sum(layer.storage_bytes for layer in layers)
    formula = sum(layer.formula_bytes for layer in layers)
    differences = []
    for kind in sorted({layer.kind for layer in layers if layer.state_bytes}):
        state = [layer.state_bytes for layer in layers if layer.kind == kind and layer.state_bytes]
        differences.append(Difference(f"the fixed-size state of {len(state)} '{kind}' layer"
                                      f"{'s' if len(state) != 1 else ''}, the same at any length: kvlab counts "
                                      "it per sequence beside the K/V", sum(state)))
    named = sum(d.bytes for d in differences)
    return LibraryLayout(tokens, dtype, layers, sum(layer.held_bytes for layer in layers), storage, formula,
                         tuple(differences), storage - formula - named, sum(layer.prefill_bytes for layer in layers))


@dataclass(frozen=True)
class _LayerRun:
    """What one cache layer holds after the meta-device run."""

    cache_class: str
    key_shape: tuple[int, ...]
    value_shape: tuple[int, ...]
    kv_bytes: int  # storage behind K and V after the decode step
    state_bytes: int  # storage of the conv and recurrent states
    prefill_bytes: int  # storage of K, V and states right after the prefill


def state_bytes(config: ModelConfig, dtype: str = "fp16/bf16") -> int:
    """The fixed state one sequence keeps in all its linear-attention and state-space layers, in the
    dtype the model computes in (fp32, else 16 bits: an fp8 K/V cache does not quantise the state, as
    vLLM keeps Mamba states in the model's dtype by default). 0 for a model without such layers."""
    if not config.state_layers:
        return 0
    runs = _run(config.canonical, 3, layout_dtype(dtype))
    empty = sum(kind in STATE_KINDS and not run.state_bytes for kind, run in zip(config.layer_kinds, runs))
    if empty:  # RecurrentGemma keeps its recurrence in its own modules: counting 0 would be wrong
        raise ConfigError(f"{empty} of the {config.state_layers} linear-attention or state-space layers keep their "
                          "state outside transformers' cache layers, where kvlab cannot measure it")
    return sum(run.state_bytes for run in runs)


@lru_cache(maxsize=32)
def _run(canonical: str, tokens: int, dtype: str) -> tuple[_LayerRun, ...]:
    """What each cache layer holds after N − 1 tokens of prefill and one decode step on the meta device."""
    from transformers import DynamicCache

    model = meta_model(canonical, LIBRARY_DTYPES[dtype])
    # transformers 5 names the argument `cache` (Mamba reads only that); older models `past_key_values`
    argument = "cache" if "cache" in inspect.signature(model.base_model.forward).parameters else "past_key_values"
    try:
        cache = DynamicCache(config=model.config)
        with torch.inference_mode():
            ids = torch.zeros(1, tokens - 1, dtype=torch.long, device="meta")  # (batch, prompt)
            model.base_model(input_ids=ids, use_cache=True, **{argument: cache})
            prefill = [sum(_storage(t) for t in _tensors(layer)) for layer in cache.layers]
            ids = torch.zeros(1, 1, dtype=torch.long, device="meta")  # one generated token
            model.base_model(input_ids=ids, use_cache=True, **{argument: cache})
    except Exception as err:  # the model's own forward pass, on shapes only
        raise ConfigError("transformers could not run this model on the meta device: "
                          f"{brief(err)}") from None
    out = []
    for layer, peak in zip(cache.layers, prefill):
        keys, values = getattr(layer, "keys", None), getattr(layer, "values", None)
        states = _tensors(layer)[2:]
        out.append(_LayerRun(type(layer).__name__, _shape(keys), _shape(values),
                             sum(_storage(t) for t in _tensors(layer)[:2]), sum(_storage(t) for t in states), peak))
    return tuple(out)


def _tensors(layer) -> list:
    """K, V (None where absent) and then the layer's conv and recurrent states."""
    out = [getattr(layer, "keys", None), getattr(layer, "values", None)]
    for name in ("conv_states", "recurrent_states"):  # linear-attention layers: fixed-size states
        out += [t for t in (getattr(layer, name, None) or {}).values() if isinstance(t, torch.Tensor)]
    return out


def _storage(tensor) -> int:
    return tensor.untyped_storage().nbytes() if isinstance(tensor, torch.Tensor) else 0


def _shape(tensor) -> tuple[int, ...]:
    return tuple(tensor.shape) if isinstance(tensor, torch.Tensor) else ()


def _numel(shape: tuple[int, ...]) -> int:
    n = 1
    for dim in shape:
        n *= dim
    return n if shape else 0
