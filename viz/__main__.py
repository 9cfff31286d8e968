"""Command line: ``python -m viz trace|presets|preset …``. Bad input: exit code 2, one line on stderr."""

from __future__ import annotations

import argparse
import json
import sys

from .engine import MODES, generate
from .presets import load_preset, preset_names
from .scenario import MAX_DECODE_STEPS, MAX_JSON_BYTES, Scenario, ScenarioError


class UsageError(Exception):
    """Bad command-line input; reported as one line and exit code 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # argparse prints usage on two lines; we want one
        raise UsageError(message)


def _read_scenario(path: str) -> Scenario:
    try:
        if path == "-":
            text = sys.stdin.read(MAX_JSON_BYTES + 1)
        else:
            with open(path, "rb") as handle:
                text = handle.read(MAX_JSON_BYTES + 1)
    except OSError as err:
        raise UsageError(f"cannot read {path}: {err.strerror or err}") from None
    return Scenario.from_json(text)


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
    trace.add_argument("--device", default=None, help="cpu, cuda or mps (default: best available)")
    commands.add_parser("presets", help="list the built-in scenarios")
    preset = commands.add_parser("preset", help="print a built-in scenario as JSON")
    preset.add_argument("name")
    return parser


def main(argv: list[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        if args.command == "presets":
            for name in preset_names():
                print(f"{name}\t{load_preset(name).title}")
        elif args.command == "preset":
            try:
                print(load_preset(args.name).to_json())
            except KeyError as err:
                raise UsageError(err.args[0]) from None
        elif args.command == "trace":
            from .trace import trace_to_dict

            scenario = _read_scenario(args.scenario)
            try:
                trace = generate(scenario, args.steps, args.mode, device=args.device)
            except (ValueError, RuntimeError) as err:
                raise UsageError(str(err).splitlines()[0]) from None
            print(json.dumps(trace_to_dict(trace), ensure_ascii=False))
        return 0
    except (UsageError, ScenarioError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
