"""The trace: one JSON object that records a run, made from the engine's dataclasses in one place."""

from __future__ import annotations

from typing import Any

import torch

from .model import Trace
from .scenario import VERSION


def _numbers(tensor: torch.Tensor) -> Any:
    """Nested lists at float32 precision (7 significant digits), so 5.0000014 stays visible."""
    if tensor.dim() == 0:
        return float(f"{float(tensor):.7g}")
    return [_numbers(row) for row in tensor]


def trace_to_dict(trace: Trace) -> dict[str, Any]:
    """The trace format of docs/design.md, plus work counts and cache sizes per step."""
    prefill = trace.prefill.attention
    return {
        "version": VERSION,
        "mode": trace.mode,
        "device": trace.device.type,
        "tokens": trace.tokens,
        "heads": [{"name": head.name, "rule": head.rule, "cacheable": cacheable}
                  for head, cacheable in zip(trace.scenario.heads, trace.cacheable)],
        "vocab": trace.scenario.vocab_tokens,
        "prefill": {
            "tokens": trace.prefill.tokens,
            "weights": _numbers(prefill.weights),
            "contexts": _numbers(prefill.contexts),
            "work": prefill.counts.as_dict(),
        },
        "steps": [
            {
                "context": _numbers(step.context),
                "logits": _numbers(step.logits),
                "probs": _numbers(step.probs),
                "token": step.token,
                "seq_len": step.seq_len,
                "work": step.counts.as_dict(),
                "cache_length": step.cache_length,
                "cache_bytes": step.cache_nbytes,
            }
            for step in trace.steps
        ],
    }
