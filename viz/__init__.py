"""kvlab as a library: build a scenario, run prefill and decode on the toy engine, draw the figures.

``viz.core`` is the engine (torch only), ``viz.figures`` turns its results into plotly figures and
pandas tables, ``viz.ui`` is the Streamlit layer the app's pages use, ``viz.tools`` the developer
commands. This package re-exports the core's everyday names; see docs/design.md for the layers.
"""

from .core.engine.cache import Cache, CatCache, KVCache, TokenInfo
from .core.device import describe_device, pick_device
from .core.engine.model import (MODES, Generation, KVDecoder, PrefillResult, RecomputeDecoder, ReencodeDecoder,
                          Step, ToyModel, Trace, WorkCounts, generate, make_decoder)
from .core.engine.presets import DEFAULT_PRESET, load_preset, preset_names
from .core.rules.language import Rule, RuleError, compile_rule
from .core.engine.sampling import SampleResult, Sampler, sample
from .core.engine.scenario import Head, Sampling, Scenario, ScenarioError, VocabWord
from .core.engine.tokenizer import tokenize

__all__ = [
    "Cache", "CatCache", "KVCache", "TokenInfo", "MODES", "Generation", "KVDecoder", "PrefillResult",
    "RecomputeDecoder", "ReencodeDecoder", "Step", "ToyModel", "Trace", "WorkCounts", "generate",
    "make_decoder", "describe_device", "pick_device", "DEFAULT_PRESET", "load_preset", "preset_names",
    "Rule", "RuleError", "compile_rule", "SampleResult", "Sampler", "sample", "Head", "Sampling",
    "Scenario", "ScenarioError", "VocabWord", "tokenize",
]
