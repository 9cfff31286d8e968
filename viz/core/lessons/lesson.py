"""What the Decode and Prefill lesson views show, as typed results.

A lesson view is one screen: a window on one head's attention matrix (the newest query rows, or the
rows around the Prefill position, and the keys they read), the keys and values under those
columns (in the KV cache, or encoded again when there is no cache, with every stale cached key
marked), and the next word. :class:`LessonFrame` holds one such screen for one decode step or one
prefill position; the Decode page sends the frames of the steps computed so far, so a visitor can
replay them in the browser.

Selecting and copying only: every number here was computed by the engine (viz.core.engine.model) or
compared by :func:`viz.core.engine.explain.check_cache`; nothing is recomputed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from ..engine.model import Trace
from ..engine.explain import check_cache, fmt
from .glossary import lookup

WINDOW = 8  # query rows and keys a lesson view shows, unless the whole matrix is asked for
WHOLE_CELLS = 256 * 256  # the largest matrix drawn whole; a bigger one shows its last 256 rows and keys
# the Whole switch's help while every row and key already shows (it is off limits then: it would change nothing)
WHOLE_ALL_SHOWN = f"Every row and key shows already: Whole matters once the sequence passes {WINDOW} tokens"
# the head picker's label, at its left, and its hover: the glossary's one-line definition, as a sentence
HEAD_PICKER = "Head"
_HEAD = lookup("head").short
HEAD_HELP = f"The head the figures show. A head is {_HEAD[0].lower()}{_HEAD[1:]}"
TOP_WORDS = 8  # words the next-word view lists (the most likely ones)


@dataclass(frozen=True)
class Window:
    """Which rows (query positions) and keys (key positions) of a matrix are shown, 0-based.

    When the keys shown do not start at the first key, the first key is kept in front (so a head
    that reads the first token still shows its weight) and ``skipped`` keys are left out after it.
    """

    rows: tuple[int, ...]
    keys: tuple[int, ...]
    total_rows: int
    total_keys: int
    capped: bool = False  # the whole matrix was asked for but is larger than WHOLE_CELLS
    size: int = WINDOW  # the rows and keys a window holds without Whole

    @property
    def skipped(self) -> int:
        """Keys hidden between the first key and the run of recent keys (0 when none are)."""
        return self.keys[1] - self.keys[0] - 1 if len(self.keys) > 1 else 0

    @property
    def hidden_keys(self) -> tuple[int, ...]:
        """The keys left out between the first key and the recent ones, 0-based (() when none are)."""
        return tuple(range(self.keys[0] + 1, self.keys[1])) if self.skipped else ()

    @property
    def hidden_span(self) -> str:
        """The hidden keys' positions, 1-based: "2–8" ("" when none are hidden)."""
        hidden = self.hidden_keys
        if len(hidden) < 2:
            return f"{hidden[0] + 1}" if hidden else ""
        return f"{hidden[0] + 1}–{hidden[-1] + 1}"

    @property
    def gap_label(self) -> str:
        """The gap column's label: "2–8 …" ("" when no key is hidden)."""
        return f"{self.hidden_span} …" if self.hidden_keys else ""

    @property
    def gap_meaning(self) -> str:
        """What the gap column holds, for the title ("" when no key is hidden): short, so the title of an
        attention board at 1280 × 720 stays two lines and its legend one."""
        return f"keys {self.hidden_span} summed in one column" if self.hidden_keys else ""

    @property
    def cache_gap_meaning(self) -> str:
        """Where the cache's entries of the hidden keys are ("" when no key is hidden): a cache board
        has no sum to show for them, only that they are there."""
        return "they are in the cache; Whole shows every entry" if self.hidden_keys else ""

    @property
    def complete(self) -> bool:
        return len(self.rows) == self.total_rows and len(self.keys) == self.total_keys

    @property
    def whole_shows_more(self) -> bool:
        """Whether Whole changes what shows: the matrix has more rows or keys than a window holds (the
        seed's 4 tokens never have, so its Whole switch would do nothing)."""
        return max(self.total_rows, self.total_keys) > self.size


def make_window(total_rows: int, total_keys: int, focus: int, size: int = WINDOW, *,
                centre: bool = False, whole: bool = False) -> Window:
    """A window of ``size`` rows holding row ``focus`` (at the end, or near the middle with
    ``centre``) and the ``size`` keys ending at the last key its last row can see, the first key
    kept in front; ``whole`` asks for everything, up to WHOLE_CELLS cells."""
    capped, held = False, max(2, size)
    if whole:
        if total_rows * total_keys <= WHOLE_CELLS:
            return Window(tuple(range(total_rows)), tuple(range(total_keys)), total_rows, total_keys, size=held)
        size, capped = math.isqrt(WHOLE_CELLS), True
    size = max(2, size)
    focus = min(max(focus, 0), total_rows - 1)
    count = min(size, total_rows)
    start = focus - count // 2 if centre else focus - count + 1
    start = min(max(start, 0), total_rows - count)
    rows = tuple(range(start, start + count))
    last_key = min(rows[-1], total_keys - 1)
    first = max(0, last_key - size + 1)
    keys = tuple(range(first, last_key + 1))
    if first == 1:  # one key short of the start: show it rather than a gap of one
        keys = (0,) + keys
    elif first > 1:  # keep the first key in front of the recent ones
        keys = (0,) + keys[1:]
    return Window(rows, keys, total_rows, total_keys, capped, held)


