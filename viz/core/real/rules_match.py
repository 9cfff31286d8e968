"""Which of a real model's heads behave like the toy's hand-written rules.

For a prompt of n tokens, each rule's attention pattern is what the toy engine itself produces:
a :class:`viz.core.engine.ToyModel` with one head per rule, run over the same n tokens (the real pieces,
so rules that read ``k.token`` work too), gives the exact softmax weights of every rule (n, n).
A real head's measured attention (n, n) is compared with each pattern row by row: a row's
agreement is the overlap of the two distributions, Σ_j min(real_ij, rule_ij) = 1 − total
variation distance, which is 1 when they are equal and 0 when they share no key. The score is the
mean over rows 2..n (row 1 sees one key, so every rule agrees there). The best match per head is
the rule with the highest score, the earlier rule on a tie.

What this module does not do: parse or evaluate rules (viz.core.rules, viz.core.engine do), run the real
model (viz.core.real.model) or draw.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ..engine import ToyModel
from ..rules import compile_rule
from ..scenario import Head, Scenario, VocabWord

TOY_RULES = (
    Head("self", "k.pos == q.pos"),
    Head("previous token", "k.pos == q.pos - 1"),
    Head("first token", "k.pos == 1"),
    Head("even positions", "k.pos % 2 == 0"),
    Head("everything", "True"),
)


@dataclass(frozen=True)
class HeadMatch:
    """One real head against every rule."""

    layer: int  # 0-based, as transformers counts
    head: int  # 0-based within the layer
    scores: tuple[float, ...]  # one per rule, in [0, 1]
    best: int  # index into the rules of the highest score

    @property
    def label(self) -> str:
        return f"L{self.layer}H{self.head}"

    @property
    def score(self) -> float:
        return self.scores[self.best]


@dataclass(frozen=True)
class RuleMatches:
    """Every head of every layer scored against the same rules over the same tokens."""

    rules: tuple[Head, ...]
    patterns: torch.Tensor  # (rules, n, n) the toy's softmax weights for each rule
    scores: torch.Tensor  # (layers, heads, rules)
    heads: list[HeadMatch]  # layer-major order

    def best_head(self) -> HeadMatch:
        """The head that matches its best rule most closely (the first on a tie)."""
        return max(self.heads, key=lambda match: match.score)

    def head(self, layer: int, head: int) -> HeadMatch:
        return self.heads[layer * self.scores.shape[1] + head]


def rule_patterns(tokens: list[str] | tuple[str, ...], rules: tuple[Head, ...] = TOY_RULES) -> torch.Tensor:
    """(rules, n, n): the toy engine's attention weights for each rule over these tokens."""
    for rule in rules:
        compile_rule(rule.rule)  # a bad rule raises RuleError here, with its message
    scenario = Scenario(tokens=("x",), values=(1.0,), heads=tuple(rules),
                        vocab=(VocabWord("x", 1.0, (0.0,) * len(rules)),)).validated()
    toy = ToyModel(scenario, device="cpu", dtype=torch.float64)
    return toy.forward(list(tokens), [1.0] * len(tokens)).weights  # (rules, n, n)


def overlap(attention: torch.Tensor, patterns: torch.Tensor) -> torch.Tensor:
    """Mean row overlap of attention (..., n, n) with patterns (rules, n, n): (..., rules)."""
    n = attention.shape[-1]
    if n < 2:
        raise ValueError("matching heads to rules needs at least 2 tokens")
    a = attention.double()[..., None, 1:, :]  # (..., 1, n - 1, n): rows 2..n
    p = patterns.double()[:, 1:, :]  # (rules, n - 1, n)
    return torch.minimum(a, p).sum(dim=-1).mean(dim=-1).clamp(0.0, 1.0)  # (..., rules)


def match_heads(attentions: torch.Tensor, tokens: list[str] | tuple[str, ...],
                rules: tuple[Head, ...] = TOY_RULES) -> RuleMatches:
    """Score every head of attentions (layers, heads, n, n) against every rule."""
    layers, heads, n, _ = attentions.shape
    if len(tokens) != n:
        raise ValueError(f"{len(tokens)} tokens for attention over {n} positions")
    patterns = rule_patterns(tokens, rules)  # (rules, n, n)
    scores = overlap(attentions, patterns)  # (layers, heads, rules)
    best = scores.argmax(dim=-1)  # (layers, heads): argmax returns the first maximum
    found = [HeadMatch(layer, head, tuple(scores[layer, head].tolist()), int(best[layer, head]))
             for layer in range(layers) for head in range(heads)]
    return RuleMatches(tuple(rules), patterns.float(), scores.float(), found)
