"""The Serving page's words: its fixed prose, and the short sentences built from a run's numbers.

The long narrations (one per iteration, round and tile, and the comparisons) are in
:mod:`viz.core.serving.explain`; this module holds the rest. Small functions over typed values (no
torch work). Parts a visitor may have typed go through the page's escaping function.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from ..text import step_label

Escape = Callable[[str], str]

# the page's controls
ITERATION_STEP = step_label("scheduler iteration")
ITERATION_STEP_HELP = ("One step is one scheduler iteration: each running request computes its next piece (a "
                       "prompt chunk or one token) while the others wait; it lasts some ticks, Serving's unit "
                       "of time.")
ROUND_STEP = step_label("speculative round")
ROUND_STEP_HELP = ("One step is one round of speculative decoding: the draft guesses a few words, the target "
                   "checks all of them in one pass and keeps those it agrees with.")
TILE_STEP = step_label("tile")
TILE_STEP_HELP = ("One step is one FlashAttention tile: a block of queries against a block of keys, loaded "
                  "into fast memory and folded into each query's running sums.")
WORKLOAD_HELP = "Requests with an arrival time, a prompt and how many new tokens they ask for."
PREEMPTION_HELP = ("recompute: drop the blocks, compute the tokens again later; swap: copy them out to slower "
                   "memory and back.")
PREEMPTION_UNUSED = ("No request ran out of blocks here, so 'When blocks run out' changes nothing: fewer blocks "
                     "in the pool, or more sequences at once, make it matter.")
OVERHEAD_LABEL = "Fixed ticks per iteration"
CHUNK_LABEL = "Chunk (prompt tokens per iteration)"
CHUNK_HELP = "How many prompt tokens a long prompt computes per iteration, beside the decodes."
OVERHEAD_HELP = ("The clock: one tick per token an iteration computes, plus this much per iteration (a GPU "
                 "reads every weight once per iteration).")
SETTINGS = "Server settings: blocks, batch, preemption, clock"
CACHE_SAFE = "Use the cache-safe form of those heads on this page"
NEEDS_CACHE_SAFE = "This part needs keys that do not depend on n: turn the cache-safe form back on."
DIFFERS = "Some request differs from decoding it alone; the tables say which."

# the sections' introductions
BATCHING = ("A static batch starts together and ends with its longest answer. **Continuous batching** "
            "(iteration-level scheduling, as in Orca and vLLM) decides at every iteration who computes: a "
            "request joins as soon as a slot and the blocks for its prompt are free, and leaves the moment "
            "it is done. When the pool runs out, the request admitted last is preempted.")
CHUNKING = ("Without chunking, a new prompt is computed whole in an iteration of its own, and every running "
            "request waits for it. **Chunked prefill** computes at most a chunk of prompt tokens per "
            "iteration, beside every running request's next token.")
PREFIX = ("Automatic prefix caching (vLLM) names every **full** block by its tokens and all tokens before "
          "it. A later prompt that starts with the same full blocks takes them instead of computing their "
          "keys and values again. Only full blocks are shared: a partly filled block is still being "
          "written by its owner, and its name is not final until it is full. The last prompt token is "
          "always computed, because its query gives the first prediction.")
SPECULATION = ("A cheap **draft** guesses the next k words; the target checks all of them in **one** pass "
               "over the last word and the guesses. Greedy keeps a guess while it is the target's own choice; "
               "sampling keeps it with probability min(1, p/q), where p is the target's probability of the guess and "
               "q the draft's, and draws a replacement from max(0, p − q), "
               "which leaves the target's distribution exactly as it was. Rejected guesses are cut from the cache.")
FLASH = ("The naive pass writes the whole n × n score matrix to slow memory and reads it back, twice. "
         "**FlashAttention** computes the same attention tile by tile in fast memory: a running maximum "
         "m, a running sum l and a running output o per query row, rescaled by exp(m_old − m_new) "
         "whenever a tile raises the maximum (the online softmax). Nothing n × n is ever stored.")

# the stats rows' titles and the stepped runs' headings
BATCHING_STATS = "Continuous batching against static batching"
PREFIX_STATS = "Prefix caching against none"
PREFIX_HEADING = "With prefix caching, iteration by iteration"
SPEC_STATS = "Speculative decoding against plain decoding"
FLASH_STATS = "FlashAttention against the naive pass"

# speculative decoding
# the real model's prompt at first
DEFAULT_REAL_PROMPT = 'The "return" statement leaves the current function call with the expression list'
REAL_DRAFT_HELP = ("prompt lookup: tokens that followed an earlier match; early exit: the GPT-2's own first 2 "
                   "layers; the Llama: kvlab's other model, which shares the GPT-2's tokenizer.")
LOGIT_HELP = ("Against plain decoding, up to the first word the two chose differently (sampling draws other "
              "words): the verification pass sums each row together with the guesses' masked keys, which "
              "rounds the last bits differently.")
NO_GUESS = "no guess"  # a rounds grid's cell for a guess the round did not make (the draft guessed fewer)
# the tables' names for screen readers (each is a real HTML table, wrapping its text to its column)
ITERATION_TABLE = "Every request during this iteration: what it did, its cache entries, blocks and chosen word"
REQUESTS_TABLE = "Every request: its timings, its words, and its prompt, arrival, preemptions and prefix hits"
SPEC_TABLE = "Speculative against plain decoding: passes, work and measured time"
RUNNING_TABLE = ("The current tile's query rows: running maximum (before → after), rescale exp(before − after), "
                 "running sum l and output o")
TRAFFIC_TABLE = "Every item each pass moves between slow and fast memory"
# a caption under each table that names a term a table cannot define (a table has no hover; a caption's
# hover defines every unfamiliar term it names)
REQUESTS_TABLE_NOTE = "TTFT and TPOT are counted in ticks."


def ticks(value: float, signed: bool = False) -> str:
    """Ticks, Serving's unit of time, with the unit: a count as it is ('201 ticks'; signed, '-61 ticks'),
    a mean to three significant digits ('56.3 ticks', '-7.5 ticks')."""
    sign = "+" if signed and value else ""
    number = f"{value:{sign},}" if isinstance(value, int) else f"{value:{sign}.3g}"
    return f"{number} tick{'' if abs(value) == 1 else 's'}"


SPEC_TABLE_NOTE = "Multiply-adds count the work of both: the target's passes and, speculating, the draft's."
TRAFFIC_TABLE_NOTE = "S = QKᵀ / √d_k holds one score per query and key, for every head."
SPEC_SETTINGS = "Words, temperature"
SAME_WORD = ("Every word is the same, so any draft guesses right. Pick a scenario whose output varies "
             f"(your soup, previous-token, content) or a temperature above 0 under “{SPEC_SETTINGS}” to see "
             "guesses rejected.")
TEMPERATURE_LABEL = "Temperature (0: greedy)"
TEMPERATURE_HELP = ("0: greedy, and the output is the target's own, word for word. Above 0 both models sample "
                    "(the scenario's seed), a guess is kept with probability min(1, p/q), and the output has "
                    "the target's distribution. The toy opens sampling: its greedy output repeats a short "
                    "cycle, so a greedy draft would guess the same word round after round.")
SPEC_TIME = ("Speculation saves target passes. It saves time where a target pass costs far more than a draft "
             "pass, as on a GPU where each pass reads every weight; on this CPU the toy's passes all cost about "
             "the same fixed overhead, so a model draft saves little, and prompt lookup, which costs nothing, "
             "saves the most.")
FLASH_TOKENS_HELP = "The tile walk needs more than a few tokens to show anything."


def limits(items: Mapping[str, int]) -> str:
    """What one click may ask for, as a caption."""
    return "Limits per click: " + ", ".join(f"{v:,} {k}" for k, v in items.items()) + "."


def refused_edit(message: str, esc: Escape) -> str:
    """A refused edit of the requests, and what is shown instead."""
    return f"{esc(message)} — showing the last workload that worked."


def edit_requests(most: int) -> str:
    return f"Edit the requests (at most {most})"


def iteration_label(i: int, start: int, end: int) -> str:
    """The stepper's name for iteration ``i`` (1-based): '3 · ticks 12–17'."""
    return f"{i} · ticks {start}–{end}"


