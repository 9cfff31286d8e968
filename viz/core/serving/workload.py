"""What a server is asked to do and how it may do it: requests arriving over time, the scheduler's
settings and limits, and the typed results a run returns, with the metrics read off them.

1. **Requests** (:class:`~viz.core.serving.sequence.Request`): a name, an arrival time, a prompt (tokens and values on the
   scenario's heads and vocabulary) and the most new tokens it may produce. A **workload** is a
   list of them; :data:`WORKLOADS` holds the presets ("a burst", "one long prompt, four
   short", "a shared system prompt", "a steady trickle"), each name short enough for the picker in
   Serving's controls' column (:data:`viz.core.text.PICKER_CHARS`).
2. **Settings** (:class:`ServingConfig`): the block pool (blocks × block size), how many sequences
   may run at once, static or continuous batching (:class:`Policy`), whole or chunked prefill, prefix
   caching, and what to do when the pool runs out (:class:`Preemption`: recompute, as current vLLM
   does, or swap, as vLLM V0 could). :class:`Sharing` names the two ways blocks are shared (automatic
   prefix caching, copy on write), each with the sentence a view shows.
3. **The clock.** The toy runs on a CPU, where a step's wall time says little about a GPU, so
   time is counted in *ticks*: one tick per token an iteration computes, plus a fixed cost per
   iteration (a GPU reads all the weights once per iteration, however many tokens share it). Time
   to first token, time per output token and throughput are read off this clock; measured wall
   times are kept beside it.
4. **Results**: per iteration who prefilled, decoded, waited or was preempted, the blocks handed
   out and returned and the pool after it (:class:`Iteration`); per request its outputs and
   timings (:class:`RequestOutcome`); the whole run (:class:`ServingRun`).

Limits (``LIMITS``) bound every run, so one visitor cannot occupy the server: at most
12 requests × (96 prompt + 32 new tokens), 128 blocks, 8 sequences at once.

What this module does not do: schedule (:mod:`viz.core.serving.scheduler`), speculate or draw.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import StrEnum
from typing import NamedTuple

import torch

from ..engine.model import WorkCounts
from ..engine.scenario import Scenario
from ..engine.tokenizer import tokenize
from .sequence import Request, RequestOutcome

MAX_REQUESTS = 12
MAX_PROMPT_TOKENS = 96
MAX_NEW_TOKENS = 32
MAX_ARRIVAL = 2_000  # ticks
MAX_BLOCKS = 128
BLOCK_SIZES = (1, 2, 4, 8, 16)
MAX_BATCH = 8
CHUNK_SIZES = (1, 2, 4, 8, 16, 32, 64)
MAX_OVERHEAD = 64  # ticks per iteration


class Policy(StrEnum):
    """Who computes when (the values are what share links and the pages carry)."""

    CONTINUOUS = "continuous"  # iteration-level: join and leave at any iteration
    STATIC = "static"  # a batch runs from its padded prefill to its longest answer


class Preemption(StrEnum):
    """What a continuous server does to a running request when the pool runs out."""

    RECOMPUTE = "recompute"  # free its blocks; compute its tokens again when it returns
    SWAP = "swap"  # copy its blocks out to other memory and back


POLICIES = tuple(p.value for p in Policy)
PREEMPTIONS = tuple(p.value for p in Preemption)
PREEMPTION_NOTE = ("Current vLLM (V1) preempts by recomputation only: it frees the request's blocks and "
                   "computes its tokens again when the request returns, often finding most of them still in "
                   "the prefix cache, since freed full blocks stay cached until they are needed (the toy does "
                   "the same with prefix caching on). Swapping blocks out to CPU memory and back was vLLM "
                   "V0's other option; the toy keeps it to compare the two.")


class Sharing(StrEnum):
    """The two ways a paged server lets sequences share blocks; each view says which one it shows."""

    PREFIX_CACHING = "automatic prefix caching"
    COPY_ON_WRITE = "copy on write"

    @property
    def sentence(self) -> str:
        """What this system shares, and where the other one is taught."""
        if self is Sharing.PREFIX_CACHING:
            return ("This view shows vLLM's automatic prefix caching: independent requests share only full "
                    "blocks, each named by its tokens and every token before it; a partly filled block is "
                    "never shared. Forks of one sequence (parallel sampling, beam search) share even a partly "
                    "filled block and copy it on the first write: copy on write, shown on the Memory page.")
        return ("This view shows copy on write, as vLLM does for forks such as parallel sampling and beam "
                "search: a later prompt forks the earlier one at their longest common prefix and shares all of "
                "its blocks, even a partly filled last one, which is copied the first time either sequence "
                "writes into it. Independent requests in vLLM share only full blocks (automatic prefix "
                "caching), shown on the Serving page.")

LIMITS = {"requests": MAX_REQUESTS, "prompt tokens per request": MAX_PROMPT_TOKENS,
          "new tokens per request": MAX_NEW_TOKENS, "arrival time (ticks)": MAX_ARRIVAL,
          "blocks in the pool": MAX_BLOCKS, "block size": max(BLOCK_SIZES),
          "sequences at once": MAX_BATCH, "chunk size": max(CHUNK_SIZES),
          "fixed ticks per iteration": MAX_OVERHEAD}


class ServingError(ValueError):
    """A workload or setting the scheduler refuses, in one line a person can act on."""


@dataclass(frozen=True)
class Workload:
    name: str
    requests: tuple[Request, ...]


def token_values(scenario: Scenario, tokens: list[str] | tuple[str, ...]) -> tuple[float, ...]:
    """A value per token: its value in the scenario's prompt if it occurs there, else its vocabulary
    value, else 1 (as the sidebar gives a new token)."""
    known = dict(zip(reversed(scenario.tokens), reversed(scenario.values)))  # first occurrence wins
    return tuple(float(known[t]) if t in known else float(scenario.default_value(t)) for t in tokens)


def serving_refusal(scenario: Scenario) -> str:
    """Why this scenario cannot be served with shared, chunked or recomputed keys, or "" if it can."""
    readers = scenario.n_readers()
    if not readers:
        return ""
    return (f"{readers}, so a key depends on how long the sequence was when it was "
            "encoded. A chunk, a shared prefix block or a recomputed key would then hold other "
            "numbers than decoding the request alone, so the server needs the cache-safe form.")


def make_request(scenario: Scenario, name: str, arrival: int, prompt: str, max_new_tokens: int) -> Request:
    """A request from text, checked against the limits; :class:`ServingError` says what is wrong."""
    label = f"request '{name}'" if name else "a request"
    if not name or len(name) > 20:
        raise ServingError(f"{label}: give it a name of 1 to 20 characters")
    if not isinstance(arrival, int) or not 0 <= arrival <= MAX_ARRIVAL:
        raise ServingError(f"{label}: the arrival time must be a whole number of ticks from 0 to {MAX_ARRIVAL}")
    if not isinstance(max_new_tokens, int) or not 1 <= max_new_tokens <= MAX_NEW_TOKENS:
        raise ServingError(f"{label}: new tokens must be a whole number from 1 to {MAX_NEW_TOKENS}")
    if not isinstance(prompt, str) or len(prompt) > 20 * MAX_PROMPT_TOKENS:
        raise ServingError(f"{label}: the prompt must be text of at most {20 * MAX_PROMPT_TOKENS} characters")
    tokens = tuple(tokenize(prompt))
    if not 1 <= len(tokens) <= MAX_PROMPT_TOKENS:
        raise ServingError(f"{label}: the prompt has {len(tokens)} tokens; give it 1 to {MAX_PROMPT_TOKENS}")
    if any(len(t) > 40 for t in tokens):
        raise ServingError(f"{label}: a token is longer than 40 characters")
    return Request(name=name, arrival=arrival, tokens=tokens, values=token_values(scenario, tokens),
                   max_new_tokens=max_new_tokens)


def check_workload(requests: list[Request] | tuple[Request, ...]) -> tuple[Request, ...]:
    if not 1 <= len(requests) <= MAX_REQUESTS:
        raise ServingError(f"a workload has 1 to {MAX_REQUESTS} requests, this one has {len(requests)}")
    names = [r.name for r in requests]
    if len(set(names)) != len(names):
        raise ServingError("two requests have the same name; names tell them apart in every chart")
    return tuple(requests)


_QUESTIONS = ["the soup is so", "my garden is so", "that film was so", "the coffee here is so",
              "this summer is so", "your idea is so", "the beach was so", "our room is so"]
_SYSTEM = ("you are a helpful assistant and you answer in one short friendly word about the weather "
           "today because the weather is so")


def workload_preset(scenario: Scenario, name: str) -> Workload:
    """A preset by name (see :data:`WORKLOADS`), on the scenario's heads and vocabulary."""
    prompt = " ".join(scenario.tokens) if len(scenario.tokens) <= 16 else " ".join(scenario.tokens[:16])
    if name == "a burst":
        rows = [(f"R{i + 1}", 0, _QUESTIONS[i] if i else prompt, 6 + 2 * (i % 3)) for i in range(6)]
    elif name == "one long prompt, four short":
        long = " ".join([prompt] + _QUESTIONS * 2)
        rows = [("R1", 0, _QUESTIONS[0], 12), ("R2", 0, _QUESTIONS[1], 12), ("R3", 4, _QUESTIONS[2], 12),
                ("long", 20, long, 4), ("R4", 40, _QUESTIONS[3], 10)]
    elif name == "a shared system prompt":
        rows = [(f"U{i + 1}", 24 * i, f"{_SYSTEM} {_QUESTIONS[i]}", 6) for i in range(5)]
    elif name == "a steady trickle":
        rows = [(f"R{i + 1}", 30 * i, _QUESTIONS[i % len(_QUESTIONS)], 8) for i in range(8)]
    else:
        raise ServingError(f"unknown workload '{name}' (use one of {', '.join(WORKLOADS)})")
    return Workload(name, check_workload([make_request(scenario, *row) for row in rows]))