def attention_window(trace: Trace, head: int, window: Window) -> torch.Tensor:
    """One head's weights for the window's query rows over its keys, (rows, keys) float64,
    NaN where the query cannot see the key. Prompt rows come from the prefill pass, later rows
    from the decode steps (row p is the query of the step whose sequence was p + 1 long)."""
    keys = torch.tensor(window.keys, dtype=torch.long)
    out = torch.full((len(window.rows), len(window.keys)), torch.nan, dtype=torch.float64)
    for i, row in enumerate(window.rows):
        weights, visible = _query_row(trace, head, row)
        seen = keys < weights.shape[0]
        picked = keys[seen]
        out[i, seen] = torch.where(visible[picked], weights[picked].double(), torch.nan)
    return out


def hidden_weight(trace: Trace, head: int, window: Window) -> torch.Tensor | None:
    """Each window row's weight on the keys the window leaves out (:attr:`Window.hidden_keys`), summed:
    (rows,) float64, NaN where the row sees none of them; None when no key is left out. With the
    weights shown, each row adds up to 1 (softmax over the keys it sees)."""
    if not window.hidden_keys:
        return None
    hidden = torch.tensor(window.hidden_keys, dtype=torch.long)
    out = torch.full((len(window.rows),), torch.nan, dtype=torch.float64)
    for i, row in enumerate(window.rows):
        weights, visible = _query_row(trace, head, row)
        picked = hidden[hidden < weights.shape[0]]
        picked = picked[visible[picked]]
        if len(picked):
            out[i] = weights[picked].double().sum()
    return out


def _query_row(trace: Trace, head: int, row: int) -> tuple[torch.Tensor, torch.Tensor]:
    """One query row's weights over its keys and which keys it sees: from the prefill pass for a
    prompt row, else from the decode step whose sequence was row + 1 long."""
    pre = trace.prefill.attention
    prompt = pre.weights.shape[1]
    if row < prompt:
        return pre.weights[head, row], pre.visible[row]
    step = trace.steps[row - prompt + 1].attention
    return step.weights[head, 0], step.visible[0]


@dataclass(frozen=True)
class CacheView:
    """The keys and values under a window's key columns, one K row per head.

    ``signs`` is +1 where a key-only head's rule holds for the key, −1 where it does not, and 0
    for a head whose rule reads the query (it has no key row: its scores come from the rule).
    """

    keys: tuple[int, ...]  # the key positions shown, 0-based (the window's)
    signs: torch.Tensor  # (heads, len(keys))
    values: torch.Tensor  # (len(keys),) float64
    stale: tuple[tuple[int, int], ...]  # (head, key position) of every shown cached key that went stale
    written: tuple[int, ...]  # shown positions whose key and value this step encoded
    cached: bool  # True: entries of the KV cache; False: keys encoded again (no cache)
    length: int  # entries in all
    nbytes: int  # bytes the cache holds (0 without a cache)
    compared: bool = True  # False: recomputation had not reached this step, so staleness is unknown
    # the lowest and highest value of every entry, shown or not: the V colours keep their meaning when
    # the window leaves keys out (Today's 10 turned the scale's top once 20 left the window)
    value_range: tuple[float, float] | None = None


@dataclass(frozen=True)
class Word:
    token: str
    p: float
    kept: bool  # survived top-k / top-p
    chosen: bool


@dataclass(frozen=True)
class LessonFrame:
    """One screen of a lesson: a decode step, or a prefill position."""

    step: int  # decode step (0 = right after prefill), or the prefill query position (1-based)
    tokens: tuple[str, ...]  # every token of the sequence so far, for labels
    window: Window
    weights: torch.Tensor  # (rows, keys) as :func:`attention_window` gives them
    focus: int  # the query row outlined: the newest query, or the Prefill position (0-based)
    cache: CacheView
    words: tuple[Word, ...]  # the most likely next words, most likely first
    next_token: str
    next_p: float
    caption: str  # one line saying what the frame shows
    hidden: torch.Tensor | None = None  # (rows,) each row's weight on the keys left out (:func:`hidden_weight`)


def _words(trace: Trace, step: int) -> tuple[Word, ...]:
    s = trace.steps[step]
    probs = s.probs.double()
    order = torch.sort(probs, descending=True, stable=True).indices[:TOP_WORDS].tolist()
    kept = s.sample.kept.tolist()
    vocab = trace.scenario.vocab_tokens
    return tuple(Word(vocab[i], float(probs[i]), bool(kept[i]), i == s.sample.index) for i in order)


