"""Click-to-rerun latency of the real app, measured server-side with Streamlit's AppTest.

``python -m viz.tools.latency [--repeats N]`` opens app.py headless, clicks the Decode page's Step and
Back buttons and the Prefill page's position stepper, and reports the median wall time of each whole
script run (frame + page: engine, figures, serialisation), which is the server compute between a
click and the finished rerun. Browser rendering and network time are not included: ``--browser``
measures those too, from the click to the figures painted in Chromium (``viz.tools.paint``).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from streamlit.testing.v1 import AppTest

from ..core.engine.presets import load_preset
from ..core.engine.scenario import Scenario
from ..core.engine.share import View, encode_view

APP = Path(__file__).resolve().parents[2] / "app.py"


def _timed(action) -> float:
    start = time.perf_counter()
    at = action()
    elapsed = time.perf_counter() - start
    if at.exception:
        raise RuntimeError(f"the app raised: {at.exception[0].value}")
    return elapsed


@dataclass(frozen=True)
class ClickLatency:
    """Median seconds of a whole script run after a click, measured with AppTest."""

    decode_step_click_s: float  # Decode's Step and Back, alternating
    prefill_stepper_click_s: float  # Prefill's position stepper, forward and back


def measure(scenario: Scenario, step: int, repeats: int) -> ClickLatency:
    """Median seconds per rerun for a Decode step click and a Prefill stepper click."""
    at = AppTest.from_file(str(APP), default_timeout=300)
    for key, value in encode_view(View(scenario, step=step)).items():
        at.query_params[key] = value
    at.run()
    at.switch_page("pages/decode.py")
    at.run()
    decode = []
    for i in range(repeats):
        label = "Step" if i % 2 == 0 else "Back"
        decode.append(_timed(lambda: next(b for b in at.button if b.label == label).click().run()))
    at.switch_page("pages/prefill.py")
    at.run()
    prefill = []
    for i in range(repeats):
        key = "prefill_position_forward" if i % 2 == 0 else "prefill_position_back"
        prefill.append(_timed(lambda: next(b for b in at.button if b.key == key).click().run()))
    return ClickLatency(statistics.median(decode), statistics.median(prefill))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m viz.tools.latency", description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--browser", action="store_true",
                        help="measure in Chromium, click to figures painted (python -m viz.tools.paint)")
    args = parser.parse_args(argv)
    if args.browser:
        from . import paint
        return paint.main(["--repeats", str(min(args.repeats, 50))])
    from ..core.engine.presets import busy_scenario as latency_scenario

    cases = [("seed, step 1", load_preset("seed"), 1), ("64 tokens, 8 heads, step 32", latency_scenario(), 32)]
    print(f"{'scenario':32} {'Decode: Step click':>20} {'Prefill: stepper click':>24}")
    for name, scenario, step in cases:
        result = measure(scenario, step, args.repeats)
        print(f"{name:32} {result.decode_step_click_s * 1000:>17.0f} ms "
              f"{result.prefill_stepper_click_s * 1000:>21.0f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
