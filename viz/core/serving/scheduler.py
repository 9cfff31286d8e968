"""A toy inference server: many requests decoded on one block pool, scheduled one iteration at a time.

Every request runs the engine's one decode loop (:class:`~viz.core.engine.model.Generation`: extend →
logits → sample) over its own :class:`~viz.core.serving.paged.PagedKVCache`; what this module decides is
*who computes what in each iteration*, as vLLM's scheduler does:

1. **Continuous batching** (iteration-level scheduling): a request joins as soon as a batch slot and
   the blocks for its prompt are free, and leaves the moment it is done. Without chunking a new
   request's whole prompt is prefilled in an iteration of its own, before any decode (vLLM's
   default before chunked prefill); the running requests wait for it.
2. **Chunked prefill**: at most ``chunk_size`` prompt tokens per iteration, computed in the same
   iteration as every running request's decode token (decodes first, then prompt chunks).
3. **Prefix caching** (vLLM's automatic prefix caching): every *full* block is named by its tokens
   and everything before them; a later prompt that starts with the same full blocks takes them
   instead of computing their keys and values. A partly filled block is never shared: its owner
   will still write into it, and its name is not fixed until it is full. The last prompt token is
   always computed, because its query gives the first prediction.
4. **Preemption**: when a running request needs a block and none is free, the request admitted last
   is preempted: *recompute* frees its blocks and later computes its prompt and generated tokens
   again as one prefill; *swap* copies its blocks to swap space and back when blocks are free again.
5. **Static batching**, for comparison: a batch of requests starts together, every prompt padded to
   the longest, each request reserving room for its prompt and every new token it may make, and no
   request joins until the whole batch has finished.

Each request's words, contexts and logits are exactly those of decoding it alone
(:func:`decode_alone`, checked by :func:`same_as_alone`), whatever the policy: the keys and values
in its blocks are the ones it would have computed itself, and its last query row reads all of them.
That needs keys that do not depend on the sequence length ``n``; :func:`serving_refusal` says why a
head that reads ``n`` cannot be served this way.

What this module does not do: batch several requests into one tensor (each request's rows are its
own attention call, as PagedAttention gives each sequence its own block table), run speculative
decoding (:mod:`viz.core.serving.speculative`) or draw.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from ..engine.budget import BUDGET, BYTE_RATE, ELEMENT, Shape, Work, attend_work
from ..engine.model import Generation, Step, ToyModel, WorkCounts
from .paged import OutOfBlocks, PagedKVCache
from .prefix_cache import BlockKey, CachingPool
from ..engine.scenario import Scenario
from ..timing import timed
from .workload import (BlockState, Iteration, RequestOutcome, SequenceState, ServeRequest, ServingConfig,
                       ServingError, ServingRun, Workload, check_workload, serving_refusal)

MAX_ITERATIONS = 4_000  # far above what the limits allow; a run that reaches it is refused
RUN_BUDGET_MS = BUDGET.ms / 4  # a click computes up to two runs and checks both against decoding alone
MAX_POOL_BYTES = 64 * 2**20  # the pool's keys and values, allocated up front
ITERATION_MS, BLOCK_MS, REQUEST_MS = 0.25, 0.006, 0.03  # reference ms of scheduling per iteration
_RECORDS = ("k", "v", "pos", "token", "value", "n")


@dataclass
class _Seq:
    """A request in the server: the engine's decode loop, where it stands, and what happened to it."""

    index: int
    request: ServeRequest
    run: Generation
    status: str = "not arrived"  # waiting, running, swapped, done
    preemptions: int = 0
    recomputed: int = 0
    prefix_hits: int = 0
    swapped_bytes: int = 0
    named: int = 0  # full blocks already named for prefix caching
    swap: dict[str, torch.Tensor] | None = None  # its blocks' contents while swapped out
    token_times: tuple[int, ...] = ()
    event: str = ""
    fed: int = 0
    doing: str = ""  # "prefill" or "decode": what its tokens in this iteration were
    predicted: str | None = None

    @property
    def tokens(self) -> list[str]:
        """The prompt, then every word chosen so far (the last one not yet fed back)."""
        return list(self.request.tokens) + [s.token for s in self.run.steps]

    @property
    def values(self) -> list[float]:
        return list(self.request.values) + [s.value for s in self.run.steps]

    @property
    def cache(self):
        return self.run.decoder.cache

    @property
    def uncached(self) -> int:
        """Tokens to feed before the next prediction: the prompt at first, then the last word."""
        return len(self.request.tokens) + len(self.run.steps) - len(self.cache)

    @property
    def decoding(self) -> bool:
        return bool(self.run.steps) and self.uncached == 1

    @property
    def finished(self) -> bool:
        return len(self.run.steps) == self.request.max_new_tokens


