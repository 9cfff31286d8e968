"""Everything the Memory page shows, worked out at once per section: one call, one typed result (its
prose is in :mod:`words_memory`).

The page builds only the shown section, so each section has its view: :func:`paged_view` (the paged pool
stepped through its scheduler iterations, what it saved, and the check that sharing changes no
word) and :func:`compress_view` (a smaller cache against the full one). Both are computed before
anything of their section is drawn, so the page only lays them out. Byte counts are written by
``size``, the page's byte formatter, and visitor text is escaped by ``esc``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..engine.budget import grant_compare, grant_paged
from ..engine.explain import NEAR_ZERO
from ..engine.scenario import Scenario
from ..serving import compress, paged  # called through their modules: the budget tests wrap their functions
from ..serving.compress import CacheComparison, CacheSpec
from ..serving.paged import PagedRun, same_outputs
from ..serving.sequence import Request
from . import words_memory as words
from .papers import Lesson, eviction_lesson, paged_lesson
from .pool import pool_narration, sequences_key


@dataclass(frozen=True)
class PagedView:
    """The paged pool's section: the run, each iteration's narration, and what the pool saved."""

    run: PagedRun
    names: tuple[str, ...]  # the sequences' names (A, B, C…), the pool's legend
    reserve: int  # new tokens reserved per prompt by the contiguous cache (cut to what fits)
    grant_note: str  # why the view was cut to what one click computes ("" when it was not)
    labels: tuple[str, ...]  # each scheduler iteration's name, for the stepper
    narrations: tuple[str, ...]  # what each iteration did to the pool
    key: str  # who the sequences A, B, C… are
    system: str  # the sharing system the pool shows
    contiguous: str  # the contiguous reservation's bytes
    never_filled: str  # the reserved bytes the answers did not need
    paged: str  # the paged blocks' bytes in use
    shared: str  # the tokens prefix sharing stored once
    helps: tuple[str, str, str, str]  # the four stats' help lines, in that order
    lesson: Lesson  # "Why it matters"
    check: str  # the outputs with shared blocks against each sequence alone ("" when not run)
    opening: int  # the iteration the stepper opens on, and a new run again: the first (A's prompt in its blocks)


def paged_view(scenario: Scenario, requests: list[Request], steps: int, block_size: int, reserve: int,
               share: bool, size: words.Size) -> PagedView:
    """The pool for ``requests`` on ``scenario`` (cut to what one click may compute), with the second
    run without sharing that checks the outputs when sharing was on and there is room for it."""
    grant = grant_paged(scenario, [len(r.tokens) for r in requests], steps, block_size, reserve)
    requests, reserve = [replace(r, max_new_tokens=grant.granted) for r in requests], grant.reserve
    run = paged.decode_together(scenario, requests, block_size, share_prefix=share, max_new_tokens=reserve)
    waste = run.waste
    check = ""
    if run.sharing and grant.compare:
        unshared = paged.decode_together(scenario, requests, block_size, share_prefix=False,
                                         max_new_tokens=reserve)
        check = words.sharing_check(same_outputs(run, unshared), unshared.waste.paged_slots, waste.paged_slots)
    return PagedView(
        run=run, names=tuple(s.name for s in run.sequences), reserve=reserve, grant_note=grant.note,
        labels=tuple(s.label for s in run.snapshots),
        narrations=tuple(pool_narration(run, i) for i in range(len(run.snapshots))),
        key=sequences_key(run), system=run.system.sentence,
        contiguous=size(waste.nbytes(waste.contiguous_slots)), never_filled=size(waste.nbytes(waste.contiguous_waste)),
        paged=size(waste.nbytes(waste.paged_slots)), shared=words.shared_tokens(waste.shared),
        helps=words.waste_helps(waste.contiguous_slots, reserve, waste.contiguous_waste, waste.paged_slots,
                                waste.paged_blocks, waste.fragmentation, size(waste.nbytes(waste.shared))),
        lesson=paged_lesson(waste.tokens, waste.contiguous_slots, waste.paged_slots, waste.block_size),
        check=check, opening=0)


@dataclass(frozen=True)
class CompressView:
    """The eviction and quantisation section: the smaller cache against the full one."""

    comparison: CacheComparison
    grant_note: str  # why the view was cut to what one click computes ("" when it was not)
    held: str  # the smaller cache's bytes after the last prediction
    held_delta: str | None  # what it saved against the full cache (None when the same)
    held_help: str  # the full cache's bytes
    context_error: str  # the largest context error
    logit_error: str  # the largest logit error
    first_change: str  # the first prediction whose word changed
    outputs: str  # the words each cache generates
    labels: tuple[str, ...]  # each prediction's name, for the stepper
    narrations: tuple[str, ...]  # what each prediction shows, plain text, under the attention
    quantise: bool  # the smaller cache quantises (no eviction, no prefill caveat)
    lesson: Lesson | None  # "Why it matters" for eviction (None when quantising)
    note: str  # what quantisation counts and simplifies ("" when evicting)
    opening: int  # the prediction the stepper opens on, and a new run again (see compress_view)


def compress_view(scenario: Scenario, steps: int, spec: CacheSpec, quantise: bool, size: words.Size,
                  esc: words.Escape) -> CompressView:
    """``spec``'s smaller cache against the full one over ``steps`` predictions (cut to what one click
    may compute); raises ValueError for a spec or a length the comparison refuses."""
    grant = grant_compare(scenario, steps)
    comparison = compress.compare_with_full(scenario, grant.granted, spec)
    last, n, tokens = comparison.steps[-1], len(scenario.tokens), comparison.tokens
    return CompressView(
        comparison=comparison, grant_note=grant.note, held=size(last.nbytes_compressed),
        held_delta=words.bytes_delta(comparison.bytes_saved, size), held_help=words.full_bytes(size(last.nbytes_full)),
        context_error=words.error(comparison.max_context_error), logit_error=words.error(comparison.max_logit_error),
        first_change=words.first_change(comparison.first_change),
        outputs=words.outputs(tokens[n:], spec.label, comparison.free_tokens[n:], esc),
        labels=tuple(words.prediction_label(k, tokens[len(s.positions) - 1]) for k, s in enumerate(comparison.steps)),
        narrations=tuple(_narration(step, tokens, scenario.head_names, quantise) for step in comparison.steps),
        quantise=quantise,
        lesson=None if quantise else eviction_lesson(spec.policy.sinks if spec.policy else 0, comparison.first_change),
        note=words.QUANTISE_NOTE if quantise else "",
        # prediction 1, the first the smaller cache answers: prediction 0 comes from the prefill pass,
        # which reads the prompt itself, so both sides of its attention are the same
        opening=min(1, len(comparison.steps) - 1))


def _narration(step: compress.StepComparison, tokens: list[str], heads: list[str], quantise: bool) -> str:
    """One prediction in words: what the smaller cache holds, the head it moves most, the word chosen."""
    change = (step.context_compressed - step.context_full).abs()
    head = int(change.argmax())
    moved = heads[head] if float(change[head]) > NEAR_ZERO else None
    return words.prediction_narration(step.index, tokens[len(step.positions) - 1], int(step.kept.sum()),
                                      len(step.positions), quantise, moved, float(step.context_full[head]),
                                      float(step.context_compressed[head]), step.token_full, step.token_compressed)
