"""The cost of decoding, measured: prefill, decode per token, cache peers, the memory floor, app latency.

:func:`run_bench` runs every section in :data:`SECTIONS`, in order and in one process, and returns a
:class:`BenchReport`; ``python -m viz bench`` prints it as tables and writes it as JSON
(:func:`report_to_dict` is the one place the JSON is made). The Cost page calls :func:`live_cost`,
a small sweep bounded by a time budget that reports its progress.

What is timed is the engine itself: :class:`~viz.core.engine.ToyModel`, :class:`~viz.core.engine.KVCache`
and the decoders. The naive ``torch.cat`` cache (:class:`CatCache`) and transformers' caches take
the KV cache's place behind the same calls, so only the cache differs between them. Every timing
is the median of several repeats after warm-up, with the device synchronised before and after each
timed region. One decode step is what ``decode_step`` does (encode the new token, append, attend);
logits and sampling add the same small constant to every mode and are left out.

What this module does not do: check any speed (numbers are reported, never asserted), draw, or
import streamlit. Plotly is imported by the app-latency section only, to time figure building the
way the app does it.
"""

from __future__ import annotations

import importlib
import math
import os
import platform
import statistics
import threading
import time
from dataclasses import asdict, dataclass, field, is_dataclass, replace
from datetime import datetime, timezone
from typing import Any, Callable, Iterator, NamedTuple

import torch

from ..core.device import DEVICE_KINDS, describe_device, pick_device
from ..core.engine import MODES, Decoder, KVCache, ToyModel, TokenInfo, WorkCounts, generate, make_decoder
from ..core.presets import load_preset
from ..core.scenario import Scenario

BENCH_VERSION = 1
DECODE_MODES = ("recompute", "kv", "cat")  # no cache, our KVCache, the naive torch.cat cache
PEERS = ("kv", "cat", "DynamicCache", "StaticCache")  # the last two from transformers

Progress = Callable[[float, str], None]


# -- measuring ------------------------------------------------------------------------------
@dataclass(frozen=True)
class TimingPlan:
    """How one thing is timed: warm-up calls, then repeats until enough time has been measured."""

    warmup: int  # untimed calls first: allocation, lazy imports, caches warming up
    min_repeats: int  # timed calls at least
    max_repeats: int  # timed calls at most
    target_s: float  # past min_repeats, stop once this much time has been measured

    @property
    def max_calls(self) -> int:
        return self.warmup + self.max_repeats


@dataclass(frozen=True)
class Timing:
    """Seconds per call: the median of the timed repeats, and their spread."""

    median_s: float
    min_s: float
    max_s: float
    repeats: int

    @classmethod
    def of(cls, samples: list[float]) -> "Timing":
        return cls(statistics.median(samples), min(samples), max(samples), len(samples))


def synchronize(device: torch.device) -> None:
    """Wait for the device to finish queued work, so a timer sees the work and not its launch."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    elif device.type == "mps":
        torch.mps.synchronize()


def time_calls(fn: Callable[[], Any], plan: TimingPlan, device: torch.device,
               deadline: float | None = None) -> tuple[Timing, Any]:
    """Time ``fn`` as ``plan`` says; returns the timing and what the first timed call returned.

    Past ``deadline`` (a ``time.perf_counter()`` value) it stops after the first timed call.
    """
    return time_in_turn({"": fn}, plan, device, deadline)[""]


def time_in_turn(fns: dict[str, Callable[[], Any]], plan: TimingPlan, device: torch.device,
                 deadline: float | None = None) -> dict[str, tuple[Timing, Any]]:
    """Time several calls in rounds, one call of each per round, so a change in the machine's load
    hits them alike. For each: its timing and what its first timed call returned.

    ``plan`` counts rounds (its target_s is time summed over every call); past ``deadline`` it
    stops after the first round.
    """
    def late() -> bool:
        return deadline is not None and time.perf_counter() > deadline

    for _ in range(plan.warmup):
        if late():
            break
        for fn in fns.values():
            fn()
    samples: dict[str, list[float]] = {name: [] for name in fns}
    first: dict[str, Any] = {}
    rounds, spent = 0, 0.0
    while rounds == 0 or (not late() and (rounds < plan.min_repeats or (
            rounds < plan.max_repeats and spent < plan.target_s))):
        for name, fn in fns.items():
            synchronize(device)
            start = time.perf_counter()
            value = fn()
            synchronize(device)
            elapsed = time.perf_counter() - start
            samples[name].append(elapsed)
            spent += elapsed
            first.setdefault(name, value)
        rounds += 1
    return {name: (Timing.of(samples[name]), first[name]) for name in fns}


# -- what is measured -----------------------------------------------------------------------
def bench_scenario() -> Scenario:
    """The model every sweep runs: the seed's four heads made cache-safe, d_k = 64."""
    return load_preset("cache-safe")


def latency_scenario() -> Scenario:
    """A busier classroom demo for the app-latency section: 64 tokens, 8 heads, d_k = 64."""
    seed = load_preset("seed")
    rules = ("k.pos % 2 == 0", "k.pos == q.pos", "k.pos == 1", "True", "k.pos == q.pos - 1",
             "q.pos - k.pos < 3", 'k.token in ("weather", "so")', "k.value > 5")
    tokens, values = sequence(seed, 64)
    return Scenario.from_dict({
        "title": "64 tokens, 8 heads", "tokens": tokens, "values": values, "d_k": 64,
        "heads": [{"name": f"h{i + 1}", "rule": rule} for i, rule in enumerate(rules)],
        "vocab": [{"token": w.token, "value": w.value, "weights": list(w.weights) * 2}
                  for w in seed.vocab],
    })


def sequence(scenario: Scenario, n: int) -> tuple[list[str], list[float]]:
    """n tokens and values: the scenario's prompt repeated."""
    m = len(scenario.tokens)
    return [scenario.tokens[i % m] for i in range(n)], [scenario.values[i % m] for i in range(n)]


