"""The work budget: how much one rerun may compute, estimated before anything is computed.

A shared link must not be able to exhaust the server, so every page asks here first. Work is
estimated from the scenario's shapes with a small cost model of the engine's own passes:

* a pass that attends m queries over len keys multiplies ``heads · m · len · d_k`` (Q·K) and
  touches ``heads · m · len`` scores several times (mask, softmax, weights · V);
* it reads every key it attends to, ``heads · len · d_k`` numbers, which is what bounds a decode
  step (m = 1): decode is memory-bound, prefill compute-bound;
* encoding keys writes ``heads · d_k`` numbers per key, several times over (±1, widened, stored);
* each head's rule is evaluated node by node over its (query, key) pairs, or over the keys alone
  for a rule that reads only the key: :data:`RULE_NS` per pair and syntax node;
* every pass costs a fixed few hundred microseconds of Python and small tensor calls, and more
  per head, since each head's rule is evaluated on its own.

Work is counted in **reference milliseconds**: multiply-adds at :data:`MAC_RATE`, bytes at
:data:`BYTE_RATE`, plus :data:`PASS_MS` and :data:`HEAD_MS` per pass, rates measured on one core of the 2-core machine
kvlab is developed on (``python -m viz.tools.worst_case`` measures how estimates and reality
compare). The peak memory of a pass is estimated the same way. :func:`grant` then decides how many
predictions each decode mode may compute in one rerun; what does not fit is shown as far as it
goes, and the page says so with :attr:`Grant.note`.

What this module does not do: compute anything (see viz.core.engine.model) or time anything.
"""

from __future__ import annotations

import ast
import functools
import math
from dataclasses import dataclass
from typing import Callable, Iterable, Mapping, Sequence

import torch

from ..rules.language import compile_rule
from ..text import joined as text_joined
from .scenario import Scenario

MAC_RATE = 10e9  # multiply-adds per second, one CPU thread, large batched matmuls
BYTE_RATE = 4e9  # bytes per second read by a one-query pass over a large cache
PASS_MS = 0.5  # fixed cost of one pass (Python, small tensor calls)
HEAD_MS = 0.05  # and per head: each head's rule is evaluated on its own
RULE_NS = 2.0  # nanoseconds per (query, key) pair and rule node: one elementwise torch operation
SCORE_PASSES = 8  # elementwise passes over the (heads, m, len) scores: mask, softmax, weights · V, …
ELEMENT = 4  # bytes per float32 number
MIB = 2**20

# Cheap before dear: the kv run is what the Decode page is about, recompute the most expensive.
MODE_ORDER = ("kv", "reencode", "recompute")


@dataclass(frozen=True)
class Work:
    """Estimated reference milliseconds and the largest memory a computation needs at once."""

    ms: float = 0.0
    peak_bytes: int = 0

    def __add__(self, other: "Work") -> "Work":
        return Work(self.ms + other.ms, max(self.peak_bytes, other.peak_bytes))


@dataclass(frozen=True)
class Budget:
    """What one rerun may spend. The defaults keep the worst link under 10 s and 500 MB here."""

    ms: float = 2500.0  # reference milliseconds of engine work per rerun
    peak_bytes: int = 256 * MIB  # memory one pass may take at once
    kept_bytes: int = 96 * MIB  # memory the kept per-step rows of one run may take
    pool_bytes: int = 128 * MIB  # a block pool one rerun may allocate (the Memory page)


BUDGET = Budget()


@dataclass(frozen=True)
class Shape:
    """What the cost of a pass depends on: heads, key width and how big the rules are."""

    heads: int
    d_k: int
    pair_nodes: int = 0  # syntax nodes of the rules that read the query: evaluated per (query, key) pair
    key_nodes: int = 0  # syntax nodes of the rules that read only the key: evaluated per key

    @classmethod
    def of(cls, scenario: Scenario) -> "Shape":
        pair = key = 0
        for head in scenario.heads:
            nodes = _nodes(head.rule)
            if compile_rule(head.rule).key_only:
                key += nodes
            else:
                pair += nodes
        return cls(len(scenario.heads), scenario.d_k, pair, key)


