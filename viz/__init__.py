"""kvlab's core: scenarios, the rule language and the torch engine for prefill, decode and the KV cache.

The core imports torch and the standard library only; figures live in ``viz.figures`` and the
Streamlit pages in ``pages/``.
"""

from .core.device import describe_device, pick_device
from .core.engine import (MODES, KVCache, KVDecoder, PrefillResult, RecomputeDecoder, ReencodeDecoder,
                     Step, ToyModel, Trace, WorkCounts, generate, make_decoder)
from .core.presets import DEFAULT_PRESET, load_preset, preset_names
from .core.rules import Rule, RuleError, compile_rule
from .core.sampling import SampleResult, sample
from .core.scenario import Head, Sampling, Scenario, ScenarioError, VocabWord
from .core.tokenizer import tokenize

__all__ = [
    "MODES", "KVCache", "KVDecoder", "PrefillResult", "RecomputeDecoder", "ReencodeDecoder", "Step",
    "ToyModel", "Trace", "WorkCounts", "generate", "make_decoder", "describe_device", "pick_device",
    "DEFAULT_PRESET", "load_preset", "preset_names", "Rule", "RuleError", "compile_rule",
    "SampleResult", "sample", "Head", "Sampling", "Scenario", "ScenarioError", "VocabWord", "tokenize",
]
