"""Everything the Cost page says about one measurement, in one typed result (its prose is in
:mod:`words_cost`). Measuring is the page's: a click, a progress bar and a shared quick sweep; this
only reads what came back."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..engine.cost import CostMeasurement, CostSummary, LiveConfig, summarize_cost
from ..engine.scenario import Scenario
from . import words_cost as words


@dataclass(frozen=True)
class CostView:
    """The Cost page for ``measurement`` (None: nothing measured yet, nor a quick sweep)."""

    measurement: CostMeasurement | None
    summary: CostSummary | None  # the ratios the readings put into words (None: no size with both modes)
    notice: str  # above the results: the quick sweep's note, or the plain version while nothing is measured
    cut_short: bool  # measured, but not both decode modes at any one size
    measured: str  # where and how long it ran ("" with no summary)
    how: str  # what Measure times
    decode_reading: tuple[str, ...]  # the decode plot in plain words, one paragraph each (none with no summary)
    prefill_reading: tuple[str, ...]  # the prefill plot's (none with no summary or no prefill measured)


def cost_view(measurement: CostMeasurement | None, quick: LiveConfig | None, live: LiveConfig, model: Scenario,
              esc: Callable[[str], str], *, device_type: str) -> CostView:
    """The Cost page's words for ``measurement``; ``quick`` is the sweep it came from when it is the
    arrival's quick one (else None), ``live`` the sweep Measure runs on ``model``, ``device_type`` the
    kind of device it ran on ("cpu", "cuda", …: a GPU's reading speaks of kernel launches)."""
    summary = summarize_cost(measurement) if measurement else None
    if measurement is None:
        notice = words.PLAIN
    else:
        notice = words.quick(quick) if quick is not None else ""
    return CostView(measurement=measurement, summary=summary, notice=notice,
                    cut_short=measurement is not None and summary is None,
                    measured=words.measured(measurement) if summary is not None else "",
                    how=words.how(live, model, esc),
                    decode_reading=tuple(words.decode_reading(summary, device_type)) if summary is not None else (),
                    prefill_reading=tuple(words.prefill_reading(summary)) if summary is not None else ())
