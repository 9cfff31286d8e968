"""Scheduling policies: who computes what in each iteration, as small classes the engine asks.

Each policy gets the engine (:class:`Engine`, which :class:`viz.core.serving.scheduler.Scheduler` is:
the sequences, the block manager, the settings) and answers :meth:`SchedulingPolicy.schedule` (the next iteration's
:class:`Plan`, or None when nothing can run now) and :meth:`SchedulingPolicy.postprocess` (what
follows once the plan's passes have run), plus, for the record, each sequence's phase and why it
waited. Like nano-vllm's ``Scheduler.schedule()``/``postprocess()``, but one class per policy:

* :class:`Continuous`: iteration-level scheduling (Orca, vLLM): a request joins as soon as a batch
  slot and the blocks for its prompt (or its first chunk, with chunked prefill) are free, and leaves
  the moment it is done. Without chunking a new prompt is computed whole in an iteration of its own
  (vLLM's default before chunked prefill); with chunking at most ``chunk_size`` prompt tokens share
  an iteration with every running request's decode token. With prefix caching a prompt first takes
  the cached full blocks it starts with. When a running request needs a block and none is free, the
  request admitted last is preempted, by one of the :data:`PREEMPTIONS` classes.
* :class:`Static`: request-level scheduling: a batch starts together, every prompt padded to the
  longest, each request reserving a contiguous cache for its prompt and every new token it may make;
  nobody joins until the whole batch is done.
* :class:`Together`: the Memory page's configuration: every request is admitted in turn (a prefill
  each, forking the earlier sequence with the longest common prompt prefix: copy on write), then
  every sequence decodes one token per iteration; nothing is freed, so the pool can be inspected.

What this module does not do: run passes or keep the clock (the engine), hand out blocks (the block
manager) or record results (:mod:`viz.core.serving.scheduler` and :mod:`viz.core.serving.paged`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Protocol

from .block_manager import BlockManager
from .sequence import Sequence, SequenceStatus
from .workload import BlockState, Phase, Policy, Preemption, ServingConfig

Status = SequenceStatus


@dataclass
class Plan:
    """What one iteration computes: (sequence, tokens) pairs in order, and what it wastes."""

    work: list[tuple[Sequence, int]] = field(default_factory=list)
    padding: int = 0  # token rows computed for nothing (static batching)
    idle: int = 0  # batch slots left empty while a request that had arrived waited
    label: str = ""  # a name for the iteration ("prefill B", "decode 3")


class Engine(Protocol):
    """What a policy sees of the engine (:class:`viz.core.serving.scheduler.Scheduler`)."""

    config: ServingConfig
    pool: BlockManager | None
    sequences: list[Sequence]

    def arrived(self) -> list[Sequence]:
        """Requests waiting now, first come first served."""

    def count_swap(self, seq: Sequence, blocks: int) -> None:
        """Count ``blocks`` whole blocks copied to swap space or back."""


class SchedulingPolicy:
    """What every policy answers; the base records sequences the plain way."""

    def __init__(self, engine: Engine):
        self.engine = engine
        self.config = engine.config

    def schedule(self) -> Plan | None:
        raise NotImplementedError

    def postprocess(self, plan: Plan) -> None:
        """Bookkeeping once the plan's passes have run."""

    def phase(self, seq: Sequence) -> Phase:
        if seq.fed:
            return Phase(seq.doing)
        return Phase.WAITING if seq.status is Status.RUNNING else Phase(seq.status.value)

    def why(self, seq: Sequence) -> str:
        """Why a request that has arrived computed nothing in this iteration, in a few words."""
        return ""

    def table(self, seq: Sequence) -> tuple[int, ...]:
        return tuple(seq.cache.table) if seq.status in (Status.RUNNING, Status.WAITING) else ()

    def pool_state(self) -> tuple[tuple[BlockState, ...], int, int]:
        """Every block (holders, slots filled, named), and the slots reserved and filled."""
        pool = self.engine.pool
        size = pool.block_size
        owners: list[list[int]] = [[] for _ in range(pool.num_blocks)]
        filled = [0] * pool.num_blocks
        for seq in self.engine.sequences:
            if seq.status in (Status.RUNNING, Status.WAITING):
                for logical, block in enumerate(seq.cache.table):
                    owners[block].append(seq.index)
                    filled[block] = max(filled[block], min(size, len(seq.cache) - logical * size))
        for block in pool.evictable:
            filled[block] = size
        named = pool.key_of
        blocks = tuple(BlockState(owners=tuple(o), filled=f, cached=b in named)
                       for b, (o, f) in enumerate(zip(owners, filled)))
        used = [b for b, count in enumerate(pool.refcount) if count]
        return blocks, len(used) * size, sum(filled[b] for b in used)


