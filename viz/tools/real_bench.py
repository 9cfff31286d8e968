"""Measure the real model's decoding speed with and without its KV cache, and against generate().

Two measurements, each warmed up once and repeated in rounds that time every variant in turn,
reporting the median (the device is synchronised around every timed region):

1. **Per token at length n**: the time of the decode pass that feeds token n, with the cache (one
   new token over n − 1 cached keys and values) and without it (a full forward over all n tokens),
   for several n up to the model's context. Between repeats the decoder is rewound one token (the
   cache cropped), so every repeat is a warm step at the same length, as inside a generation. The
   context tokens are seeded random ids: their content does not change the work.
2. **End to end**: greedy generation from a fixed prompt until the sequence holds 256 tokens (64
   in quick mode; never past the model's context), by our stepping loop with the cache, by our
   loop without it, and by transformers' ``model.generate()``; the same tokens are expected from all three.

``python -m viz.tools.real_bench [--quick] [--device cpu|cuda|mps] [--shipped gpt2|llama] [--model DIR]
[--out FILE]`` prints the table and writes the JSON (with the cache bytes per token measured from
the cache's storage). The goals (ours within 1.2× of generate(), cached ≥ 5× uncached at 256 tokens)
are reported as measured, never asserted. This module does not load anything but the model given.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Callable

import torch

from ..core.device import describe_device
from ..core.timing import timed
from ..core.real.model import (SHIPPED_MODELS, CachedDecoder, Decoder, RealModel, RealModelError, UncachedDecoder,
                               encode, generate, load_model, measure_cache)

PROMPT = 'The "return" statement'
LENGTHS = (16, 32, 64, 128, 256)
QUICK_LENGTHS = (16, 64, 256)
END_TO_END_LENGTH = 256
QUICK_END_TO_END_LENGTH = 64


Timed = tuple[Callable[[], object], Callable[[], object]]  # (untimed setup, timed run)


def _medians(device: torch.device, runs: dict[str, Timed], repeats: int) -> dict[str, float]:
    """Median wall time of each run over ``repeats`` rounds after one warm-up round. Each round
    times every run once, in turn, so a change in the machine's load hits them all alike."""
    times: dict[str, list[float]] = {name: [] for name in runs}
    for round_ in range(repeats + 1):
        for name, (setup, run) in runs.items():
            setup()
            elapsed, _ = timed(run, device)
            if round_:
                times[name].append(elapsed)
    return {name: statistics.median(values) for name, values in times.items()}


def per_token_row(real: RealModel, length: int, repeats: int) -> dict:
    """Time of the decode pass that produces token ``length``, with and without the cache."""
    seeded = torch.Generator().manual_seed(length)
    ids = torch.randint(0, real.shape.vocab, (length,), generator=seeded).tolist()
    runs: dict[str, Timed] = {}
    for name, kind in (("cached", CachedDecoder), ("uncached", UncachedDecoder)):
        decoder = kind(real)
        decoder.prefill(ids[:-1])

        def setup(decoder: Decoder = decoder) -> None:  # back to n - 1 tokens (the cache is cropped)
            if len(decoder.ids) == length:
                decoder.rewind(1)

        runs[name] = (setup, lambda decoder=decoder: decoder.decode_step(ids[-1]))
    seconds = _medians(real.device, runs, repeats)
    return {"length": length, "cached_ms": seconds["cached"] * 1e3, "uncached_ms": seconds["uncached"] * 1e3,
            "cached_tokens_per_s": 1 / seconds["cached"], "uncached_tokens_per_s": 1 / seconds["uncached"],
            "speedup": seconds["uncached"] / seconds["cached"]}


def end_to_end(real: RealModel, length: int, repeats: int) -> dict:
    """Greedy generation until the sequence is ``length`` tokens (at most the model's context): our
    loop with and without the cache, and generate()."""
    prompt = list(encode(real, PROMPT).ids)
    new_tokens = min(length, real.shape.max_positions) - len(prompt)
    x = torch.tensor([prompt], device=real.device)  # (1, prompt)
    eos = real.tokenizer.eos_token_id
    out: dict[str, list[int]] = {}

    def ours(cached: bool) -> None:
        out["cached" if cached else "uncached"] = generate(real, prompt, new_tokens, cached=cached)

    def theirs() -> None:
        result = real.model.generate(x, attention_mask=torch.ones_like(x), max_new_tokens=new_tokens,
                                     min_new_tokens=new_tokens, do_sample=False, pad_token_id=eos)
        out["generate"] = result[0, len(prompt):].tolist()

    def nothing() -> None:
        return None

    seconds = _medians(real.device, {"cached": (nothing, lambda: ours(True)),
                                     "uncached": (nothing, lambda: ours(False)),
                                     "generate": (nothing, theirs)}, repeats)
    return {"prompt_tokens": len(prompt), "new_tokens": new_tokens,
            **{f"{name}_s": s for name, s in seconds.items()},
            **{f"{name}_tokens_per_s": new_tokens / s for name, s in seconds.items()},
            "ours_vs_generate": seconds["cached"] / seconds["generate"],
            "cache_speedup": seconds["uncached"] / seconds["cached"],
            "same_tokens": out["cached"] == out["uncached"] == out["generate"]}