@functools.lru_cache(maxsize=1024)
def _nodes(rule: str) -> int:
    return sum(1 for _ in ast.walk(ast.parse(rule.strip(), mode="eval")))


def attend_work(shape: Shape, m: int, length: int, encoded: int) -> Work:
    """One pass: ``m`` queries over ``length`` keys, of which ``encoded`` keys are encoded anew."""
    heads, d_k = shape.heads, shape.d_k
    pairs = heads * m * length
    macs = pairs * d_k + heads * encoded * d_k
    read = (heads * length * d_k + heads * m * d_k + length) * ELEMENT
    written = 3 * heads * encoded * d_k * ELEMENT  # encoding a key row: ±1, widened, stored
    moved = read + written + SCORE_PASSES * pairs * ELEMENT
    rules_ms = 1e-6 * RULE_NS * (m * length * shape.pair_nodes + encoded * shape.key_nodes)
    ms = 1e3 * max(macs / MAC_RATE, moved / BYTE_RATE) + rules_ms + PASS_MS + HEAD_MS * heads
    # Q and K of the pass, its scores in several stages (raw, scaled, masked, weights, products)
    peak = (heads * (m + encoded) * d_k + 7 * pairs + 2 * m * length * (1 if shape.pair_nodes else 0)) * ELEMENT
    return Work(ms, peak)


def prefill_work(scenario: Scenario) -> Work:
    """The batched prefill of the scenario's prompt, every stage kept."""
    n = len(scenario.tokens)
    return attend_work(Shape.of(scenario), n, n, n)


def step_work(mode: str, length: int, shape: Shape) -> Work:
    """One decode step that makes the sequence ``length`` tokens long, in ``mode``."""
    if mode == "recompute":
        return attend_work(shape, length, length, length)
    if mode == "reencode":
        return attend_work(shape, 1, length, length)
    return attend_work(shape, 1, length, 1)


def row_bytes(heads: int, length: int) -> int:
    """Bytes a kept step row takes: four float stages and two masks of (heads, 1, length)."""
    return heads * length * (4 * ELEMENT + 2) + length


def run_work(scenario: Scenario, mode: str, predictions: int, done: int = 0) -> Work:
    """Predictions ``done`` … ``predictions - 1`` of a run; prediction 0 includes the prefill."""
    n, shape = len(scenario.tokens), Shape.of(scenario)
    work = prefill_work(scenario) if done == 0 and predictions > 0 else Work()
    for k in range(max(done, 1), predictions):
        work = work + step_work(mode, n + k, shape)
    return work


@dataclass(frozen=True)
class Grant:
    """How far one decode mode may go in this rerun."""

    mode: str
    wanted: int  # predictions asked for
    granted: int  # predictions it may have after this rerun (never fewer than it had)
    work: Work  # what computing the new ones is estimated to cost

    @property
    def cut(self) -> bool:
        return self.granted < self.wanted

    @property
    def note(self) -> str:
        """A plain sentence for the page when the run was cut short, else ''."""
        if not self.cut:
            return ""
        shown = max(self.granted - 1, 0)
        return (f"This server computes at most {BUDGET.ms / 1000:g} s of engine work per click, so the "
                f"'{self.mode}' run stops at step {shown} of the {self.wanted - 1} asked for; "
                "each further click computes more of it.")


