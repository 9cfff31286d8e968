"""One request and the sequence a server makes of it: where it stands, and its decode run.

A :class:`Request` is what a client asks for: a prompt (tokens and values on the scenario's heads and
vocabulary), how many new tokens, and when it arrives. A :class:`Sequence` is the server's record of
it: its status (:class:`SequenceStatus`), its decode run (the engine's one loop,
:class:`~viz.core.engine.model.Generation`, over a cache of its own) and the counters the results
report. Every change to the run goes through the engine's public methods (``Generation.feed``,
``Decoder.resume``, the cache's ``truncate``, ``adopt``, ``swap_out``/``swap_in``), so a scheduler
decides *what* a sequence computes and never reaches into the engine or the cache.

Shaped like nano-vllm's ``engine/sequence.py``. What this module does not do: schedule
(:mod:`viz.core.serving.policies`), hand out blocks (:mod:`viz.core.serving.block_manager`) or draw.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum

import torch

from ..engine.model import Generation, Step, WorkCounts
from ..engine.scenario import Scenario
from .block_manager import BlockManager


@dataclass(frozen=True)
class Request:
    """One request: when it arrives, its prompt, and how many new tokens it asks for."""

    name: str
    arrival: int  # ticks
    tokens: tuple[str, ...]
    values: tuple[float, ...]  # one V per prompt token
    max_new_tokens: int  # predictions to make; the last is not fed back

    @classmethod
    def of(cls, name: str, scenario: Scenario, max_new_tokens: int, arrival: int = 0) -> "Request":
        """The scenario's prompt as a request."""
        return cls(name=name, arrival=arrival, tokens=scenario.tokens, values=scenario.values,
                   max_new_tokens=max_new_tokens)

    @property
    def max_cached(self) -> int:
        """Tokens it holds at the most: the prompt and every new token but the last (never fed back)."""
        return len(self.tokens) + self.max_new_tokens - 1

    def blocks_needed(self, block_size: int) -> int:
        return math.ceil(self.max_cached / block_size)


@dataclass(frozen=True)
class RequestOutcome:
    """What one request produced and when."""

    name: str
    prompt_length: int
    arrival: int  # ticks
    words: tuple[str, ...]  # the words chosen, one per prediction
    contexts: torch.Tensor  # (predictions, heads) behind each choice
    logits: torch.Tensor  # (predictions, vocab)
    token_times: tuple[int, ...]  # ticks at which each prediction was made (its iteration's end)
    preemptions: int
    recomputed: int  # tokens computed again after preemption by recompute
    prefix_hits: int  # prompt tokens whose keys and values came from the prefix cache or a fork
    swapped_bytes: int  # bytes copied out to swap space and back
    shared_with: str | None = None  # copy on write: the earlier sequence whose prefix blocks it forked
    tokens: tuple[str, ...] = ()  # its prompt, then every word fed back
    table: tuple[int, ...] = ()  # its block table at the end (empty once a server freed it)

    @property
    def first_token(self) -> int:
        return self.token_times[0]

    @property
    def ttft(self) -> int:
        """Time to first token: arrival to the end of the iteration that predicted it."""
        return self.first_token - self.arrival

    @property
    def tpot(self) -> float | None:
        """Time per output token after the first (None with a single token)."""
        n = len(self.token_times)
        return (self.token_times[-1] - self.token_times[0]) / (n - 1) if n > 1 else None

    @property
    def latency(self) -> int:
        return self.token_times[-1] - self.arrival


class SequenceStatus(StrEnum):
    """Where a sequence stands (the values are the words the results and the pages use)."""

    NOT_ARRIVED = "not arrived"
    WAITING = "waiting"  # arrived, or preempted by recomputation: holds no block
    RUNNING = "running"  # admitted: holds blocks, computes when the policy plans it
    SWAPPED = "swapped"  # preempted by swapping: its blocks' contents wait in other memory
    FINISHED = "done"


