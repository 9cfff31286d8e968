"""Memory's paged pool in words: who the sequences A, B, C are, and what each scheduler iteration did
to the pool (:func:`viz.core.serving.paged.decode_together`'s snapshots).

Selecting and copying only: every block, count and word is read from the run's
:class:`~viz.core.serving.paged.PoolSnapshot` and :class:`~viz.core.serving.sequence.RequestOutcome`
results; nothing here decodes or allocates.
"""

from __future__ import annotations

from ..serving.paged import PagedRun, PoolSnapshot
from ..text import joined


def _blocks(blocks: list[int]) -> str:
    """"block 3", "blocks 0 and 1", "blocks 0–9 and 12": a run of four or more as a range."""
    runs: list[list[int]] = []
    for b in blocks:
        if runs and b == runs[-1][-1] + 1:
            runs[-1].append(b)
        else:
            runs.append([b])
    parts: list[str] = []
    for r in runs:
        parts += [f"{r[0]}–{r[-1]}"] if len(r) >= 4 else [str(b) for b in r]
    return ("block " if len(blocks) == 1 else "blocks ") + joined(parts)


def _common_prefix(a: tuple[str, ...], b: tuple[str, ...]) -> int:
    """Leading tokens two prompts have in common."""
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))


KEY_WORDS = 12  # the first prompt's tokens the key quotes


def sequences_key(run: PagedRun) -> str:
    """What the pool's colours A, B, C… stand for: the sequences decoded together, the first's prompt
    (its first :data:`KEY_WORDS` tokens) and how each later prompt begins like it."""
    names = [s.name for s in run.sequences]
    prompts = [s.tokens[: s.prompt_length] for s in run.sequences]
    # quoted, not "the scenario's": Memory may open on another preset than the sidebar's (presets.varied_opening)
    first = " ".join(prompts[0][:KEY_WORDS]) + (" …" if len(prompts[0]) > KEY_WORDS else "")
    if len(names) == 1:
        return f"{names[0]} is the sequence decoded on the pool, its prompt '{first}'."
    common = [_common_prefix(prompts[0], prompt) for prompt in prompts[1:]]
    alike = [f"{names[1]}'s repeats its first {common[0]} token{'s' if common[0] != 1 else ''}"]
    alike += [f"{name}'s its first {n}" if n else f"{name}'s none" for name, n in zip(names[2:], common[1:])]
    return (f"{joined(names)} are the {len(names)} sequences (requests) decoded together on one pool: "
            f"{names[0]}'s prompt is '{first}'; {joined(alike)}.")


def _stored(run: PagedRun, snap: PoolSnapshot, before: PoolSnapshot, i: int) -> str:
    """What sequence ``i`` wrote in a decode iteration: its newest token and the block it went to."""
    j = snap.lengths[i] - 1  # the newest token's position: slot j % B of logical block j // B
    block = snap.tables[i][j // run.block_size]
    word = snap.slots[block][j % run.block_size]
    said = f"{run.sequences[i].name} stores '{word}' in block {block}"
    if block in before.tables[i]:
        return said
    if j // run.block_size < len(before.tables[i]):  # the block it wrote into was shared: copied first
        return said + f", a copy of shared block {before.tables[i][j // run.block_size]} (copy on write)"
    return said + ", newly handed out"


def _admitted(run: PagedRun, snap: PoolSnapshot, before: PoolSnapshot | None) -> str:
    """What the prefill of the newest sequence put in the pool: its own blocks, or a fork's shared ones."""
    i = len(snap.tables) - 1
    seq, table = run.sequences[i], snap.tables[i]
    earlier = {b for t in snap.tables[:i] for b in t}
    shared = [b for b in table if b in earlier]
    own = [b for b in table if b not in earlier]
    if seq.shared_with is None:
        empty = len(table) * run.block_size - snap.lengths[i]
        waiting = (f"; {empty} slot{'s' if empty != 1 else ''} of block {table[-1]} "
                   f"wait{'s' if empty == 1 else ''} for the next tokens") if empty else ""
        return (f"{seq.name}'s prompt ({snap.lengths[i]} tokens) is stored in {_blocks(own)} of "
                f"{run.block_size} slot{'s' if run.block_size != 1 else ''}{waiting}.")
    parent = snap.tables[[s.name for s in run.sequences].index(seq.shared_with)]
    if snap.copies > (before.copies if before else 0):  # the fork wrote into a shared, partly filled block
        source = parent[table.index(own[0])]
        rest = (f"{seq.shared_with}'s partly filled block {source} is copied to block {own[0]} before "
                f"{seq.name} writes into it (copy on write)") + (f"; its other tokens go to {_blocks(own[1:])}"
                                                                 if own[1:] else "")
    else:
        rest = f"its other tokens go to {_blocks(own)}" if own else "it stores nothing new"
    shares = (f"shares {seq.shared_with}'s {_blocks(shared)} (ref {snap.refcounts[shared[0]]} now) instead of "
              "storing them again" if shared else f"forks {seq.shared_with}")
    return (f"{seq.name}'s prompt begins with {seq.shared_with}'s first {seq.prefix_hits} tokens, so {seq.name} "
            f"{shares}; {rest}.")


def pool_narration(run: PagedRun, index: int) -> str:
    """What scheduler iteration ``index`` of ``run`` did to the pool, in one or two sentences: a
    prefill's blocks (its own, or shared by a fork and copied on write; the first into an empty pool),
    or each sequence's new token and where it went."""
    snap = run.snapshots[index]
    before = run.snapshots[index - 1] if index else None
    if before is None:  # the first iteration, a prefill: the frame the page opens on says where it starts
        return "The pool starts empty: " + _admitted(run, snap, before)
    if snap.label.startswith("prefill"):
        return _admitted(run, snap, before)
    wrote = [i for i in range(len(snap.tables)) if snap.lengths[i] > before.lengths[i]]  # the unfinished
    text = f"{snap.label.capitalize()}: " + "; ".join(_stored(run, snap, before, i) for i in wrote) + "."
    everyone = [b for b, count in enumerate(snap.refcounts) if count == len(snap.tables) > 1]
    if everyone:
        text += (f" {_blocks(everyone).capitalize()} {'is' if len(everyone) == 1 else 'are'} stored once for "
                 f"{joined([s.name for s in run.sequences[:len(snap.tables)]])}.")
    return text
