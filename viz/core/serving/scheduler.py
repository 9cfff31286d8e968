"""The serving engine: many requests decoded on one block pool, scheduled one iteration at a time.

Shaped like nano-vllm's engine: each request becomes a :class:`~viz.core.serving.sequence.Sequence`
(status an enum, owning its decode run: the engine's one loop, extend → logits → sample, over a
:class:`~viz.core.serving.block_manager.PagedKVCache`); one
:class:`~viz.core.serving.block_manager.BlockManager` holds every block; a policy class
(:mod:`viz.core.serving.policies`) decides *who computes what in each iteration*, and
:class:`Scheduler` runs its plan: feeds each sequence its tokens through the engine's public
methods, advances the clock, lets the policy free and name blocks, and hands the iteration to an
observer that records it. Two configurations use it:

* :func:`serve` (the Serving page): continuous batching (with chunked prefill, prefix caching and
  preemption by recompute or swap) or static batching, recorded as :class:`~.workload.Iteration` records.
* :func:`viz.core.serving.paged.decode_together` (the Memory page): every request admitted in turn,
  forks sharing prefix blocks by copy on write, recorded as pool snapshots.

Each request's words, contexts and logits are exactly those of decoding it alone
(:func:`decode_alone`, checked by :func:`same_as_alone`), whatever the policy: the keys and values
in its blocks are the ones it would have computed itself, and its last query row reads all of them.
That needs keys that do not depend on the sequence length ``n``; :func:`~.workload.serving_refusal`
says why a head that reads ``n`` cannot be served this way.

What this module does not do: batch several requests into one tensor (each request's rows are its
own attention call, as PagedAttention gives each sequence its own block table), run speculative
decoding (:mod:`viz.core.serving.speculative`) or draw.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch

from ..engine.budget import BUDGET, BYTE_RATE, ELEMENT, Shape, Work, attend_work
from ..engine.cache import slot_nbytes
from ..engine.model import Generation, Step, ToyModel, WorkCounts
from ..engine.scenario import Scenario
from ..timing import timed
from .block_manager import BlockManager, OutOfBlocks, PagedKVCache
from .policies import POLICIES, Plan, SchedulingPolicy
from .sequence import Request, Sequence, SequenceStatus
from .workload import (Iteration, Policy, SequenceState, ServingConfig, ServingError, ServingRun, Workload,
                       check_workload, serving_refusal)

MAX_ITERATIONS = 4_000  # far above what the limits allow; a run that reaches it is refused
RUN_BUDGET_MS = BUDGET.ms / 4  # a click computes up to two runs and checks both against decoding alone
MAX_POOL_BYTES = 64 * 2**20  # the pool's keys and values, allocated up front
ITERATION_MS, BLOCK_MS, REQUEST_MS = 0.25, 0.006, 0.03  # reference ms of scheduling per iteration


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


def decode_alone(scenario: Scenario, request: Request, model: ToyModel | None = None) -> list[Step]:
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


@dataclass(frozen=True)
class Executed:
    """One iteration as it ran, for an observer to record (the engine's clock still at its start)."""

    plan: Plan
    duration: int  # ticks: overhead + tokens computed (padding included)
    work: WorkCounts
    seconds: float  # measured wall time of the engine's passes


class Scheduler:
    """The engine: the sequences, the block manager and the clock, stepped by one policy.

    ``policy(engine)`` builds the policy; ``observe(engine, executed)`` is called after every
    iteration, before the per-iteration marks are cleared and the clock moves on."""

    def __init__(self, scenario: Scenario, requests: tuple[Request, ...], config: ServingConfig, *,
                 policy: Callable[["Scheduler"], SchedulingPolicy], model: ToyModel, pool: BlockManager | None,
                 meter: Meter):
        self.scenario, self.config, self.model, self.pool, self.meter = scenario, config, model, pool, meter
        self.sequences = [Sequence(i, r, Generation(scenario, "kv", model=model,
                                                    cache=PagedKVCache(pool) if pool is not None else None))
                          for i, r in enumerate(requests)]
        self.clock = 0
        self.iterations = 0
        self.swap_bytes = 0
        self.policy = policy(self)

    def arrived(self) -> list[Sequence]:
        """Requests waiting at this moment, first come first served (preempted ones keep their place)."""
        for seq in self.sequences:
            if seq.status is SequenceStatus.NOT_ARRIVED and seq.request.arrival <= self.clock:
                seq.status = SequenceStatus.WAITING
        return sorted((s for s in self.sequences if s.status is SequenceStatus.WAITING),
                      key=lambda s: (s.preemptions == 0, s.request.arrival, s.index))

    def next_arrival(self) -> int | None:
        return min((s.request.arrival for s in self.sequences if s.status is SequenceStatus.NOT_ARRIVED),
                   default=None)

    def run(self, observe: Callable[["Scheduler", Executed], None]) -> None:
        """Iterate until every sequence is finished; :class:`ServingError` if that cannot happen."""
        while any(s.status is not SequenceStatus.FINISHED for s in self.sequences):
            if self.iterations >= MAX_ITERATIONS:
                raise ServingError(f"the workload did not finish within {MAX_ITERATIONS} iterations")
            plan = self.policy.schedule()
            if plan is None:
                upcoming = self.next_arrival()
                if upcoming is None or upcoming <= self.clock:
                    raise ServingError("no request can run: the pool is too small for the next one")
                self.clock = upcoming  # nothing to do until the next request arrives
                continue
            executed = self.execute(plan)
            observe(self, executed)
            for seq in self.sequences:
                seq.fed, seq.predicted, seq.event = 0, None, ""
            self.clock += executed.duration
            self.iterations += 1

    def execute(self, plan: Plan) -> Executed:
        """Feed every planned sequence its tokens, stamp the predictions, then let the policy follow up."""
        work, seconds = WorkCounts(), 0.0
        self.meter.iteration(self.pool.num_blocks if self.pool else 0, len(self.sequences))
        for seq, take in plan.work:
            seq.fed, seq.doing = take, "decode" if seq.decoding else "prefill"
            self.meter.charge(take, len(seq.fed_tokens) + take)
            spent, (counts, step) = timed(lambda: seq.feed(take), self.model.device)
            seconds += spent
            work = work + counts
            if step is not None:
                seq.predicted = step.token
        duration = self.config.overhead + sum(take for _, take in plan.work) + plan.padding
        for seq, _ in plan.work:
            if seq.predicted is not None:
                seq.token_times += (self.clock + duration,)
        self.policy.postprocess(plan)
        return Executed(plan=plan, duration=duration, work=work, seconds=seconds)

    def count_swap(self, seq: Sequence, blocks: int) -> None:
        """Bytes of ``blocks`` whole blocks copied to swap space or back."""
        nbytes = blocks * self.pool.block_size * self.pool.slot_nbytes
        seq.swapped_bytes += nbytes
        self.swap_bytes += nbytes


def record(engine: Scheduler, executed: Executed) -> Iteration:
    """The iteration as the Serving page shows it: every request's phase, the blocks, the cost."""
    policy = engine.policy
    states = tuple(SequenceState(phase=policy.phase(s), fed=s.fed,
                                 cache_length=len(s.cache) if s.status is not SequenceStatus.SWAPPED else 0,
                                 table=policy.table(s), predicted=s.predicted, event=s.event,
                                 reason="" if s.fed else policy.why(s))
                   for s in engine.sequences)
    blocks, reserved, filled = policy.pool_state()
    handed, returned = engine.pool.drain_events() if engine.pool else ((), ())
    plan = executed.plan
    return Iteration(index=engine.iterations, start=engine.clock, duration=executed.duration, states=states,
                     allocated=handed, freed=returned, blocks=blocks, reserved_slots=reserved, filled_slots=filled,
                     padding=plan.padding, idle_slots=plan.idle, work=executed.work, seconds=executed.seconds)


def serve(scenario: Scenario, workload: Workload, config: ServingConfig,
          device: str | torch.device | None = None, budget_ms: float = RUN_BUDGET_MS) -> ServingRun:
    """Serve ``workload`` under ``config``; :class:`ServingError` for a refused setting, or for a run
    whose engine work passes ``budget_ms`` reference milliseconds (:mod:`viz.core.engine.budget`)."""
    config = config.checked()
    pool_bytes = config.slots * slot_nbytes(len(scenario.heads), scenario.d_k, ELEMENT)
    if pool_bytes > MAX_POOL_BYTES:  # static batching reserves as much, request by request
        raise ServingError(f"a pool of {config.slots:,} slots would take {pool_bytes / 2**20:.0f} MiB with "
                           f"{len(scenario.heads)} heads × d_k {scenario.d_k}; the limit is "
                           f"{MAX_POOL_BYTES // 2**20} MiB: use fewer or smaller blocks")
    check_workload(workload.requests)
    refusal = serving_refusal(scenario)
    if refusal and config.policy is Policy.CONTINUOUS:
        raise ServingError(refusal)
    for request in workload.requests:
        if request.blocks_needed(config.block_size) > config.num_blocks:
            raise ServingError(f"request '{request.name}' may hold {request.max_cached} tokens, "
                               f"{request.blocks_needed(config.block_size)} blocks of {config.block_size}; "
                               f"the pool has {config.num_blocks}")
    model = ToyModel(scenario, device=device)
    pool = None if config.policy is Policy.STATIC else BlockManager(  # static: a contiguous cache per request
        config.num_blocks, config.block_size, model.num_heads, model.d_k, prefix_caching=config.prefix_caching,
        device=model.device, dtype=model.dtype)
    engine = Scheduler(scenario, workload.requests, config, policy=POLICIES[config.policy], model=model, pool=pool,
                       meter=Meter(scenario, budget_ms, paged=pool is not None))
    iterations: list[Iteration] = []
    try:
        engine.run(lambda e, executed: iterations.append(record(e, executed)))
    except OutOfBlocks as err:  # the policy reserves blocks before every pass, so this is a bug
        raise AssertionError(f"the scheduler promised blocks it did not have: {err}") from err
    return ServingRun(scenario=scenario, workload=workload, config=config, iterations=tuple(iterations),
                      outcomes=tuple(s.outcome() for s in engine.sequences), swap_bytes=engine.swap_bytes,
                      slot_nbytes=slot_nbytes(model.num_heads, model.d_k, model.w_vocab.element_size()))