def bench_real_model(quick: bool, device: str | torch.device | None = None,
                     path: str | Path | None = None) -> dict:
    """Measure the shipped model (or the one at ``path``) on ``device``; see the module docstring."""
    real = load_model(path, device)
    repeats = 5 if quick else 9
    lengths = [n for n in (QUICK_LENGTHS if quick else LENGTHS) if n <= real.shape.max_positions]
    rows = [per_token_row(real, n, repeats) for n in lengths]
    whole = end_to_end(real, QUICK_END_TO_END_LENGTH if quick else END_TO_END_LENGTH, 3 if quick else 5)
    at_256 = next((row for row in rows if row["length"] == 256), None)
    s = real.shape
    cache = measure_cache(real, list(encode(real, PROMPT).ids))
    return {
        "model": real.name, "device": describe_device(real.device), "threads": torch.get_num_threads(),
        "parameters": s.parameters, "layers": s.layers, "heads": s.heads, "kv_heads": s.kv_heads,
        "head_dim": s.head_dim, "cache_bytes_per_token": cache.bytes_per_token,
        "repeats": repeats, "per_token": rows, "end_to_end": whole,
        "goals": {"ours_within_1.2x_of_generate": whole["ours_vs_generate"] <= 1.2,
                  "cached_5x_uncached_at_256": None if at_256 is None else at_256["speedup"] >= 5},
    }


def format_table(result: dict) -> str:
    """The result as a plain-text table for a terminal."""
    lines = [f"real model: {result['model']} on {result['device']} ({result['threads']} threads), "
             f"median of {result['repeats']}; {result['heads']} query / {result['kv_heads']} K/V heads, "
             f"cache {result['cache_bytes_per_token']:,.0f} bytes per token (measured)",
             f"{'length':>7} {'cached ms':>10} {'uncached ms':>12} {'cached tok/s':>13} "
             f"{'uncached tok/s':>15} {'speedup':>8}"]
    for row in result["per_token"]:
        lines.append(f"{row['length']:>7} {row['cached_ms']:>10.2f} {row['uncached_ms']:>12.2f} "
                     f"{row['cached_tokens_per_s']:>13.0f} {row['uncached_tokens_per_s']:>15.0f} "
                     f"{row['speedup']:>7.1f}×")
    e = result["end_to_end"]
    lines.append(f"generate {e['new_tokens']} tokens after a {e['prompt_tokens']}-token prompt: "
                 f"ours cached {e['cached_tokens_per_s']:.0f} tok/s, ours uncached "
                 f"{e['uncached_tokens_per_s']:.0f} tok/s, model.generate() {e['generate_tokens_per_s']:.0f} "
                 f"tok/s; ours/generate time {e['ours_vs_generate']:.2f}×; same tokens: {e['same_tokens']}")
    lines.append("goals: " + ", ".join(f"{k} = {v}" for k, v in result["goals"].items()))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m viz.tools.real_bench", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer lengths and repeats")
    parser.add_argument("--device", default=None, help="cpu, cuda or mps (default: the best available)")
    parser.add_argument("--shipped", default="gpt2", help=f"which shipped model: {', '.join(SHIPPED_MODELS)}")
    parser.add_argument("--model", default=None, help="a local Hugging Face causal-LM directory instead")
    parser.add_argument("--out", type=Path, default=None, help="write the JSON here")
    args = parser.parse_args(argv)
    if args.shipped not in SHIPPED_MODELS:
        print(f"error: --shipped must be one of {', '.join(SHIPPED_MODELS)}", file=sys.stderr)
        return 2
    try:
        result = bench_real_model(args.quick, args.device, args.model or SHIPPED_MODELS[args.shipped][0])
    except (RealModelError, ValueError, RuntimeError) as err:
        print(f"error: {str(err).splitlines()[0] if str(err) else type(err).__name__}", file=sys.stderr)
        return 2
    print(format_table(result))
    if args.out is not None:
        args.out.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