def _feed(seq: _Seq, take: int) -> tuple[WorkCounts, Step | None]:
    """Feed the next ``take`` uncached tokens through the engine; predict once all are in the cache."""
    start = len(seq.cache)
    tokens, values = seq.tokens[start:start + take], seq.values[start:start + take]
    result = seq.run.decoder.extend(tokens, values)
    if seq.uncached:
        return result.attention.counts, None
    step = seq.run._predict(result)  # the engine's context → logits → sample, as every loop does
    return step.counts, step


def _forget(seq: _Seq) -> None:
    """Drop every cached token (preemption by recompute): the blocks go back, the words stay."""
    seq.cache.truncate(0)
    seq.run.decoder.tokens, seq.run.decoder.values = [], []
    seq.named = 0


class Meter:
    """Engine work estimated pass by pass (:func:`viz.core.engine.budget.attend_work`) before each pass runs;
    :class:`ServingError` once it passes ``budget_ms`` reference milliseconds.

    A pass over a paged cache first gathers its blocks into one tensor (``PagedKVCache.keys``), which
    copies every key twice; ``paged`` adds those bytes (measured: a paged decode step takes about 1.8×
    a contiguous one at 16 heads × d_k 1024)."""

    def __init__(self, scenario: Scenario, budget_ms: float, paged: bool = False):
        self.shape, self.budget_ms, self.paged, self.spent = Shape.of(scenario), budget_ms, paged, Work()

    def charge(self, m: int, length: int) -> None:
        """A pass of m new tokens over ``length`` keys."""
        copied = 2 * 2 * self.shape.heads * length * self.shape.d_k * ELEMENT  # two copies, read and written
        self._add(attend_work(self.shape, m, length, m) + (Work(1e3 * copied / BYTE_RATE) if self.paged else Work()))

    def iteration(self, blocks: int, requests: int) -> None:
        """The scheduler's own work in one iteration: planning, and recording every request and block
        (measured: about 1.4 ms with 128 blocks and 12 requests)."""
        self._add(Work(ITERATION_MS + BLOCK_MS * blocks + REQUEST_MS * requests))

    def _add(self, work: Work) -> None:
        self.spent = self.spent + work
        if self.spent.ms > self.budget_ms:
            raise ServingError(f"this workload needs more engine work than one click may take here "
                               f"({self.budget_ms / 1000:.2g} s); use fewer or shorter requests, fewer heads "
                               "or a smaller d_k")


def decode_alone(scenario: Scenario, request: ServeRequest, model: ToyModel | None = None) -> list[Step]:
    """The request on its own: prefill, then one prediction per new token (the reference)."""
    run = Generation(scenario, "kv", model=model)
    run.prefill(list(request.tokens), list(request.values))
    for _ in range(request.max_new_tokens - 1):
        run.step()
    return run.steps


def same_as_alone(run: ServingRun, budget_ms: float = RUN_BUDGET_MS) -> tuple[bool, ...]:
    """Per request: same words, contexts and logits, bit for bit, as decoding it alone (its passes
    charged to a :class:`Meter` like a run's)."""
    model = ToyModel(run.scenario)
    meter = Meter(run.scenario, budget_ms)
    out = []
    for request, outcome in zip(run.workload.requests, run.outcomes):
        n = len(request.tokens)
        for length in range(n, n + request.max_new_tokens):
            meter.charge(n if length == n else 1, length)
        steps = decode_alone(run.scenario, request, model)
        out.append(tuple(s.token for s in steps) == outcome.words
                   and torch.equal(torch.stack([s.context for s in steps]), outcome.contexts)
                   and torch.equal(torch.stack([s.logits for s in steps]), outcome.logits))
    return tuple(out)