def identical(policies: Iterable[str]) -> str:
    """Every request of the runs named, against decoding it alone."""
    return ("Every request's words, contexts and logits are identical, bit for bit, to decoding it alone "
            f"({', '.join(p + ' batching' for p in policies)}).")


def static_help(what: str, value: object) -> str:
    """A batching stat's help: what it counts, and static batching's value."""
    return f"{what} Static batching: {value}."


def chunks(size: int) -> str:
    return f"chunks of {size}"


def chunks_heading(size: int) -> str:
    return f"Chunks of {size}, iteration by iteration"


def timeline_title(heading: str) -> str:
    """A stepped timeline's title: what it shows, and its clock (its time axis has no title)."""
    return f"{heading} (time in ticks)"


def rounds_title(first: int, last: int, count: int) -> str:
    """The rounds grid's title; where it shows only rounds ``first``–``last`` (1-based) of ``count``, it
    says which, so rounds stepped out of the window are not taken for all there are."""
    shown = "Each round" if (first, last) == (1, count) else f"Rounds {first}–{last} of {count}"
    return f"{shown}: the guesses, which the target kept, and the word it adds"


def same_as_target(greedy: bool, same_words: bool) -> str:
    """How speculative decoding's words compare with the target's alone."""
    if not greedy:
        return "sampled: the target's distribution, not its exact words"
    return "identical to the target alone" if same_words else "NOT the target's words"


