"""Everything the Prefill page shows at one query position, worked out at once: one call, one typed
result (its prose is in :mod:`words_prefill`).

The lesson screen (the frame at the position and the frames either side, which the board draws at a
click), the narration, and what each section says are computed here, so the page only lays them out.
Every head's frame for "Every head" stays a method: the section asks for it only while it is shown.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..engine.division import DivisionByZero, divisions_by_zero
from ..engine.explain import RowExplanation, explain_position, no_match_rows
from ..engine.model import Trace
from . import words_prefill as words
from .lesson import LessonFrame, Window, make_window, prefill_frame


@dataclass(frozen=True)
class PrefillView:
    """The Prefill page at query ``position`` (1-based) for head ``head``; sentences are Markdown with
    visitor text already escaped by the page's function."""

    trace: Trace
    position: int
    index: int  # the position as a 0-based row of the attention matrices
    head: int
    whole: bool  # every row and key, not only those around the position
    rows: tuple[RowExplanation, ...]  # what each head does at the position
    divisions: tuple[DivisionByZero, ...]  # rules that divided by zero in the prefill
    frame: LessonFrame  # the lesson screen
    ahead: LessonFrame | None  # the frame one position on (None at the last)
    behind: LessonFrame | None  # the frame one position back (None at the first)
    window: Window  # the rows and keys "Every head" shows
    narration: str  # what the position sees and what the head makes of it
    every_head: str  # the same for every head, as a list
    head_rule: str  # the head's name, rule, and whether its keys can be cached
    qk_by_rule: bool  # the rule reads q: no Q and K rows, scores written from the rule
    last_context: str  # the last position's context, before W_vocab
    sampled: str  # the sampling settings and the word they chose
    no_match: tuple[str, ...]  # rows where nothing matches (the first few)
    no_match_more: str  # how many more ("" when none)
    no_match_why: str  # why softmax still attends ("" when every row matches something)

    def frames(self) -> list[LessonFrame]:
        """Every head's frame at the position (the same window): for "Every head", while it is shown."""
        return [self.frame if h == self.head else prefill_frame(self.trace, self.position, h, whole=self.whole)
                for h in range(len(self.trace.scenario.head_names))]


def prefill_view(trace: Trace, position: int, head: int, whole: bool, esc: words.Escape) -> PrefillView:
    """The Prefill page of ``trace`` (a kv run: its prefill and its first prediction) at ``position``;
    ``esc`` escapes visitor text for Markdown."""
    pre, scenario = trace.prefill, trace.scenario
    n = len(pre.tokens)
    rows = explain_position(trace, position - 1)
    either = {p: prefill_frame(trace, p, head, whole=whole) if 1 <= p <= n else None for p in (position + 1, position - 1)}
    step = trace.steps[0]
    cases = no_match_rows(trace)
    more, why = ("", "")
    lines: tuple[str, ...] = ()
    if cases:
        lines, more, why = words.no_match(cases, esc)
    return PrefillView(
        trace=trace, position=position, index=position - 1, head=head, whole=whole, rows=tuple(rows),
        divisions=tuple(divisions_by_zero(trace)), frame=prefill_frame(trace, position, head, whole=whole),
        ahead=either[position + 1], behind=either[position - 1],
        window=make_window(n, n, position - 1, centre=True, whole=whole),
        narration=words.narration(pre.tokens, position, rows[head], esc),
        every_head=words.every_head(pre.tokens, position, rows, esc),
        head_rule=words.head_rule(scenario.head_names[head], scenario.heads[head].rule, trace.cacheable[head], esc),
        qk_by_rule=not bool(pre.q[head].abs().sum() > 0),
        last_context=words.last_context(pre.tokens[-1], step.context, esc),
        sampled=words.sampled(scenario.sampling, step.token, float(step.probs[step.sample.index]), esc),
        no_match=lines, no_match_more=more, no_match_why=why)
