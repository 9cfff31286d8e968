"""Everything the Decode page shows, worked out at once: one call, one typed result.

The page's lesson screen (the narration, the stale-cache warning, the frame and the frames a Step or
a Back click shows next, the stale-cache lesson, the repeat note) and its sections (the cache against
recomputation, the work, the text so far) share the runs and the cache check; worked out here
before anything is drawn, they can be laid out in any order, and the page only lays them out. The
runs come in from the page (the Streamlit layer shares them across sessions); the replay, which
builds a frame per step reached, stays outside: the page asks for it only while its section is shown.

Selecting, comparing and wording only: every number was computed by the engine.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ..engine.budget import Grant
from ..engine.division import DivisionByZero, divisions_by_zero
from ..engine.explain import CacheCheck, check_cache, narrate_step
from ..engine.model import MODES, Trace
from ..engine.scenario import MAX_DECODE_STEPS
from . import words_decode as words
from .lesson import LessonFrame, Transcript, decode_frame, transcript
from .stale import StaleLesson, cache_note, repeat_note, stale_lesson


def decode_modes(mode: str, work_open: bool) -> tuple[str, ...]:
    """The runs the page needs, in MODES order: the one shown, the two the cache check compares, and
    re-encode only for the Work section's chart (compute only what is shown)."""
    wanted = {mode, "kv", "recompute"} | ({"reencode"} if work_open else set())
    return tuple(m for m in MODES if m in wanted)


@dataclass(frozen=True)
class CacheNumbers:
    """The KV run's cache as the "Cache vs recompute" section counts it."""

    entries: int
    entries_delta: int | None  # +1 after a decode step (None right after prefill)
    nbytes: int  # bytes held (K + V)
    reserved: int  # bytes allocated
    grew: int  # times the buffers grew
    per_entry: str  # one sentence: what one entry holds


@dataclass(frozen=True)
class DecodeView:
    """Every number and sentence the Decode page shows for one step, one run and one head."""

    step: int  # the step asked for
    shown: Trace  # the run shown (the picked mode)
    shown_step: int  # the step asked for, or as far as the work budget let this run go
    compared: int  # the latest step both the KV and the recomputed run reached
    traces: Mapping[str, Trace]  # every run computed (re-encode only while the Work section is open)
    heads: tuple[str, ...]  # the heads' names
    budget_notes: tuple[str, ...]  # why a run stopped short of the step asked for (each once)
    narration: str  # what this step did (the page escapes it)
    check: CacheCheck  # the KV cache against recomputation at ``compared``
    stale: StaleLesson | None  # the head whose cache went stale, side by side (None when none did)
    stale_shown: bool  # that head is the head shown: the warning says why, the side by side is drawn
    beside: Mapping[int, StaleLesson]  # the side by side in the next word's place, by the step of the frame it
    # stands beside (this one, and those sent ahead) where the head shown went stale; other steps: the next word
    warnings: tuple[str, ...]  # each differing head's sentence, beside the narration (none when all agree),
    # after one saying so where the run shown uses no KV cache (the warning is about what a cache would give)
    divisions: tuple[DivisionByZero, ...]  # heads whose rule divided by zero at this step
    frame: LessonFrame  # the lesson screen
    after: LessonFrame | None  # the frame a Step click shows next (None when none is sent)
    before: LessonFrame | None  # the frame a Back click shows next
    repeat: str  # why a greedy run said the same word again ("" when it did not)
    cache: CacheNumbers
    compared_note: str  # said when the recomputed run stopped short of the step asked for ("")
    gap: str  # the largest |difference| in the context, formatted
    head_texts: tuple[str, ...]  # each differing head's explanation (the compare section)
    cache_info: str  # what holds when no context differs but a head is not cacheable ("")
    agreed: str  # said when every head is cacheable ("")
    work_plotted: bool  # a decode step was taken: the Work section plots the runs' work
    work_caption: str  # the Work section's sentence (the prefill's scores at step 0)
    transcript: Transcript  # the text so far, and the word the step chooses

    @property
    def newest_key(self) -> bool:
        """Whether the lesson screen outlines the key each step writes (the KV cache's run only)."""
        return self.shown.mode == "kv"


