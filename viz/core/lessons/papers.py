"""What the papers behind Memory measured, beside the toy's own numbers (issue 31's missing lessons
1 and 5), as typed results the page shows in a "Why it matters" fold.

* :func:`paged_lesson`: PagedAttention's figures (Kwon et al., SOSP 2023) and its three kinds of
  waste, beside the toy's contiguous and paged slots.
* :func:`eviction_lesson`: attention sinks and StreamingLLM (Xiao et al., ICLR 2024), and eviction by
  score (H2O, Zhang et al., NeurIPS 2023; SnapKV, Li et al., NeurIPS 2024), which cannot be undone.

Serving's (speculative decoding, chunked prefill) are in :mod:`viz.core.serving.papers`, with the
:class:`Lesson` both share, so Serving's section views carry them (serving never imports the lessons).
Every constant quoted from a paper is a module constant with its source beside it.
What this module does not do: run the toy (the pages pass its results in) or draw.
"""

from __future__ import annotations

from ..serving.papers import Lesson

# Kwon et al., "Efficient Memory Management for Large Language Model Serving with PagedAttention",
# SOSP 2023: §1 and Fig. 2 (20.4%-38.2% of KV memory holds tokens in existing systems), §1 (vLLM
# wastes under 4%), abstract (2-4x throughput at the same latency as FasterTransformer and Orca).
PAGED_WASTE_BEFORE = (60, 80)  # % of KV-cache memory existing systems wasted
PAGED_WASTE_VLLM = 4  # % at most with vLLM
PAGED_THROUGHPUT = (2, 4)  # × throughput
# Xiao et al., "Efficient Streaming Language Models with Attention Sinks", ICLR 2024, §3.2
STREAMING_SINKS = 4


def _pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:.0f}%" if whole else "0%"


def paged_lesson(tokens: int, contiguous_slots: int, paged_slots: int, block_size: int) -> Lesson:
    """PagedAttention's measurements beside the toy's: slots reserved contiguously and in blocks."""
    never, empty = contiguous_slots - tokens, paged_slots - min(tokens, paged_slots)
    return Lesson("Why it matters: what the PagedAttention paper measured", (
        f"Kwon et al. (PagedAttention, SOSP 2023) found that serving systems of the time used only 20–38% "
        f"of their KV-cache memory for tokens: {PAGED_WASTE_BEFORE[0]}–{PAGED_WASTE_BEFORE[1]}% was wasted. "
        f"vLLM, which hands out blocks, wastes under {PAGED_WASTE_VLLM}%, and so serves "
        f"{PAGED_THROUGHPUT[0]}–{PAGED_THROUGHPUT[1]}× more requests at the same latency.",
        "The paper names three kinds of waste in a contiguous cache: reservation (slots held for tokens "
        "a request has not generated yet), internal fragmentation (slots reserved up to the longest "
        "answer allowed that the answer never fills) and external fragmentation (gaps the memory "
        "allocator leaves between requests' buffers). Blocks remove the first two up to one partly filled "
        "block per sequence, and the third entirely, since any free block will do.",
        f"Here: the contiguous layout reserves {contiguous_slots} slots for {tokens} tokens, so "
        f"{never} ({_pct(never, contiguous_slots)}) are never filled (internal fragmentation); "
        f"blocks of {block_size} use "
        f"{paged_slots} slots, {empty} of them empty ({_pct(empty, paged_slots)}). The toy gives each "
        "contiguous buffer its own tensor, so it shows no external fragmentation."))


def eviction_lesson(sinks: int, first_change: int | None) -> Lesson:
    """Why sinks exist, StreamingLLM, and eviction by score, beside what the toy's eviction changed."""
    changed = ("no predicted word changed" if first_change is None
               else f"prediction {first_change} is the first word that changed")
    return Lesson("Why it matters: sinks, StreamingLLM and eviction by score", (
        "Softmax must hand out a total weight of 1 even when no key is relevant, so trained models learn to "
        "park the spare weight on the first tokens, which every query can see: attention sinks. Evict them "
        "and the weight spreads over the other keys, and the output degrades at once.",
        f"StreamingLLM (Xiao et al., ICLR 2024) keeps {STREAMING_SINKS} sink tokens and a window of recent "
        "ones, and gives positions by place in the cache, not in the text, so the positional encoding never "
        "sees a distance it was not trained on. The toy keeps each key's original position, so its rules "
        "still read where a key was in the text.",
        "Eviction cannot be undone: a key dropped is gone for every later query, even one that would have "
        "needed it. H2O (Zhang et al., NeurIPS 2023) keeps the 'heavy hitters', the keys with the most "
        "attention so far; SnapKV (Li et al., NeurIPS 2024) picks, per head, the prompt keys that the last "
        "prompt tokens attend to most. Both choose by score, and both still guess what later queries need.",
        f"Here, with {sinks} sink token{'s' if sinks != 1 else ''}, {changed} against the full cache."))
