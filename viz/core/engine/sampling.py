"""Choosing the next word from the logits: a pure function of (logits, settings, generator).

Order of operations, as in common inference libraries: divide the logits by the temperature,
softmax, keep the top-k words, renormalise, keep the smallest top-p set, renormalise, then take
the first index of the maximum (greedy) or draw one index with the seeded generator (sample).
Work happens on the CPU in float64 so the same seed gives the same words on every device.
:class:`Sampler` binds the settings to one sequence's seeded generator; every decode loop uses it.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .scenario import Sampling


@dataclass(frozen=True)
class SampleResult:
    index: int  # the chosen vocabulary index
    base_probs: torch.Tensor  # (vocab,) softmax(logits / temperature), before top-k / top-p
    probs: torch.Tensor  # (vocab,) the distribution actually used, zero outside `kept`
    kept: torch.Tensor  # (vocab,) bool, words that survived top-k and top-p


def _keep_top_p(probs: torch.Tensor, top_p: float) -> torch.Tensor:
    """Smallest most-likely set whose total reaches top_p; ties keep the lower index first."""
    order = torch.sort(probs, descending=True, stable=True).indices
    sorted_probs = probs[order]
    before = torch.cumsum(sorted_probs, 0) - sorted_probs  # mass of the words ranked above
    keep_sorted = before < top_p
    keep_sorted[0] = True
    keep = torch.zeros_like(probs, dtype=torch.bool)
    keep[order] = keep_sorted
    return keep


def sample(logits: torch.Tensor, settings: Sampling,
           generator: torch.Generator | None = None) -> SampleResult:
    """Pick the next word; see the module docstring. ``generator`` is only used by "sample"."""
    logits = logits.detach().to("cpu", torch.float64)  # (vocab,)
    if settings.temperature > 0:
        # subtract the maximum first so a tiny temperature gives 0 and -inf, never inf - inf
        base = torch.softmax((logits - logits.max()) / settings.temperature, dim=-1)
    else:  # the limit of temperature -> 0: all mass on the first maximum
        base = torch.zeros_like(logits)
        base[int(torch.argmax(logits))] = 1.0
    kept = torch.ones_like(base, dtype=torch.bool)
    probs = base
    if 0 < settings.top_k < len(base):
        order = torch.sort(base, descending=True, stable=True).indices
        kept = torch.zeros_like(kept)
        kept[order[: settings.top_k]] = True
        probs = torch.where(kept, probs, 0.0)
        probs = probs / probs.sum()
    if settings.top_p < 1.0:
        kept = kept & _keep_top_p(probs, settings.top_p)
        probs = torch.where(kept, probs, 0.0)
        probs = probs / probs.sum()
    if settings.strategy == "greedy" or settings.temperature == 0:
        index = int(torch.argmax(torch.where(kept, logits, -torch.inf)))
    else:
        index = int(torch.multinomial(probs, 1, generator=generator))
    return SampleResult(index=index, base_probs=base, probs=probs, kept=kept)


class Sampler:
    """The choice half of every decode step, for one sequence: its settings and its own seeded
    generator, so interleaved sequences (a batch, a scheduler) draw exactly what each would alone."""

    def __init__(self, settings: Sampling, seed: int | None = None):
        self.settings = settings
        self.generator = torch.Generator().manual_seed(settings.seed if seed is None else seed)

    def __call__(self, logits: torch.Tensor) -> SampleResult:
        return sample(logits, self.settings, self.generator)
