"""Plain-words explanations of what the engine computed, with the engine's own numbers.

"so: even positions → average(weather, so) → 12.5", as the article walks through prefill, plus a
one-line narration for each decode step. Everything is read from engine results; nothing here
computes attention.
"""

from __future__ import annotations

from dataclasses import dataclass

from .model import Attention, Trace


NEAR_ZERO = 5e-5  # shown as 0: below what four decimals can show (softmax weights of 1e-7, float error)


def fmt(x: float) -> str:
    """A number as people write it: 12.5, 10.333, 7 (never 7.000001), and 0 for anything whose
    size is below :data:`NEAR_ZERO` (never 1.125e-07 or -0)."""
    if abs(x) < NEAR_ZERO:
        return "0"
    return f"{x:.4g}" if abs(x) < 1e4 else f"{x:,.0f}"


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
    summary: str = ""  # the same in one short sentence, for the top of a lesson screen


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
    kv_rows, full_rows = a.attention.matches[:, 0], b.attention.matches[:, 0]  # (heads, len)
    length = min(kv_rows.shape[-1], full_rows.shape[-1])
    differs = (kv_rows[:, :length] != full_rows[:, :length]).tolist()
    checks = []
    for h, (head, cacheable) in enumerate(zip(kv.scenario.heads, kv.cacheable)):
        stale = [] if cacheable else [j for j, d in enumerate(differs[h]) if d]
        kv_keys = kv_rows[h, : a.seq_len].nonzero().flatten().tolist()
        full_keys = full_rows[h, : b.seq_len].nonzero().flatten().tolist()
        kv_context, full_context = float(a.context[h]), float(b.context[h])
        gap = abs(kv_context - full_context)
        text = summary = ""
        if gap > 0:
            because = ("" if not stale else f", because the cached key of {_keys(stale, tokens)} went stale"
                       if len(stale) == 1 else f", because {len(stale)} of its cached keys went stale")
            summary = (f"Head '{head.name}' gets {fmt(kv_context)} with the KV cache but {fmt(full_context)} "
                       f"when every key is encoded again{because}.")
            text = (f"Head '{head.name}' ({head.rule}) reads n, the length of the sequence when a key "
                    f"is written. {_stale_phrase(stale, tokens)} So with the cache, the newest query "
                    f"{_key(a.seq_len - 1, tokens)} {_matching(kv_keys, tokens)} and gets context "
                    f"{fmt(kv_context)}; encoding every key again with n = {b.seq_len}, it "
                    f"{_matching(full_keys, tokens)} and gets {fmt(full_context)}. A real model's keys "
                    "never depend on later tokens, so its cache never goes stale.")
        checks.append(HeadCheck(head.name, head.rule, cacheable, kv_context, full_context, gap,
                                [tokens[j] for j in kv_keys], [tokens[j] for j in full_keys], stale, text,
                                summary))
    return CacheCheck(step, checks, a.token, b.token)


LISTED = 4  # keys named in a sentence before "and N more"


def _key(j: int, tokens: list[str]) -> str:
    return f"'{tokens[j]}' (position {j + 1})"


def _keys(positions: list[int], tokens: list[str]) -> str:
    named = [_key(j, tokens) for j in positions[:LISTED]]
    if len(positions) > LISTED:
        return ", ".join(named) + f" and {len(positions) - LISTED} more"
    return named[0] if len(named) == 1 else ", ".join(named[:-1]) + f" and {named[-1]}"


def _stale_phrase(stale: list[int], tokens: list[str]) -> str:
    if not stale:
        return "Its cached keys were written when n was smaller."
    if len(stale) == 1:
        return (f"The cached key of {_keys(stale, tokens)} was written when n was smaller and now "
                "says the opposite of what encoding it again would: it went stale.")
    return (f"The cached keys of {_keys(stale, tokens)} were written when n was smaller and now say "
            "the opposite of what encoding them again would: they went stale.")


def _matching(keys: list[int], tokens: list[str]) -> str:
    if not keys:
        return "matches no key, so the weight spreads evenly"
    return f"matches {_keys(keys, tokens)}"
