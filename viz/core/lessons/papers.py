"""What the papers behind Memory and Serving measured, beside the toy's own numbers (issue 31's
missing lessons 1, 2, 4 and 5), as typed results the pages show in a "Why it matters" fold.

* :func:`paged_lesson`: PagedAttention's figures (Kwon et al., SOSP 2023) and its three kinds of
  waste, beside the toy's contiguous and paged slots.
* :func:`speculation_lesson`: speculative decoding's expected tokens per target pass and speed-up
  (Leviathan et al., ICML 2023), the best k for the measured acceptance rate, and why it pays less
  at large batch (verification becomes compute-bound past the GPU's ridge point).
* :func:`chunking_lesson`: vLLM V1's token budget and Sarathi-Serve's reason (Agrawal et al., OSDI 2024).
* :func:`eviction_lesson`: attention sinks and StreamingLLM (Xiao et al., ICLR 2024), and eviction by
  score (H2O, Zhang et al., NeurIPS 2023; SnapKV, Li et al., NeurIPS 2024), which cannot be undone.

Every constant quoted from a paper is a module constant with its source beside it.
What this module does not do: run the toy (the pages pass its results in) or draw.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..serving.speculative import RoundsSummary

# Kwon et al., "Efficient Memory Management for Large Language Model Serving with PagedAttention",
# SOSP 2023: §1 and Fig. 2 (20.4%-38.2% of KV memory holds tokens in existing systems), §1 (vLLM
# wastes under 4%), abstract (2-4x throughput at the same latency as FasterTransformer and Orca).
PAGED_WASTE_BEFORE = (60, 80)  # % of KV-cache memory existing systems wasted
PAGED_WASTE_VLLM = 4  # % at most with vLLM
PAGED_THROUGHPUT = (2, 4)  # × throughput
# Xiao et al., "Efficient Streaming Language Models with Attention Sinks", ICLR 2024, §3.2
STREAMING_SINKS = 4
# a dense decode pass reads each 16-bit weight (2 bytes) once and does 2 FLOPs per weight per token
FLOPS_PER_WEIGHT, BYTES_PER_WEIGHT = 2, 2


@dataclass(frozen=True)
class Lesson:
    """A fold's worth of teaching: a title and paragraphs, sources named in the text."""

    title: str
    paragraphs: tuple[str, ...]  # plain text: a page escapes each and shows it as a paragraph


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


def expected_tokens(alpha: float, k: int) -> float:
    """Tokens one target pass yields on average with k guesses, each kept with probability alpha:
    (1 − α^(k+1)) / (1 − α) (Leviathan et al. 2023, eq. 1); k + 1 when every guess is kept."""
    if alpha >= 1:
        return float(k + 1)
    return (1 - alpha ** (k + 1)) / (1 - alpha)


def speedup(alpha: float, k: int, cost: float) -> float:
    """Walltime speed-up over plain decoding when a draft pass costs ``cost`` target passes:
    (1 − α^(k+1)) / ((1 − α)(k·c + 1)) (Leviathan et al. 2023, theorem 3.8)."""
    return expected_tokens(alpha, k) / (k * cost + 1)


def best_k(alpha: float, cost: float, most: int) -> int:
    """The k from 1 to ``most`` with the largest speed-up (the smallest on a tie)."""
    return max(range(1, most + 1), key=lambda k: (speedup(alpha, k, cost), -k))


@dataclass(frozen=True)
class SpeculationLesson(Lesson):
    alpha: float  # the measured acceptance rate
    k: int
    expected: float  # tokens per target pass the formula gives for alpha and k
    measured: float  # words per verification pass the run made
    best: int  # the k with the largest speed-up at the assumed draft cost
    compute_bound_batch: int  # sequences from which verifying k + 1 tokens each is compute-bound


DRAFT_COST = 0.05  # a draft pass as a share of a target pass (a draft ~20× smaller), assumed


def speculation_lesson(run: RoundsSummary, k: int, most: int, *, gpu: str, ridge: float) -> SpeculationLesson:
    """The expected tokens per target pass and the speed-up model, from the run's measured α; ``ridge``
    is the FLOPs per byte at which ``gpu`` turns compute-bound (16-bit, as At scale's roofline)."""
    alpha, words, rounds = run.acceptance, len(run.words) - 1, len(run.rounds)  # words after the prefill's
    expected, measured = expected_tokens(alpha, k), words / max(rounds, 1)
    best = best_k(alpha, DRAFT_COST, most)
    batch = max(1, int(ridge * BYTES_PER_WEIGHT / FLOPS_PER_WEIGHT) // (k + 1) + 1)
    paragraphs = (
        f"With k guesses each kept with probability α, one target pass yields on average "
        f"(1 − α^(k+1)) / (1 − α) tokens (Leviathan et al., ICML 2023). The toy kept α = {alpha:.2f} of its "
        f"guesses: with k = {k} the formula gives {expected:.2f} tokens per target pass; after the prefill the run "
        f"made {words} words in {rounds} verification passes, {measured:.2f} each (the formula assumes every guess is "
        "kept alike and independently; the last round of a run may also be cut short).",
        f"If a draft pass costs c target passes, the speed-up is (1 − α^(k+1)) / ((1 − α)(k·c + 1)): "
        f"{speedup(alpha, k, DRAFT_COST):.2f}× for α = {alpha:.2f}, k = {k} and c = {DRAFT_COST} (a draft about "
        f"{round(1 / DRAFT_COST)}× cheaper). More guesses pay while α is high and drafts are cheap; here the "
        f"best k is {best}. A low α makes every extra guess wasted work.",
        f"All of this assumes a target pass over k + 1 tokens costs about as much as over one, which holds "
        f"while decoding is memory-bound: the pass reads every weight once however many tokens it checks. "
        f"A batch of B sequences verifying k + 1 tokens each does about B·(k + 1) FLOPs per byte of weights; "
        f"past the {gpu}'s ridge point ({ridge:.0f} FLOPs per byte, At scale's roofline) the pass is "
        f"compute-bound and costs in proportion to its tokens. With k = {k} that happens from about "
        f"{batch} sequences: then rejected guesses cost real FLOPs, and speculation pays less, or nothing.")
    return SpeculationLesson("Why it matters: how much speculation can save", paragraphs, alpha, k, expected,
                             measured, best, batch)


def chunking_lesson(chunk: int) -> Lesson:
    """vLLM V1's token budget and Sarathi-Serve's reason, beside the toy's chunk."""
    return Lesson("Why it matters: chunked prefill in real servers", (
        "vLLM V1 always chunks: each scheduler step has a token budget (max_num_batched_tokens); running "
        "requests' decodes are scheduled first, and prompt tokens fill what is left of the budget, so a "
        "long prompt is spread over several steps.",
        "Sarathi-Serve (Agrawal et al., OSDI 2024) gives the reason: a decode computes one token per "
        "sequence and is memory-bound (it reads all the weights for little arithmetic), while a prompt "
        "chunk of a few hundred tokens is compute-bound. Decodes that ride along with a chunk cost almost "
        "nothing extra, and no step grows longer than the budget allows, so running requests never stall "
        "behind a long prompt.",
        f"Here the budget is the chunk: at most {chunk} prompt tokens per iteration beside the decodes. The "
        "toy's clock charges every token alike, so it shows the shorter stalls (above) but not the free "
        "ride, which needs a GPU's roofline."))


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
