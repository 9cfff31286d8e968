"""Where a rule divided by zero, in words a page can show.

A rule such as ``k.pos // (q.pos - 3) == 0`` is undefined where its divisor is zero; the rule
language makes it false there (see :mod:`viz.core.rules.language`) and the engine records those pairs in
``Attention.undefined``. :func:`divisions_by_zero` reads them back for the prefill or one decode
step: which head, which division, and which visible (query, key) pairs, by position and token.
Pairs the causal mask hides are left out: they change nothing.

What this module does not do: evaluate rules or draw.
"""

from __future__ import annotations

from dataclasses import dataclass

from .model import Attention, Trace
from ..rules.language import compile_rule

SHOWN = 4  # positions named before "… (N in all)"


@dataclass(frozen=True)
class DivisionByZero:
    """One head that divided by zero at some visible (query, key) pairs."""

    head: str
    rule: str
    divisions: tuple[str, ...]  # the `//` and `%` whose divisor can be zero
    queries: tuple[int, ...]  # 1-based query positions where it happened
    keys: tuple[int, ...]  # 1-based key positions where it happened
    pairs: int
    text: str


def _plural(word: str, items: list[int]) -> str:
    return word if len(items) == 1 else ("queries" if word == "query" else word + "s")


def _positions(indices: list[int], tokens: list[str]) -> str:
    named = [f"{i} · {tokens[i - 1]}" for i in indices[:SHOWN]]
    more = f" … ({len(indices)} in all)" if len(indices) > SHOWN else ""
    return ", ".join(named) + more


def divisions_by_zero(trace: Trace, step: int | None = None) -> list[DivisionByZero]:
    """Heads whose rule divided by zero during the prefill (``step`` None) or decode step ``step``."""
    if step is None:
        attention: Attention = trace.prefill.attention
        first_query = 1  # row i is query position i + 1
        when = "during prefill"
    else:
        attention = trace.steps[step].attention
        first_query = trace.steps[step].seq_len  # the one row is the newest token
        when = f"at decode step {step}"
    if attention.undefined is None:  # no head's rule can divide by zero
        return []
    tokens = trace.tokens
    found = []
    for h, head in enumerate(trace.scenario.heads):
        where = attention.undefined[h] & attention.visible  # (m, len)
        if not bool(where.any()):
            continue
        rows, cols = where.nonzero(as_tuple=True)
        queries = sorted({int(r) + first_query for r in rows})
        keys = sorted({int(c) + 1 for c in cols})
        divisions = compile_rule(head.rule).divisions
        pairs = int(where.sum())
        text = (f"Head '{head.name}' divides by zero in {' and '.join(divisions)} {when}, at {pairs} "
                f"(query, key) pair{'s' if pairs != 1 else ''}: {_plural('query', queries)} {_positions(queries, tokens)}; "
                f"{_plural('key', keys)} {_positions(keys, tokens)}. A division by zero makes the rule false there.")
        found.append(DivisionByZero(head.name, head.rule, divisions, tuple(queries), tuple(keys), pairs, text))
    return found
