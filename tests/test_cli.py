"""Tier 1: the command line prints the trace JSON and fails with exit code 2 and one line."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from viz import load_preset
from viz.core.presets import preset_names


def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "viz", *args], input=stdin, capture_output=True,
                          text=True, timeout=120)


@pytest.fixture(scope="module")
def seed_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("scenario") / "seed.json"
    path.write_text(load_preset("seed").to_json(), encoding="utf-8")
    return path


def test_presets_lists_every_preset():
    """`presets` prints one line per preset."""
    result = run("presets")
    assert result.returncode == 0
    assert [line.split("\t")[0] for line in result.stdout.splitlines()] == preset_names()


def test_preset_prints_scenario_json():
    """`preset seed` prints JSON that loads back to the seed."""
    result = run("preset", "seed")
    assert result.returncode == 0
    assert json.loads(result.stdout) == load_preset("seed").to_dict()


@pytest.mark.parametrize("mode, last_head", [("recompute", 7.0), ("kv", 6.0)])
def test_trace_prints_the_seed_numbers(seed_file, mode, last_head):
    """The trace holds tokens, heads, prefill and N steps with the article's numbers."""
    result = run("trace", str(seed_file), "--steps", "2", "--mode", mode)
    assert result.returncode == 0, result.stderr
    trace = json.loads(result.stdout)
    assert trace["tokens"] == ["Today", "weather", "is", "so", "nice", "nice"]
    assert [h["cacheable"] for h in trace["heads"]] == [True, False, True, True]
    assert trace["prefill"]["contexts"][1] == pytest.approx([10, 15, 10.3333, 5], abs=1e-4)
    assert len(trace["prefill"]["weights"]) == 4 and len(trace["prefill"]["weights"][0]) == 4
    step0, step1 = trace["steps"]
    assert step0["context"] == pytest.approx([12.5, 5, 10, 9], abs=1e-4)
    assert step0["logits"] == pytest.approx([15.3, 14.2, 8.15], abs=1e-4)
    assert sum(step0["probs"]) == pytest.approx(1.0) and step0["token"] == "nice"
    assert step1["context"] == pytest.approx([12.5, last_head, 10, 8.6], abs=1e-4)


def test_trace_reads_standard_input():
    """`-` reads the scenario from standard input."""
    result = run("trace", "-", "--steps", "1", stdin=load_preset("cache-safe").to_json())
    assert result.returncode == 0 and json.loads(result.stdout)["steps"][0]["token"] == "nice"


@pytest.mark.parametrize("args, stdin, message", [
    (("trace", "missing.json"), None, "cannot read missing.json"),
    (("trace", "-"), "{not json", "not valid JSON"),
    (("trace", "-"), '{"prompt": "x", "heads": []}', "heads: needs at least one head"),
    (("trace", "-", "--steps", "-1"), "{}", "must be between 0"),
    (("trace", "-", "--steps", "many"), "{}", "not a whole number"),
    (("trace", "-", "--mode", "fast"), "{}", "invalid choice"),
    (("trace",), None, "required"),
    (("preset", "nope"), None, "unknown preset 'nope'"),
    (("frobnicate",), None, "invalid choice"),
    ((), None, "required"),
])
def test_bad_input_exits_2_with_one_line(args, stdin, message):
    """Bad input: exit code 2, nothing on stdout, exactly one line on stderr."""
    result = run(*args, stdin=stdin)
    assert result.returncode == 2
    assert result.stdout == ""
    assert len(result.stderr.strip().splitlines()) == 1 and message in result.stderr


def test_unavailable_device_exits_2(seed_file):
    """Asking for a device this machine lacks is bad input, not a traceback."""
    import torch
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    result = run("trace", str(seed_file), "--device", "cuda")
    assert result.returncode == 2 and "not available" in result.stderr
