"""Which of a real model's heads behave like the toy's hand-written rules.

For a prompt of n tokens, each rule's attention pattern is what the toy engine itself produces:
a :class:`viz.core.engine.model.ToyModel` with one head per rule, run over the same n tokens (the real pieces,
so rules that read ``k.token`` work too), gives the exact softmax weights of every rule (n, n).
A real head's measured attention (n, n) is compared with each pattern row by row: a row's
agreement is the overlap of the two distributions, Σ_j min(real_ij, rule_ij) = 1 − total
variation distance, which is 1 when they are equal and 0 when they share no key. The score is the
mean over rows 2..n (row 1 sees one key, so every rule agrees there). The best match per head is
the rule with the highest score, the earlier rule on a tie.

A score means little without chance: attention that follows no rule at all still overlaps a
spread-out rule such as 'all' (a head whose scores are random normal numbers scores about
0.65 on it). So the same rules also score :data:`RANDOM_HEADS` random heads over the same n
positions (softmax of standard normal scores under the causal mask, seeded), and a rule's
**chance level** is the 95th percentile of their scores. A real head *beats chance* when its best
score is above the chance level of that rule.

What this module does not do: parse or evaluate rules (viz.core.rules.language, viz.core.engine.model do), run the real
model (viz.core.real.model) or draw.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import torch

from ..engine.model import ToyModel
from ..rules.language import compile_rule
from ..engine.scenario import Head, Scenario, VocabWord

RANDOM_HEADS = 128  # random heads scored for the chance level
RANDOM_SEED = 0
CHANCE_QUANTILE = 0.95
# named as the toy's presets name the same rules (the toy's 'all' was this page's 'everything')
TOY_RULES = (
    Head("self", "k.pos == q.pos"),
    Head("previous", "k.pos == q.pos - 1"),
    Head("first", "k.pos == 1"),
    Head("even", "k.pos % 2 == 0"),
    Head("all", "True"),
)


@dataclass(frozen=True)
class HeadMatch:
    """One real head against every rule."""

    layer: int  # 0-based, as transformers counts
    head: int  # 0-based within the layer
    scores: tuple[float, ...]  # one per rule, in [0, 1]
    best: int  # index into the rules of the highest score
    chance: float  # the best rule's chance level (see the module docstring)

    @property
    def label(self) -> str:
        return f"L{self.layer}H{self.head}"

    @property
    def score(self) -> float:
        return self.scores[self.best]

    @property
    def beats_chance(self) -> bool:
        return self.score > self.chance


@dataclass(frozen=True)
class RuleMatches:
    """Every head of every layer scored against the same rules over the same tokens."""

    rules: tuple[Head, ...]
    patterns: torch.Tensor  # (rules, n, n) the toy's softmax weights for each rule
    scores: torch.Tensor  # (layers, heads, rules)
    heads: list[HeadMatch]  # layer-major order
    chance: torch.Tensor  # (rules,) 95th percentile of random heads' scores per rule

    def best_head(self) -> HeadMatch:
        """The head that matches its best rule most closely (the first on a tie)."""
        return max(self.heads, key=lambda match: match.score)

    def above_chance(self) -> list[HeadMatch]:
        """Heads whose best score beats that rule's chance level."""
        return [match for match in self.heads if match.beats_chance]

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
    a = attention.double()[..., 1:, :]  # (..., n - 1, n): rows 2..n
    per_rule = [torch.minimum(a, p[1:, :]).sum(dim=-1).mean(dim=-1) for p in patterns.double()]  # rules × (...)
    return torch.stack(per_rule, dim=-1).clamp(0.0, 1.0)  # (..., rules)


def random_heads(n: int, heads: int = RANDOM_HEADS, seed: int = RANDOM_SEED) -> torch.Tensor:
    """(heads, n, n) causal attention of heads that follow no rule: softmax of standard normal scores."""
    generator = torch.Generator().manual_seed(seed)
    scores = torch.randn(heads, n, n, generator=generator)  # float32: a baseline needs no more
    future = torch.ones(n, n, dtype=torch.bool).triu(1)  # (n, n) keys after the query
    return torch.softmax(scores.masked_fill(future, -torch.inf), dim=-1)


@lru_cache(maxsize=32)
def chance_levels(tokens: tuple[str, ...], rules: tuple[Head, ...] = TOY_RULES) -> torch.Tensor:
    """(rules,) the CHANCE_QUANTILE of random heads' scores against each rule's pattern over ``tokens``
    (kept per prompt: the random heads depend only on its length, token rules on its pieces)."""
    scores = overlap(random_heads(len(tokens)), rule_patterns(tokens, rules))  # (RANDOM_HEADS, rules)
    return torch.quantile(scores.float(), CHANCE_QUANTILE, dim=0)


def match_heads(attentions: torch.Tensor, tokens: list[str] | tuple[str, ...],
                rules: tuple[Head, ...] = TOY_RULES) -> RuleMatches:
    """Score every head of attentions (layers, heads, n, n) against every rule."""
    layers, heads, n, _ = attentions.shape
    if len(tokens) != n:
        raise ValueError(f"{len(tokens)} tokens for attention over {n} positions")
    patterns = rule_patterns(tokens, rules)  # (rules, n, n)
    scores = overlap(attentions, patterns)  # (layers, heads, rules)
    chance = chance_levels(tuple(tokens), tuple(rules))  # (rules,)
    best = scores.argmax(dim=-1)  # (layers, heads): argmax returns the first maximum
    found = [HeadMatch(layer, head, tuple(scores[layer, head].tolist()), int(best[layer, head]),
                       float(chance[best[layer, head]]))
             for layer in range(layers) for head in range(heads)]
    return RuleMatches(tuple(rules), patterns.float(), scores.float(), found, chance.float())
