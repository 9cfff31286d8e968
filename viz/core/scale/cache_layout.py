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
  shape shows. (Right after a long prefill it even holds the whole prompt until the first decode
  step; that is why the layout takes one decode step.)

:func:`library_layout` compares that storage with the closed formula of
:meth:`viz.core.scale.model_config.ModelConfig.tokens_kept` layer by layer. Layer types the formula
does not model (linear-attention and convolution states) are named; any other difference is
reported as unexplained, never hidden.

What this module does not do: run a real model, allocate memory, or model serving engines' block
allocators (vLLM rounds every sequence up to whole blocks, 16 tokens by default).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import torch

from .model_config import ConfigError, ModelConfig, meta_model
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
    held_bytes: int  # numel × element size of K and V
    storage_bytes: int  # bytes of the storage behind K and V
    formula_bytes: int


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
        raise ConfigError(f"transformers built {len(found)} cache layers for {config.layers} layers")
    size = torch.empty(0, dtype=LIBRARY_DTYPES[dtype]).element_size()
    per_token_layer = config.elements_per_token_layer * size
    layers = tuple(LayerLayout(index, kind, cache_class, key, value, (_numel(key) + _numel(value)) * size,
                               storage, per_token_layer * config.tokens_kept(kind, tokens))
                   for index, (kind, (cache_class, key, value, storage))
                   in enumerate(zip(config.layer_kinds, found)))
    storage = sum(layer.storage_bytes for layer in layers)
    formula = sum(layer.formula_bytes for layer in layers)
    differences = []
    for kind in sorted(set(config.unmodelled_kinds_per_layer)):
        extra = sum(layer.storage_bytes - layer.formula_bytes for layer in layers if layer.kind == kind)
        if extra:
            differences.append(Difference(f"'{kind}' layers keep a fixed-size state, which the formula "
                                          "does not count", extra))
    named = sum(d.bytes for d in differences)
    return LibraryLayout(tokens, dtype, layers, sum(layer.held_bytes for layer in layers), storage, formula,
                         tuple(differences), storage - formula - named)


@lru_cache(maxsize=32)
def _run(canonical: str, tokens: int, dtype: str) -> tuple[tuple[str, tuple, tuple, int], ...]:
    """(class, key shape, value shape, storage bytes) per cache layer after N − 1 tokens of prefill
    and one decode step on the meta device."""
    from transformers import DynamicCache

    model = meta_model(canonical, LIBRARY_DTYPES[dtype])
    cache = DynamicCache(config=model.config)
    try:
        with torch.inference_mode():
            for chunk in (tokens - 1, 1):  # the prompt, then one generated token
                ids = torch.zeros(1, chunk, dtype=torch.long, device="meta")  # (batch, chunk)
                model.base_model(input_ids=ids, past_key_values=cache, use_cache=True)
    except Exception as err:  # the model's own forward pass, on shapes only
        raise ConfigError("transformers could not run this model on the meta device: "
                          f"{brief(err)}") from None
    out = []
    for layer in cache.layers:
        keys, values = getattr(layer, "keys", None), getattr(layer, "values", None)
        key_shape = tuple(keys.shape) if isinstance(keys, torch.Tensor) else ()
        value_shape = tuple(values.shape) if isinstance(values, torch.Tensor) else ()
        tensors = [t for t in (keys, values) if isinstance(t, torch.Tensor)]
        for name in ("conv_states", "recurrent_states"):  # linear-attention layers: fixed-size states
            tensors += [t for t in (getattr(layer, name, None) or {}).values() if isinstance(t, torch.Tensor)]
        out.append((type(layer).__name__, key_shape, value_shape,
                    sum(t.untyped_storage().nbytes() for t in tensors)))
    return tuple(out)


def _numel(shape: tuple[int, ...]) -> int:
    n = 1
    for dim in shape:
        n *= dim
    return n if shape else 0