WORKLOADS = ("a burst", "one long prompt, four short", "a shared system prompt", "a steady trickle")


@dataclass(frozen=True)
class ServingConfig:
    """How the server runs: its memory, its batch and its policies."""

    num_blocks: int = 24  # physical blocks in the pool
    block_size: int = 4  # token slots per block
    max_batch: int = 4  # sequences running (or prefilling) at once
    policy: Policy = Policy.CONTINUOUS  # continuous: iteration-level; static: a batch runs to its end
    chunk_size: int | None = None  # prompt tokens per iteration (chunked prefill); None: whole prompts
    prefix_caching: bool = False  # reuse full blocks whose tokens another request already computed
    preemption: Preemption = Preemption.RECOMPUTE  # when the pool runs out: drop and recompute, or swap out
    overhead: int = 8  # ticks every iteration costs on top of one per token computed

    def checked(self) -> "ServingConfig":
        """This config with its policies as enums; :class:`ServingError` for a setting off the limits."""
        if not 1 <= self.num_blocks <= MAX_BLOCKS:
            raise ServingError(f"the pool holds 1 to {MAX_BLOCKS} blocks")
        if self.block_size not in BLOCK_SIZES:
            raise ServingError(f"the block size is one of {', '.join(map(str, BLOCK_SIZES))}")
        if not 1 <= self.max_batch <= MAX_BATCH:
            raise ServingError(f"between 1 and {MAX_BATCH} sequences run at once")
        if self.policy not in POLICIES:
            raise ServingError(f"the policy is one of {', '.join(POLICIES)}")
        if self.chunk_size is not None and self.chunk_size not in CHUNK_SIZES:
            raise ServingError(f"the chunk size is one of {', '.join(map(str, CHUNK_SIZES))}")
        if self.preemption not in PREEMPTIONS:
            raise ServingError(f"preemption is one of {', '.join(PREEMPTIONS)}")
        if not 0 <= self.overhead <= MAX_OVERHEAD:
            raise ServingError(f"the fixed cost per iteration is 0 to {MAX_OVERHEAD} ticks")
        config = replace(self, policy=Policy(self.policy), preemption=Preemption(self.preemption))
        if config.policy is Policy.STATIC and (config.chunk_size is not None or config.prefix_caching):
            return replace(config, chunk_size=None, prefix_caching=False)  # static batching has neither
        return config

    @property
    def slots(self) -> int:
        return self.num_blocks * self.block_size