class _Server:
    """What both policies share: the requests, the clock, and recording an iteration."""

    def __init__(self, scenario: Scenario, workload: Workload, config: ServingConfig, model: ToyModel,
                 budget_ms: float):
        self.scenario, self.workload, self.config, self.model = scenario, workload, config, model
        self.pool = self.make_pool()
        self.meter = Meter(scenario, budget_ms, paged=self.pool is not None)
        self.seqs = [_Seq(i, r, self._generation(r)) for i, r in enumerate(workload.requests)]
        self.clock = 0
        self.iterations: list[Iteration] = []
        self.swap_bytes = 0

    def make_pool(self) -> CachingPool | None:
        config, model = self.config, self.model
        return CachingPool(config.num_blocks, config.block_size, model.num_heads, model.d_k,
                           caching=config.prefix_caching, device=model.device, dtype=model.dtype)

    def _generation(self, request: ServeRequest) -> Generation:
        return Generation(self.scenario, "kv", model=self.model, cache=PagedKVCache(self.pool))

    def arrived(self) -> list[_Seq]:
        """Requests waiting at this moment, first come first served (preempted ones keep their place)."""
        for seq in self.seqs:
            if seq.status == "not arrived" and seq.request.arrival <= self.clock:
                seq.status = "waiting"
        return sorted((s for s in self.seqs if s.status == "waiting"),
                      key=lambda s: (s.preemptions == 0, s.request.arrival, s.index))

    def next_arrival(self) -> int | None:
        return min((s.request.arrival for s in self.seqs if s.status == "not arrived"), default=None)

    def run(self) -> ServingRun:
        while any(s.status != "done" for s in self.seqs):
            if len(self.iterations) >= MAX_ITERATIONS:
                raise ServingError(f"the workload did not finish within {MAX_ITERATIONS} iterations")
            if not self.iterate():
                upcoming = self.next_arrival()
                if upcoming is None or upcoming <= self.clock:
                    raise ServingError("no request can run: the pool is too small for the next one")
                self.clock = upcoming  # nothing to do until the next request arrives
        outcomes = tuple(self.outcome(s) for s in self.seqs)
        return ServingRun(self.scenario, self.workload, self.config, tuple(self.iterations), outcomes,
                          self.swap_bytes, (self.model.num_heads * self.model.d_k + 1) * self.model.w_vocab.element_size())

    def iterate(self) -> bool:
        """Run one iteration; False if nothing could run."""
        raise NotImplementedError

    def execute(self, plan: list[tuple[_Seq, int]], padding: int, idle: int) -> None:
        """Feed every planned request its tokens, then advance the clock and record the iteration."""
        work, seconds = WorkCounts(), 0.0
        self.meter.iteration(self.pool.num_blocks if self.pool else 0, len(self.seqs))
        for seq, take in plan:
            seq.fed, seq.doing = take, "decode" if seq.decoding else "prefill"
            self.meter.charge(take, len(seq.cache) + take)
            spent, (counts, step) = timed(lambda: _feed(seq, take), self.model.device)
            seconds += spent
            work = work + counts
            if step is not None:
                seq.predicted = step.token
        duration = self.config.overhead + sum(take for _, take in plan) + padding
        for seq, _ in plan:
            if seq.predicted is not None:
                seq.token_times += (self.clock + duration,)
        self.after(plan)
        self.record(duration, padding, idle, work, seconds)
        self.clock += duration

    def after(self, plan: list[tuple[_Seq, int]]) -> None:
        """Bookkeeping once the iteration's passes have run (name full blocks, free finished requests)."""

    def record(self, duration: int, padding: int, idle: int, work: WorkCounts, seconds: float) -> None:
        states = tuple(SequenceState(self.phase(s), s.fed, len(s.cache) if s.status != "swapped" else 0,
                                     self.table(s), s.predicted, s.event, "" if s.fed else self.why(s))
                       for s in self.seqs)
        blocks, reserved, filled = self.pool_state()
        handed, returned = (self.pool.handed, self.pool.returned) if self.pool else ((), ())
        self.iterations.append(Iteration(len(self.iterations), self.clock, duration, states, tuple(handed),
                                         tuple(returned), blocks, reserved, filled, padding, idle, work, seconds))
        if self.pool:
            self.pool.handed, self.pool.returned = [], []
        for seq in self.seqs:
            seq.fed, seq.predicted, seq.event = 0, None, ""

    def phase(self, seq: _Seq) -> str:
        if seq.fed:
            return seq.doing
        return seq.status if seq.status != "running" else "waiting"

    def why(self, seq: _Seq) -> str:
        """Why a request that has arrived computed nothing in this iteration, in a few words."""
        return ""

    def table(self, seq: _Seq) -> tuple[int, ...]:
        return tuple(seq.cache.table) if seq.status in ("running", "waiting") else ()

    def pool_state(self) -> tuple[tuple[BlockState, ...], int, int]:
        size, pool = self.pool.block_size, self.pool
        owners: list[list[int]] = [[] for _ in range(pool.num_blocks)]
        filled = [0] * pool.num_blocks
        for seq in self.seqs:
            if seq.status in ("running", "waiting"):
                for logical, block in enumerate(seq.cache.table):
                    owners[block].append(seq.index)
                    filled[block] = max(filled[block], min(size, len(seq.cache) - logical * size))
        for block in pool.evictable:
            filled[block] = size
        named = pool.key_of
        blocks = tuple(BlockState(tuple(o), f, b in named) for b, (o, f) in enumerate(zip(owners, filled)))
        used = [b for b, count in enumerate(pool.refcount) if count]
        return blocks, len(used) * size, sum(filled[b] for b in used)

    def outcome(self, seq: _Seq) -> RequestOutcome:
        steps = seq.run.steps
        return RequestOutcome(seq.request.name, len(seq.request.tokens), seq.request.arrival,
                              tuple(s.token for s in steps), torch.stack([s.context for s in steps]),
                              torch.stack([s.logits for s in steps]), seq.token_times, seq.preemptions,
                              seq.recomputed, seq.prefix_hits, seq.swapped_bytes)


