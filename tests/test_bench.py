"""Tier 1: the benchmark measures what it says, writes complete JSON, and never asserts a speed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace

import pytest
import torch

from viz import load_preset
from viz.tools import bench
from viz.__main__ import main
from viz.core.engine.cache import CatCache, KVCache
from viz.core.engine.cost import (DECODE_MODES, Bandwidth, CostMeasurement, DecodePoint, LiveConfig, PrefillPoint,
                           live_cost, measure_decode, summarize_cost)
from viz.core.timing import Timing, TimingPlan, time_calls, time_in_turn
from viz.tools import real_bench
from viz.tools.bench import (QUICK, Finding, Section, SectionResult, Table, bench_real, render_goals,
                             render_section, report_to_dict, run_bench)
from viz.tools.peers import PEERS
from viz.core.device import pick_device
from viz.core.engine.model import ToyModel, WorkCounts, make_decoder

SECTION_KEYS = ["prefill", "decode", "peers", "floor", "latency", "real_model", "serving"]


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "viz", *args], capture_output=True, text=True,
                          timeout=600)


@pytest.fixture(scope="module")
def quick(tmp_path_factory) -> tuple[subprocess.CompletedProcess, dict]:
    """The smallest mode, once, through the command line (one thread: steady on a busy machine)."""
    out = tmp_path_factory.mktemp("bench") / "results.json"
    result = run("bench", "--quick", "--device", "cpu", "--threads", "1", "--out", str(out))
    assert result.returncode == 0, result.stderr
    return result, json.loads(out.read_text(encoding="utf-8"))


def timings(node) -> list[dict]:
    """Every Timing object anywhere in the JSON."""
    if isinstance(node, dict):
        found = [node] if "median_s" in node else []
        return found + [t for value in node.values() for t in timings(value)]
    if isinstance(node, list):
        return [t for value in node for t in timings(value)]
    return []


def test_quick_json_has_every_section_and_goal(quick):
    """The JSON names its config, machine and device, every section in order, and the five goals."""
    _, data = quick
    assert data["version"] == 2 and data["config"]["name"] == "quick" and data["device"] == "cpu"
    assert data["machine"]["cpu threads"] == "1" and data["machine"]["torch"] == torch.__version__
    assert list(data["sections"]) == SECTION_KEYS
    for key in SECTION_KEYS[:5]:
        section = data["sections"][key]
        assert section["skipped"] is None and section["rows"] and section["title"], key
    assert all(section["error"] is None for section in data["sections"].values())
    assert isinstance(data["busy"], bool) and all(load >= 0 for load in data["load_average"])
    assert len(data["goals"]) == 5
    assert all(goal["met"] in (True, False, None) and goal["detail"] for goal in data["goals"])


def test_quick_every_timing_is_a_positive_measurement(quick):
    """Every timing is positive with min <= median <= max, and there is one per thing measured."""
    _, data = quick
    config, sections = data["config"], data["sections"]
    found = timings({key: section for key, section in sections.items() if key != "serving"})
    assert all(t["median_s"] > 0 for t in timings(sections["serving"]))  # counted in test_serving_bench
    decode_rows = sum(1 for n in config["decode_sizes"] for mode in DECODE_MODES
                      if mode != "recompute" or n <= config["recompute_max"])
    expected = (2 * len(config["prefill_sizes"]) + decode_rows + len(PEERS) * len(config["decode_sizes"])
                + len(config["decode_sizes"]) + 1)
    assert len(found) == expected
    for timing in found:
        assert 0 < timing["min_s"] <= timing["median_s"] <= timing["max_s"]
        assert timing["repeats"] >= 1
    for row in sections["latency"]["rows"]:
        assert row["decode_step_click_s"] > 0 and row["prefill_stepper_click_s"] > 0
    for row in sections["floor"]["rows"]:
        assert row["bytes_per_token"] > 0 and row["floor_s"] > 0 and 0 < row["achieved"]
    assert sections["floor"]["bandwidth"]["bytes_moved"] == 2 * config["copy_bytes"]


def test_quick_decode_rows_cover_every_mode_and_size(quick):
    """Decode has one row per (n, mode), recompute only up to its cap; peers one per (n, cache)."""
    _, data = quick
    config, sections = data["config"], data["sections"]
    decode = {(row["n"], row["mode"]) for row in sections["decode"]["rows"]}
    assert decode == {(n, mode) for n in config["decode_sizes"] for mode in DECODE_MODES
                      if mode != "recompute" or n <= config["recompute_max"]}
    peers = {(row["n"], row["cache"]) for row in sections["peers"]["rows"]}
    assert peers == {(n, peer) for n in config["decode_sizes"] for peer in PEERS}


def test_quick_work_counts_grow_as_theory_says(quick):
    """Engine counts per step: recompute's multiply-adds grow like n², the cache's like n."""
    _, data = quick
    rows = {(row["n"], row["mode"]): row["work"]["multiply_adds"]
            for row in data["sections"]["decode"]["rows"]}
    small, large = data["config"]["decode_sizes"][:2]
    ratio = large / small
    assert rows[(large, "recompute")] / rows[(small, "recompute")] == pytest.approx(ratio ** 2)
    assert rows[(large, "kv")] / rows[(small, "kv")] == pytest.approx(ratio)
    assert rows[(large, "cat")] == rows[(large, "kv")]


def test_quick_prefill_both_ways_agree(quick):
    """Batched prefill and one token at a time give the same contexts at every size."""
    _, data = quick
    for row in data["sections"]["prefill"]["rows"]:
        assert row["max_abs_diff"] < 1e-4
        assert row["batched_work"]["multiply_adds"] > row["one_by_one_work"]["multiply_adds"]


def test_quick_prints_a_table_per_section(quick):
    """Standard output holds each section's title, a table heading, the goals and the JSON path."""
    result, data = quick
    for section in data["sections"].values():
        assert f"== {section['title']} ==" in result.stdout
    assert "recompute/kv" in result.stdout and "== Goals ==" in result.stdout
    assert "results written to" in result.stdout


