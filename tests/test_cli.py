"""Tier 1: the command line prints the trace JSON and fails with exit code 2 and one line."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from hostile_text import record
from viz import load_preset
from viz.core.engine.presets import preset_names


CLI = "Command line: odd files, devices, bytes, arguments"


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
    record(CLI, "refused")


def test_unavailable_device_exits_2(seed_file):
    """Asking for a device this machine lacks is bad input, not a traceback."""
    import torch
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    result = run("trace", str(seed_file), "--device", "cuda")
    assert result.returncode == 2 and "not available" in result.stderr


def _one_line_refusal(result: subprocess.CompletedProcess, message: str) -> None:
    if "Traceback" in result.stderr:
        record(CLI, "traceback")
    assert result.returncode == 2, result.stderr
    assert result.stdout == "" and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and message in result.stderr, result.stderr
    record(CLI, "refused")


@pytest.fixture(scope="module")
def odd_files(tmp_path_factory):
    """A FIFO, a directory, invalid UTF-8 and a scenario holding a lone surrogate (plain ASCII JSON)."""
    import os
    folder = tmp_path_factory.mktemp("odd")
    os.mkfifo(folder / "fifo")
    (folder / "dir").mkdir()
    (folder / "latin1.json").write_bytes('{"prompt": "caf\xe9"}'.encode("latin-1"))
    seed = load_preset("seed").to_dict()
    seed["tokens"] = ["\\ud800", "weather", "is", "so"]
    (folder / "surrogate.json").write_text(json.dumps(seed).replace("\\\\ud800", "\\ud800"), encoding="ascii")
    return folder


@pytest.mark.parametrize("name, message", [
    ("fifo", "it is a FIFO (named pipe), not a scenario file"),
    ("dir", "it is a directory, not a scenario file"),
    ("/dev/zero", "it is a device, not a scenario file"),
    ("latin1.json", "not UTF-8 text (byte 16"),
    ("surrogate.json", "tokens[0]: character 1 is U+D800, a lone surrogate"),
    ("x" * 5000, "cannot read xxxx"),
])
def test_files_that_are_not_scenarios_are_refused_without_blocking(odd_files, name, message):
    """Non-regular files are refused before reading (a FIFO would block forever), bad bytes with a message."""
    path = name if name.startswith("/") or len(name) > 100 else str(odd_files / name)
    _one_line_refusal(run("trace", path), message)
    if len(name) > 100:
        assert len(run("trace", path).stderr) < 200  # the path is clipped, not echoed whole


def test_standard_input_that_is_not_utf8_or_endless():
    """Bytes that are not UTF-8 on standard input, or an endless stream, are refused with one line."""
    result = subprocess.run([sys.executable, "-m", "viz", "trace", "-"], input=b"\xff\xfe{}", capture_output=True,
                            timeout=120)
    assert result.returncode == 2 and b"not UTF-8" in result.stderr and b"Traceback" not in result.stderr
    record(CLI, "refused")
    with open("/dev/zero", "rb") as zero:
        result = subprocess.run([sys.executable, "-m", "viz", "trace", "-"], stdin=zero, capture_output=True,
                                timeout=120)
    assert result.returncode == 2 and b"too large" in result.stderr
    record(CLI, "refused")


@pytest.mark.parametrize("device", ["hpu", "cuda:0", "meta", "xla", "", "cpu;rm"])
def test_only_cpu_cuda_and_mps_are_devices(seed_file, device):
    """--device takes cpu, cuda or mps; anything else is refused by name, never a traceback."""
    _one_line_refusal(run("trace", str(seed_file), "--device", device), "invalid choice")


def test_undecodable_arguments_and_a_closed_pipe_give_no_traceback(seed_file):
    """A preset name that is not UTF-8 is quoted safely; a reader that goes away ends the run quietly."""
    result = subprocess.run([sys.executable.encode(), b"-m", b"viz", b"preset", b"\xff"], capture_output=True,
                            timeout=120)
    assert result.returncode == 2 and b"unknown preset" in result.stderr and b"Traceback" not in result.stderr
    record(CLI, "refused")
    process = subprocess.Popen([sys.executable, "-m", "viz", "trace", str(seed_file), "--steps", "200"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    process.stdout.read(10)
    process.stdout.close()  # like `| head -c 10`
    _, err = process.communicate(timeout=120)
    assert b"Traceback" not in err and b"Exception ignored" not in err
    record(CLI, "ran")
