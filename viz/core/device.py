"""Which torch device the engine runs on: CUDA, then Apple's MPS, then the CPU, unless told."""

from __future__ import annotations

from typing import Callable

import torch

DEVICE_KINDS = ("cuda", "mps", "cpu")


def _mps_available() -> bool:
    backend = getattr(torch.backends, "mps", None)
    return bool(backend is not None and backend.is_available())


def pick_device(requested: str | torch.device | None = None, *,
                cuda_available: Callable[[], bool] = torch.cuda.is_available,
                mps_available: Callable[[], bool] = _mps_available) -> torch.device:
    """The best available device, or ``requested`` if it is available; ValueError otherwise.

    The availability checks are parameters so tests can inject a machine they do not have.
    """
    available = {"cuda": cuda_available, "mps": mps_available, "cpu": lambda: True}
    if requested is None:
        return torch.device(next(kind for kind in DEVICE_KINDS if available[kind]()))
    device = torch.device(requested)
    if device.type in available and not available[device.type]():
        raise ValueError(f"device '{device}' is not available on this machine")
    return device


def describe_device(device: torch.device) -> str:
    """A short label such as ``cpu`` or ``cuda (NVIDIA H100)`` for badges and reports."""
    if device.type == "cuda":
        return f"cuda ({torch.cuda.get_device_name(device)})"
    return device.type
