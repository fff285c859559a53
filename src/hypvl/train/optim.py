"""AdamW with the papers' weight-decay exclusions, and linear warm-up then cosine decay to zero."""

import math

import torch
from torch import nn


def param_groups(model: nn.Module, weight_decay: float) -> list[dict]:
    """Two groups: decayed weights, and (no decay) gains, biases and the learned scalars.

    MERU Sec. 4.1: "We disable weight decay for all gains, biases, and learnable scalars"
    (HyCoCLIP App. B follows it). Tensors with at most one dimension are gains, biases or scalars.
    """
    decay, no_decay = [], []
    for _, param in model.named_parameters():
        if param.requires_grad:
            (no_decay if param.ndim <= 1 else decay).append(param)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


def build_optimizer(model: nn.Module, lr: float, weight_decay: float, betas) -> torch.optim.AdamW:
    """AdamW over `param_groups`; the fused kernel (deterministic, and several times faster on CPU)."""
    return torch.optim.AdamW(param_groups(model, weight_decay), lr=lr, betas=tuple(betas), fused=True)


def warmup_cosine(step: int, warmup: int, total: int) -> float:
    """LR multiplier at `step`: linear from 0 to 1 over `warmup` steps, then cosine to 0 at `total`."""
    if step < warmup:
        return (step + 1) / warmup
    progress = (step - warmup) / max(1, total - warmup)
    return 0.5 * (1.0 + math.cos(math.pi * min(progress, 1.0)))


def build_scheduler(optimizer, warmup: int, total: int) -> torch.optim.lr_scheduler.LambdaLR:
    return torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: warmup_cosine(step, warmup, total))