class _Continuous(_Server):
    """Iteration-level scheduling over the block pool (vLLM's scheduler, simplified)."""

    def __init__(self, *args):
        super().__init__(*args)
        self.running: list[_Seq] = []  # in admission order; the last admitted is preempted first
        self.reserved = 0  # blocks promised to this iteration's plan
        self.budget = 0  # prompt tokens this iteration may still compute (chunked prefill)
        self.prefill_only = False  # this iteration prefills new prompts and nothing else
        self.preempted = False  # this iteration had to preempt

    @property
    def chunked(self) -> bool:
        return self.config.chunk_size is not None

    def blocks_for(self, seq: _Seq, take: int) -> int:
        """New blocks a request needs to hold ``take`` more tokens."""
        return math.ceil((len(seq.cache) + take) / self.pool.block_size) - len(seq.cache.table)

    def fits(self, blocks: int) -> bool:
        return self.pool.available - self.reserved >= blocks

    def swapped(self) -> list[_Seq]:
        return sorted((s for s in self.running if s.status == "swapped"), key=lambda s: (s.request.arrival, s.index))

    def wanted(self, seq: _Seq) -> int:
        """Tokens a request would compute now: its decode token, its whole prompt, or a chunk of it."""
        if seq.decoding:
            return 1
        return min(seq.uncached, self.budget) if self.chunked else seq.uncached

    def plan(self, plan: list[tuple[_Seq, int]], seq: _Seq, take: int, need: int) -> None:
        if take:
            plan.append((seq, take))
            self.reserved += need
            if not seq.decoding and self.chunked:
                self.budget -= take

    def iterate(self) -> bool:
        plan: list[tuple[_Seq, int]] = []
        self.reserved, self.budget = 0, self.config.chunk_size or 0
        self.prefill_only = self.preempted = False
        if not self.chunked and not self.swapped():  # whole prompts first, in an iteration of their own
            self.admit(plan)
            self.prefill_only = bool(plan)
        if not plan:
            self.preempted = self.schedule_running(plan)
            if not self.preempted:  # no new work in an iteration that had to preempt
                self.swap_in(plan)
                if self.chunked and not self.swapped():
                    self.admit(plan)
        if not plan:
            return False
        running = sum(1 for s in self.running if s.status == "running")
        idle = self.config.max_batch - running if any(s.status == "waiting" for s in self.seqs) else 0
        self.execute(plan, 0, idle)
        return True

    def why(self, seq: _Seq) -> str:
        if seq.status == "running":
            return ("paused while new prompts are prefilled" if self.prefill_only
                    else "paused: the prompt budget of this iteration is spent")
        if seq.status == "swapped":
            return "swapped out: waits for free blocks"
        if seq.status != "waiting":
            return ""
        if self.preempted:
            return "no request starts in an iteration that had to preempt"
        if self.swapped():
            return "swapped requests come back first"
        if len(self.running) >= self.config.max_batch:
            return "every batch slot is taken"
        if self.chunked and self.budget <= 0:
            return "the prompt budget of this iteration is spent"
        return "not enough free blocks for its prompt"

    def schedule_running(self, plan: list[tuple[_Seq, int]]) -> bool:
        """Plan every running request's tokens, preempting the last admitted while blocks run short.
        Returns whether anything was preempted."""
        queue = [s for s in self.running if s.status == "running"]
        preempted = False
        i = 0
        while i < len(queue):
            seq = queue[i]
            take = self.wanted(seq)
            need = self.blocks_for(seq, take)
            while not self.fits(need):
                victim = queue.pop()
                self.preempt(victim)
                preempted = True
                if victim is seq:
                    break
            else:
                self.plan(plan, seq, take, need)
                i += 1
        return preempted

    def admit(self, plan: list[tuple[_Seq, int]]) -> None:
        """Start waiting requests first come first served while a slot, the blocks and the budget allow."""
        for seq in self.arrived():
            if len(self.running) >= self.config.max_batch or (self.chunked and self.budget <= 0):
                break
            hits = self.take_prefix(seq)
            take = self.wanted(seq)
            need = self.blocks_for(seq, take)
            if not self.fits(need):
                _forget(seq)  # give the hit blocks back; it waits at the head of the queue
                seq.prefix_hits -= hits
                break
            seq.status = "running"
            self.running.append(seq)
            events = ["recomputes"] if seq.preemptions and self.config.preemption == "recompute" else []
            seq.event = ", ".join(events + ([f"prefix hit {hits} tokens"] if hits else []))
            self.plan(plan, seq, take, need)

    def take_prefix(self, seq: _Seq) -> int:
        """Take the cached full blocks this request's tokens start with; returns the tokens they hold."""
        if not self.config.prefix_caching:
            return 0
        size, tokens, values = self.pool.block_size, seq.tokens, seq.values
        key: BlockKey = ()
        table: list[int] = []
        for start in range(0, len(tokens) - size, size):  # full blocks, never the last token's
            key = (key, tuple(zip(tokens[start:start + size], values[start:start + size])))
            block = self.pool.by_key.get(key)
            if block is None:
                break
            self.pool.take(block)
            table.append(block)
        hits = len(table) * size
        seq.cache.table, seq.cache.length = table, hits
        seq.run.decoder.tokens, seq.run.decoder.values = tokens[:hits], values[:hits]
        seq.named = len(table)
        seq.prefix_hits += hits
        return hits

    def preempt(self, seq: _Seq) -> None:
        self.running.remove(seq)
        seq.preemptions += 1
        if self.config.preemption == "swap":
            table = seq.cache.table
            index = torch.tensor(table, dtype=torch.int64, device=self.pool.k.device)
            seq.swap = {name: getattr(self.pool, name)[index].clone() for name in _RECORDS}
            self.count_swap(seq, len(table))
            for block in table:
                self.pool.release(block)
            seq.cache.table = []
            seq.status, seq.event = "swapped", "swapped out"
            self.running.append(seq)  # keeps its batch slot, but computes nothing until swapped in
            return
        seq.recomputed += len(seq.cache)  # computed once already; computed again when it returns
        _forget(seq)
        seq.status, seq.event = "waiting", "preempted: will recompute"

    def swap_in(self, plan: list[tuple[_Seq, int]]) -> None:
        """Bring swapped requests back, first come first served, if their blocks and tokens fit."""
        for seq in self.swapped():
            blocks, take = seq.swap["v"].shape[0], self.wanted(seq)
            need = math.ceil((len(seq.cache) + take) / self.pool.block_size)  # its blocks and any new one
            if not self.fits(need):
                break
            table = [self.pool.allocate() for _ in range(blocks)]
            index = torch.tensor(table, dtype=torch.int64, device=self.pool.k.device)
            for name in _RECORDS:
                getattr(self.pool, name)[index] = seq.swap[name]
            self.count_swap(seq, blocks)
            seq.cache.table, seq.swap = table, None
            seq.status, seq.event = "running", "swapped in"
            self.plan(plan, seq, take, need - blocks)

    def count_swap(self, seq: _Seq, blocks: int) -> None:
        nbytes = blocks * self.pool.block_size * self.pool.slot_nbytes
        seq.swapped_bytes += nbytes
        self.swap_bytes += nbytes

    def after(self, plan: list[tuple[_Seq, int]]) -> None:
        size = self.pool.block_size
        for seq, _ in plan:
            tokens, values = seq.tokens, seq.values
            while seq.named < len(seq.cache) // size:  # name the blocks that just became full
                key: BlockKey = ()
                for start in range(0, (seq.named + 1) * size, size):
                    key = (key, tuple(zip(tokens[start:start + size], values[start:start + size])))
                self.pool.name(seq.cache.table[seq.named], key)
                seq.named += 1
            if seq.finished:
                seq.cache.truncate(0)
                seq.status = "done"
                self.running.remove(seq)


