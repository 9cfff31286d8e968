"""Plain words for the Serving page: one line per scheduler iteration, speculative round and
FlashAttention tile, and the comparisons the page draws, all read from engine results.

Like :mod:`viz.core.engine.explain`, nothing here computes; every number comes from a run's dataclasses.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..engine.explain import fmt
from .flash import FlashRun
from .speculative import Round
from ..text import joined
from .workload import ServingRun


def _blocks(blocks: tuple[int, ...]) -> str:
    return "block " + str(blocks[0]) if len(blocks) == 1 else "blocks " + ", ".join(map(str, blocks))


def narrate_iteration(run: ServingRun, index: int) -> str:
    """What one iteration did, for a presenter: who computed what, who waited and why, the blocks."""
    it = run.iterations[index]
    names = [r.name for r in run.workload.requests]
    parts = []
    decoding = [names[i] for i, s in enumerate(it.states) if s.phase == "decode"]
    if decoding:
        parts.append(f"{joined(decoding)} decode{'s' if len(decoding) == 1 else ''} one token "
                     f"{'each' if len(decoding) > 1 else ''}".rstrip())
    for i, s in enumerate(it.states):
        if s.phase != "prefill":
            continue
        request = run.workload.requests[i]
        total = len(request.tokens) + len(_words_before(run, i, index))
        if s.fed == s.cache_length == total:  # from nothing to everything it has: its prompt, or all again
            what = f"computes its whole prompt ({s.fed} token{'s' if s.fed != 1 else ''})" if s.fed == len(request.tokens) else \
                f"computes all {s.fed} of its tokens again"
        else:  # a chunk (the first of a chunked prefill too), or what a cached prefix left
            what = f"computes {s.fed} token{'s' if s.fed != 1 else ''} ({s.cache_length} of {total} now cached)"
        parts.append(f"{names[i]} {what}" + (f" [{s.event}]" if s.event else ""))
    reasons: dict[str, list[str]] = {}
    for i, s in enumerate(it.states):
        if s.reason and s.phase in ("waiting", "swapped", "idle"):
            reasons.setdefault(s.reason, []).append(names[i])
        elif s.event and s.phase not in ("prefill", "decode"):
            parts.append(f"{names[i]} {s.event}")
    parts += [f"{joined(who)}: {reason}" for reason, who in reasons.items()]
    done = [names[i] for i, s in enumerate(it.states) if s.predicted is not None and s.phase != "idle"
            and len(_words_before(run, i, index)) + 1 == run.workload.requests[i].max_new_tokens]
    if done:
        parts.append(f"{joined(done)} finish{'es' if len(done) == 1 else ''}")
    memory = []
    if it.allocated:
        memory.append(f"{_blocks(it.allocated)} handed out")
    if it.freed:
        memory.append(f"{_blocks(it.freed)} given back")
    if run.config.policy == "static":
        memory.append(f"{it.reserved_slots} of {run.config.slots} slots reserved, {it.filled_slots} filled")
    else:
        memory.append(f"{it.reserved_slots // run.config.block_size} of {run.config.num_blocks} blocks in use")
    cost = f"{run.config.overhead} ticks of fixed cost + {it.tokens} tokens"  # "8 fixed" said nothing + (f" + {it.padding} padding" if it.padding else "")
    return (f"Iteration {index + 1}, ticks {it.start}–{it.end} ({cost}): " + "; ".join(parts)
            + ". " + "; ".join(memory).capitalize() + ".")


def _words_before(run: ServingRun, request: int, index: int) -> list[str]:
    """The words request ``request`` had chosen before iteration ``index``."""
    return [s.predicted for it in run.iterations[:index] for s in [it.states[request]] if s.predicted]


@dataclass(frozen=True)
class Comparison:
    """Continuous batching against static batching of the same workload, in numbers and words."""

    makespan: tuple[int, int]  # (continuous, static) ticks
    throughput: tuple[float, float]
    ttft: tuple[float, float]
    tpot: tuple[float, float]
    padding: tuple[int, int]
    text: str
    # continuous minus static: what continuous batching changed (negative: fewer, sooner)
    makespan_delta: int
    throughput_delta: float
    ttft_delta: float
    padding_delta: int


def compare_policies(continuous: ServingRun, static: ServingRun) -> Comparison:
    pairs = dict(makespan=(continuous.makespan, static.makespan),
                 throughput=(continuous.throughput, static.throughput),
                 ttft=(continuous.mean("ttft"), static.mean("ttft")),
                 tpot=(continuous.mean("tpot"), static.mean("tpot")),
                 padding=(continuous.padding, static.padding))
    faster = static.makespan / max(continuous.makespan, 1)
    text = (f"Continuous batching finishes the workload in {continuous.makespan} ticks, static batching in "
            f"{static.makespan} ({faster:.3g}× as long). Mean time to first token: "
            f"{fmt(pairs['ttft'][0])} against {fmt(pairs['ttft'][1])} ticks, because a request starts as soon "
            f"as a slot and blocks are free instead of waiting for a whole batch to end. Static batching "
            f"computed {static.padding} padding rows: shorter prompts padded to the longest, and finished "
            "requests holding their slot until the longest answer is done.")
    if pairs["tpot"][0] > pairs["tpot"][1]:
        text += (f" Its time per output token is lower ({fmt(pairs['tpot'][1])} against "
                 f"{fmt(pairs['tpot'][0])}): new prompts joining a continuous batch slow the others' steps.")
    deltas = {f"{name}_delta": pairs[name][0] - pairs[name][1]
              for name in ("makespan", "throughput", "ttft", "padding")}
    return Comparison(text=text, **pairs, **deltas)


def narrate_chunking(whole: ServingRun, chunked: ServingRun, request: int) -> str:
    """The chunked-prefill trade for one long request, against whole-prompt prefill."""
    name = whole.workload.requests[request].name
    a, b = whole.outcomes[request], chunked.outcomes[request]
    others = [i for i in range(len(whole.outcomes)) if i != request]

    def worst_gap(run: ServingRun) -> int:
        gaps = [y - x for i in others for x, y in zip(run.outcomes[i].token_times, run.outcomes[i].token_times[1:])]
        return max(gaps, default=0)

    return (f"Chunks of {chunked.config.chunk_size}: '{name}' gets its first token after {b.ttft} ticks instead of "
            f"{a.ttft}; the other requests' longest wait between two tokens drops from {worst_gap(whole)} to "
            f"{worst_gap(chunked)} ticks, because no iteration computes more than "
            f"{chunked.config.chunk_size} prompt tokens beside their decodes.")


@dataclass(frozen=True)
class PrefixComparison:
    """Prefix caching on against off for the same workload, in numbers and words."""

    hits: int  # prompt tokens found in cached blocks
    keys_saved: int  # keys the engine did not encode again
    ttft: tuple[float, float]  # mean time to first token (on, off), ticks
    ttft_delta: float  # on minus off (negative: sooner with the cache)
    text: str


def compare_prefix(off: ServingRun, on: ServingRun, num_heads: int) -> PrefixComparison:
    ttft = (on.mean("ttft"), off.mean("ttft"))
    return PrefixComparison(hits=on.prefix_hits, keys_saved=off.work.keys_encoded - on.work.keys_encoded,
                            ttft=ttft, ttft_delta=ttft[0] - ttft[1], text=narrate_prefix(off, on, num_heads))


def narrate_prefix(off: ServingRun, on: ServingRun, num_heads: int) -> str:
    """What prefix caching saved on this workload, counted by the engine."""
    hits = on.prefix_hits
    keys = off.work.keys_encoded - on.work.keys_encoded
    if not hits:
        return ("No prompt starts with a full block of tokens that an earlier request computed, so there is "
                "nothing to reuse here; the preset 'a shared system prompt' has one.")
    return (f"{hits} prompt tokens were found in cached blocks, so the engine encoded {keys:,} fewer keys "
            f"({num_heads} heads × {hits}) and {off.work.values_encoded - on.work.values_encoded} fewer values, "
            f"and computed {off.work.scores - on.work.scores:,} fewer attention scores. Mean time to first "
            f"token: {fmt(on.mean('ttft'))} ticks with the cache, {fmt(off.mean('ttft'))} without.")


def narrate_round(rnd: Round, greedy: bool) -> str:
    """One draft-then-verify round in words."""
    if not rnd.guesses:
        return (f"Round {rnd.index + 1}: no guess (nothing to look up, or the last word to make); the target "
                f"feeds '{rnd.fed}' alone and picks '{rnd.new_word}', a plain decode step.")
    checks = [] if greedy else ["p is the target's probability of a guess, q the draft's"]  # p, q said once
    for i, (guess, p, q) in enumerate(zip(rnd.guesses, rnd.p_guess, rnd.q_guess)):
        kept = i < rnd.accepted
        if greedy:
            checks.append(f"'{guess}' {'is' if kept else 'is not'} the target's choice")
        else:
            rule = f"p = {p:.2f}, q = {q:.2f}, draw {rnd.draws[i]:.2f} {'<' if kept else '≥'} min(1, p/q)"
            checks.append(f"'{guess}' {'kept' if kept else 'rejected'} ({rule})")
        if not kept:
            break
    ending = (f"{_all_kept(len(rnd.guesses))}, and the target pass's last position gives '{rnd.new_word}' for free"
              if rnd.bonus else f"the target puts '{rnd.new_word}' in place of the first rejected guess")
    return (f"Round {rnd.index + 1}: the draft guesses {', '.join(repr(g) for g in rnd.guesses)}. One target "
            f"pass over '{rnd.fed}' and the guesses grows the cache from {rnd.cache_before} to "
            f"{rnd.cache_verified}; " + "; ".join(checks) + f"; {ending}. {_cache_kept(rnd)}: "
            f"{rnd.accepted + 1} new word{'s' if rnd.accepted else ''} for one pass.")


def _all_kept(guesses: int) -> str:
    """Every guess of a round kept, in words: 'all' only from three on."""
    return {1: "the one guess kept", 2: "both kept"}.get(guesses, f"all {guesses} kept")


def _cache_kept(rnd: Round) -> str:
    """What the round leaves in the cache: cut back past the rejected guesses, or all of it kept (a
    round that keeps every guess cuts nothing)."""
    cut = rnd.cache_verified - rnd.cache_after
    if not cut:
        return f"Nothing is cut: the cache keeps all {rnd.cache_after} entries"
    dropped = "the rejected guess" if cut == 1 else f"the {cut} guesses from the first rejected one on"
    return f"The cache is cut back to {rnd.cache_after}, dropping {dropped}"


def narrate_visit(run: FlashRun, index: int, head: int) -> str:
    """One FlashAttention tile for one head, in words."""
    v = run.visits[index]
    (r0, r1), (c0, c1) = v.rows, v.cols
    row = r1 - 1  # speak for the tile's last query row
    token = run.tokens[row]
    before, after = float(v.max_before[head, -1]), float(v.max_after[head, -1])
    rescale = float(v.rescale[head, -1])
    start = "first tile" if v.k_tile == 0 else f"key tile {v.k_tile + 1}"
    if v.k_tile == 0:
        update = f"its running max starts at {fmt(after)}"
    elif after > before:
        update = (f"the max rises from {fmt(before)} to {fmt(after)}, so the old sum and output are multiplied "
                  f"by exp({fmt(before)} − {fmt(after)}) = {rescale:.3g} before the new terms are added")
    else:
        update = f"the max stays {fmt(after)}, so the old terms keep their scale (× 1)"
    ending = (f"Last tile for these rows: context = {fmt(float(v.out_after[head, -1]))} / "
              f"{fmt(float(v.sum_after[head, -1]))} = {fmt(float(v.contexts[head, -1]))}, written once."
              if v.last_for_rows else "More key tiles to come; nothing is written yet.")
    return (f"Tile {index + 1} of {len(run.visits)}: queries {r0 + 1}–{r1} against keys {c0 + 1}–{c1} ({start}), "
            f"{v.bytes_read:,} bytes loaded into fast memory. For '{token}': {update}; running sum "
            f"{fmt(float(v.sum_after[head, -1]))}. {ending}")


# What the traffic sweep teaches, with the paper's bound (Dao et al. 2022, Theorem 2: the naive pass
# makes Θ(N·d + N²) accesses to slow memory, FlashAttention Θ(N²·d²/M) for fast memory of M bytes).
FLASH_TRAFFIC_NOTE = (
    "With small tiles each key tile is read again for every query tile below it, which can cost more than "
    "the score matrix saves; FlashAttention uses the largest tiles that fit in a GPU's fast on-chip memory "
    "(SRAM, M bytes). The naive pass writes its n × n score matrix to the slow memory (HBM) and reads it "
    "back, so the bytes the tiles save grow as n²; the ratio of naive to tiled traffic does not grow without "
    "end but levels off at about M/d² (Dao et al. 2022, Theorem 2).")
