"""Tier 1: the core's boundaries: no UI imports, device choice by injection."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch

from viz import pick_device


def test_core_imports_no_streamlit_and_no_plotly():
    """Importing every core module (and running the engine) loads neither streamlit nor plotly."""
    code = ("import sys, viz, viz.core.trace, viz.__main__, viz.core.explain, viz.core.share, viz.core.tour, viz.tools.bench, "
            "viz.core.memory, viz.core.paged, viz.core.compress, viz.core.real.model, viz.core.real.rules_match; "
            "viz.generate(viz.load_preset('seed'), 3); "
            "bad = [m for m in sys.modules if m.split('.')[0] in ('streamlit', 'plotly')]; "
            "print(bad); sys.exit(1 if bad else 0)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("cuda, mps, expected", [(True, True, "cuda"), (False, True, "mps"),
                                                 (False, False, "cpu")])
def test_pick_device_prefers_cuda_then_mps_then_cpu(cuda, mps, expected):
    """With no request, the best available device wins."""
    assert pick_device(cuda_available=lambda: cuda, mps_available=lambda: mps).type == expected


def test_pick_device_honours_a_request_and_refuses_a_missing_device():
    """An explicit device is used if present; a missing one is a ValueError."""
    assert pick_device("cpu", cuda_available=lambda: True) == torch.device("cpu")
    assert pick_device("cuda:0", cuda_available=lambda: True) == torch.device("cuda:0")
    with pytest.raises(ValueError, match="not available"):
        pick_device("cuda", cuda_available=lambda: False)
    with pytest.raises(ValueError, match="not available"):
        pick_device("mps", mps_available=lambda: False)
