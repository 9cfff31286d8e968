"""Command line: ``python -m viz trace|presets|preset|bench|scale …``.

Bad input (a missing or unreadable file, a FIFO, a directory or a device instead of a file, bytes
that are not UTF-8, an invalid scenario, a device this machine lacks): exit code 2 and one line on
stderr. Nothing the user passes can make it print a traceback: an unexpected failure is one line
too, with exit code 1.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import stat
import sys

import torch

from .core.device import DEVICE_KINDS, pick_device
from .core.engine.model import MODES, generate
from .core.engine.presets import load_preset, preset_names
from .core.engine.scenario import MAX_DECODE_STEPS, MAX_JSON_BYTES, Scenario, ScenarioError
from .core.text import shown

CLI_DTYPES = {"bf16": "fp16/bf16", "fp16": "fp16/bf16", "fp8": "fp8", "fp32": "fp32"}  # scale's --dtype
SCALE_MAX_TOKENS = 100_000_000 - 1  # viz.core.scale.memory.MAX_TOKENS, less the decode step
SCALE_MAX_BATCH = 1_000_000  # viz.core.scale.memory.MAX_BATCH


class UsageError(Exception):
    """Bad command-line input; reported as one line and exit code 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # argparse prints usage on two lines; we want one
        raise UsageError(message)


def _read_scenario(path: str) -> Scenario:
    """The scenario in a regular file (or standard input for ``-``)."""
    return Scenario.from_json(_read_file(path, MAX_JSON_BYTES + 1, "a scenario file"))


def _read_file(path: str, limit: int, what: str) -> bytes:
    """At most ``limit`` bytes of a regular file (or standard input for ``-``), refused before reading
    anything that is not a regular file: a FIFO would block, a device such as /dev/zero never ends."""
    if path == "-":
        data = sys.stdin.buffer.read(limit)
    else:
        try:
            # O_NONBLOCK: opening a FIFO without a writer would otherwise wait forever
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
        except (OSError, ValueError) as err:
            reason = err.strerror if isinstance(err, OSError) and err.strerror else "not a usable path"
            raise UsageError(f"cannot read {shown(path)}: {reason}") from None
        mode = os.fstat(fd).st_mode
        with os.fdopen(fd, "rb", closefd=True) if stat.S_ISREG(mode) else _closing(fd) as handle:
            if not stat.S_ISREG(mode):
                kind = ("a directory" if stat.S_ISDIR(mode) else "a FIFO (named pipe)" if stat.S_ISFIFO(mode)
                        else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "a socket"
                        if stat.S_ISSOCK(mode) else "not a regular file")
                raise UsageError(f"cannot read {shown(path)}: it is {kind}, not {what} "
                                 "(use - to read standard input)")
            try:
                data = handle.read(limit)
            except OSError as err:
                raise UsageError(f"cannot read {shown(path)}: {err.strerror or err}") from None
    return data


@contextlib.contextmanager
def _closing(fd: int):
    """Close a descriptor that is not read (a directory, a FIFO, a device)."""
    try:
        yield None
    finally:
        os.close(fd)


def _steps(text: str) -> int:
    try:
        steps = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a whole number") from None
    if not 0 <= steps <= MAX_DECODE_STEPS:
        raise argparse.ArgumentTypeError(f"must be between 0 and {MAX_DECODE_STEPS}")
    return steps


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m viz", description="kvlab: prefill, decode and the KV cache.")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    trace = commands.add_parser("trace", help="run a scenario and print its trace as JSON")
    trace.add_argument("scenario", help="scenario JSON file, or - for standard input")
    trace.add_argument("--steps", type=_steps, default=1, help="predictions to make (default 1)")
    trace.add_argument("--mode", choices=MODES, default="kv", help="how decode runs (default kv)")
    trace.add_argument("--device", choices=DEVICE_KINDS, default=None,
                       help="cpu, cuda or mps (default: best available)")
    commands.add_parser("presets", help="list the built-in scenarios")
    preset = commands.add_parser("preset", help="print a built-in scenario as JSON")
    preset.add_argument("name")
    bench = commands.add_parser("bench", help="time prefill, decode and the KV cache on this machine")
    bench.add_argument("--quick", action="store_true", help="small sizes only: a few seconds")
    bench.add_argument("--device", choices=DEVICE_KINDS, default=None,
                       help="cpu, cuda or mps (default: best available)")
    bench.add_argument("--out", help="also write the results as JSON to this file")
    bench.add_argument("--threads", type=_threads, default=None,
                       help="CPU threads for torch (default: torch's choice, usually one per core)")
    scale = commands.add_parser("scale", help="count a real model's KV cache and fixed state from its config.json")
    scale.add_argument("config", help="a Hugging Face config.json, or - for standard input")
    scale.add_argument("--tokens", type=_whole("tokens", 1, SCALE_MAX_TOKENS), required=True,
                       help="prompt length N: K/V is counted after the prompt and one decode step")
    scale.add_argument("--batch", type=_whole("batch", 1, SCALE_MAX_BATCH), default=1,
                       help="sequences held at once (default 1)")
    scale.add_argument("--dtype", choices=list(CLI_DTYPES), default="bf16", help="the K/V cache's dtype (default bf16)")
    scale.add_argument("--gpu", default=None, help="also fit the model on this GPU (H100, A100 80GB, MI300X, ...)")
    return parser


