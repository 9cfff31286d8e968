"""Tier 1: device choice by injection (the import boundaries are tests/test_layers.py)."""

from __future__ import annotations

import pytest
import torch

from viz import pick_device


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