class CatCache:
    """The naive KV cache: every append concatenates a whole new copy of the cache (``torch.cat``).

    It answers the same calls as :class:`viz.core.engine.KVCache`, so :class:`viz.core.engine.KVDecoder`
    runs on it unchanged. Appending one token copies all n cached ones: O(n) bytes moved per token
    where ``KVCache`` writes O(1), which is the difference the benchmark shows.
    """

    def __init__(self, num_heads: int, d_k: int, *, device: torch.device | str = "cpu",
                 dtype: torch.dtype = torch.float32):
        device = torch.device(device)
        self._k = torch.zeros(num_heads, 0, d_k, device=device, dtype=dtype)  # (heads, len, d_k)
        self._v = torch.zeros(0, device=device, dtype=dtype)  # (len,)
        empty = torch.zeros(0, device=device, dtype=torch.int64)
        self._info = TokenInfo(empty, empty, empty.to(torch.float64), empty)

    def append(self, keys: torch.Tensor, values: torch.Tensor, info: TokenInfo) -> None:
        """Copy the whole cache plus the m new tokens into fresh tensors."""
        self._k = torch.cat([self._k, keys], dim=1)  # (heads, len + m, d_k)
        self._v = torch.cat([self._v, values])  # (len + m,)
        self._info = TokenInfo(*(torch.cat([old, new]) for old, new in
                                 zip(self._info.__dict__.values(), info.__dict__.values())))

    def keys(self) -> torch.Tensor:
        return self._k  # (heads, len, d_k)

    def values(self) -> torch.Tensor:
        return self._v  # (len,)

    def info(self) -> TokenInfo:
        return self._info

    def __len__(self) -> int:
        return self._v.shape[0]

    @property
    def nbytes(self) -> int:
        return self._k.nbytes + self._v.nbytes


def make_bench_decoder(model: ToyModel, mode: str) -> Decoder:
    """A decoder for one of :data:`DECODE_MODES`: ``cat`` is the KV decoder on a :class:`CatCache`."""
    if mode == "cat":
        return make_decoder("kv", model, CatCache(model.num_heads, model.d_k, device=model.device,
                                                  dtype=model.dtype))
    return make_decoder(mode, model)


@dataclass(frozen=True)
class DecodePoint:
    """One decode step at total length n, in one mode: its time and the engine's own work counts."""

    n: int  # keys the new token's query attends to (the first timed step)
    mode: str  # one of DECODE_MODES
    per_token: Timing
    work: WorkCounts  # what the engine counted for the step at length n
    cache_bytes: int  # K and V held after that step (0 without a cache)


def measure_decode(model: ToyModel, mode: str, n: int, plan: TimingPlan, device: torch.device,
                   deadline: float | None = None) -> DecodePoint:
    """Fill a decoder with a prompt of n - warmup - 1 tokens, then time single decode steps."""
    return measure_decodes(model, (mode,), n, plan, device, deadline)[0]


def measure_decodes(model: ToyModel, modes: tuple[str, ...], n: int, plan: TimingPlan,
                    device: torch.device, deadline: float | None = None) -> tuple[DecodePoint, ...]:
    """One decoder per mode, each filled with the same prompt, timed in turn step by step."""
    prompt = n - plan.warmup - 1  # so the first timed step's query sees exactly n keys
    if prompt < 1:
        raise ValueError(f"n = {n} is too small for {plan.warmup} warm-up steps")
    tokens, values = sequence(model.scenario, n + plan.max_repeats)

    def stepper(mode: str) -> Callable[[], tuple[WorkCounts, int]]:
        decoder = make_bench_decoder(model, mode)
        decoder.fill(tokens[:prompt], values[:prompt])
        feed = zip(tokens[prompt:], values[prompt:])

        def step() -> tuple[WorkCounts, int]:
            result = decoder.decode_step(*next(feed))
            return result.attention.counts, result.cache_nbytes  # small: big tensors are freed at once
        return step

    timings = time_in_turn({mode: stepper(mode) for mode in modes}, plan, device, deadline)
    return tuple(DecodePoint(n, mode, timings[mode][0], *timings[mode][1]) for mode in modes)


@dataclass(frozen=True)
class PrefillPoint:
    """A prompt of n tokens: one batched pass vs one token at a time through the KV decoder."""

    n: int
    batched: Timing
    one_by_one: Timing
    batched_work: WorkCounts  # the full n × n pass (masked half included)
    one_by_one_work: WorkCounts  # n single-query steps over a growing cache
    max_abs_diff: float  # largest difference between the two ways' contexts (they must agree)


def measure_prefill(model: ToyModel, n: int, plan: TimingPlan, device: torch.device,
                    deadline: float | None = None) -> PrefillPoint:
    """Time both ways of reading a prompt and check that they give the same contexts."""
    tokens, values = sequence(model.scenario, n)

    def batched() -> tuple[torch.Tensor, WorkCounts]:
        result = model.prefill(tokens, values)
        return result.contexts, result.attention.counts  # (heads, n)

    def one_by_one() -> tuple[torch.Tensor, WorkCounts]:
        decoder = make_decoder("kv", model)
        first = decoder.prefill(tokens[:1], values[:1]).attention
        contexts, work = [first.contexts[:, 0]], first.counts
        for token, value in zip(tokens[1:], values[1:]):
            attention = decoder.decode_step(token, value).attention
            contexts.append(attention.contexts[:, 0])  # (heads,)
            work = work + attention.counts
        return torch.stack(contexts, dim=1), work  # (heads, n)

    batched_time, (batched_ctx, batched_work) = time_calls(batched, plan, device, deadline)
    loop_time, (loop_ctx, loop_work) = time_calls(one_by_one, plan, device, deadline)
    diff = float((batched_ctx - loop_ctx).abs().max())
    return PrefillPoint(n, batched_time, loop_time, batched_work, loop_work, diff)


# -- peers: the same decode step over other caches ------------------------------------------
Append = Callable[[torch.Tensor, torch.Tensor, TokenInfo], tuple[torch.Tensor, torch.Tensor]]


def _engine_append(cache: KVCache | CatCache) -> Append:
    def append(keys: torch.Tensor, values: torch.Tensor, info: TokenInfo):
        cache.append(keys, values, info)
        return cache.keys(), cache.values()
    return append