def _key_only(trace: Trace) -> torch.Tensor:
    from ..rules.language import compile_rule
    return torch.tensor([compile_rule(h.rule).key_only for h in trace.scenario.heads])


def _span(values: torch.Tensor) -> tuple[float, float] | None:
    """The lowest and highest of ``values`` (None when there are none)."""
    return (float(values.min()), float(values.max())) if values.numel() else None


def decode_frame(shown: Trace, kv: Trace, full: Trace | None, step: int, head: int, size: int = WINDOW,
                 whole: bool = False) -> LessonFrame:
    """Decode step ``step`` of the run ``shown`` (any mode) for one head: the newest query rows,
    and under their keys the KV cache of the ``kv`` run (in kv mode) with each key that went stale
    against the recomputed run ``full`` marked, or the keys encoded again (the other modes)."""
    s = shown.steps[step]
    rows = s.seq_len
    window = make_window(rows, rows, rows - 1, size, whole=whole)
    keys = torch.tensor(window.keys, dtype=torch.long)
    key_only = _key_only(shown)
    if shown.mode == "kv":
        cache = kv.cache
        signs = cache.keys()[:, keys, 0].detach().double().cpu()
        every = cache.values()[:rows].detach().double().cpu()
        values = every[keys]
        compared = full is not None and len(full.steps) > step
        stale = ()
        if compared and not all(shown.cacheable):
            shown_keys = set(window.keys)
            stale = tuple(sorted(p for p in check_cache(kv, full, step).stale if p[1] in shown_keys))
        view = CacheView(window.keys, signs, values, stale, (rows - 1,) if step else window.keys, True,
                         s.cache_length, s.cache_nbytes, compared, _span(every))
    else:
        matches = s.attention.matches[:, 0, keys]  # (heads, keys): where each head's rule holds now
        signs = torch.where(key_only[:, None], matches.double() * 2 - 1, torch.zeros((), dtype=torch.float64))
        every = torch.tensor(list(shown.scenario.values) + [t.value for t in shown.steps[:step]],
                             dtype=torch.float64)[:rows]
        view = CacheView(window.keys, signs, every[keys], (), window.keys, False, 0, 0, value_range=_span(every))
    tokens = tuple(shown.tokens[:rows])
    p = float(s.probs[s.sample.index])
    if step == 0:
        caption = f"After prefill · next word '{s.token}' (p = {p:.2f})"
    else:
        caption = f"Step {step} · newest query '{tokens[-1]}' (position {rows}) · next word '{s.token}' (p = {p:.2f})"
    return LessonFrame(step, tokens, window, attention_window(shown, head, window), rows - 1, view,
                       _words(shown, step), s.token, p, caption, hidden_weight(shown, head, window))


def prefill_frame(trace: Trace, position: int, head: int, size: int = WINDOW, whole: bool = False) -> LessonFrame:
    """Prefill at query ``position`` (1-based) for one head: the rows around it, and the keys and
    values the prefill writes into the cache under their keys."""
    pre = trace.prefill
    n = len(pre.tokens)
    window = make_window(n, n, position - 1, size, centre=True, whole=whole)
    keys = torch.tensor(window.keys, dtype=torch.long)
    every = pre.v[:n].detach().double().cpu()
    view = CacheView(window.keys, pre.k[:, keys, 0].detach().double().cpu(), every[keys], (), window.keys, True, n, 0,
                     value_range=_span(every))
    s = trace.steps[0]
    p = float(s.probs[s.sample.index])
    context = float(pre.contexts[head, position - 1])
    caption = (f"Query '{pre.tokens[position - 1]}' (position {position}) · context {fmt(context)} · "
               f"after the last position the next word is '{s.token}' (p = {p:.2f})")
    return LessonFrame(position, tuple(pre.tokens), window, attention_window(trace, head, window),
                       position - 1, view, _words(trace, 0), s.token, p, caption, hidden_weight(trace, head, window))


REPLAYED = 64  # steps a replay holds at most (the newest)


@dataclass(frozen=True)
class Replay:
    """The newest steps of a run as lesson frames, for a replay the browser steps through by itself."""

    frames: tuple[LessonFrame, ...]
    first: int  # the first step replayed
    last: int  # the furthest step the run reached


def replay(run: Trace, head: int, newest: int = REPLAYED) -> Replay:
    """The last ``newest`` steps ``run`` reached, one head, each as its own run's frame."""
    last = len(run.steps) - 1
    first = max(0, last - newest + 1)
    return Replay(tuple(decode_frame(run, run, None, s, head) for s in range(first, last + 1)), first, last)


@dataclass(frozen=True)
class Transcript:
    """The text of a run at one decode step: the prompt, the words chosen before it, the word it chooses."""

    prompt: tuple[str, ...]
    generated: tuple[str, ...]
    next_token: str


def transcript(run: Trace, step: int) -> Transcript:
    prompt = len(run.scenario.tokens)
    return Transcript(tuple(run.tokens[:prompt]), tuple(run.tokens[prompt: prompt + step]), run.steps[step].token)
