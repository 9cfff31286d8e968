"""Plain-words explanations of what the engine computed, with the engine's own numbers.

"so: even positions → average(weather, so) → 12.5", as the article walks through prefill, plus a
one-line narration for each decode step. Everything is read from engine results; nothing here
computes attention.
"""

from __future__ import annotations

from dataclasses import dataclass

from .engine import Attention, Trace


def fmt(x: float) -> str:
    """A number as people write it: 12.5, 10.333, 7 (never 7.000001)."""
    text = f"{x:.4g}" if abs(x) < 1e4 else f"{x:,.0f}"
    return text


@dataclass(frozen=True)
class RowExplanation:
    """Why one head gave one query position its context."""

    head: str
    query: str
    matched: list[str]  # visible keys where the rule holds
    visible: int  # keys the query can see
    context: float
    no_match: bool  # nothing matched: softmax spread the weight evenly
    text: str


def explain_row(attention: Attention, tokens: list[str], head_names: list[str], values: list[float],
                head: int, row: int) -> RowExplanation:
    """Explain row ``row`` of ``attention`` (query ``tokens[...]``) for head ``head``."""
    visible = attention.visible[row]  # (len,)
    matches = attention.matches[head, row] & visible
    keys = [i for i in range(len(visible)) if bool(visible[i])]
    matched = [i for i in keys if bool(matches[i])]
    context = float(attention.contexts[head, row])
    query = tokens[keys[-1]] if keys else "?"
    name = head_names[head]
    if not matched:
        spread = ", ".join(tokens[i] for i in keys)
        text = (f"{name}: no visible key matches, so softmax spreads the weight evenly over "
                f"{len(keys)} key{'s' if len(keys) != 1 else ''} → average({spread}) → {fmt(context)}")
    elif len(matched) == 1:
        i = matched[0]
        text = f"{name}: {tokens[i]} (value {fmt(values[i])}) → {fmt(context)}"
    elif len(matched) == len(keys):
        text = f"{name}: every visible key matches → average({', '.join(tokens[i] for i in matched)}) → {fmt(context)}"
    else:
        text = f"{name}: average({', '.join(tokens[i] for i in matched)}) → {fmt(context)}"
    return RowExplanation(name, query, [tokens[i] for i in matched], len(keys), context, not matched, text)


def explain_position(trace: Trace, position: int) -> list[RowExplanation]:
    """Every head's choice at prompt position ``position`` (0-based) during prefill."""
    pre = trace.prefill
    values = [float(v) for v in pre.v]
    names = trace.scenario.head_names
    return [explain_row(pre.attention, pre.tokens, names, values, h, position) for h in range(len(names))]


def narrate_step(trace: Trace, step: int) -> str:
    """One line for a presenter: what decode step ``step`` did and what comes next."""
    s = trace.steps[step]
    chosen = f"'{s.token}' (p = {float(s.probs[s.sample.index]):.2f})"
    if step == 0:
        return (f"Prefill read all {s.seq_len} prompt tokens in one pass; the last position's context "
                f"gives the logits, and the next word is {chosen}.")
    new = trace.steps[step - 1].token
    if trace.mode == "kv":
        work = (f"only its key and value are encoded and appended to the cache "
                f"({s.cache_length} entries, {s.cache_nbytes:,} bytes); its query reads all {s.seq_len} keys")
    elif trace.mode == "reencode":
        work = f"all {s.seq_len} keys are encoded again, but only its query is computed"
    else:
        work = f"the whole sequence of {s.seq_len} tokens is run again ({s.counts.scores:,} scores)"
    return f"Step {step}: '{new}' joins at position {s.seq_len}; {work}. Next word: {chosen}."


@dataclass(frozen=True)
class CacheDifference:
    """How a head that reads n differs between the KV cache and recomputation at one step."""

    head: str
    rule: str
    kv_matched: list[str]  # keys the cached copies say match
    full_matched: list[str]  # keys that match when every key is encoded again
    kv_context: float
    full_context: float
    text: str


def cache_differences(kv: Trace, full: Trace, step: int, tolerance: float = 1e-6) -> list[CacheDifference]:
    """Heads whose context differs between the two traces at ``step``, with the reason in words."""
    out = []
    a, b = kv.steps[step], full.steps[step]
    tokens = kv.tokens
    for h, head in enumerate(kv.scenario.heads):
        gap = abs(float(a.context[h]) - float(b.context[h]))
        if gap <= tolerance:
            continue
        kv_keys = [tokens[j] for j in range(a.seq_len) if bool(a.attention.matches[h, 0, j])]
        full_keys = [tokens[j] for j in range(b.seq_len) if bool(b.attention.matches[h, 0, j])]
        text = (f"Head '{head.name}' ({head.rule}) reads n. In the cache each key keeps the n it was "
                f"encoded with, so for the new query {_matching(kv_keys)} "
                f"→ {fmt(float(a.context[h]))}. Recomputing encodes every key again with n = {b.seq_len}, "
                f"so {_matching(full_keys)} → {fmt(float(b.context[h]))}. "
                f"The cached keys went stale: a real model's keys never depend on later tokens.")
        out.append(CacheDifference(head.name, head.rule, kv_keys, full_keys, float(a.context[h]),
                                   float(b.context[h]), text))
    return out


def _matching(keys: list[str]) -> str:
    if not keys:
        return "no key matches (an even spread)"
    return f"{', '.join(keys)} {'matches' if len(keys) == 1 else 'match'}"
