"""Run tensor functions in full precision, whatever autocast context surrounds them."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TypeVar

import torch

F = TypeVar("F", bound=Callable)


def _upcast(value):
    """Cast a floating tensor below float32 (half, bfloat16) to float32; leave everything else."""
    if isinstance(value, torch.Tensor) and value.is_floating_point() and value.dtype != torch.float64:
        return value.float()
    return value


def full_precision(fn: F) -> F:
    """Decorate `fn` so that it computes in float32 (float64 inputs stay float64).

    Tensor arguments of lower precision are cast to float32 and autocast is disabled for
    the device of the first tensor argument while `fn` runs, so results are float32 even
    inside `torch.autocast(..., dtype=torch.bfloat16)`.
    """

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        args = tuple(_upcast(a) for a in args)
        kwargs = {k: _upcast(v) for k, v in kwargs.items()}
        tensors = [a for a in (*args, *kwargs.values()) if isinstance(a, torch.Tensor)]
        device_type = tensors[0].device.type if tensors else "cpu"
        with torch.autocast(device_type=device_type, enabled=False):
            return fn(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


def unit_margin(eps: float, dtype: torch.dtype) -> float:
    """Margin that keeps clamps of acosh/asin/acos inputs strictly inside their domain.

    MERU clamps at `1 + eps` / `1 - eps` with `eps = 1e-8`, which rounds to exactly 1 in
    float32, where those functions have infinite slope (NaN gradients at coincident
    points). The margin is therefore at least the machine epsilon of `dtype`.
    """
    return max(eps, torch.finfo(dtype).eps)
