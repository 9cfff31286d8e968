"""Scenarios the lesson-screen tests share (tier 1 and the browser tier)."""

from __future__ import annotations

import json

from viz import Scenario, load_preset
from viz.core.engine.presets import sequence


def long_scenario(tokens: int = 20) -> Scenario:
    """The seed's heads over its prompt repeated to ``tokens`` prompt tokens ('last' goes stale at each step)."""
    seed = load_preset("seed")
    data = json.loads(seed.to_json())
    data["tokens"], data["values"] = sequence(seed, tokens)
    data.pop("prompt", None)
    return Scenario.from_dict(data)
