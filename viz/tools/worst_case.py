"""The worst link the limits allow, opened on every page: how long the rerun takes, how much it grows.

``python -m viz.tools.worst_case [--pages decode prefill …] [--json FILE]`` builds share links at the
scenario limits (512 tokens, 16 heads, d_k = 1024, the largest rules, 64 words, step 256) in two
flavours, one heavy on matrix work and one heavy on rule evaluation, and opens each on each page
(Decode in all three modes; Memory also at its heaviest settings, :data:`VIEWS`) through Streamlit's
AppTest, each case in a fresh process: the whole script run (frame, page, engine, figures, protos) is timed and the process's peak resident memory
is compared with what it held after a warm-up run of the seed. The goal (docs/design.md, "The work
budget"): every case under 10 s and 500 MB on the 2-core machine kvlab is developed on.

What this does not do: drive a browser (rendering a huge figure is the browser's cost, not the
server's) or assert anything (it reports).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from ..core.rules.language import MAX_RULE_CHARS
from ..core.engine.scenario import (MAX_D_K, MAX_DECODE_STEPS, MAX_HEADS, MAX_TOKEN_CHARS, MAX_TOKENS, MAX_VOCAB,
                             Scenario)
from ..core.engine.share import LINK_PAGE, View, encode_view

APP = Path(__file__).resolve().parents[2] / "app.py"
# Memory's views at their heaviest settings (its widgets, which a link does not carry)
VIEWS = {"memory/paged": ("memory", {"memory_block_size": 1, "memory_steps": 16, "memory_reserve": MAX_DECODE_STEPS}),
         "memory/evict": ("memory", {"memory_tab": "Eviction and quantisation", "memory_evict_steps": 16,
                                     "memory_method": "Quantise", "memory_scales": "KIVI", "memory_group": 1,
                                     "memory_residual": 16})}
PAGES = ("prefill", "decode", "tour", "cost", "real_model", "at_scale", "memory", "serving", *VIEWS)
GOAL_S, GOAL_MB = 10.0, 500.0


def _long_rule(base: str, glue: str) -> str:
    """``base`` repeated with ``glue`` up to the rule-length limit (and within the node limit)."""
    parts = [base]
    while len(glue.join(parts + [base])) <= MAX_RULE_CHARS and len(parts) < 9:
        parts.append(base)
    return glue.join(parts)


def worst_scenarios() -> dict[str, Scenario]:
    """Two scenarios at the limits: 'matrix' (every key-only head, d_k = 1024) and 'rules'
    (heads whose long rules compare query and key at every pair)."""
    tokens = [f"{'w' * (MAX_TOKEN_CHARS - 4)}{i:03d}" for i in range(MAX_TOKENS)]
    values = [float((i * 37) % 19 - 9) for i in range(MAX_TOKENS)]
    vocab = [{"token": f"v{i}", "value": float(i % 11), "weights": [((i + h) % 7) / 7 for h in range(MAX_HEADS)]}
             for i in range(MAX_VOCAB)]
    key_rule = _long_rule("(k.pos * 7 + k.value) % 5 != 3", " and ")
    pair_rule = _long_rule("(q.pos - k.pos) % 4 != 1", " and ")
    out = {}
    for name, rule in (("matrix", key_rule), ("rules", pair_rule)):
        out[name] = Scenario.from_dict({
            "title": f"worst case ({name})", "tokens": tokens, "values": values, "d_k": MAX_D_K,
            "heads": [{"name": f"head {h:02d}", "rule": rule if h % 4 else "k.pos == n"} for h in range(MAX_HEADS)],
            "vocab": vocab,
            "sampling": {"strategy": "sample", "temperature": 0.7, "top_k": 8, "top_p": 0.9, "seed": 1}})
    return out


def worst_links() -> dict[str, dict[str, str]]:
    """Query parameters of each worst link, per scenario flavour and decode mode."""
    return {f"{name}/{mode}": encode_view(View(scenario, step=MAX_DECODE_STEPS, mode=mode))
            for name, scenario in worst_scenarios().items() for mode in ("kv", "reencode", "recompute")}


@dataclass(frozen=True)
class CaseResult:
    page: str
    link: str  # "matrix/kv", …
    link_chars: int
    seconds: float
    grew_mb: float  # peak resident memory over the warm baseline
    exceptions: int
    error: str = ""


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: kilobytes


def run_case(page: str, link: str) -> CaseResult:
    """One case in this process: warm up on the seed, then open the worst link on ``page`` (or on a
    page's view named in :data:`VIEWS`, with its settings)."""
    from streamlit.testing.v1 import AppTest

    script, settings = VIEWS.get(page, (page, {}))
    warm = AppTest.from_file(str(APP), default_timeout=600)
    warm.run()  # a first run registers the pages (st.navigation); then the page itself
    warm.switch_page(f"pages/{script}.py").run()
    baseline = _rss_mb()
    params = worst_links()[link]
    at = AppTest.from_file(str(APP), default_timeout=600)
    for key, value in {**params, LINK_PAGE: script}.items():  # as a visitor's share link opens it: at /,
        at.query_params[key] = value  # naming its page, which app.py switches to in the same run
    for key, value in settings.items():
        at.session_state[key] = value
    start = time.perf_counter()
    at.run()
    seconds = time.perf_counter() - start
    return CaseResult(page, link, sum(len(k) + len(v) + 2 for k, v in params.items()), seconds,
                      max(0.0, _rss_mb() - baseline), len(at.exception),
                      at.exception[0].value.splitlines()[0] if at.exception else "")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m viz.tools.worst_case", description=__doc__.splitlines()[0])
    parser.add_argument("--pages", nargs="+", default=list(PAGES), choices=PAGES)
    parser.add_argument("--links", nargs="+", default=None, help="e.g. matrix/kv rules/recompute")
    parser.add_argument("--json", type=Path, default=None, help="write the results here")
    parser.add_argument("--case", nargs=2, metavar=("PAGE", "LINK"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.case:  # a child process: one case, one JSON line
        print(json.dumps(asdict(run_case(*args.case))))
        return 0
    links = args.links or list(worst_links())
    results = []
    print(f"{'page':12} {'link':18} {'chars':>6} {'seconds':>8} {'grew MB':>8}  exceptions")
    for page in args.pages:
        for link in (links if page == "decode" else [link for link in links if link.endswith("/kv")]):
            child = subprocess.run([sys.executable, "-m", "viz.tools.worst_case", "--case", page, link],
                                   capture_output=True, text=True, timeout=900)
            lines = [line for line in child.stdout.splitlines() if line.startswith("{")]
            if child.returncode or not lines:
                result = CaseResult(page, link, 0, float("nan"), float("nan"), 1,
                                    (child.stderr.strip().splitlines() or ["failed"])[-1])
            else:
                result = CaseResult(**json.loads(lines[-1]))
            results.append(result)
            print(f"{result.page:12} {result.link:18} {result.link_chars:>6} {result.seconds:>8.2f} "
                  f"{result.grew_mb:>8.0f}  {result.exceptions} {result.error}", flush=True)
    worst_s = max(r.seconds for r in results)
    worst_mb = max(r.grew_mb for r in results)
    print(f"slowest {worst_s:.2f} s (goal {GOAL_S:g} s), most memory {worst_mb:.0f} MB (goal {GOAL_MB:g} MB), "
          f"exceptions {sum(r.exceptions for r in results)}")
    if args.json:
        args.json.write_text(json.dumps([asdict(r) for r in results], indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