class _Static(_Server):
    """Request-level scheduling: a batch runs from its padded prefill to its longest answer."""

    def __init__(self, *args):
        super().__init__(*args)
        self.batch: list[_Seq] = []

    def make_pool(self) -> None:
        return None  # each request reserves a contiguous cache of its own

    def _generation(self, request: ServeRequest) -> Generation:
        return Generation(self.scenario, "kv", model=self.model)  # a contiguous cache per request

    def iterate(self) -> bool:
        waiting = self.arrived()
        if not self.batch:
            room = self.config.slots
            for seq in waiting[: self.config.max_batch]:
                if seq.request.max_cached > room:
                    break
                room -= seq.request.max_cached
                seq.status = "running"
                self.batch.append(seq)
            if not self.batch:
                return False
            longest = max(len(s.request.tokens) for s in self.batch)
            padding = sum(longest - len(s.request.tokens) for s in self.batch)
            plan = [(s, len(s.request.tokens)) for s in self.batch]
        else:
            live = [s for s in self.batch if not s.finished]
            plan = [(s, 1) for s in live]
            padding = len(self.batch) - len(live)
        idle = self.config.max_batch - len(plan) if self.arrived() else 0
        self.execute(plan, padding, idle)
        return True

    def after(self, plan: list[tuple[_Seq, int]]) -> None:
        if all(s.finished for s in self.batch):
            for seq in self.batch:
                seq.status = "done"
            self.batch = []

    def phase(self, seq: _Seq) -> str:
        if seq in self.batch and not seq.fed:
            return "idle"
        return super().phase(seq)

    def table(self, seq: _Seq) -> tuple[int, ...]:
        return ()

    def why(self, seq: _Seq) -> str:
        if seq in self.batch:
            return "finished: its slot idles until the whole batch is done"
        if seq.status != "waiting":
            return ""
        return ("waits for the running batch to finish" if self.batch
                else "the batch is full or its reservation does not fit")

    def pool_state(self) -> tuple[tuple[BlockState, ...], int, int]:
        """No blocks: each request in the batch reserves its prompt plus every new token it may make."""
        return (), sum(s.request.max_cached for s in self.batch), sum(len(s.cache) for s in self.batch)