def _transformers_append(model: ToyModel, kind: str, capacity: int) -> Append:
    """transformers' DynamicCache or StaticCache, holding K as (1, heads, len, d_k) and V as
    (1, heads, len, 1), the layout a Hugging Face attention layer gives them."""
    import transformers

    if kind == "DynamicCache":
        cache = transformers.DynamicCache()
    else:
        config = transformers.PretrainedConfig(num_hidden_layers=1)
        cache = transformers.StaticCache(config=config, max_cache_len=capacity)
    length = 0

    def append(keys: torch.Tensor, values: torch.Tensor, info: TokenInfo):
        nonlocal length
        length += values.shape[0]
        heads, m = keys.shape[0], values.shape[0]
        k_all, v_all = cache.update(keys[None], values[None, None, :, None].expand(1, heads, m, 1), 0)
        # a StaticCache returns its whole buffer: the filled part is what a mask would let through
        return k_all[0, :, :length], v_all[0, 0, :length, 0]  # (heads, len, d_k), (len,)
    return append


def _peer_append(model: ToyModel, peer: str, capacity: int) -> Append:
    if peer == "kv":
        return _engine_append(KVCache(model.num_heads, model.d_k, device=model.device, dtype=model.dtype))
    if peer == "cat":
        return _engine_append(CatCache(model.num_heads, model.d_k, device=model.device, dtype=model.dtype))
    return _transformers_append(model, peer, capacity)


def _rows(info: TokenInfo, start: int, end: int) -> TokenInfo:
    return TokenInfo(*(t[start:end] for t in info.__dict__.values()))


@dataclass(frozen=True)
class PeerPoint:
    """One decode step at total length n with K and V held by one of :data:`PEERS`."""

    n: int
    cache: str
    per_token: Timing


def measure_peers(model: ToyModel, n: int, plan: TimingPlan, device: torch.device,
                  peers: tuple[str, ...] = PEERS) -> tuple[PeerPoint, ...]:
    """The decode step with the cache swapped: encode the new token, append its K and V, attend.

    The peers are timed in turn, one step each per round. Key records (position, token, value)
    come from one precomputed table for every peer, so what differs is where K and V live;
    KVCache and the cat cache also store the records they are handed, a small handicap the
    transformers caches do not carry.
    """
    prompt = n - plan.warmup - 1
    tokens, values = sequence(model.scenario, n + plan.max_repeats)
    info = model.token_info(tokens, values, 1, prompt)  # records of every token, one table
    prompt_info = _rows(info, 0, prompt)

    def stepper(peer: str) -> Callable[[], None]:
        append = _peer_append(model, peer, n + plan.max_repeats)
        append(model.encode_keys(prompt_info), model.encode_values(prompt_info), prompt_info)  # prefill
        lengths: Iterator[int] = iter(range(prompt + 1, n + plan.max_repeats + 1))

        def step() -> None:
            length = next(lengths)
            new = _rows(info, length - 1, length)  # the new token's record
            keys, cached_values = append(model.encode_keys(new), model.encode_values(new), new)
            model.attend(new, model.encode_queries(1), _rows(info, 0, length), keys, cached_values)
        return step

    timings = time_in_turn({peer: stepper(peer) for peer in peers}, plan, device)
    return tuple(PeerPoint(n, peer, timings[peer][0]) for peer in peers)


# -- the floor: how fast memory can be read -------------------------------------------------
@dataclass(frozen=True)
class Bandwidth:
    """Memory bandwidth from copying one large tensor: bytes read + bytes written per second."""

    bytes_moved: int
    copy: Timing

    @property
    def bytes_per_s(self) -> float:
        return self.bytes_moved / self.copy.median_s