class Recompute:
    """Preemption by recomputation (current vLLM's only kind): the blocks go back, and the request's
    prompt and words are computed again as one prefill when it returns."""

    def __init__(self, policy: "Continuous"):
        self.policy = policy

    def preempt(self, seq: Sequence) -> None:
        seq.recomputed += len(seq.cache)  # computed once already; computed again when it returns
        seq.forget()
        seq.status, seq.event = Status.WAITING, "preempted: will recompute"

    def swapped(self) -> list[Sequence]:
        return []

    def swap_in(self, plan: Plan) -> None:
        """Nothing waits in other memory."""


class Swap(Recompute):
    """Preemption by swapping (vLLM V0's other kind): the blocks' contents are copied out to other
    memory and copied back into fresh blocks when enough are free; the request keeps its batch slot."""

    def preempt(self, seq: Sequence) -> None:
        blocks = len(seq.cache.table)
        seq.swap = seq.cache.swap_out()
        self.policy.engine.count_swap(seq, blocks)
        seq.status, seq.event = Status.SWAPPED, "swapped out"
        self.policy.running.append(seq)  # keeps its batch slot, but computes nothing until swapped in

    def swapped(self) -> list[Sequence]:
        return sorted((s for s in self.policy.running if s.status is Status.SWAPPED),
                      key=lambda s: (s.request.arrival, s.index))

    def swap_in(self, plan: Plan) -> None:
        """Bring swapped requests back, first come first served, if their blocks and tokens fit."""
        policy = self.policy
        for seq in self.swapped():
            blocks, take = seq.swap["v"].shape[0], policy.wanted(seq)
            need = math.ceil((len(seq.cache) + take) / policy.engine.pool.block_size)  # its blocks and any new one
            if not policy.fits(need):
                break
            seq.cache.swap_in(seq.swap)
            policy.engine.count_swap(seq, blocks)
            seq.swap = None
            seq.status, seq.event = Status.RUNNING, "swapped in"
            policy.plan(plan, seq, take, need - blocks)


PREEMPTIONS = {Preemption.RECOMPUTE: Recompute, Preemption.SWAP: Swap}