def _whole(name: str, low: int, high: int):
    def parse(text: str) -> int:
        if not text.isdigit() or not low <= int(text) <= high:
            raise argparse.ArgumentTypeError(f"{name} must be a whole number from {low:,} to {high:,}")
        return int(text)
    return parse


def _scale(args: argparse.Namespace) -> None:
    """Count one sequence of the model in a config.json; fit the batch on a GPU when one is named."""
    from .core.scale.count import count_to_dict, read_model, sequence_count
    from .core.scale.gpus import gpu_named
    from .core.scale.memory import cache_memory, gpu_fit
    from .core.scale.model_config import MAX_CONFIG_BYTES, ConfigError

    try:
        gpu = gpu_named(args.gpu) if args.gpu is not None else None
        config = read_model(_read_file(args.config, MAX_CONFIG_BYTES + 1, "a config.json"), shown(args.config))
        dtype = CLI_DTYPES[args.dtype]
        count = sequence_count(config, args.tokens, dtype)
        fit = None if gpu is None else gpu_fit(cache_memory(config, args.tokens + 1, dtype, args.batch), gpu,
                                               weights_dtype=config.weights_dtype)
    except (ConfigError, ValueError) as err:
        raise UsageError(str(err)) from None
    result = count_to_dict(count, args.batch, fit)
    result["cache_dtype"] = args.dtype
    print(json.dumps(result))


def _threads(text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= 1024:
        raise argparse.ArgumentTypeError(f"'{text}' is not a whole number from 1 to 1024")
    return int(text)


def _bench(quick: bool, device_name: str | None, out: str | None, threads: int | None) -> int:
    """Run the benchmark, printing each section as it finishes; then the goals; then the JSON.

    Exit code 1 (after the JSON is written) if a section failed.
    """
    from .tools.bench import FULL, QUICK, SECTIONS, render_goals, render_section, report_to_dict, run_bench

    device = _device(device_name)
    if out is not None:  # fail now, not after minutes of measuring
        folder = os.path.dirname(os.path.abspath(out))
        if os.path.isdir(out) or not os.path.isdir(folder) or not os.access(folder, os.W_OK):
            raise UsageError(f"cannot write {out}: not a writable file path")
    if threads is not None:
        torch.set_num_threads(threads)
    config = QUICK if quick else FULL
    print(f"kvlab bench ({config.name}) on {device}, {torch.get_num_threads()} CPU threads", flush=True)
    report = run_bench(config, device, lambda s: print(render_section(s) + "\n", flush=True), SECTIONS)
    print(render_goals(report))
    print(f"{report.seconds:.1f} s in all")
    if out is not None:
        with open(out, "w", encoding="utf-8") as handle:
            json.dump(report_to_dict(report), handle, indent=2, ensure_ascii=False)
        print(f"results written to {out}")
    if report.failed:
        print(f"error: {', '.join(report.failed)} failed (see above)", file=sys.stderr)
        return 1
    return 0


def _device(name: str | None) -> torch.device:
    try:
        return pick_device(name)
    except ValueError as err:
        raise UsageError(str(err)) from None


def _run(args: argparse.Namespace) -> int:
    if args.command == "presets":
        for name in preset_names():
            print(f"{name}\t{load_preset(name).title}")
    elif args.command == "preset":
        try:
            print(load_preset(args.name).to_json())
        except KeyError as err:
            raise UsageError(err.args[0]) from None
    elif args.command == "trace":
        from .core.engine.trace import trace_to_dict

        device = _device(args.device)  # before reading: a missing device is said first
        scenario = _read_scenario(args.scenario)
        try:
            trace = generate(scenario, args.steps, args.mode, device=device)
        except (ValueError, RuntimeError) as err:
            raise UsageError(str(err).splitlines()[0] if str(err) else type(err).__name__) from None
        print(json.dumps(trace_to_dict(trace), ensure_ascii=False))
    elif args.command == "bench":
        return _bench(args.quick, args.device, args.out, args.threads)
    elif args.command == "scale":
        _scale(args)
    return 0


def _say(message: str) -> None:
    """One line on stderr, whatever it holds (a surrogate from a file name cannot break it)."""
    line = " ".join(str(message).split())
    sys.stderr.write(line.encode("utf-8", "backslashreplace").decode("utf-8") + "\n")
    sys.stderr.flush()


def main(argv: list[str] | None = None) -> int:
    try:
        return _run(build_parser().parse_args(argv))
    except (UsageError, ScenarioError) as err:
        _say(f"error: {err}")
        return 2
    except BrokenPipeError:  # the reader went away (`| head`): stop quietly, also at exit
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except KeyboardInterrupt:
        _say("error: interrupted")
        return 130
    except Exception as err:  # noqa: BLE001 - a bug, not bad input: still one line, never a traceback
        _say(f"error: unexpected failure ({type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}); "
             "please report it")
        return 1


if __name__ == "__main__":
    sys.exit(main())