def measure_bandwidth(nbytes: int, plan: TimingPlan, device: torch.device) -> Bandwidth:
    """Copy a float32 tensor of ``nbytes`` (far larger than any cache) into another one."""
    source = torch.ones(nbytes // 4, device=device)  # written once, so its pages are real
    target = torch.empty_like(source)
    timing, _ = time_calls(lambda: target.copy_(source), plan, device)
    return Bandwidth(2 * source.nbytes, timing)


@dataclass(frozen=True)
class FloorPoint:
    """Cached decode at length n against the time just reading its K and V would take."""

    n: int
    bytes_per_token: int  # K and V a decode step must read: the whole cache
    bandwidth_bytes_per_s: float
    floor_s: float  # bytes_per_token / bandwidth
    per_token: Timing  # measured cached decode step
    achieved: float  # floor_s / measured: 1.0 would be reading memory and nothing else


# -- the report -----------------------------------------------------------------------------
@dataclass(frozen=True)
class BenchConfig:
    """Sizes and repeats for one run. FULL is the issue's sweep; QUICK takes a few seconds."""

    name: str
    prefill_sizes: tuple[int, ...]  # prompt lengths, batched vs one by one
    decode_sizes: tuple[int, ...]  # total lengths n for decode, peers and the floor
    recompute_max: int  # recompute is measured up to here: its n × n pass outgrows memory
    copy_bytes: int  # tensor copied to measure bandwidth
    latency: tuple[tuple[str, int], ...]  # (scenario in LATENCY_SCENARIOS, decode steps)
    plan: TimingPlan  # for fast calls (a decode step)
    slow_plan: TimingPlan  # for calls of a second or more (recompute, a whole prefill)

    @property
    def quick(self) -> bool:
        return self.name == "quick"


FULL = BenchConfig(
    name="full", prefill_sizes=(64, 256, 1024, 4096), decode_sizes=(256, 1024, 4096, 16384),
    recompute_max=4096, copy_bytes=256 * 2**20, latency=(("seed", 8), ("64 tokens, 8 heads", 32)),
    plan=TimingPlan(warmup=3, min_repeats=7, max_repeats=25, target_s=0.5),
    slow_plan=TimingPlan(warmup=1, min_repeats=5, max_repeats=9, target_s=2.0),
)
QUICK = BenchConfig(
    name="quick", prefill_sizes=(16, 64), decode_sizes=(64, 256), recompute_max=256,
    copy_bytes=16 * 2**20, latency=(("seed", 8),),
    plan=TimingPlan(warmup=1, min_repeats=2, max_repeats=5, target_s=0.01),
    slow_plan=TimingPlan(warmup=1, min_repeats=2, max_repeats=2, target_s=0.0),
)


@dataclass(frozen=True)
class Table:
    """Rows of text under column headings, for the terminal."""

    columns: tuple[str, ...]
    cells: tuple[tuple[str, ...], ...]

    def render(self) -> str:
        widths = [max([len(c)] + [len(row[i]) for row in self.cells]) for i, c in enumerate(self.columns)]
        lines = ["  ".join(c.rjust(w) for c, w in zip(self.columns, widths)),
                 "  ".join("-" * w for w in widths)]
        lines += ["  ".join(c.rjust(w) for c, w in zip(row, widths)) for row in self.cells]
        return "\n".join(lines)


@dataclass(frozen=True)
class Finding:
    """One derived number worth a line of its own, e.g. a speed-up at the largest n."""

    key: str  # stable name in the JSON
    text: str  # what it is, in words
    value: float


@dataclass(frozen=True)
class SectionResult:
    """What one section measured: typed rows for the JSON, a table for the terminal."""

    rows: tuple[Any, ...] = ()  # typed measurements (dataclasses)
    table: Table | None = None
    findings: tuple[Finding, ...] = ()
    notes: tuple[str, ...] = ()
    skipped: str | None = None  # why the section did not run, if it did not
    extra: dict[str, Any] = field(default_factory=dict)  # more for the JSON: an outside section's dict
    text: str | None = None  # an outside section's own rendering, printed as it is
    error: str | None = None  # the section raised this: what it measured is lost, the rest is kept
    key: str = ""  # its name in the JSON, and its title: set by run_bench from its Section
    title: str = ""


def format_seconds(seconds: float) -> str:
    """12.3 µs, 4.56 ms, 1.23 s."""
    if seconds < 1e-3:
        return f"{seconds * 1e6:.1f} µs"
    if seconds < 1:
        return f"{seconds * 1e3:.3g} ms"
    return f"{seconds:.3g} s"


def _times(ratio: float) -> str:
    return f"{ratio:,.0f}×" if ratio >= 100 else f"{ratio:.3g}×"


def _model(device: torch.device) -> ToyModel:
    return ToyModel(bench_scenario(), device=device)


def bench_prefill(config: BenchConfig, device: torch.device) -> SectionResult:
    """1. Prefill: one batched pass over the prompt vs a Python loop over its positions."""
    model = _model(device)
    points = tuple(measure_prefill(model, n, config.slow_plan if n >= 1024 else config.plan, device)
                   for n in config.prefill_sizes)
    table = Table(("n", "batched", "one by one", "loop / batched", "MACs batched", "MACs loop",
                   "max |diff|"),
                  tuple((str(p.n), format_seconds(p.batched.median_s),
                         format_seconds(p.one_by_one.median_s),
                         _times(p.one_by_one.median_s / p.batched.median_s),
                         f"{p.batched_work.multiply_adds:,}", f"{p.one_by_one_work.multiply_adds:,}",
                         f"{p.max_abs_diff:.1g}") for p in points))
    findings = tuple(Finding(f"prefill_loop_over_batched_at_{p.n}", f"one by one / batched at n = {p.n}",
                             p.one_by_one.median_s / p.batched.median_s) for p in points[-1:])
    notes = ("Both ways give the same contexts (max |diff|). The batched pass computes the full "
             "n × n score matrix, masked half included, so it does about twice the multiply-adds "
             "of the loop and keeps several n × n tensors in memory at once.",)
    return SectionResult(points, table, findings, notes)


def bench_decode(config: BenchConfig, device: torch.device) -> SectionResult:
    """2. Decode per token at total length n: recompute vs our KV cache vs a torch.cat cache."""
    model = _model(device)
    points = []
    for n in config.decode_sizes:
        if n <= config.recompute_max:
            plan = config.slow_plan if n >= 1024 else config.plan
            points.append(measure_decode(model, "recompute", n, plan, device))
        points += measure_decodes(model, ("kv", "cat"), n, config.plan, device)  # in turn: a fair ratio
    by = {(p.n, p.mode): p for p in points}
    cells, findings = [], []
    for n in config.decode_sizes:
        kv, cat, rec = by[(n, "kv")], by[(n, "cat")], by.get((n, "recompute"))
        cells.append((str(n), format_seconds(rec.per_token.median_s) if rec else "—",
                      format_seconds(kv.per_token.median_s), format_seconds(cat.per_token.median_s),
                      _times(rec.per_token.median_s / kv.per_token.median_s) if rec else "—",
                      _times(cat.per_token.median_s / kv.per_token.median_s),
                      f"{rec.work.multiply_adds:,}" if rec else "—", f"{kv.work.multiply_adds:,}",
                      f"{kv.cache_bytes / 2**20:.2f}"))
        if rec:
            findings.append(Finding(f"recompute_over_kv_at_{n}", f"recompute / kv per token at n = {n}",
                                    rec.per_token.median_s / kv.per_token.median_s))
        findings.append(Finding(f"cat_over_kv_at_{n}", f"cat / kv per token at n = {n}",
                                cat.per_token.median_s / kv.per_token.median_s))
    table = Table(("n", "recompute", "kv", "cat", "recompute/kv", "cat/kv", "MACs recompute",
                   "MACs kv", "cache MiB"), tuple(cells))
    notes = (f"recompute is measured up to n = {config.recompute_max}: its n × n pass needs "
             "several n × n tensors at once. kv and cat are timed in turn, step by step.",
             "MACs: multiply-adds of one step, counted by the engine from the shapes it multiplies.")
    return SectionResult(tuple(points), table, tuple(findings), notes)


def bench_peers(config: BenchConfig, device: torch.device) -> SectionResult:
    """3. The same decode step with K and V in transformers' DynamicCache and StaticCache."""
    try:
        import transformers
    except ImportError:
        return SectionResult(skipped="transformers is not installed (pip install transformers to compare)")
    model = _model(device)
    points = tuple(point for n in config.decode_sizes
                   for point in measure_peers(model, n, config.plan, device))
    by = {(p.n, p.cache): p.per_token.median_s for p in points}
    cells = tuple((str(n), *(format_seconds(by[(n, peer)]) for peer in PEERS),
                   *(_times(by[(n, peer)] / by[(n, "kv")]) for peer in PEERS[1:]))
                  for n in config.decode_sizes)
    table = Table(("n", *PEERS, *(f"{peer}/kv" for peer in PEERS[1:])), cells)
    n = config.decode_sizes[-1]
    findings = tuple(Finding(f"{peer}_over_kv_at_{n}", f"{peer} / kv per token at n = {n}",
                             by[(n, peer)] / by[(n, "kv")]) for peer in PEERS[1:])
    notes = (f"transformers {transformers.__version__}. K as (1, heads, len, d_k), V as "
             "(1, heads, len, 1); the attention is the engine's own for every cache.",
             "The caches are timed in turn, one step each per round, so a change in the machine's "
             "load hits them alike. Each is then read after the others have passed through the "
             "processor's caches, so its times run above the decode section's: compare ratios.")
    return SectionResult(points, table, findings, notes)


def bench_floor(config: BenchConfig, device: torch.device) -> SectionResult:
    """4. Memory bandwidth, and cached decode against the time to read its whole cache once."""
    bandwidth = measure_bandwidth(config.copy_bytes, config.plan, device)
    model = _model(device)
    points = []
    for n in config.decode_sizes:
        point = measure_decode(model, "kv", n, config.plan, device)
        floor = point.cache_bytes / bandwidth.bytes_per_s
        points.append(FloorPoint(n, point.cache_bytes, bandwidth.bytes_per_s, floor, point.per_token,
                                 floor / point.per_token.median_s))
    table = Table(("n", "bytes/token", "floor", "measured", "achieved"),
                  tuple((str(p.n), f"{p.bytes_per_token:,}", format_seconds(p.floor_s),
                         format_seconds(p.per_token.median_s), f"{p.achieved:.0%}") for p in points))
    last = points[-1]
    findings = (Finding("bandwidth_gb_per_s", "memory bandwidth, GB/s (copy: read + write)",
                        bandwidth.bytes_per_s / 1e9),
                Finding(f"floor_achieved_at_{last.n}", f"achieved fraction of the floor at n = {last.n}",
                        last.achieved))
    notes = (f"Bandwidth from copying {config.copy_bytes // 2**20} MiB: "
             f"{bandwidth.bytes_per_s / 1e9:.1f} GB/s counting bytes read and written.",
             "A decode step must read every cached key and value once, so bytes/token ÷ bandwidth "
             "is the fastest any cache could be; the rest is fixed per-step work (Python, small "
             "tensors, kernel launches) and the extra passes over the scores.",
             f"At n = {last.n} the cache holds {last.bytes_per_token / 2**20:.1f} MiB. Where that fits "
             "in the processor's last-level cache it can be read faster than this copy of a large "
             "tensor runs, so the floor is a yardstick there, not a hard limit.")
    return SectionResult(tuple(points), table, findings, notes, extra={"bandwidth": asdict(bandwidth)})


@dataclass(frozen=True)
class LatencyPoint:
    """What one rerun of one page costs: the engine's runs, then building that page's figures."""

    scenario: str
    page: str  # "prefill" or "decode"
    tokens: int
    heads: int
    steps: int  # predictions made (the decode page's step + 1)
    engine: Timing  # the page's generate() calls
    total: Timing  # engine and every figure, as one rerun
    figures: tuple[tuple[str, float], ...]  # (figure, median seconds to build it)


LATENCY_SCENARIOS: dict[str, Callable[[], Scenario]] = {
    "seed": lambda: load_preset("seed"), "64 tokens, 8 heads": latency_scenario}


def _page_engine(page: str, scenario: Scenario, steps: int, device: torch.device) -> dict[str, Any]:
    """The engine runs a page makes: Prefill one kv trace, Decode one trace per mode."""
    if page == "prefill":
        return {"kv": generate(scenario, 1, "kv", device=device)}
    return {mode: generate(scenario, steps, mode, device=device) for mode in MODES}


def _page_figures(page: str, traces: dict[str, Any]) -> dict[str, Callable[[], Any]]:
    """The figures and tables that page builds from its traces, by name (as pages/*.py do)."""
    from ..figures import toy  # imports plotly: only when this section runs

    kv = traces["kv"]
    last, head, step = len(kv.prefill.tokens) - 1, 0, len(kv.steps) - 1
    if page == "prefill":
        return {"causal mask": lambda: toy.causal_mask_figure(kv),
                "small multiples": lambda: toy.small_multiples(kv, last),
                "Q and K": lambda: toy.qk_figure(kv, head),
                **{f"stage {stage}": (lambda stage=stage: toy.stage_figure(kv, head, stage, last))
                   for stage in toy.STAGES},
                "contexts": lambda: toy.contexts_figure(kv, last)}
    return {"growing attention": lambda: toy.growing_attention_figure(kv, head),
            "prediction": lambda: toy.prediction_figure(kv, step),
            "generated table": lambda: toy.generated_table(kv),
            "cache": lambda: toy.cache_figure(kv),
            "comparison table": lambda: toy.comparison_table(kv, traces["recompute"], step),
            "work": lambda: toy.work_figure(traces)}


def measure_latency(name: str, page: str, steps: int, plan: TimingPlan,
                    device: torch.device) -> LatencyPoint:
    """Time a page's engine runs, then engine and figures as one rerun, then each figure alone."""
    scenario = LATENCY_SCENARIOS[name]()

    def rerun() -> None:
        for build in _page_figures(page, _page_engine(page, scenario, steps, device)).values():
            build()

    engine, traces = time_calls(lambda: _page_engine(page, scenario, steps, device), plan, device)
    total, _ = time_calls(rerun, plan, device)
    figures = tuple((figure, time_calls(build, plan, device)[0].median_s)
                    for figure, build in _page_figures(page, traces).items())
    return LatencyPoint(name, page, len(scenario.tokens), len(scenario.heads),
                        steps if page == "decode" else 1, engine, total, figures)


def _slowest(point: LatencyPoint) -> str:
    name, seconds = max(point.figures, key=lambda figure: figure[1])
    return f"{name} ({format_seconds(seconds)})"


def bench_app_latency(config: BenchConfig, device: torch.device) -> SectionResult:
    """5. App latency: a page rerun (engine + figure building), for the seed and a bigger scenario."""
    points = tuple(measure_latency(name, page, steps, config.plan, device)
                   for name, steps in config.latency for page in ("prefill", "decode"))
    table = Table(("scenario", "page", "tokens", "heads", "steps", "engine", "engine + figures",
                   "slowest figure"),
                  tuple((p.scenario, p.page, str(p.tokens), str(p.heads), str(p.steps),
                         format_seconds(p.engine.median_s), format_seconds(p.total.median_s),
                         _slowest(p)) for p in points))
    seed = [p for p in points if p.scenario == "seed"]
    slowest = max(seed, key=lambda p: p.total.median_s)
    findings = (Finding("seed_app_latency_s", f"seed, slowest page rerun ({slowest.page}), s",
                        slowest.total.median_s),)
    notes = tuple(f"seed, {p.page} page: the engine takes {format_seconds(p.engine.median_s)}; its "
                  f"{len(p.figures)} figures and tables take {format_seconds(sum(t for _, t in p.figures))} "
                  "(summed medians)." for p in seed)
    return SectionResult(points, table, findings, notes)


def first_line(err: Exception) -> str:
    """An error's message in one line (torch's can run to many), or its type if it has none."""
    return (str(err).splitlines() or [type(err).__name__])[0]


def bench_real(config: BenchConfig, device: torch.device) -> SectionResult:
    """6. A real model, when ``viz.tools.real_bench`` provides ``bench_real_model(quick, device) -> dict``.

    The dict goes into the JSON as it is; the terminal shows ``format_table(dict)`` if the module
    has one, else the dict's plain values. A missing module or a failing run skips the section.
    """
    try:
        real = importlib.import_module(".real_bench", __package__)
    except ImportError as err:
        return SectionResult(skipped=f"viz.tools.real_bench is not available ({err})")
    try:
        data = dict(real.bench_real_model(config.quick, device))
        text = real.format_table(data) if hasattr(real, "format_table") else None
    except Exception as err:  # an optional section must not sink the measurements made before it
        return SectionResult(skipped=f"the real-model benchmark failed: {type(err).__name__}: "
                                     f"{first_line(err)}")
    if text is None:
        text = "\n".join(f"{key}: {value}" for key, value in data.items()
                         if isinstance(value, (str, int, float, bool)))
    return SectionResult(text=text, extra=data)


class Section(NamedTuple):
    """One part of the benchmark: its name in the JSON, its title, the function that runs it."""

    key: str
    title: str
    run: Callable[[BenchConfig, torch.device], SectionResult]


# In order; adding a section is adding one line here.
SECTIONS = (
    Section("prefill", "Prefill: one batched pass vs one token at a time", bench_prefill),
    Section("decode", "Decode per token", bench_decode),
    Section("peers", "Peers: the same decode step over other caches", bench_peers),
    Section("floor", "The floor: decode vs memory bandwidth", bench_floor),
    Section("latency", "App latency: one page rerun, engine + figures", bench_app_latency),
    Section("real_model", "A real model", bench_real),
)


@dataclass(frozen=True)
class Goal:
    """A goal from the issue, and whether this run shows it (None: not measured in this run)."""

    text: str
    met: bool | None
    detail: str


@dataclass(frozen=True)
class BenchReport:
    config: BenchConfig
    device: str  # e.g. "cpu" or "cuda (NVIDIA H100)"
    machine: dict[str, str]  # versions, threads, platform
    started: str  # ISO time, UTC
    seconds: float  # wall time of the whole run
    sections: tuple[SectionResult, ...]
    goals: tuple[Goal, ...]
    load: tuple[float, ...] = ()  # the machine's load average at the start and at the end

    @property
    def failed(self) -> list[str]:
        """Keys of the sections that raised."""
        return [s.key for s in self.sections if s.error]

    @property
    def busy(self) -> bool:
        """Other work competed for the CPU: at some point more runnable processes than cores."""
        return any(load > (os.cpu_count() or 1) for load in self.load)


def _finding(sections: tuple[SectionResult, ...], key: str) -> float | None:
    return next((f.value for s in sections for f in s.findings if f.key == key), None)


def check_goals(sections: tuple[SectionResult, ...]) -> tuple[Goal, ...]:
    """The issue's goals, read off the findings. Reported, never asserted."""
    def goal(text: str, key: str, holds: Callable[[float], bool], show: Callable[[float], str]) -> Goal:
        value = _finding(sections, key)
        if value is None:
            return Goal(text, None, "not measured in this run")
        return Goal(text, holds(value), show(value))

    return (
        goal("cached decode ≥ 100× faster per token than recompute at n = 4096",
             "recompute_over_kv_at_4096", lambda r: r >= 100, lambda r: f"{_times(r)} faster"),
        goal("our cache faster than the torch.cat cache at n = 16384",
             "cat_over_kv_at_16384", lambda r: r > 1, lambda r: f"cat takes {_times(r)} as long"),
        goal("our cache not slower than StaticCache at n = 16384",
             "StaticCache_over_kv_at_16384", lambda r: r >= 1,
             lambda r: f"StaticCache takes {_times(r)} as long"),
        goal("cached decode at n = 16384 within 2× of the memory-bandwidth floor",
             "floor_achieved_at_16384", lambda f: f >= 0.5,
             lambda f: f"{1 / f:.2g}× the floor's time"),
        goal("seed app latency under 50 ms", "seed_app_latency_s", lambda s: s < 0.05,
             lambda s: format_seconds(s)),
    )


def load_average() -> float | None:
    """Runnable processes over the last minute (Unix), to tell a busy machine from a quiet one."""
    return os.getloadavg()[0] if hasattr(os, "getloadavg") else None


def machine_info(device: torch.device) -> dict[str, str]:
    info = {"torch": torch.__version__, "python": platform.python_version(),
            "platform": platform.platform(), "cpu cores": str(os.cpu_count()),
            "cpu threads": str(torch.get_num_threads())}
    try:
        import transformers
        info["transformers"] = transformers.__version__
    except ImportError:
        info["transformers"] = "not installed"
    info["device"] = describe_device(device)
    return info


def run_bench(config: BenchConfig = FULL, device: str | torch.device | None = None,
              on_section: Callable[[SectionResult], None] | None = None,
              sections: tuple[Section, ...] = SECTIONS) -> BenchReport:
    """Run every section in order on ``device`` (the best available if None).

    A section that raises is recorded with its error (see :attr:`BenchReport.failed`) and the run
    goes on, so minutes of measurements are not lost to one failure.
    """
    device = pick_device(device)
    started = datetime.now(timezone.utc).isoformat(timespec="seconds")
    start, load = time.perf_counter(), [load_average()]
    results = []
    for section in sections:
        try:
            result = section.run(config, device)
        except Exception as err:
            result = SectionResult(error=f"{type(err).__name__}: {first_line(err)}")
        result = replace(result, key=section.key, title=section.title)
        results.append(result)
        if on_section:
            on_section(result)
    results = tuple(results)
    load.append(load_average())
    return BenchReport(config, describe_device(device), machine_info(device), started,
                       time.perf_counter() - start, results, check_goals(results),
                       tuple(x for x in load if x is not None))


def _plain(value: Any) -> Any:
    if is_dataclass(value):
        return {k: _plain(v) for k, v in asdict(value).items()}
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def report_to_dict(report: BenchReport) -> dict[str, Any]:
    """The benchmark JSON: one object per section, its rows as measured."""
    sections = {}
    for s in report.sections:
        sections[s.key] = {"title": s.title, "skipped": s.skipped, "error": s.error, "rows": _plain(s.rows),
                           "findings": {f.key: f.value for f in s.findings}, "notes": list(s.notes),
                           **_plain(s.extra)}
    return {"version": BENCH_VERSION, "config": _plain(report.config), "device": report.device,
            "machine": report.machine, "load_average": list(report.load), "busy": report.busy,
            "started": report.started, "seconds": report.seconds,
            "sections": sections, "goals": _plain(report.goals)}


def render_section(section: SectionResult) -> str:
    """A section as text: title, table, derived numbers, notes."""
    lines = [f"== {section.title} =="]
    if section.error:
        return "\n".join(lines + [f"FAILED: {section.error}"])
    if section.skipped:
        return "\n".join(lines + [f"skipped: {section.skipped}"])
    if section.table:
        lines.append(section.table.render())
    if section.text:
        lines.append(section.text)
    lines += [f"{f.text}: {f.value:,.0f}" if abs(f.value) >= 1000 else f"{f.text}: {f.value:.3g}"
              for f in section.findings]
    lines += [f"note: {note}" for note in section.notes]
    return "\n".join(lines)


def render_goals(report: BenchReport) -> str:
    """The goals, met or missed, and a warning when the machine was busy while measuring."""
    marks = {True: "met   ", False: "missed", None: "n/a   "}
    lines = ["== Goals =="] + [f"{marks[g.met]}  {g.text}: {g.detail}" for g in report.goals]
    if report.busy:
        lines.append(f"note: the machine was busy (load average {max(report.load):.1f} on {os.cpu_count()} "
                     "cores), so timings are inflated and erratic; --threads 1 steadies them, a quiet "
                     "machine fixes them")
    return "\n".join(lines)


# -- the live sweep for the Cost page -------------------------------------------------------
@dataclass(frozen=True)
class LiveConfig:
    """A sweep small enough for one click in a shared app, cut short by a time budget."""

    decode_sizes: tuple[int, ...]
    recompute_max: int
    prefill_sizes: tuple[int, ...]
    plan: TimingPlan
    copy_bytes: int  # tensor copied to measure bandwidth
    budget_s: float  # the whole sweep, decode and prefill together
    decode_share: float  # part of the budget for decode; prefill gets the rest


LIVE = LiveConfig(decode_sizes=(32, 64, 128, 256, 512, 1024, 2048, 4096), recompute_max=2048,
                  prefill_sizes=(16, 32, 64, 128, 256, 512),
                  plan=TimingPlan(warmup=1, min_repeats=3, max_repeats=7, target_s=0.02),
                  copy_bytes=64 * 2**20, budget_s=3.0, decode_share=0.6)


@dataclass(frozen=True)
class CostMeasurement:
    """What the Cost page measured: decode per token and prefill, on one device."""

    device: str
    threads: int  # CPU threads torch used
    decode: tuple[DecodePoint, ...]
    prefill: tuple[PrefillPoint, ...]
    bandwidth: Bandwidth
    budget_s: float
    seconds: float  # wall time of the sweep
    left_out: tuple[str, ...]  # series the budget cut short, in words


class _Budget:
    """Runs measurements from small n to large while the predicted cost fits the time left.

    A series (a mode, or prefill) always gets its first, smallest size, then stops at the first
    size whose predicted cost, the last cost scaled by (n / last n) ** growth, would pass the
    budget. A measurement that still runs long (a busy machine) stops repeating at the deadline.
    """

    def __init__(self, seconds: float):
        self.seconds, self.spent = seconds, 0.0
        self.deadline = time.perf_counter() + seconds
        self.last: dict[str, tuple[int, float]] = {}
        self.stopped: dict[str, int] = {}

    def run(self, series: str, n: int, growth: int, measure: Callable[[float], Any]) -> Any:
        """``measure(deadline)`` for size n of ``series``, or None if it would not fit."""
        if series in self.stopped:
            return None
        if series in self.last:
            last_n, last_cost = self.last[series]
            if self.spent + last_cost * (n / last_n) ** growth > self.seconds:
                self.stopped[series] = n
                return None
        start = time.perf_counter()
        result = measure(self.deadline)
        cost = time.perf_counter() - start
        self.spent += cost
        self.last[series] = (n, cost)
        return result


class MeasurementBusy(RuntimeError):
    """Another live sweep is running in this process; one at a time keeps a shared server free."""


LIVE_LOCK = threading.Lock()  # held while a live sweep runs, for every session of the process


def available_devices() -> list[str]:
    """The device kinds this machine can measure on, best first."""
    def available(kind: str) -> bool:
        try:
            pick_device(kind)
        except ValueError:
            return False
        return True
    return [kind for kind in DEVICE_KINDS if available(kind)]


def live_cost(device: str | torch.device | None = None, progress: Progress | None = None,
              config: LiveConfig = LIVE) -> CostMeasurement:
    """The Cost page's measurement: decode for every mode, then prefill, within the budget.

    It uses the process's torch threads as they are (the app sets one per script run). Raises
    :class:`MeasurementBusy` at once if another sweep is running in this process.
    """
    if not LIVE_LOCK.acquire(blocking=False):
        raise MeasurementBusy("another measurement is running on this server; try again in a few seconds")
    try:
        return _live_cost(pick_device(device), progress, config)
    finally:
        LIVE_LOCK.release()


def _live_cost(device: torch.device, progress: Progress | None, config: LiveConfig) -> CostMeasurement:
    model = _model(device)
    # kv and cat in turn (their ratio survives a change in the machine's load), then recompute: the
    # cheap series first, so an expensive recompute cannot spend the budget they need
    decode_tasks = [(modes, n) for n in config.decode_sizes for modes in (("kv", "cat"), ("recompute",))
                    if not (modes == ("recompute",) and n > config.recompute_max)]
    total = len(decode_tasks) + len(config.prefill_sizes)
    report = progress or (lambda fraction, text: None)
    start = time.perf_counter()
    report(0.0, "memory bandwidth")
    bandwidth = measure_bandwidth(config.copy_bytes, config.plan, device)
    decode_budget = _Budget(config.budget_s * config.decode_share - (time.perf_counter() - start))
    decode = []
    for done, (modes, n) in enumerate(decode_tasks):
        series = " and ".join(modes)
        report(done / total, f"decode, {series}, n = {n}")
        points = decode_budget.run(  # a step costs O(n²) without a cache, O(n) with one
            series, n, 2 if modes == ("recompute",) else 1,
            lambda deadline: measure_decodes(model, modes, n, config.plan, device, deadline))
        decode += points or ()
    prefill_budget = _Budget(config.budget_s - (time.perf_counter() - start))
    prefill = []
    for done, n in enumerate(config.prefill_sizes, start=len(decode_tasks)):
        report(done / total, f"prefill, n = {n}")
        point = prefill_budget.run(
            "prefill", n, 2, lambda deadline: measure_prefill(model, n, config.plan, device, deadline))
        if point:
            prefill.append(point)
    report(1.0, "done")
    left_out = tuple(f"{series} from n = {n}" for budget in (decode_budget, prefill_budget)
                     for series, n in budget.stopped.items())
    return CostMeasurement(describe_device(device), torch.get_num_threads(), tuple(decode), tuple(prefill),
                           bandwidth, config.budget_s, time.perf_counter() - start, left_out)


@dataclass(frozen=True)
class CostSummary:
    """The numbers the Cost page puts into words (None where the sweep did not reach them)."""

    device: str
    small_n: int  # smallest n with both recompute and kv
    large_n: int  # largest n with both recompute and kv
    speedup_small: float  # recompute / kv per token at small_n
    speedup_large: float  # … at large_n
    work_ratio_large: float  # recompute / kv multiply-adds at large_n
    kv_n: int  # largest n measured for kv (and cat)
    cat_over_kv: float | None  # cat / kv per token at kv_n
    kv_time_growth: float  # kv time per token at kv_n / at the smallest n
    kv_size_growth: float  # kv_n / the smallest n
    kv_time: float  # kv seconds per token at kv_n
    kv_cache_bytes: int  # K and V held at kv_n
    bytes_per_multiply_add: float  # kv at kv_n: cache bytes read per multiply-add
    floor_s: float  # kv at kv_n: cache bytes / measured bandwidth
    bandwidth_bytes_per_s: float
    prefill_small: tuple[int, float] | None  # (n, one-by-one / batched) at the smallest prompt
    prefill_large: tuple[int, float] | None  # … at the largest prompt


def summarize_cost(measurement: CostMeasurement) -> CostSummary | None:
    """Ratios read off a live measurement; None if it holds no size with both recompute and kv."""
    by = {(p.n, p.mode): p for p in measurement.decode}
    both = sorted(n for (n, mode) in by if mode == "recompute" and (n, "kv") in by)
    kv_sizes = sorted(n for (n, mode) in by if mode == "kv")
    if not both:
        return None

    def speedup(n: int) -> float:
        return by[(n, "recompute")].per_token.median_s / by[(n, "kv")].per_token.median_s

    small, large, top = both[0], both[-1], kv_sizes[-1]
    kv_top, kv_first = by[(top, "kv")], by[(kv_sizes[0], "kv")]
    cat = by.get((top, "cat"))
    ratios = [(p.n, p.one_by_one.median_s / p.batched.median_s) for p in measurement.prefill]
    return CostSummary(
        device=measurement.device, small_n=small, large_n=large, speedup_small=speedup(small),
        speedup_large=speedup(large),
        work_ratio_large=by[(large, "recompute")].work.multiply_adds / by[(large, "kv")].work.multiply_adds,
        kv_n=top, cat_over_kv=cat.per_token.median_s / kv_top.per_token.median_s if cat else None,
        kv_time_growth=kv_top.per_token.median_s / kv_first.per_token.median_s,
        kv_size_growth=top / kv_sizes[0], kv_time=kv_top.per_token.median_s,
        kv_cache_bytes=kv_top.cache_bytes,
        bytes_per_multiply_add=kv_top.cache_bytes / kv_top.work.multiply_adds,
        floor_s=kv_top.cache_bytes / measurement.bandwidth.bytes_per_s,
        bandwidth_bytes_per_s=measurement.bandwidth.bytes_per_s,
        prefill_small=ratios[0] if ratios else None, prefill_large=ratios[-1] if ratios else None)
