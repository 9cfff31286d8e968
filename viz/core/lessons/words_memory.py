"""The Memory page's words: its fixed prose, and the sentences built from a pool's or a smaller
cache's numbers.

Small functions over typed values (no torch work). Every sentence is Markdown; the parts a visitor
may have typed (prompts, tokens) go through ``esc``, the page's escaping function. Byte counts are
written by ``size``, the page's byte formatter (the lessons do not import scale, which owns it).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..engine.explain import fmt
from ..text import step_label

Escape = Callable[[str], str]
Size = Callable[[float], str]

# the paged blocks' section
ITERATION_STEP = step_label("scheduler iteration")
ITERATION_STEP_HELP = ("One step is one scheduler iteration: every sequence computes its next token and "
                       "writes its entry into a slot of its blocks (step 0: after prefill).")
PREDICTION_STEP = step_label("prediction")
PREDICTION_STEP_HELP = ("One step is one prediction: the word a decode step chooses, from the full cache and "
                        "from the smaller one (prediction 0 comes right after prefill).")
CACHE_SAFE = "Use the cache-safe form of those heads on this page"
RESERVE_HELP = "A contiguous cache must reserve room for the longest answer it allows."
PROMPT_HELP = "Words it shares with an earlier prompt from the start can share blocks."
PAGED_INTRO = ("A contiguous cache reserves room for the longest answer a request might give. "
               "PagedAttention (vLLM) instead hands out fixed-size **blocks** as tokens arrive; each "
               "sequence's **block table** maps its logical blocks to physical ones anywhere in the pool, "
               "and prompts with a common prefix **share** its blocks, counted by reference.")
BLOCK_TABLES = "**Block tables** (logical block → physical block)"
BLOCK_TABLES_CAPTION = "Block tables: each sequence's logical blocks and the physical blocks they map to"
SEQUENCES_CAPTION = "The sequences: prompts, what they share, what they generate"
COMPARISON_CAPTION = ("Every prediction: entries kept, the errors, and the word each cache picks and its bytes "
                      "(full → compressed)")
WASTE_TITLE = "Memory for these sequences"

# the eviction and quantisation section
COMPRESS_LEAD = "Evicting or quantising keys shrinks the cache, and can change what the query attends to."
COMPRESS_INTRO = ("Two more ways to shrink a cache: **evict** keys (keep a recent window, plus the first "
                  "tokens as attention sinks, or drop chosen positions), or **quantise** them into fewer "
                  "bits. The same tokens go through the full cache and the smaller one; compare what "
                  "the query attends to, its context and the next word.")
SCALES_HELP = ("per-token: one scale per key row and per value. KIVI: keys per channel in groups of tokens, "
               "values per token, the newest tokens in full precision.")
COMPRESS_TITLE = "The smaller cache against the full cache"
PREDICTION_ZERO = ("Prediction 0 comes from the prefill pass, which reads the whole prompt; eviction "
                   "acts on the cache, so it shows from prediction 1 on.")
QUANTISE_NOTE = (
    "Every byte stored is counted: codes, float32 scales and the full-precision window. The toy's "
    "keys are ±1 (or 0), so both schemes store them exactly, and a per-token scale stores each "
    "token's single value exactly: here quantisation changes the bytes, not the answer. KIVI "
    "quantises keys per channel because real keys have a few large outlier channels that would "
    "swamp a per-token scale; it pays for that with one scale per channel every G tokens, so a "
    "larger G amortises them. Its values are quantised per token, and since the toy's value is one "
    "number, a value's scale costs more than its code saves. Simplified from KIVI: symmetric "
    "scales without a zero point, float32 instead of fp16 scales, and older tokens quantised in "
    "whole groups while at least the newest R stay in full precision.")


def scenario_prompt(tokens: Sequence[str], esc: Escape) -> str:
    """Sequence A's prompt, which is the scenario's (not editable here)."""
    return f"**A** (the scenario): {esc(' '.join(tokens))}"


def prompt_refused(name: str, message: str, esc: Escape) -> str:
    """A variant's prompt that the scenario refused, and what is used instead."""
    return f"Prompt {name}: {esc(message)} — using the default prompt."


def waste_helps(contiguous: int, reserve: int, never_filled: int, paged: int, blocks: int,
                fragmentation: int, shared_bytes: str) -> tuple[str, str, str, str]:
    """The memory stats' help lines: the contiguous reservation, what it never filled, the paged
    blocks in use, the tokens sharing stored once."""
    return (f"{contiguous} slots: each prompt + {reserve} new tokens.",
            f"{never_filled} reserved slots the answers did not need.",
            f"{paged} slots in {blocks} blocks; {fragmentation} of them empty at the ends of blocks.",
            f"{shared_bytes} that prefix sharing did not store twice.")


def shared_tokens(shared: int) -> str:
    return f"{shared} tokens"


def sharing_check(identical: bool, unshared_slots: int, shared_slots: int) -> str:
    """Decoding with shared blocks against decoding each sequence alone."""
    verdict = "identical" if identical else "DIFFERENT"
    return (f"Every word, context and logit with shared blocks is {verdict} to decoding each "
            f"sequence alone ({unshared_slots} slots without sharing, {shared_slots} with).")


def bytes_delta(saved: int, size: Size) -> str | None:
    """What the smaller cache saved against the full one ("-1.2 KiB vs full"), None when nothing."""
    return (f"-{size(saved)} vs full" if saved > 0 else f"+{size(-saved)} vs full" if saved < 0 else None)


def full_bytes(nbytes: str) -> str:
    return f"Full cache: {nbytes} after the last prediction."


def error(value: float) -> str:
    return f"{value:.3g}"


def first_change(first: int | None) -> str:
    return "none" if first is None else f"prediction {first}"


def outputs(full: Sequence[str], label: str, smaller: Sequence[str], esc: Escape) -> str:
    """The words the full cache and the smaller one generate, one line each."""
    return (f"**Full cache** generates: {esc(' '.join(full))}  \n"
            f"**{esc(label)}** generates: {esc(' '.join(smaller))}")


def prediction_label(k: int, after: str) -> str:
    """The stepper's name for prediction ``k`` (plain text, escaped by the stepper)."""
    return f"{k} · after {after}"


def prediction_narration(k: int, after: str, kept: int, total: int, quantise: bool, moved: str | None,
                         before: float, now: float, full_word: str, smaller_word: str) -> str:
    """What prediction ``k`` shows, in plain text (the page escapes it): the keys the smaller cache
    holds, the head whose context moves most (``moved``, None when none moves: ``before`` and ``now``
    are its contexts) and whether the chosen word changed. Eviction's prediction 0 is the prefill's."""
    if k == 0 and not quantise:
        return PREDICTION_ZERO
    held = (f"the smaller cache holds all {total} keys, in fewer bits" if quantise
            else f"the smaller cache holds {kept} of the {total} keys")
    head = (f"head '{moved}' moves most, its context from {fmt(before)} to {fmt(now)}" if moved is not None
            else "no head's context moves")
    word = (f"both caches choose '{full_word}'" if full_word == smaller_word
            else f"the full cache chooses '{full_word}', the smaller one '{smaller_word}': the word changed")
    return f"Prediction {k}, after '{after}': {held}; {head}; {word}."


def drop_label(position: int, token: str) -> str:
    """A prompt position in the eviction picker: '2 · weather'."""
    return f"{position} · {token}"