def toy_output(same: str, words: Iterable[str], esc: Escape) -> str:
    return f"**Output** ({same}): {esc(' '.join(words))}"


def real_output(model: str, draft: str, same: str, prompt: Iterable[str], words: Iterable[str], esc: Escape) -> str:
    return (f"**{esc(model)}, draft: {esc(draft)}** ({same}): "
            f"{esc(''.join(prompt))} → **{esc(''.join(words))}**")


def milliseconds(seconds: float) -> str:
    return f"{seconds * 1e3:.1f} ms"


def signed_milliseconds(seconds: float) -> str:
    return f"{seconds * 1e3:+.1f} ms"


def bytes_delta(saved: int, size: Callable[[float], str]) -> str:
    """The bytes the tiles saved against the naive pass ('-1.2 KiB vs naive'), or cost more ('+…')."""
    return f"{'-' if saved > 0 else '+'}{size(abs(saved))} vs naive"


# the tables' cells that join several facts, so that every table keeps to a few columns a phone's
# width holds (st.table wraps a cell at its spaces, never inside a word)
def iteration_doing(phase: str, fed: int, note: str) -> str:
    """What a request did in one iteration: 'prefill: 10 tokens', 'waiting: every batch slot is taken'."""
    computed = f"{fed} token{'s' if fed != 1 else ''}" if fed else ""
    return f"{phase}: " + "; ".join(part for part in (computed, note) if part) if computed or note else phase


def request_note(prompt_length: int, arrival: int, preemptions: int, recomputed: int, prefix_hits: int) -> str:
    """A request's prompt and arrival, and what preemption and prefix caching did to it, in one cell."""
    parts = [f"{prompt_length}-token prompt, arrives at tick {arrival}"]
    if preemptions:
        parts.append(f"preempted {preemptions}×, {recomputed} tokens computed again")
    if prefix_hits:
        parts.append(f"{prefix_hits} prompt tokens from the prefix cache")
    return "; ".join(parts)


def max_change(before: float, after: float, number: Callable[[float], str]) -> str:
    """A query row's running maximum across one tile ('0.52 → 0.81'), ``number`` formatting each."""
    return f"{number(before)} → {number(after)}"
