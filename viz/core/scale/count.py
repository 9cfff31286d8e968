"""One sequence of a real model, counted: the core function the At scale page and ``python -m viz scale`` share.

1. :func:`read_model` turns a config.json's text into a :class:`~viz.core.scale.model_config.ModelConfig`
   or refuses it with a :class:`~viz.core.scale.model_config.ConfigError` whose one line names the
   layer type or the field kvlab does not model. Nothing else escapes it: whatever transformers'
   ``AutoConfig`` accepts is either counted or refused in words.
2. :func:`sequence_count` counts what one sequence keeps for a prompt of N tokens:

   - **K/V** after the prompt and one decode step, as transformers' storage holds it: N + 1 tokens in
     every full-attention layer, at most the window in a sliding (or chunked) layer, nothing in a layer
     that shares another's cache or keeps no cache;
   - the **fixed state** of linear-attention, state-space and convolution layers (Gated DeltaNet,
     Mamba): the same for ten tokens as for a million, and one per sequence in vLLM too;
   - the **prefill peak**: right after the prefill, before the first decode step, a sliding layer
     still holds the whole prompt (its window is cut when the next token arrives), so the peak is N
     tokens in every attention layer, plus the state. Out-of-memory errors happen there.

What this module does not do: lay out transformers' cache (that is
:mod:`viz.core.scale.cache_layout`, whose tests check these counts against it) or fit GPUs
(:func:`viz.core.scale.memory.gpu_fit`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from ..text import brief
from .cache_layout import library_layout, state_bytes
from .memory import MAX_TOKENS, GpuFit, cache_memory, checked_integer, nbytes
from .model_config import ConfigError, ModelConfig, model_config, read_config

STATE_DTYPES = ("fp16/bf16", "fp32")  # what a model computes in; its state is kept in one of them


@dataclass(frozen=True)
class SequenceCount:
    """What one sequence of ``prompt_tokens`` tokens keeps, in bytes (see the module docstring)."""

    config: ModelConfig
    dtype: str  # the K/V cache's dtype
    prompt_tokens: int
    kv_bytes: int  # after the prompt and one decode step
    state_bytes: int  # fixed per sequence: linear-attention and state-space layers
    prefill_peak_bytes: int  # right after the prefill: the whole prompt in every attention layer, and the state

    @property
    def per_sequence_bytes(self) -> int:
        return self.kv_bytes + self.state_bytes


def read_model(text: str | bytes, name: str = "Your config.json", source: str = "your config.json") -> ModelConfig:
    """The configuration in a config.json's text, its fixed state measured once (so a model transformers
    cannot run on the meta device is refused here, not later); ConfigError with one line otherwise."""
    try:
        config = model_config(read_config(text), name, source)
        for dtype in STATE_DTYPES:
            state_bytes(config, dtype)
        _check_against_transformers(config)
    except ConfigError:
        raise
    except Exception as err:  # noqa: BLE001 - any other failure inside transformers is a refusal too
        raise ConfigError(f"transformers could not read this config: {brief(err)}") from None
    return config


def _check_against_transformers(config: ModelConfig) -> None:
    """Refuse what the formula would miscount: transformers' own cache, laid out at 3 tokens and just past
    the window, must hold what the formula counts in every layer (a sliding layer with its own head count,
    a window under another name, a model that loops over its layers). A model transformers cannot run on
    the meta device keeps its formula count, unchecked."""
    for tokens in sorted({3, config.window + 2} if config.window else {3}):
        try:
            layout = library_layout(config, tokens)
        except ConfigError as err:
            if "cache layers for" in str(err):
                raise
            return
        wrong = [layer for layer in layout.layers if layer.storage_bytes - layer.state_bytes != layer.formula_bytes]
        if wrong:
            layer = wrong[0]
            raise ConfigError(f"transformers' cache holds {layer.storage_bytes - layer.state_bytes:,} bytes of K/V in "
                              f"layer {layer.layer} ('{layer.kind}', K {list(layer.key_shape)}) after {tokens} tokens, "
                              f"where kvlab's formula counts {layer.formula_bytes:,}: {len(wrong)} of the "
                              f"{len(layout.layers)} layers keep K/V shapes kvlab does not model")


def sequence_count(config: ModelConfig, prompt_tokens: int, dtype: str = "fp16/bf16") -> SequenceCount:
    """K/V after a prompt of ``prompt_tokens`` and one decode step, the fixed state, and the prefill peak."""
    checked_integer("tokens", prompt_tokens, 1, MAX_TOKENS - 1)
    after = cache_memory(config, prompt_tokens + 1, dtype)
    peak = nbytes(config.elements_per_token_layer * config.attention_layers * prompt_tokens, dtype)
    state = after.state_bytes_per_sequence
    return SequenceCount(config, dtype, prompt_tokens, after.bytes_per_sequence, state, peak + state)


def count_to_dict(count: SequenceCount, batch: int = 1, fit: GpuFit | None = None) -> dict:
    """The JSON object ``python -m viz scale`` prints: the one place it is made."""
    out = {"model_type": json.loads(count.config.canonical).get("model_type", "") if count.config.canonical else "",
           "prompt_tokens": count.prompt_tokens, "tokens_after_step": count.prompt_tokens + 1,
           "cache_dtype": count.dtype, "batch": batch,
           "layers": count.config.layers, "attention_layers": count.config.attention_layers,
           "state_layers": count.config.state_layers,
           "kv_bytes": count.kv_bytes, "state_bytes": count.state_bytes,
           "per_sequence_bytes": count.per_sequence_bytes, "prefill_peak_bytes": count.prefill_peak_bytes,
           "batch_bytes": count.per_sequence_bytes * batch}
    if fit is not None:
        out["gpu"] = {"name": fit.gpu.name, "memory_bytes": fit.gpu_bytes, "utilization": fit.utilization,
                      "weights_dtype": fit.weights_dtype, "weights_bytes": fit.weights_bytes,
                      "reserve_bytes": fit.reserve_bytes, "cache_budget_bytes": fit.cache_budget_bytes,
                      "weights_fit": fit.weights_fit, "sequences_that_fit": fit.sequences,
                      "batch_fits": fit.weights_fit and fit.sequences >= batch,
                      "prefill_peak_fits": fit.weights_fit and count.prefill_peak_bytes <= fit.cache_budget_bytes}
    return out