def serve(scenario: Scenario, workload: Workload, config: ServingConfig,
          device: str | torch.device | None = None, budget_ms: float = RUN_BUDGET_MS) -> ServingRun:
    """Serve ``workload`` under ``config``; :class:`ServingError` for a refused setting, or for a run
    whose engine work passes ``budget_ms`` reference milliseconds (:mod:`viz.core.engine.budget`)."""
    config = config.checked()
    pool_bytes = config.slots * (len(scenario.heads) * scenario.d_k + 1) * 4
    if pool_bytes > MAX_POOL_BYTES:  # static batching reserves as much, request by request
        raise ServingError(f"a pool of {config.slots:,} slots would take {pool_bytes / 2**20:.0f} MiB with "
                           f"{len(scenario.heads)} heads × d_k {scenario.d_k}; the limit is "
                           f"{MAX_POOL_BYTES // 2**20} MiB: use fewer or smaller blocks")
    check_workload(workload.requests)
    refusal = serving_refusal(scenario)
    if refusal and config.policy == "continuous":
        raise ServingError(refusal)
    for request in workload.requests:
        if request.blocks_needed(config.block_size) > config.num_blocks:
            raise ServingError(f"request '{request.name}' may hold {request.max_cached} tokens, "
                               f"{request.blocks_needed(config.block_size)} blocks of {config.block_size}; "
                               f"the pool has {config.num_blocks}")
    model = ToyModel(scenario, device=device)
    server = (_Static if config.policy == "static" else _Continuous)(scenario, workload, config, model, budget_ms)
    try:
        return server.run()
    except OutOfBlocks as err:  # the scheduler reserves blocks before every pass, so this is a bug
        raise AssertionError(f"the scheduler promised blocks it did not have: {err}") from err