class Continuous(SchedulingPolicy):
    """Iteration-level scheduling over the block pool (vLLM's scheduler, simplified)."""

    def __init__(self, engine: Engine):
        super().__init__(engine)
        self.running: list[Sequence] = []  # in admission order; the last admitted is preempted first
        self.preemption = PREEMPTIONS[self.config.preemption](self)
        self.reserved = 0  # blocks promised to this iteration's plan
        self.budget = 0  # prompt tokens this iteration may still compute (chunked prefill)
        self.prefill_only = False  # this iteration prefills new prompts and nothing else
        self.preempted = False  # this iteration had to preempt

    @property
    def chunked(self) -> bool:
        return self.config.chunk_size is not None

    def blocks_for(self, seq: Sequence, take: int) -> int:
        """New blocks a request needs to hold ``take`` more tokens."""
        return math.ceil((len(seq.cache) + take) / self.engine.pool.block_size) - len(seq.cache.table)

    def fits(self, blocks: int) -> bool:
        return self.engine.pool.available - self.reserved >= blocks

    def wanted(self, seq: Sequence) -> int:
        """Tokens a request would compute now: its decode token, its whole prompt, or a chunk of it."""
        if seq.decoding:
            return 1
        return min(seq.uncached, self.budget) if self.chunked else seq.uncached

    def plan(self, plan: Plan, seq: Sequence, take: int, need: int) -> None:
        if take:
            plan.work.append((seq, take))
            self.reserved += need
            if not seq.decoding and self.chunked:
                self.budget -= take

    def schedule(self) -> Plan | None:
        plan = Plan()
        self.reserved, self.budget = 0, self.config.chunk_size or 0
        self.prefill_only = self.preempted = False
        swapped = self.preemption.swapped
        if not self.chunked and not swapped():  # whole prompts first, in an iteration of their own
            self.admit(plan)
            self.prefill_only = bool(plan.work)
        if not plan.work:
            self.preempted = self.schedule_running(plan)
            if not self.preempted:  # no new work in an iteration that had to preempt
                self.preemption.swap_in(plan)
                if self.chunked and not swapped():
                    self.admit(plan)
        if not plan.work:
            return None
        running = sum(1 for s in self.running if s.status is Status.RUNNING)
        waiting = any(s.status is Status.WAITING for s in self.engine.sequences)
        plan.idle = self.config.max_batch - running if waiting else 0
        return plan

    def why(self, seq: Sequence) -> str:
        if seq.status is Status.RUNNING:
            return ("paused while new prompts are prefilled" if self.prefill_only
                    else "paused: the prompt budget of this iteration is spent")
        if seq.status is Status.SWAPPED:
            return "swapped out: waits for free blocks"
        if seq.status is not Status.WAITING:
            return ""
        if self.preempted:
            return "no request starts in an iteration that had to preempt"
        if self.preemption.swapped():
            return "swapped requests come back first"
        if len(self.running) >= self.config.max_batch:
            return "every batch slot is taken"
        if self.chunked and self.budget <= 0:
            return "the prompt budget of this iteration is spent"
        return "not enough free blocks for its prompt"

    def schedule_running(self, plan: Plan) -> bool:
        """Plan every running request's tokens, preempting the last admitted while blocks run short.
        Returns whether anything was preempted."""
        queue = [s for s in self.running if s.status is Status.RUNNING]
        preempted = False
        i = 0
        while i < len(queue):
            seq = queue[i]
            take = self.wanted(seq)
            need = self.blocks_for(seq, take)
            while not self.fits(need):
                victim = queue.pop()
                self.running.remove(victim)
                victim.preemptions += 1
                self.preemption.preempt(victim)
                preempted = True
                if victim is seq:
                    break
            else:
                self.plan(plan, seq, take, need)
                i += 1
        return preempted

    def admit(self, plan: Plan) -> None:
        """Start waiting requests first come first served while a slot, the blocks and the budget allow."""
        for seq in self.engine.arrived():
            if len(self.running) >= self.config.max_batch or (self.chunked and self.budget <= 0):
                break
            hits = seq.take_cached_prefix(self.engine.pool)
            take = self.wanted(seq)
            need = self.blocks_for(seq, take)
            if not self.fits(need):
                seq.give_back_prefix(hits)  # it waits at the head of the queue
                break
            seq.status = Status.RUNNING
            self.running.append(seq)
            events = ["recomputes"] if seq.preemptions and self.config.preemption is Preemption.RECOMPUTE else []
            seq.event = ", ".join(events + ([f"prefix hit {hits} tokens"] if hits else []))
            self.plan(plan, seq, take, need)

    def postprocess(self, plan: Plan) -> None:
        pool = self.engine.pool
        for seq, _ in plan.work:
            seq.named = pool.name_full_blocks(seq.cache.table, len(seq.cache), seq.tokens, seq.values, seq.named)
            if seq.finished:
                seq.cache.truncate(0)  # its blocks go back (named ones stay cached)
                seq.status = Status.FINISHED
                self.running.remove(seq)