# -- results --------------------------------------------------------------------------------
class Phase(StrEnum):
    """What a request did in one iteration."""

    NOT_ARRIVED = "not arrived"
    WAITING = "waiting"  # arrived (or running) but computed nothing
    PREFILL = "prefill"  # computed prompt tokens (or recomputed its tokens after preemption)
    DECODE = "decode"  # computed one token
    SWAPPED = "swapped"
    IDLE = "idle"  # finished but still holding a static batch slot
    DONE = "done"


PHASES = tuple(p.value for p in Phase)


class SequenceState(NamedTuple):
    """One request during one iteration (a named tuple: a run records thousands of them)."""

    phase: Phase
    fed: int  # tokens computed for it in this iteration (prompt chunk, recompute, or 1 to decode)
    cache_length: int  # tokens it holds after the iteration
    table: tuple[int, ...]  # its block table after the iteration (static batching: reserved slots)
    predicted: str | None  # the word chosen in this iteration, if it made a prediction
    event: str = ""  # what happened to it: "swapped out", "swapped in", "prefix hit 8 tokens", …
    reason: str = ""  # why it computed nothing, when it had arrived and was not done


class BlockState(NamedTuple):
    """One physical block after an iteration (a named tuple: a run records thousands of them)."""

    owners: tuple[int, ...]  # request indexes whose table holds it
    filled: int  # slots written
    cached: bool  # holds a full block's tokens that prefix caching can hand out again


