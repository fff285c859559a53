"""Curvatures, random points and gradients shared by the geometry tests."""

import torch


CURVS = [1.0, 0.3, 2.5]


def points(n: int, d: int, seed: int, scale: float = 1.0) -> torch.Tensor:
    return torch.randn(n, d, generator=torch.Generator().manual_seed(seed), dtype=torch.float64) * scale


def _grads(fn, x):
    x = x.clone().requires_grad_(True)
    fn(x).sum().backward()
    return x.grad
