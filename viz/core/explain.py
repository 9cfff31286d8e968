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
    position: int = 0  # 0-based query position in the sequence
    weight_each: float = 0.0  # with no match: the weight every visible key gets (1 / visible)


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
    spread = float(attention.weights[head, row, keys[0]]) if keys and not matched else 0.0
    return RowExplanation(name, query, [tokens[i] for i in matched], len(keys), context, not matched, text,
                          keys[-1] if keys else 0, spread)


def explain_position(trace: Trace, position: int) -> list[RowExplanation]:
    """Every head's choice at prompt position ``position`` (0-based) during prefill."""
    pre = trace.prefill
    values = [float(v) for v in pre.v]
    names = trace.scenario.head_names
    return [explain_row(pre.attention, pre.tokens, names, values, h, position) for h in range(len(names))]


def no_match_rows(trace: Trace) -> list[RowExplanation]:
    """Every (head, prompt position) of the prefill where no visible key matches, head by head."""
    pre = trace.prefill
    values = [float(v) for v in pre.v]
    names = trace.scenario.head_names
    no_match = pre.attention.no_match  # (heads, n)
    return [explain_row(pre.attention, pre.tokens, names, values, h, i)
            for h in range(len(names)) for i in range(len(pre.tokens)) if bool(no_match[h, i])]


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
class HeadCheck:
    """One head's context with the KV cache and with recomputation at one step, and why they differ."""

    head: str
    rule: str
    cacheable: bool
    kv_context: float
    full_context: float
    gap: float  # |kv − recompute|, exactly as the engine computed both
    kv_matched: list[str]  # keys the cached copies say match the newest query
    full_matched: list[str]  # keys that match when every key is encoded again
    stale: list[int]  # 0-based positions whose cached key differs from what re-encoding gives
    text: str  # a plain sentence when the contexts differ, else ""


@dataclass(frozen=True)
class CacheCheck:
    """The KV cache against recomputation at one decode step, head by head."""

    step: int
    heads: list[HeadCheck]
    kv_token: str  # the word each run chose at this step
    full_token: str

    @property
    def max_gap(self) -> float:
        return max(h.gap for h in self.heads)

    @property
    def same_token(self) -> bool:
        return self.kv_token == self.full_token

    @property
    def differing(self) -> list[HeadCheck]:
        """Heads whose contexts differ at all: an exact comparison, no tolerance."""
        return [h for h in self.heads if h.gap > 0]

    @property
    def stale(self) -> set[tuple[int, int]]:
        """(head, position) of every stale cached key."""
        return {(h, j) for h, check in enumerate(self.heads) for j in check.stale}


def check_cache(kv: Trace, full: Trace, step: int) -> CacheCheck:
    """Compare the kv run with the recomputed run at ``step`` (both must have reached it).

    A cached key is *stale* when the cache holds a match (+1) or miss (−1) for it that re-encoding
    the same key now would not give: only a rule that reads ``n`` can do that, because ``n`` was
    smaller when the key was written. Both runs have fed the same tokens up to ``step`` while
    their chosen words agree; the page compares at the first step where they might not.
    """
    a, b = kv.steps[step], full.steps[step]
    tokens = kv.tokens
    checks = []
    for h, (head, cacheable) in enumerate(zip(kv.scenario.heads, kv.cacheable)):
        kv_row, full_row = a.attention.matches[h, 0], b.attention.matches[h, 0]  # (len,)
        length = min(kv_row.shape[0], full_row.shape[0])
        stale = [] if cacheable else [j for j in range(length) if bool(kv_row[j]) != bool(full_row[j])]
        kv_keys = [tokens[j] for j in range(a.seq_len) if bool(kv_row[j])]
        full_keys = [tokens[j] for j in range(b.seq_len) if bool(full_row[j])]
        kv_context, full_context = float(a.context[h]), float(b.context[h])
        gap = abs(kv_context - full_context)
        text = ""
        if gap > 0:
            text = (f"Head '{head.name}' ({head.rule}) reads n. The cache still holds keys written when n "
                    f"was smaller, so for the newest query '{a.query_token}' {_matching(kv_keys)} → "
                    f"{fmt(kv_context)}. Encoding every key again with n = {b.seq_len}, {_matching(full_keys)} → "
                    f"{fmt(full_context)}. Those cached keys went stale: a real model's keys never "
                    "depend on later tokens.")
        checks.append(HeadCheck(head.name, head.rule, cacheable, kv_context, full_context, gap, kv_keys,
                                full_keys, stale, text))
    return CacheCheck(step, checks, a.token, b.token)


def _matching(keys: list[str]) -> str:
    if not keys:
        return "no key matches (the weight spreads evenly)"
    if len(keys) == 1:
        return f"only '{keys[0]}' matches"
    return "the keys " + ", ".join(f"'{k}'" for k in keys[:-1]) + f" and '{keys[-1]}' match"