def grant(scenario: Scenario, modes: Iterable[str], wanted: int, done: Mapping[str, int] | None = None,
          budget: Budget = BUDGET) -> dict[str, Grant]:
    """How many predictions each mode may have after this rerun, within ``budget``.

    Modes are served cheap first (kv, reencode, recompute); each takes predictions one at a time
    while the rerun's estimated work stays inside the budget. A mode always keeps what it has
    (``done``); one that has nothing gets at least its prefill and first prediction, whose cost
    the scenario limits already bound.
    """
    done = dict(done or {})
    heads, n = len(scenario.heads), len(scenario.tokens)
    spent, grants = 0.0, {}
    for mode in sorted(modes, key=MODE_ORDER.index):
        have = min(done.get(mode, 0), wanted)
        granted, work = have, Work()
        while granted < wanted:
            nxt = run_work(scenario, mode, granted + 1, granted)
            kept = row_bytes(heads, n + granted) * (granted + 1)
            first = granted == 0
            if not first and (spent + work.ms + nxt.ms > budget.ms or nxt.peak_bytes > budget.peak_bytes
                              or kept > budget.kept_bytes):
                break
            work, granted = work + nxt, granted + 1
        spent += work.ms
        grants[mode] = Grant(mode, wanted, max(granted, have), work)
    return grants


# -- the Memory page: paged pools and compressed caches --------------------------------------
SLOT_RECORD_BYTES = 4 + 4 * 8  # a pool slot beside its keys: the value (float32), pos, token, value, n (8 bytes each)
SNAPSHOT_NS = 400.0  # recording one pool slot in one snapshot of the scheduler's iterations (Python)


def slot_bytes(shape: Shape) -> int:
    """One token's slot in a block pool: its keys for every head, its value and its records."""
    return shape.heads * shape.d_k * ELEMENT + SLOT_RECORD_BYTES


def paged_pass_work(shape: Shape, m: int, length: int) -> Work:
    """A pass over a paged cache: it first gathers the blocks into one tensor, copying every key
    twice (read and written), which a contiguous cache does not do."""
    gathered = shape.heads * length * shape.d_k * ELEMENT
    pass_work = attend_work(shape, m, length, m)
    return Work(pass_work.ms + 1e3 * 2 * 2 * gathered / BYTE_RATE, pass_work.peak_bytes + 2 * gathered)


def pool_slots(prompts: Sequence[int], block_size: int, reserve: int) -> int:
    """The slots of a pool as large as contiguous buffers of each prompt + ``reserve`` new tokens."""
    return sum(math.ceil((n + reserve) / block_size) * block_size for n in prompts)


def paged_work(shape: Shape, prompts: Sequence[int], steps: int, block_size: int, reserve: int) -> Work:
    """Decoding ``prompts`` together on one pool (viz.core.serving.paged.decode_together): each
    prompt's prefill, ``steps - 1`` paged decode passes each, a snapshot of the pool per iteration;
    the peak holds the pool beside the largest pass."""
    slots = pool_slots(prompts, block_size, reserve)
    passes = Work()
    for n in prompts:
        passes = passes + paged_pass_work(shape, n, n)
        for k in range(1, steps):
            passes = passes + paged_pass_work(shape, 1, n + k)
    snapshots_ms = 1e-6 * SNAPSHOT_NS * slots * (len(prompts) + steps)
    return Work(passes.ms + snapshots_ms, passes.peak_bytes + slots * slot_bytes(shape))


@dataclass(frozen=True)
class MemoryGrant:
    """What one rerun of the Memory page may compute, decided before it computes anything."""

    wanted: int  # predictions per sequence asked for
    granted: int  # predictions it may make in this rerun
    reserve_wanted: int = 0  # new tokens reserved per request asked for (paged blocks only)
    reserve: int = 0  # the reservation that fits
    compare: bool = True  # room for the second run (sharing off) that checks sharing changes nothing
    work: Work = Work()

    @property
    def cut(self) -> bool:
        return self.granted < self.wanted or self.reserve < self.reserve_wanted or not self.compare

    @property
    def note(self) -> str:
        """A plain sentence for the page when the view was cut to what fits, else ''."""
        parts = []
        if self.reserve < self.reserve_wanted:
            parts.append(f"reserves {self.reserve} new tokens per prompt, not {self.reserve_wanted} (a pool that "
                         f"large would pass the {BUDGET.pool_bytes // MIB} MB one click may allocate)")
        if self.granted < self.wanted:
            parts.append(f"makes {self.granted} of the {self.wanted} predictions asked for")
        if not self.compare:
            parts.append("skips the second run without sharing that checks the outputs are identical")
        if not parts:
            return ""
        return (f"This server computes at most {BUDGET.ms / 1000:g} s of engine work per click, so this "
                f"view {text_joined(parts)}. Fewer heads, a smaller d_k or shorter prompts fit in full.")


