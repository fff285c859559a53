"""AdamW with the papers' weight-decay exclusions, and linear warm-up from zero then cosine decay to zero."""

import math

import torch
from torch import nn

from .recipe import NO_WEIGHT_DECAY

# normalisation layers, whose weights are gains (as MERU's `set_weight_decay_per_param` lists them)
NORM_LAYERS = (nn.LayerNorm, nn.GroupNorm, nn.LocalResponseNorm, nn.modules.batchnorm._BatchNorm,
               nn.modules.instancenorm._InstanceNorm)


def param_groups(model: nn.Module, weight_decay: float, no_weight_decay: str = "scalars") -> list[dict]:
    """Two groups of the trainable parameters: decayed, and not decayed.

    `scalars`: only the learned scalars (the 0-dimensional parameters: temperature, curvature, scales) are not
    decayed. This is what MERU's and HyCoCLIP's public code do (their configs' `gain_bias_decay=0.0` becomes the
    full decay through `0.0 or weight_decay`), and what HyCoCLIP App. B says. `gains_biases_scalars`: normalisation gains and every bias are not decayed
    either, as MERU Sec. 4.1 and PoinCLIP Sec. 5 say ("We disable weight decay for all gains, biases, and
    learnable scalars").
    """
    if no_weight_decay not in NO_WEIGHT_DECAY:
        raise ValueError(f"no_weight_decay must be one of {list(NO_WEIGHT_DECAY)}; got {no_weight_decay!r}")
    decay, no_decay, seen = [], [], set()
    for module in model.modules():
        for name, param in module.named_parameters(recurse=False):
            if not param.requires_grad or id(param) in seen:
                continue
            seen.add(id(param))
            gain_or_bias = isinstance(module, NORM_LAYERS) or "bias" in name
            excluded = param.ndim == 0 or (no_weight_decay == "gains_biases_scalars" and gain_or_bias)
            (no_decay if excluded else decay).append(param)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


def build_optimizer(model: nn.Module, lr: float, weight_decay: float, betas,
                    no_weight_decay: str = "scalars") -> torch.optim.AdamW:
    """AdamW over `param_groups`; the fused kernel (deterministic, and several times faster on CPU)."""
    return torch.optim.AdamW(param_groups(model, weight_decay, no_weight_decay), lr=lr, betas=tuple(betas),
                             fused=True)


def warmup_cosine(step: int, warmup: int, total: int) -> float:
    """LR multiplier at `step` (counted from 0): linear from 0 at step 0 to 1 at `warmup`, then cosine to 0 at
    `total`, as MERU's `LinearWarmupCosineDecayLR` (the first step trains at learning rate 0)."""
    if step < warmup:
        return step / warmup
    progress = (step - warmup) / max(1, total - warmup)
    return 0.5 * (1.0 + math.cos(math.pi * min(progress, 1.0)))


def build_scheduler(optimizer, warmup: int, total: int) -> torch.optim.lr_scheduler.LambdaLR:
    return torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: warmup_cosine(step, warmup, total))