@pytest.mark.parametrize("args, message", [
    (["--threads", "0"], "--threads"),
    (["--threads", "two"], "--threads"),
    (["--out", "/no/such/folder/results.json"], "cannot write"),
    (["--device", "tpu"], "--device"),
])
def test_bench_bad_input_is_one_line_and_exit_2(args, message, capsys):
    """Bad options fail before measuring anything: exit code 2 and one line on stderr."""
    assert main(["bench", "--quick", *args]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert len(captured.err.strip().splitlines()) == 1 and message in captured.err


def test_bench_unavailable_device_is_one_line_and_exit_2(capsys):
    """Asking for a device this machine lacks is refused with exit code 2 and one line."""
    missing = [kind for kind in ("cuda", "mps") if not _available(kind)]
    if not missing:
        pytest.skip("this machine has both cuda and mps")
    assert main(["bench", "--quick", "--device", missing[0]]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.splitlines() == [f"error: device '{missing[0]}' is not available on this machine"]


def _available(kind: str) -> bool:
    try:
        pick_device(kind)
    except ValueError:
        return False
    return True


# -- the pieces, in process -------------------------------------------------------------------
@pytest.fixture(scope="module")
def model() -> ToyModel:
    return ToyModel(load_preset("cache-safe"), device="cpu")


def tokens(n: int) -> tuple[list[str], list[float]]:
    words, values = ["Today", "weather", "is", "so"], [10.0, 20.0, 1.0, 5.0]
    return [words[i % 4] for i in range(n)], [values[i % 4] for i in range(n)]


@pytest.mark.parametrize("mode", ["kv", "recompute"])
def test_fill_leaves_the_state_prefill_leaves(model, mode):
    """A decoder filled with a prompt decodes exactly as one that prefilled it (the engine hook)."""
    words, values = tokens(9)
    filled, prefilled = make_decoder(mode, model), make_decoder(mode, model)
    filled.fill(words[:6], values[:6])
    prefilled.prefill(words[:6], values[:6])
    for word, value in zip(words[6:], values[6:]):
        a, b = filled.decode_step(word, value), prefilled.decode_step(word, value)
        assert torch.equal(a.attention.contexts, b.attention.contexts)
        assert a.cache_length == b.cache_length and a.cache_nbytes == b.cache_nbytes


def test_cat_cache_decodes_like_the_kv_cache(model):
    """The torch.cat cache holds the same keys, values and records, so decode agrees exactly."""
    words, values = tokens(12)
    ours = make_decoder("kv", model)
    naive = make_decoder("kv", model, CatCache(model.num_heads, model.d_k))
    ours.prefill(words[:5], values[:5])
    naive.prefill(words[:5], values[:5])
    for word, value in zip(words[5:], values[5:]):
        a, b = ours.decode_step(word, value), naive.decode_step(word, value)
        assert torch.equal(a.attention.contexts, b.attention.contexts)
        assert a.cache_nbytes == b.cache_nbytes
    assert torch.equal(ours.cache.keys(), naive.cache.keys())
    assert torch.equal(ours.cache.info().n, naive.cache.info().n)


def test_measure_decode_times_the_step_at_length_n(model):
    """The first timed step's query sees exactly n keys; its counts are the engine's for that n."""
    plan = TimingPlan(warmup=2, min_repeats=3, max_repeats=3, target_s=0.0)
    point = measure_decode(model, "kv", 40, plan, torch.device("cpu"))
    assert point.per_token.repeats == 3
    assert point.work.keys_read == model.num_heads * 39
    assert point.work.multiply_adds == model.num_heads * 40 * (model.d_k + 1)
    element = KVCache(model.num_heads, model.d_k).element_size
    assert point.cache_bytes == element * 40 * (model.num_heads * model.d_k + 1)


def test_time_calls_warms_up_then_repeats_within_the_plan():
    """Warm-up calls are not timed; repeats stay between the plan's bounds; the first result is kept."""
    calls = []

    def fn() -> int:
        calls.append(len(calls))
        return len(calls)

    timing, first = time_calls(fn, TimingPlan(warmup=2, min_repeats=3, max_repeats=5, target_s=0.0),
                               torch.device("cpu"))
    assert len(calls) == 5 and timing.repeats == 3 and first == 3
    timing, _ = time_calls(fn, TimingPlan(warmup=0, min_repeats=3, max_repeats=5, target_s=0.0),
                           torch.device("cpu"), deadline=0.0)
    assert timing.repeats == 1


def test_time_in_turn_alternates_the_calls_round_by_round():
    """Calls are made in turn, one of each per round, and every call gets the same number of repeats."""
    calls = []
    fns = {name: (lambda name=name: calls.append(name) or len(calls)) for name in ("a", "b")}
    timings = time_in_turn(fns, TimingPlan(warmup=1, min_repeats=2, max_repeats=2, target_s=0.0),
                           torch.device("cpu"))
    assert calls == ["a", "b"] * 3
    assert {name: (t.repeats, first) for name, (t, first) in timings.items()} == {"a": (2, 3), "b": (2, 4)}


def test_real_model_section_keeps_its_dict_and_prints_its_table(monkeypatch):
    """A real-model result goes into the JSON whole; the terminal shows the module's own table."""
    seen = []

    def fake(quick, device):
        seen.append((quick, device))
        return {"model": "toy-gpt", "per_token": [{"length": 16, "cached_ms": 1.5}]}

    monkeypatch.setattr(real_bench, "bench_real_model", fake)
    monkeypatch.setattr(real_bench, "format_table", lambda result: f"table of {result['model']}")
    section = bench_real(QUICK, torch.device("cpu"))
    assert seen == [(True, torch.device("cpu"))]
    assert section.skipped is None and section.extra["per_token"] == [{"length": 16, "cached_ms": 1.5}]
    assert section.text == "table of toy-gpt" and "table of toy-gpt" in render_section(section)


TINY = LiveConfig(decode_sizes=(16, 32, 64), recompute_max=32, prefill_sizes=(8, 16),
                  plan=TimingPlan(warmup=1, min_repeats=2, max_repeats=2, target_s=0.0),
                  copy_bytes=2**20, budget_s=60.0, decode_share=0.6)


def test_live_cost_measures_every_size_within_budget():
    """With room in the budget, every series is measured at every size, with progress 0 → 1."""
    seen = []
    result = live_cost("cpu", lambda fraction, text: seen.append(fraction), TINY)
    assert {(p.n, p.mode) for p in result.decode} == {
        (16, "recompute"), (32, "recompute"), *((n, m) for n in (16, 32, 64) for m in ("kv", "cat"))}
    assert [p.n for p in result.prefill] == [8, 16] and result.left_out == ()
    assert all(p.per_token.median_s > 0 for p in result.decode)
    assert seen[0] == 0.0 and seen[-1] == 1.0 and seen == sorted(seen)


def test_live_cost_stops_each_series_when_the_budget_is_spent():
    """With no budget, each series gets its first MIN_SIZES sizes only (its curve keeps a shape), and the
    rest is named as left out."""
    from viz.core.engine.cost import MIN_SIZES

    assert MIN_SIZES == 3
    config = LiveConfig(**{**TINY.__dict__, "decode_sizes": (8, 16, 24, 32, 48), "prefill_sizes": (4, 8, 12, 16),
                           "budget_s": 0.0})
    result = live_cost("cpu", None, config)
    assert sorted((p.mode, p.n) for p in result.decode) == sorted(
        (mode, n) for mode in ("cat", "kv", "recompute") for n in (8, 16, 24))
    assert [p.n for p in result.prefill] == [4, 8, 12]
    assert set(result.left_out) == {"recompute from n = 32", "kv and cat from n = 32", "prefill from n = 16"}


def _timing(seconds: float) -> Timing:
    return Timing(seconds, seconds, seconds, 3)


def test_summarize_cost_reads_ratios_off_the_measurement():
    """The summary's ratios are the measured medians' ratios, at the sizes the sweep reached."""
    work = lambda macs: WorkCounts(multiply_adds=macs)  # noqa: E731
    decode = (DecodePoint(10, "recompute", _timing(0.002), work(1000), 0),
              DecodePoint(10, "kv", _timing(0.001), work(100), 400),
              DecodePoint(40, "recompute", _timing(0.080), work(16000), 0),
              DecodePoint(40, "kv", _timing(0.002), work(400), 1600),
              DecodePoint(80, "kv", _timing(0.003), work(800), 3200),
              DecodePoint(80, "cat", _timing(0.006), work(800), 3200))
    prefill = (PrefillPoint(8, _timing(0.001), _timing(0.004), work(10), work(6), 0.0),)
    measurement = CostMeasurement("cpu", 1, decode, prefill, Bandwidth(2000, _timing(1e-6)), 3.0, 1.0, ())
    s = summarize_cost(measurement)
    assert (s.small_n, s.large_n, s.kv_n) == (10, 40, 80)
    assert s.speedup_small.median == pytest.approx(2) and s.speedup_large.median == pytest.approx(40)
    assert s.work_ratio_large == pytest.approx(40) and s.cat_over_kv.median == pytest.approx(2)
    assert s.kv_time_growth.median == pytest.approx(3) and s.kv_size_growth == pytest.approx(8)
    assert s.bytes_per_multiply_add == pytest.approx(4) and s.floor_s == pytest.approx(3200 / 2e9)
    assert s.kv_cache_bytes == 3200 and s.kv_time == pytest.approx(0.003)
    assert s.prefill_small == s.prefill_large and s.prefill_small[0] == 8
    assert s.prefill_small[1].median == pytest.approx(4)
    kv_only = CostMeasurement("cpu", 1, decode[1:2], (), measurement.bandwidth, 3.0, 1.0, ())
    assert summarize_cost(kv_only) is None


def test_section_renders_title_table_findings_and_notes():
    """A section prints as its title, its table, its findings and its notes."""
    section = SectionResult(table=Table(("n", "time"), (("8", "1 ms"),)),
                            findings=(Finding("k", "a ratio", 2.0),), notes=("a note",), title="Title")
    assert render_section(section).splitlines() == [
        "== Title ==", "n  time", "-  ----", "8  1 ms", "a ratio: 2", "note: a note"]


def _failing(config, device):
    raise MemoryError("out of memory\nat some place")


def _working(config, device):
    return SectionResult(findings=(Finding("k", "a number", 1.0),))


def test_a_failing_section_is_recorded_and_the_rest_kept():
    """A section that raises is reported with its error; the sections around it still run."""
    sections = (Section("first", "First", _working), Section("broken", "Broken", _failing),
                Section("last", "Last", _working))
    report = run_bench(QUICK, "cpu", sections=sections)
    assert [s.key for s in report.sections] == ["first", "broken", "last"] and report.failed == ["broken"]
    assert report.sections[1].error == "MemoryError: out of memory"
    assert render_section(report.sections[1]).splitlines() == [
        "== Broken ==", "FAILED: MemoryError: out of memory"]
    assert report_to_dict(report)["sections"]["last"]["findings"] == {"k": 1.0}


def test_cli_writes_the_json_then_exits_1_when_a_section_failed(monkeypatch, tmp_path, capsys):
    """The command line still writes the results, then exits 1 with one line naming what failed."""
    monkeypatch.setattr(bench, "SECTIONS", (Section("broken", "Broken", _failing),
                                            Section("last", "Last", _working)))
    out = tmp_path / "results.json"
    assert main(["bench", "--quick", "--device", "cpu", "--out", str(out)]) == 1
    assert capsys.readouterr().err.splitlines() == ["error: broken failed (see above)"]
    assert json.loads(out.read_text())["sections"]["broken"]["error"] == "MemoryError: out of memory"


def test_goals_warn_when_the_machine_was_busy():
    """The goals end with a warning when other work kept more processes runnable than there are cores."""
    report = run_bench(QUICK, "cpu", sections=(Section("last", "Last", _working),))
    quiet = replace(report, load=(0.0, 0.0))
    busy = replace(report, load=(0.0, 2.0 * (os.cpu_count() or 1) + 1))
    assert not quiet.busy and "busy" not in render_goals(quiet)
    assert busy.busy and "note: the machine was busy" in render_goals(busy).splitlines()[-1]
    assert [line.split()[0] for line in render_goals(quiet).splitlines()[1:]] == ["n/a"] * 5