def decode_view(traces: Mapping[str, Trace], grants: Mapping[str, Grant], following: Mapping[str, Trace] | None,
                step: int, mode: str, head: int, whole: bool = False) -> DecodeView:
    """The Decode page at ``step`` for the run ``mode`` and head ``head`` (``whole``: every row and
    key). ``traces``: each run up to ``step`` or as far as the budget let it go (the KV and the
    recomputed run always, ``mode``'s too); ``grants``: how far each was let go; ``following``: each
    run one step further, or None when that step was not computed."""
    kv, full, shown = traces["kv"], traces["recompute"], traces[mode]
    shown_step = len(shown.steps) - 1
    compared = min(len(kv.steps), len(full.steps)) - 1
    check = check_cache(kv, full, compared)
    stale = stale_lesson(kv, full, check)
    stale_shown = stale is not None and stale.head == head
    frame = decode_frame(shown, kv, full if mode == "kv" else None, shown_step, head, whole=whole)
    after, before = _turns(traces, following, step, shown_step, compared, mode, head, whole)
    beside = {frame.step: stale} if stale_shown else {}
    return DecodeView(
        step=step, shown=shown, shown_step=shown_step, compared=compared, traces=traces,
        heads=tuple(shown.scenario.head_names),
        budget_notes=tuple(dict.fromkeys(g.note for g in grants.values() if g.note)),
        narration=narrate_step(shown, shown_step), check=check, stale=stale, stale_shown=stale_shown,
        beside={**beside, **_stale_ahead(traces, following, after, before, compared, head)},
        warnings=_warnings(check, stale, stale_shown, mode),
        divisions=tuple(divisions_by_zero(shown, shown_step)), frame=frame, after=after, before=before,
        repeat=repeat_note(shown, shown_step), cache=_cache_numbers(kv),
        compared_note=words.compared_at(compared) if compared < step else "", gap=f"{check.max_gap:.3g}",
        head_texts=tuple(h.text for h in check.differing),
        cache_info=cache_note(check, kv.cacheable) if not check.differing else "",
        agreed=words.AGREED if not check.differing and all(kv.cacheable) else "",
        work_plotted=step > 0, work_caption=_work_caption(traces, step, compared),
        transcript=transcript(shown, shown_step))


def _warnings(check: CacheCheck, stale: StaleLesson | None, stale_shown: bool, mode: str) -> tuple[str, ...]:
    """The stale-cache warning: each differing head's sentence (the stale head's longer one while it is
    shown), said to be about a KV cache first where the run shown uses none."""
    said = tuple(stale.why if stale_shown and h.head == stale.name else h.summary for h in check.differing)
    return ((words.WITHOUT_CACHE,) if said and mode != "kv" else ()) + said


def _turns(traces: Mapping[str, Trace], following: Mapping[str, Trace] | None, step: int, shown_step: int,
           compared: int, mode: str, head: int, whole: bool) -> tuple[LessonFrame | None, LessonFrame | None]:
    """The frames a Step or a Back click shows next, sent ahead so the board draws them at the click
    (the rerun the click starts then brings the same numbers with the narration); None where there
    is none to send."""
    kv, full, shown = traces["kv"], traces["recompute"], traces[mode]
    after = None
    if following is not None and shown_step == step < MAX_DECODE_STEPS:
        after = decode_frame(following[mode], following["kv"], following["recompute"] if mode == "kv" else None,
                             step + 1, head, whole=whole)
    # the step before only when the recomputed run reached this step: then both the early frame and
    # the one the server shows after Back compare the cache at that step
    before = (decode_frame(shown, kv, full if mode == "kv" else None, shown_step - 1, head, whole=whole)
              if 0 < shown_step == step and (mode != "kv" or compared >= step) else None)
    return after, before


def _stale_ahead(traces: Mapping[str, Trace], following: Mapping[str, Trace] | None, after: LessonFrame | None,
                 before: LessonFrame | None, compared: int, head: int) -> dict[int, StaleLesson]:
    """The stale-cache lessons beside the frames a Step or a Back click shows next, by their step, where
    the head shown is the one that went stale then: the board draws them at the click in the next word's
    place, as the server shows them after it (at the step both runs reached)."""
    ahead = []
    if after is not None:  # sent only when every run, the KV and the recomputed one too, reached it
        ahead.append((after.step, following["kv"], following["recompute"], after.step))
    if before is not None:
        ahead.append((before.step, traces["kv"], traces["recompute"], min(before.step, compared)))
    lessons = {}
    for step, kv, full, compared_then in ahead:
        lesson = stale_lesson(kv, full, check_cache(kv, full, compared_then))
        if lesson is not None and lesson.head == head:
            lessons[step] = lesson
    return lessons


def _cache_numbers(kv: Trace) -> CacheNumbers:
    cache, scenario = kv.cache, kv.scenario
    return CacheNumbers(len(cache), 1 if len(kv.steps) > 1 else None, cache.nbytes, cache.allocated_nbytes,
                        cache.growth_events, words.per_entry(len(scenario.heads), scenario.d_k, cache.element_size))


def _work_caption(traces: Mapping[str, Trace], step: int, compared: int) -> str:
    kv, full = traces["kv"], traces["recompute"]
    if step == 0:
        return words.before_decode(kv.prefill.attention.counts.scores, len(kv.scenario.tokens))
    return words.work_compared(kv.steps[compared].seq_len, len(kv.scenario.heads),
                               full.steps[min(compared, len(full.steps) - 1)].counts,
                               kv.steps[min(compared, len(kv.steps) - 1)].counts)