@dataclass(frozen=True)
class Iteration:
    """One scheduler step: what ran, what it cost, and the pool after it."""

    index: int
    start: int  # ticks
    duration: int  # ticks: overhead + tokens computed (padding included)
    states: tuple[SequenceState, ...]  # per request, in workload order
    allocated: tuple[int, ...]  # blocks handed out in this iteration
    freed: tuple[int, ...]  # blocks returned to the pool
    blocks: tuple[BlockState, ...]  # every physical block (continuous batching)
    reserved_slots: int  # slots set aside (static: contiguous reservations; continuous: whole blocks)
    filled_slots: int  # slots holding a token
    padding: int  # token rows computed for nothing: a static batch's padded prompts and finished rows
    idle_slots: int  # batch slots left empty while a request that had arrived waited
    work: WorkCounts  # the engine's counts over every pass in the iteration
    seconds: float  # measured wall time of the engine's passes

    @property
    def end(self) -> int:
        return self.start + self.duration

    @property
    def tokens(self) -> int:
        return sum(s.fed for s in self.states)


class Span(NamedTuple):
    """One request's stretch of one iteration on the timeline, in ticks."""

    request: int  # index in workload order
    iteration: int
    phase: Phase
    start: int
    end: int


@dataclass(frozen=True)
class ServingRun:
    """A workload served under one configuration."""

    scenario: Scenario
    workload: Workload
    config: ServingConfig
    iterations: tuple[Iteration, ...]
    outcomes: tuple[RequestOutcome, ...]
    swap_bytes: int  # copied to swap space and back, all requests
    slot_nbytes: int  # bytes of one token slot (keys for every head plus the value)

    @property
    def sharing(self) -> Sharing | None:
        """The block-sharing system this run shows: automatic prefix caching when it is on."""
        return Sharing.PREFIX_CACHING if self.config.prefix_caching else None

    @property
    def makespan(self) -> int:
        """Ticks from the first arrival to the last token."""
        return max(o.token_times[-1] for o in self.outcomes) - min(o.arrival for o in self.outcomes)

    @property
    def generated(self) -> int:
        return sum(len(o.words) for o in self.outcomes)

    @property
    def throughput(self) -> float:
        """Generated tokens per 100 ticks."""
        return 100 * self.generated / max(self.makespan, 1)

    @property
    def work(self) -> WorkCounts:
        total = WorkCounts()
        for it in self.iterations:
            total = total + it.work
        return total

    @property
    def computed(self) -> int:
        """Token rows computed, padding included."""
        return sum(it.tokens + it.padding for it in self.iterations)

    @property
    def padding(self) -> int:
        return sum(it.padding for it in self.iterations)

    @property
    def recomputed(self) -> int:
        return sum(o.recomputed for o in self.outcomes)

    @property
    def prefix_hits(self) -> int:
        return sum(o.prefix_hits for o in self.outcomes)

    @property
    def idle_slots(self) -> int:
        return sum(it.idle_slots for it in self.iterations)

    @property
    def preemptions(self) -> int:
        return sum(o.preemptions for o in self.outcomes)

    @property
    def peak_utilisation(self) -> float:
        return max(it.reserved_slots for it in self.iterations) / self.config.slots

    @property
    def seconds(self) -> float:
        return sum(it.seconds for it in self.iterations)

    def spans(self) -> tuple[Span, ...]:
        """Each request's phase in each iteration as a stretch of ticks, in iteration order. A request
        that arrives while an iteration runs is seen by the scheduler only at the next one: the iteration
        records it as not arrived, yet from its arrival to the iteration's end it waits (the timeline's
        waiting bar starts at the arrival mark, and time to first token counts from there)."""
        arrivals = [r.arrival for r in self.workload.requests]
        spans = []
        for it in self.iterations:
            for i, s in enumerate(it.states):
                if s.phase is Phase.NOT_ARRIVED and it.start < arrivals[i] < it.end:
                    spans.append(Span(i, it.index, Phase.WAITING, arrivals[i], it.end))
                else:
                    spans.append(Span(i, it.index, s.phase, it.start, it.end))
        return tuple(spans)

    def mean(self, metric: str) -> float:
        """Mean of an outcome metric ("ttft", "tpot", "latency") over the requests that have it."""
        values = [getattr(o, metric) for o in self.outcomes]
        values = [v for v in values if v is not None]
        return sum(values) / len(values) if values else 0.0
