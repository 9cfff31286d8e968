"""The Decode page's words: its title line, the help of its controls, and the sentences of its sections.

Constants, and small functions that build a sentence from typed values (numbers the engine counted,
names the page escapes). Sentences that quote visitor text (a head's name, a token) are returned as
they read, and the page escapes them (or passes the name already escaped, where it says so).
Nothing here computes: the numbers come in as the engine counted them.
"""

from __future__ import annotations

from ..engine.model import MODE_LABELS, MODES, WorkCounts
from .glossary import hover

TITLE = "Decode"
LEAD = ("One token at a time: its query attends to every key so far; the KV cache keeps keys and values "
        "instead of recomputing them.")

# the controls' help (their labels are short and stay on the page)
TIMELINE_HELP = "Scrub back and forth over the tokens generated so far"
RUN_SIZE_HELP = "Tokens the Run button generates"
WHOLE_HELP = "Show every row and key, not only the newest ones"
MODE_SHORT = {"kv": "KV cache", "recompute": "recompute", "reencode": "re-encode"}  # the run picker's options
MODE_PICKER = "Keys"  # the run picker's label, at its left (short: the row fits a phone's width)
# each way once (MODE_LABELS opens with "no cache" or "KV cache", which the option's name already says of the kv run)
MODE_HELP = "How each step gets every key and value so far:\n\n" + "\n\n".join(
    f"**{MODE_SHORT[m]}**: {MODE_LABELS[m].removeprefix('KV cache: ')}" for m in MODES)
FIX_LABEL = "Fix: n → q.pos"
# the Fix button's hover: what it does, and the two names its label uses in plain words (the glossary's)
FIX_HELP = (f"Make every head cache-safe: each rule's n becomes q.pos. {hover('cache-safe')} {hover('n')} "
            f"{hover('q.pos')}")
SHOW_HEAD_HELP = "Show that head's attention and cache below, with the recomputed run beside it"


# said before the stale-cache warning while the run shown uses no KV cache (recompute, re-encode): the
# warning is about what a cache would give, not about the run whose narration sits beside it (short: the
# box stays as tall as the narration's at 1280 × 720)
WITHOUT_CACHE = "About a KV cache (this run uses none):"


def run_help(tokens: int) -> str:
    return f"Generate {tokens} more tokens"


# the "Cache vs recompute" section
NUMBERS = "The cache and the check in numbers"  # the fold of the section's figures (entries, bytes, differences)
GROWTH_HELP = "The buffers double when full, so growing is rare."
AGREED = "Every head is cacheable, so the KV cache gives exactly what recomputation gives, with far less work."


def per_entry(heads: int, d_k: int, element_size: int) -> str:
    """What one cache entry holds."""
    return f"Per entry: {heads} heads × d_k = {d_k} key numbers plus 1 value, {element_size} bytes each."


def compared_at(step: int) -> str:
    """Said when the recomputed run stopped short of the step asked for (the work budget)."""
    return f"Compared at step {step}, the latest step the recomputed run reached."


# the "Work" section
def before_decode(scores: int, prompt_tokens: int) -> str:
    """At step 0: no decode work yet, only the prefill's."""
    return (f"Step forward to see decode work; prefill did {scores:,} scores for all {prompt_tokens} "
            "prompt tokens.")


def work_compared(length: int, heads: int, recompute: WorkCounts, kv: WorkCounts) -> str:
    """One step's work over every head without a cache and with one (``recompute``, ``kv``: the
    engine's WorkCounts; ``heads``: how many heads they sum)."""
    over = f"the {heads} heads" if heads != 1 else "its one head"
    return (f"At length {length}, over {over}: keys encoded {recompute.keys_encoded:,} without a cache vs "
            f"{kv.keys_encoded:,} with it (each head encodes all {length} keys again at every step, so n² over a "
            "generation, against the 1 new key, n in all); query-key scores "
            f"{recompute.scores:,} for a full recompute vs {kv.scores:,}; multiply-adds "
            f"{recompute.multiply_adds:,} vs {kv.multiply_adds:,}.")


# the "Replay in the browser" section
REPLAY_FIRST = "Step forward first: the replay holds every step computed so far."


def replay_caption(first: int, last: int, run: str, head: str) -> str:
    """``run``: the run's name; ``head``: the head's name, already escaped by the page."""
    return (f"Steps {first}–{last} of the {run} run, head '{head}': drag the slider; the browser redraws "
            "each step from numbers it already has.")


# the "Text and table" section
def transcript_line(prompt: str, generated: tuple[str, ...] | list[str], next_token: str) -> str:
    """The text so far as Markdown: the prompt, each generated word marked, the next word apart (each
    piece already escaped by the page)."""
    return (f"{prompt} " + " ".join(f"**:blue-background[{t}]**" for t in generated)
            + f" → next: **:orange-background[{next_token}]**")
