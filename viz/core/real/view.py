"""Everything the Real model page shows, worked out at once: one call, one typed result.

The page's tabs (prefill, decode with the KV cache, K/V heads, cache vs no cache, heads that look
like rules) read the same prompt, the same decode session and the same cache. Worked out here
before any tab is drawn, after the decode step's buttons have moved the session, the tabs can be
laid out in any order. Timing generation with and without the cache (seconds) stays outside: the
page runs it only when asked ("Run both ways").
"""

from __future__ import annotations

from dataclasses import dataclass

from ..engine.scenario import Head
from ..rules.language import RuleError
from . import words
from .loading import ModelShape, Prompt, RealModel, piece, training_report
from .model import CacheSnapshot, DecodeSession, PrefillResult, measure_cache
from .rules_match import TOY_RULES, HeadMatch, RuleMatches, match_heads

COMPARE_MAX, COMPARE_DEFAULT = 128, 48  # tokens generated both ways: at most, and to start with
NEXT_SHOWN = 10  # the next token's most likely candidates shown after a decode step


@dataclass(frozen=True)
class RealView:
    """Every number and sentence the Real model page shows (the timed comparison aside)."""

    real: RealModel
    shape: ModelShape
    model_class: str  # the transformers class, e.g. GPT2LMHeadModel
    device: str
    report: dict | None  # the shipped model's training.json (None for another folder)
    prompt: Prompt
    prefill: PrefillResult  # the prompt's pass: attention of every head, the first prediction
    prompt_note: str
    # decode with the KV cache, after this run's steps
    generated: int  # tokens generated so far
    can_step: bool  # the context has room for one more token
    narration: str  # plain text
    transcript: str  # the prompt and what followed, plain text
    pieces: tuple[str, ...]  # every token so far (prompt and generated)
    history: tuple[tuple[int, int, int], ...]  # after each step: (tokens, bytes measured, formula bytes)
    growth: tuple[tuple[int, int, int], ...]  # the same after shorter prompts, then after each step
    next_tokens: tuple[tuple[str, float], ...]  # the next token's most likely pieces, with probabilities
    snapshot: CacheSnapshot
    cache_note: str
    formula_delta: str  # "equal" or "different"
    # K/V heads
    gqa_lead: str  # the tab's one sentence
    gqa_intro: str
    per_token: str  # cache bytes per token, measured
    mha_per_token: str  # the same with one K/V head per query head
    smaller_by: str
    gqa_stats: tuple[words.GqaFigure, ...]  # the row of figures under them: each a different number
    shipped: tuple[tuple[str, RealModel, CacheSnapshot], ...]  # both shipped models on this prompt
    # cache vs no cache
    room: int  # tokens the prompt leaves in the context
    compare_max: int  # the most tokens the comparison may generate (0: too little room to compare)
    compare_default: int
    # heads that look like rules
    matches: RuleMatches | None  # None when the prompt is shorter than 2 tokens
    rule_error: str  # why the visitor's rule was refused ("" when it was not, or there is none)
    beats_chance: int  # heads above chance on their best rule
    chance_line: str  # Markdown: how many heads beat chance, or that none does

    @property
    def appended(self) -> bool:
        """Whether a decode step has appended an entry to the cache (after the prefill none has)."""
        return self.generated > 0

    def prefill_top(self, k: int) -> list[tuple[str, float]]:
        """The ``k`` most likely tokens after the prompt, as pieces with their probabilities."""
        return [(piece(self.real, i), p) for i, p in self.prefill.prediction.top_k(k)]

    def head_options(self) -> dict[str, str]:
        """Every real head's label, and how the picker names it (the rule it looks most like, its score)."""
        m = self.matches
        return {h.label: words.head_option(h, m.rules[h.best].name) for h in m.heads} if m else {}

    def head_match(self, label: str) -> tuple[HeadMatch, Head]:
        """The real head called ``label`` and the rule it looks most like."""
        match = next(h for h in self.matches.heads if h.label == label)
        return match, self.matches.rules[match.best]


def _matches(prefill: PrefillResult, pieces: list[str], rule: str) -> tuple[RuleMatches, str]:
    """Every head against the toy's rules, and the visitor's rule too when it compiles (else why not)."""
    if rule:
        try:
            return match_heads(prefill.attentions, pieces, TOY_RULES + (Head("your rule", rule),)), ""
        except RuleError as err:
            return match_heads(prefill.attentions, pieces, TOY_RULES), str(err)
    return match_heads(prefill.attentions, pieces, TOY_RULES), ""


def real_view(session: DecodeSession, rule: str = "",
              shipped: tuple[tuple[str, RealModel], ...] = ()) -> RealView:
    """The page's numbers for ``session`` (the model, the prompt, the steps decoded so far), the visitor's
    ``rule`` ("" for none) and the ``shipped`` models to measure on the same prompt."""
    real, prompt, s = session.real, session.prompt, session.real.shape
    snap = session.snapshot()
    room = s.room(len(prompt))
    matches, error = _matches(session.prefill, list(prompt.pieces), rule) if len(prompt) >= 2 else (None, "")
    above = len(matches.above_chance()) if matches else 0
    heads = len(matches.heads) if matches else 0
    per_token, mha_per_token = words.per_token(snap.bytes_per_token), words.per_token(snap.mha_bytes_per_token)
    return RealView(
        real=real, shape=s, model_class=type(real.model).__name__, device=str(real.device),
        report=training_report(real), prompt=prompt, prefill=session.prefill, prompt_note=words.prompt_note(len(prompt)),
        generated=len(session.generated), can_step=session.room >= 1, narration=words.narrate_session(session),
        transcript=session.transcript, pieces=tuple(session.pieces), history=tuple(session.history),
        growth=session.prefixes + tuple(session.history),
        next_tokens=tuple((piece(real, i), p) for i, p in session.prediction.top_k(NEXT_SHOWN)),
        snapshot=snap, cache_note=words.cache_note(snap), formula_delta=words.formula_delta(snap),
        gqa_lead=words.gqa_lead(s), gqa_intro=words.gqa_intro(s), per_token=per_token,
        mha_per_token=mha_per_token, smaller_by=words.smaller_by(s),
        gqa_stats=words.gqa_stats(s, per_token, mha_per_token),
        shipped=tuple((name, other, measure_cache(other, prompt.ids)) for name, other in shipped),
        room=room, compare_max=min(COMPARE_MAX, room) if room >= 2 else 0,
        compare_default=min(COMPARE_DEFAULT, room),
        matches=matches, rule_error=error, beats_chance=above,
        chance_line=words.above_chance(above, heads) if above else words.none_above(heads))