def grant_paged(scenario: Scenario, prompts: Sequence[int], steps: int, block_size: int, reserve: int,
                budget: Budget = BUDGET) -> MemoryGrant:
    """How far the Memory page's paged view may go: the reservation first cut to a pool that fits
    ``budget.pool_bytes``, then as many predictions as fit two runs (sharing on and off) in the
    work budget, else one run. The first prediction is always granted: the limits bound it."""
    shape = Shape.of(scenario)
    fits = _most(lambda r: pool_slots(prompts, block_size, r) * slot_bytes(shape) <= budget.pool_bytes, reserve)
    def cost(predictions: int, runs: int) -> float:
        return runs * paged_work(shape, prompts, predictions, block_size, fits).ms

    runs = 2 if cost(1, 2) <= budget.ms else 1
    granted = _most(lambda s: cost(s, runs) <= budget.ms, min(steps, fits))
    work = paged_work(shape, prompts, granted, block_size, fits)
    return MemoryGrant(steps, granted, reserve, fits, runs == 2, Work(runs * work.ms, work.peak_bytes))


def grant_compare(scenario: Scenario, steps: int, budget: Budget = BUDGET) -> MemoryGrant:
    """How many predictions the Memory page's eviction and quantisation view may make: it decodes
    the scenario three times (the full cache, the smaller one fed the same words, the smaller one
    left to itself), each holding its own prefill."""
    def work(s: int) -> Work:
        one = run_work(scenario, "kv", s)
        return Work(3 * one.ms, 3 * prefill_work(scenario).peak_bytes)

    granted = _most(lambda s: work(s).ms <= budget.ms, steps)
    return MemoryGrant(steps, granted, work=work(granted))


def _most(fits: Callable[[int], bool], most: int) -> int:
    """The largest k in 1 … ``most`` for which ``fits(k)`` holds (fits grows harder with k), at least 1."""
    low, high = 1, most
    while low < high:
        middle = (low + high + 1) // 2
        if fits(middle):
            low = middle
        else:
            high = middle - 1
    return low


# -- the whole server: how heavy a view is, and what a kept object holds ---------------------
LIGHT_MS = 100.0  # a view estimated under this is light: it never waits for the server's heavy slots


def view_work(scenario: Scenario, step: int) -> Work:
    """The heaviest passes a view of ``scenario`` at decode ``step`` may need: the prompt's prefill
    (every engine page reads it) and one step without a cache at that length (the costliest step)."""
    n = len(scenario.tokens)
    return prefill_work(scenario) + step_work("recompute", n + max(step, 0), Shape.of(scenario))


def is_light(scenario: Scenario, step: int) -> bool:
    """A classroom-sized view: never made to wait behind heavy ones."""
    return view_work(scenario, step).ms < LIGHT_MS


def tensor_bytes(*objects: object) -> int:
    """Bytes of every tensor reachable from ``objects`` (through dataclasses, containers and object
    attributes), each storage counted once: what keeping those objects holds in memory."""
    seen: set[int] = set()
    storages: set[int] = set()
    total, stack = 0, list(objects)
    while stack:
        obj = stack.pop()
        if obj is None or isinstance(obj, (str, bytes, int, float, bool)) or id(obj) in seen:
            continue
        seen.add(id(obj))
        if isinstance(obj, torch.Tensor):
            storage = obj.untyped_storage()
            if storage.data_ptr() not in storages:
                storages.add(storage.data_ptr())
                total += storage.nbytes()
        elif isinstance(obj, dict):
            stack.extend(obj.values())
        elif isinstance(obj, (list, tuple, set, frozenset)):
            stack.extend(obj)
        elif hasattr(obj, "__dict__"):
            stack.extend(vars(obj).values())
        elif hasattr(obj, "__slots__"):
            stack.extend(getattr(obj, name, None) for name in obj.__slots__)
    return total
