"""What the papers behind Serving measured, beside the toy's own numbers (issue 31's missing lessons
2 and 4), as typed results Serving's section views carry into a "Why it matters" fold.

* :func:`speculation_lesson`: speculative decoding's expected tokens per target pass and speed-up
  (Leviathan et al., ICML 2023), the best k for the measured acceptance rate, and why it pays less
  at large batch (verification becomes compute-bound past the GPU's ridge point).
* :func:`chunking_lesson`: vLLM V1's token budget and Sarathi-Serve's reason (Agrawal et al., OSDI 2024).

Memory's lessons (PagedAttention, sinks and eviction) are in :mod:`viz.core.lessons.papers`, which
shares :class:`Lesson`. Every constant quoted from a paper is a module constant with its source beside it.
What this module does not do: run the toy (the views pass its results in) or draw; the GPU's name and
ridge point come in as arguments (serving never imports scale).
"""

from __future__ import annotations

from dataclasses import dataclass

from .speculative import RoundsSummary

# a dense decode pass reads each 16-bit weight (2 bytes) once and does 2 FLOPs per weight per token
FLOPS_PER_WEIGHT, BYTES_PER_WEIGHT = 2, 2


@dataclass(frozen=True)
class Lesson:
    """A fold's worth of teaching: a title and paragraphs, sources named in the text."""

    title: str
    paragraphs: tuple[str, ...]  # plain text: a page escapes each and shows it as a paragraph


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
