"""``python -m viz bench``: the cost of decoding, measured section by section.

Sections (:data:`SECTIONS`, in order, in one process): prefill batched vs one token at a time;
decode per token for recompute, our KVCache and a ``torch.cat`` cache; the same step over
transformers' caches (viz.tools.peers); the memory-bandwidth floor; app latency (a rerun of the real
pages through Streamlit's AppTest, viz.tools.latency); the real models (viz.tools.real_bench).
:func:`run_bench` returns a :class:`BenchReport`; :func:`report_to_dict` is the one place its JSON
is made. Measurements come from viz.core.engine.cost and the harness in viz.core.timing.

What this module does not do: check any speed (numbers are reported, never asserted, and the goals
are read off the findings) or draw.
"""

from __future__ import annotations

import math
import os
import platform
import time
from dataclasses import asdict, dataclass, is_dataclass, replace
from datetime import datetime, timezone
from typing import Any, Callable, NamedTuple

import torch
import transformers

from ..core.engine.cost import (FloorPoint, measure_bandwidth, measure_decode, measure_decodes, measure_prefill,
                         model_for)
from ..core.device import describe_device, pick_device
from ..core.text import first_line
from ..core.timing import format_seconds
from ..core.engine import presets
from . import latency, peers, real_bench
from .bench_serving import bench_serving

BENCH_VERSION = 2


from .bench_report import FULL, QUICK, BenchConfig, Finding, SectionResult, Table  # noqa: F401 (re-exported)


def _times(ratio: float) -> str:
    return f"{ratio:,.0f}×" if ratio >= 100 else f"{ratio:.3g}×"


def bench_prefill(config: BenchConfig, device: torch.device) -> SectionResult:
    """1. Prefill: one batched pass over the prompt vs a Python loop over its positions."""
    model = model_for(device)
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
    model = model_for(device)
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
    model = model_for(device)
    points = tuple(point for n in config.decode_sizes
                   for point in peers.measure_peers(model, n, config.plan, device))
    by = {(p.n, p.cache): p.per_token.median_s for p in points}
    cells = tuple((str(n), *(format_seconds(by[(n, peer)]) for peer in peers.PEERS),
                   *(_times(by[(n, peer)] / by[(n, "kv")]) for peer in peers.PEERS[1:]))
                  for n in config.decode_sizes)
    table = Table(("n", *peers.PEERS, *(f"{peer}/kv" for peer in peers.PEERS[1:])), cells)
    n = config.decode_sizes[-1]
    findings = tuple(Finding(f"{peer}_over_kv_at_{n}", f"{peer} / kv per token at n = {n}",
                             by[(n, peer)] / by[(n, "kv")]) for peer in peers.PEERS[1:])
    notes = (f"transformers {transformers.__version__}. K as (1, heads, len, d_k), V as "
             "(1, heads, len, 1); the attention is the engine's own for every cache.",
             "The caches are timed in turn, one step each per round, so a change in the machine's "
             "load hits them alike. Each is then read after the others have passed through the "
             "processor's caches, so its times run above the decode section's: compare ratios.")
    return SectionResult(points, table, findings, notes)


def bench_floor(config: BenchConfig, device: torch.device) -> SectionResult:
    """4. Memory bandwidth, and cached decode against the time to read its whole cache once."""
    bandwidth = measure_bandwidth(config.copy_bytes, config.plan, device)
    model = model_for(device)
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
    """A click on a page, as the real app runs it (AppTest: frame + page, engine, figures, protos)."""

    scenario: str
    step: int  # the Decode page's step when clicking
    decode_step_click_s: float  # median rerun after Decode's Step / Back
    prefill_stepper_click_s: float  # median rerun after Prefill's position stepper


LATENCY_SCENARIOS = {"seed": presets.load_preset("seed"), "64 tokens, 8 heads": presets.busy_scenario()}


def bench_app_latency(config: BenchConfig, device: torch.device) -> SectionResult:
    """5. App latency: whole reruns of the real pages (viz.tools.latency), not a copy of their code."""
    points = []
    for name, step in config.latency:
        result = latency.measure(LATENCY_SCENARIOS[name], step, config.latency_repeats)
        points.append(LatencyPoint(name, step, result.decode_step_click_s, result.prefill_stepper_click_s))
    table = Table(("scenario", "step", "Decode: Step click", "Prefill: stepper click"),
                  tuple((p.scenario, str(p.step), format_seconds(p.decode_step_click_s),
                         format_seconds(p.prefill_stepper_click_s)) for p in points))
    seed = next(p for p in points if p.scenario == "seed")
    findings = (Finding("seed_app_latency_s", "seed, slowest click-to-rerun (Decode Step or Prefill stepper), s",
                        max(seed.decode_step_click_s, seed.prefill_stepper_click_s)),)
    notes = ("Server compute of one rerun of the real app (frame, page, engine, figures and their "
             "serialisation) through Streamlit's AppTest, median of the clicks; the device setting does "
             "not apply (the app picks its own). Browser rendering and the network come on top: "
             "see viz.tools.latency for the browser's side.",)
    return SectionResult(tuple(points), table, findings, notes)


def bench_real(config: BenchConfig, device: torch.device) -> SectionResult:
    """6. The real model: cached vs uncached decode and generate() (viz.tools.real_bench)."""
    data = real_bench.bench_real_model(config.quick, device)
    return SectionResult(text=real_bench.format_table(data), extra=data)


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
    Section("latency", "App latency: one click, the real app's rerun", bench_app_latency),
    Section("real_model", "A real model", bench_real),
    Section("serving", "Serving: scheduling, speculative decoding, FlashAttention", bench_serving),
)


@dataclass(frozen=True)
class Goal:
    """A goal, and whether this run shows it (None: not measured in this run)."""

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
    """The goals, read off the findings. Reported, never asserted."""
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
        goal("seed: a click reruns the real app in under 100 ms", "seed_app_latency_s", lambda s: s < 0.1,
             lambda s: format_seconds(s)),
    )


def load_average() -> float | None:
    """Runnable processes over the last minute (Unix), to tell a busy machine from a quiet one."""
    return os.getloadavg()[0] if hasattr(os, "getloadavg") else None


def machine_info(device: torch.device) -> dict[str, str]:
    info = {"torch": torch.__version__, "python": platform.python_version(),
            "platform": platform.platform(), "cpu cores": str(os.cpu_count()),
            "cpu threads": str(torch.get_num_threads())}
    info["transformers"] = transformers.__version__
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