class Static(SchedulingPolicy):
    """Request-level scheduling: a batch runs from its padded prefill to its longest answer."""

    def __init__(self, engine: Engine):
        super().__init__(engine)
        self.batch: list[Sequence] = []

    def schedule(self) -> Plan | None:
        waiting = self.engine.arrived()
        if not self.batch:
            room = self.config.slots
            for seq in waiting[: self.config.max_batch]:
                if seq.request.max_cached > room:
                    break
                room -= seq.request.max_cached
                seq.status = Status.RUNNING
                self.batch.append(seq)
            if not self.batch:
                return None
            longest = max(len(s.request.tokens) for s in self.batch)
            plan = Plan([(s, len(s.request.tokens)) for s in self.batch],
                        padding=sum(longest - len(s.request.tokens) for s in self.batch))
        else:
            live = [s for s in self.batch if not s.finished]
            plan = Plan([(s, 1) for s in live], padding=len(self.batch) - len(live))
        plan.idle = self.config.max_batch - len(plan.work) if self.engine.arrived() else 0
        return plan

    def postprocess(self, plan: Plan) -> None:
        if all(s.finished for s in self.batch):
            for seq in self.batch:
                seq.status = Status.FINISHED
            self.batch = []

    def phase(self, seq: Sequence) -> Phase:
        if seq in self.batch and not seq.fed:
            return Phase.IDLE
        return super().phase(seq)

    def table(self, seq: Sequence) -> tuple[int, ...]:
        return ()

    def why(self, seq: Sequence) -> str:
        if seq in self.batch:
            return "finished: its slot idles until the whole batch is done"
        if seq.status is not Status.WAITING:
            return ""
        return ("waits for the running batch to finish" if self.batch
                else "the batch is full or its reservation does not fit")

    def pool_state(self) -> tuple[tuple[BlockState, ...], int, int]:
        """No blocks: each request in the batch reserves its prompt plus every new token it may make."""
        return (), sum(s.request.max_cached for s in self.batch), sum(len(s.cache) for s in self.batch)


def common_prefix(a: Sequence, tokens: list[str], values: list[float]) -> int:
    """Leading tokens a request's prompt shares with a sequence, token and value alike (the toy's key
    depends on both)."""
    n = 0
    for ta, va, tb, vb in zip(a.request.tokens, a.request.values, tokens, values):
        if (ta, va) != (tb, vb):
            break
        n += 1
    return n


class Together(SchedulingPolicy):
    """Admit every request in turn, sharing prompt prefixes by copy on write when ``sharing``; then
    decode one token of every unfinished sequence per iteration. Finished sequences keep their blocks."""

    def __init__(self, engine: Engine, sharing: bool):
        super().__init__(engine)
        self.sharing = sharing
        self.decodes = 0

    def schedule(self) -> Plan | None:
        sequences = self.engine.sequences
        new = next((s for s in sequences if s.status is Status.NOT_ARRIVED), None)
        if new is not None:
            admitted = [s for s in sequences if s.status is not Status.NOT_ARRIVED]
            parent, shared = None, 0
            for seq in admitted if self.sharing else []:
                common = common_prefix(new, seq.fed_tokens, seq.run.decoder.values)
                if common > shared:
                    parent, shared = seq, common
            if parent is not None:
                new.fork_from(parent, shared)
            new.status = Status.RUNNING
            # the whole prompt is fed: the cache checks the shared part and stores only the rest
            return Plan([(new, new.uncached)], label=f"prefill {new.name}")
        live = [s for s in sequences if s.status is Status.RUNNING]
        if not live:
            return None
        self.decodes += 1
        return Plan([(s, 1) for s in live], label=f"decode {self.decodes}")

    def postprocess(self, plan: Plan) -> None:
        for seq, _ in plan.work:
            if seq.finished:
                seq.status = Status.FINISHED


POLICIES = {Policy.CONTINUOUS: Continuous, Policy.STATIC: Static}