class Sequence:
    """A request in a server: its status, its decode run, and what happened to it."""

    def __init__(self, index: int, request: Request, run: Generation):
        self.index, self.request, self.run = index, request, run
        self.status = SequenceStatus.NOT_ARRIVED
        self.preemptions = 0
        self.recomputed = 0  # tokens computed again after preemption by recomputation
        self.prefix_hits = 0  # prompt tokens whose blocks came from another sequence or the cache
        self.shared_with: str | None = None  # the sequence a fork shared its prefix with
        self.swapped_bytes = 0
        self.named = 0  # full blocks already named for prefix caching
        self.swap: dict[str, torch.Tensor] | None = None  # its blocks' contents while swapped out
        self.token_times: tuple[int, ...] = ()
        self.event = ""  # what happened to it in this iteration, in a few words
        self.fed = 0  # tokens computed for it in this iteration
        self.doing = ""  # "prefill" or "decode": what its tokens in this iteration were
        self.predicted: str | None = None  # the word chosen in this iteration

    @property
    def name(self) -> str:
        return self.request.name

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
    def fed_tokens(self) -> list[str]:
        """Tokens the decode run has computed (prompt, then words fed back)."""
        return self.run.decoder.tokens

    @property
    def uncached(self) -> int:
        """Tokens to feed before the next prediction: the prompt at first, then the last word."""
        return len(self.request.tokens) + len(self.run.steps) - len(self.run.decoder.tokens)

    @property
    def decoding(self) -> bool:
        return bool(self.run.steps) and self.uncached == 1

    @property
    def finished(self) -> bool:
        return len(self.run.steps) == self.request.max_new_tokens

    def feed(self, take: int) -> tuple[WorkCounts, Step | None]:
        """Compute the next ``take`` uncached tokens in one pass; predict once none is left (and a
        prediction is still due)."""
        start = len(self.run.decoder.tokens)
        tokens, values = self.tokens[start:start + take], self.values[start:start + take]
        predict = take == self.uncached and not self.finished
        return self.run.feed(tokens, values, predict=predict)

    def forget(self) -> None:
        """Drop every computed token (preemption by recomputation): the blocks go back, the words stay."""
        self.cache.truncate(0)
        self.run.decoder.resume([], [])
        self.named = 0

    def take_cached_prefix(self, pool: BlockManager) -> int:
        """Take the cached full blocks this sequence's tokens start with; returns the tokens they hold."""
        tokens, values = self.tokens, self.values
        blocks = pool.cached_prefix(tokens, values)
        hits = len(blocks) * pool.block_size
        self.cache.adopt(blocks, hits)
        self.run.decoder.resume(tokens[:hits], values[:hits])
        self.named = len(blocks)
        self.prefix_hits += hits
        return hits

    def give_back_prefix(self, hits: int) -> None:
        """Undo :meth:`take_cached_prefix` for a sequence that could not be admitted after all."""
        self.forget()
        self.prefix_hits -= hits

    def fork_from(self, parent: "Sequence", tokens: int) -> None:
        """Share the blocks holding ``parent``'s first ``tokens`` tokens (copy on write); the prompt
        is then fed whole, and the cache checks the shared part instead of storing it again."""
        size = parent.cache.pool.block_size
        self.cache.adopt(parent.cache.table[: math.ceil(tokens / size)], tokens)
        self.prefix_hits, self.shared_with = tokens, parent.name

    def outcome(self) -> RequestOutcome:
        steps, model = self.run.steps, self.run.model
        return RequestOutcome(
            name=self.name, prompt_length=len(self.request.tokens), arrival=self.request.arrival,
            words=tuple(s.token for s in steps),
            contexts=torch.stack([s.context for s in steps]) if steps else torch.zeros(0, model.num_heads),
            logits=torch.stack([s.logits for s in steps]) if steps else torch.zeros(0, len(model.scenario.vocab)),
            token_times=self.token_times, preemptions=self.preemptions, recomputed=self.recomputed,
            prefix_hits=self.prefix_hits, swapped_bytes=self.swapped_bytes, shared_with=self.shared_with,
            tokens=tuple(self.fed_tokens), table=tuple(getattr(self.cache, "table", ())))  # contiguous: no table
