"""The stale-cache lesson and the Decode page's other one-line notes, as typed results.

When a head's rule reads ``n`` (the sequence's length when a key is written), its cached keys keep
the answers of the step that wrote them, and the KV cache can give another context than
recomputation. :func:`stale_lesson` picks the head concerned and lays the two runs side by side for
it, key by key: what the cache says, what encoding the key again says, and the weight the newest
query gives the key in each. :func:`cache_note` says what holds when no context differs (at step 0
nothing can be stale yet), and :func:`repeat_note` why a greedy toy says the same word again.

Selecting and copying only: every number here was computed by the engine
(:mod:`viz.core.engine.model`) or compared by :func:`viz.core.engine.explain.check_cache`.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..engine.explain import CacheCheck, fmt
from ..engine.model import Trace


@dataclass(frozen=True)
class KeyPair:
    """One key as the KV cache holds it and as recomputation encodes it, for one head."""

    position: int  # 0-based
    token: str
    cached_match: bool  # the head's rule held for the cached key (written with an earlier n)
    recomputed_match: bool  # the rule holds for the key encoded again with today's n
    cached_weight: float  # the newest query's weight on the key, with the cache
    recomputed_weight: float  # and recomputing every key

    @property
    def stale(self) -> bool:
        return self.cached_match != self.recomputed_match


@dataclass(frozen=True)
class StaleLesson:
    """The head whose cache went stale at one step, with the cache and recomputation side by side."""

    step: int
    head: int  # 0-based index of the head concerned
    name: str
    button: str  # the label of the button that shows this head
    why: str  # one sentence: why the cache and recomputation disagree (the warning's, once the head is shown)
    keys: tuple[KeyPair, ...]  # every key the newest query sees, in order
    cached_context: float
    recomputed_context: float

    @property
    def stale(self) -> tuple[int, ...]:
        """0-based positions of the stale keys."""
        return tuple(k.position for k in self.keys if k.stale)


def stale_lesson(kv: Trace, full: Trace, check: CacheCheck) -> StaleLesson | None:
    """The first head whose context differs between the cache and recomputation at ``check.step``,
    laid side by side; None when every head agrees."""
    if not check.differing:
        return None
    differing = check.differing[0]
    head = next(h for h, c in enumerate(check.heads) if c is differing)
    a, b = kv.steps[check.step], full.steps[check.step]
    n = a.seq_len
    cached, recomputed = a.attention.matches[head, 0, :n].tolist(), b.attention.matches[head, 0, :n].tolist()
    cached_w, recomputed_w = a.attention.weights[head, 0, :n].tolist(), b.attention.weights[head, 0, :n].tolist()
    keys = tuple(KeyPair(j, kv.tokens[j], bool(cached[j]), bool(recomputed[j]), float(cached_w[j]),
                         float(recomputed_w[j])) for j in range(n))
    stale = [k for k in keys if k.stale]
    if len(stale) == 1:
        key = stale[0]
        said = ("'match'", "'no match'") if key.cached_match else ("'no match'", "'match'")
        keys_say = (f"the key of '{key.token}' (position {key.position + 1}) went stale: cached when n was smaller, "
                    f"it still says {said[0]}; encoded again with n = {n} it says {said[1]}")
    else:
        keys_say = (f"{len(stale)} of its keys went stale: cached with a smaller n, encoded again with n = {n} "
                    "they say otherwise")
    why = (f"Head '{differing.head}' reads n, the length so far, as no real model's key does: {keys_say} "
           f"({fmt(differing.kv_context)} with the cache against {fmt(differing.full_context)} recomputed).")
    return StaleLesson(check.step, head, differing.head, f"Show head '{differing.head}'", why, keys,
                       differing.kv_context, differing.full_context)


def cache_note(check: CacheCheck, cacheable: tuple[bool, ...] | list[bool]) -> str:
    """What holds when no context differs: "" when every head is cacheable (the page says so itself)."""
    if all(cacheable):
        return ""
    if check.step == 0:
        return ("A head reads n, but right after prefill every key was written with the whole prompt's n, "
                "so no cached key can be stale yet. Step on: the first new token changes n.")
    if check.stale:
        return ("A head reads n and some of its cached keys went stale, but at this step they do not change "
                "its context. Step on.")
    return "A head reads n, but none of its cached keys says anything else than encoding it again would, yet. Step on."


def repeat_note(trace: Trace, step: int) -> str:
    """One line when a greedy run chose the same word as the step before, saying why; else ""."""
    settings = trace.scenario.sampling
    if step < 1 or not (settings.strategy == "greedy" or settings.temperature == 0):
        return ""
    now, before = trace.steps[step], trace.steps[step - 1]
    if now.token != before.token:
        return ""
    return (f"Why '{now.token}' again? Greedy decoding takes the most likely word, and adding '{before.token}' "
            f"(value {fmt(before.value)}) moved the contexts too little to change it: a greedy toy repeats itself.")
